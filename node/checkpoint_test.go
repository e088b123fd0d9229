package node

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"spate/job"
	"spate/state"
	"spate/traces"
	"spate/wire"
)

// chainFixture is a checkpoint chain of count#0 written by the real
// capture and persist path: a full checkpoint, then deltas.
type chainFixture struct {
	d     *wire.Deploy
	n     *Node
	files []string          // the chain, oldest first
	want  []state.GroupData // count's state at the last checkpoint, captured whole
}

// chainKeys is the generator's key space of the fixture: 7-character keys.
const chainKeys = 1_000_000

// chainStep is what count#0 does before a delta checkpoint: it forgets
// the key groups drop (they moved away, say: the delta resets them), then
// gets records for the keys [lo, hi).
type chainStep struct {
	lo, hi int
	drop   []job.KeyGroup
}

// newChain runs count#0 of a windowcount job over generator-like keys and
// checkpoints it: a full checkpoint after keys 0..full-1 got records in
// two windows and the first fired (so the upstream backup holds two
// records per key), then one delta per step, its records in the open
// window and the next (so that about half of their keys have two windows
// open): keys below the previous high are overwritten, keys above it are
// new, and the keys of a dropped group come back in it, whole.
func newChain(tb testing.TB, full int, steps []chainStep) *chainFixture {
	tb.Helper()
	spec := job.WindowCount(map[string]int{"source": 2, "count": 1, "rollup": 1, "sink": 1}, 1000, 0)
	all := []job.Range{{Lo: 0, Hi: job.KeyGroup(spec.Groups)}}
	d := &wire.Deploy{Job: spec, FT: "spate", DataDir: tb.TempDir(), Instances: []wire.Placement{
		{ID: "source#0", Op: "source", Index: 0, Node: "n1", Gen: 1, Partitions: []int{0}},
		{ID: "source#1", Op: "source", Index: 1, Node: "n1", Gen: 1, Partitions: []int{1}},
		{ID: "count#0", Op: "count", Index: 0, Node: "n1", Gen: 1, Ranges: all},
		{ID: "rollup#0", Op: "rollup", Index: 0, Node: "n1", Gen: 1, Ranges: all},
		{ID: "sink#0", Op: "sink", Index: 0, Node: "n1", Gen: 1, Ranges: all},
	}}
	f := &chainFixture{d: d, n: &Node{store: &faultStore{Store: state.NewMemStore()}}}
	r := f.drive(tb, f.instance(tb))
	r.feed(0, full, 40_000)
	r.feed(0, full, 41_000)
	r.advance(41_000) // fires the first window of every key
	r.checkpoint(1, true)
	for i, st := range steps {
		r.in.stateful.DropGroups(st.drop)
		r.feed(st.lo, st.hi, 41_500+int64(i)*1000)
		r.checkpoint(uint64(2+i), false)
	}
	f.want = r.in.stateful.Capture(true).Encode(nil)
	return f
}

// chainDriver feeds count#0 of a chain fixture and checkpoints it.
type chainDriver struct {
	tb  testing.TB
	f   *chainFixture
	in  *instance
	seq [2]uint64 // per source
}

// drive starts feeding in, whose emitted records stay in its backups.
func (f *chainFixture) drive(tb testing.TB, in *instance) *chainDriver {
	for _, pt := range in.ports {
		for _, l := range pt.links {
			l.err = errConnecting // no downstream: what is emitted stays in the backup
		}
	}
	return &chainDriver{tb: tb, f: f, in: in}
}

// feed gives count#0 a record for each key of [lo, hi), from alternating
// sources, at event times from t.
func (r *chainDriver) feed(lo, hi int, t int64) {
	for j := lo; j < hi; j++ {
		key := []byte(traces.KeyName(j, chainKeys))
		kg := job.GroupOf(key, r.f.d.Job.Groups)
		src := j % 2
		r.seq[src]++
		r.in.dedupOf(job.MakeProducer(0, src))[kg] = r.seq[src]
		r.in.applyRecord(kg, job.Record{Key: key, Time: t + int64(j%997), Value: int64(1 + j%100)})
	}
}

func (r *chainDriver) advance(wm int64) {
	for i := range r.in.wms {
		r.in.wms[i] = wm
	}
	r.in.advance()
}

// checkpoint takes checkpoint id through the real capture and persist
// path, adds its file to the fixture's chain and returns its snapshot.
func (r *chainDriver) checkpoint(id uint64, full bool) *state.Snapshot {
	pc := r.in.capture(id, full)
	err := r.in.persist(pc)
	r.in.persisted(pc, err)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.f.files = append(r.f.files, state.FileName(pc.snap.Instance, pc.snap.Gen, pc.snap.ID, pc.snap.Full))
	return pc.snap
}

func (f *chainFixture) instance(tb testing.TB) *instance {
	tb.Helper()
	in, err := newInstance(f.n, f.d, &f.d.Instances[2])
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// TestRestoreChainEqualsCapture: count#0 restored from a chain of a full
// checkpoint and deltas that overwrite some of its keys, add others and
// reset key groups (count deletes no key: a dropped group is its only
// deletion) holds exactly the state captured at the last checkpoint, key
// by key and value by value, and its backup holds what was emitted.
func TestRestoreChainEqualsCapture(t *testing.T) {
	// Key groups that the records of the last two steps leave empty once
	// dropped (gone), and one that those of the second step fill again.
	touched := func(lo, hi int) map[job.KeyGroup]bool {
		m := map[job.KeyGroup]bool{}
		for j := lo; j < hi; j++ {
			m[job.GroupOf([]byte(traces.KeyName(j, chainKeys)), job.DefaultGroups)] = true
		}
		return m
	}
	second, third := touched(100, 160), touched(3900, 3960)
	var gone []job.KeyGroup
	back := job.KeyGroup(0)
	for kg := range job.KeyGroup(job.DefaultGroups) {
		switch {
		case !second[kg] && !third[kg] && len(gone) < 2:
			gone = append(gone, kg)
		case second[kg] && !third[kg]:
			back = kg
		}
	}
	if len(gone) < 2 || back == 0 {
		t.Fatalf("the key ranges leave no group to drop: %v, %v", gone, back)
	}
	f := newChain(t, 3000, []chainStep{
		{lo: 2000, hi: 4000},
		{lo: 100, hi: 160, drop: []job.KeyGroup{gone[0], back}},
		{lo: 3900, hi: 3960, drop: []job.KeyGroup{gone[1]}},
	})
	for _, g := range f.want {
		if slices.Contains(gone, job.KeyGroup(g.KG)) {
			t.Fatalf("the fixture holds key group %d, dropped", g.KG)
		}
	}
	if !slices.ContainsFunc(f.want, func(g state.GroupData) bool { return g.KG == int(back) }) {
		t.Fatalf("the fixture lost key group %d, which came back", back)
	}
	in := f.instance(t)
	id, err := in.restore(f.files)
	if err != nil {
		t.Fatal(err)
	}
	if id != uint64(len(f.files)) {
		t.Fatalf("restored checkpoint %d, want %d", id, len(f.files))
	}
	got := in.stateful.Capture(true).Encode(nil)
	if err := sameGroups(got, f.want); err != nil {
		t.Fatal(err)
	}
	for _, pt := range in.ports {
		if n := pt.backup.Stats().Records; n != 3000 {
			t.Fatalf("backup toward %s holds %d records, want 3000", pt.to, n)
		}
	}
}

// A restored instance extends the chain it was restored from: its next
// checkpoint is a delta of what changed since the restore (not a full one,
// nor one with the restored groups whole), and the chain with it restores
// the instance's state.
func TestRestoredInstanceExtendsItsChain(t *testing.T) {
	f := newChain(t, 3000, []chainStep{{lo: 2000, hi: 4000}})
	in := f.instance(t)
	if _, err := in.restore(f.files); err != nil {
		t.Fatal(err)
	}
	if in.ck.wantFull(in.plan) {
		t.Fatal("the first checkpoint after a restore is full")
	}
	r := f.drive(t, in)
	r.feed(3950, 4050, 42_500)
	snap := r.checkpoint(3, false)
	data, err := f.n.store.Get(f.files[len(f.files)-1])
	if err != nil {
		t.Fatal(err)
	}
	if snap, err = state.Decode(data); err != nil {
		t.Fatal(err)
	}
	keys := 0
	for _, g := range snap.Groups {
		keys += g.Len()
	}
	if snap.Full || snap.Parent != 2 || keys != 100 {
		t.Fatalf("checkpoint after the restore: full %v, parent %d, %d keys; want a delta on 2 with the 100 keys fed since", snap.Full, snap.Parent, keys)
	}
	want := in.stateful.Capture(true).Encode(nil)
	again := f.instance(t)
	if _, err := again.restore(f.files); err != nil {
		t.Fatal(err)
	}
	if err := sameGroups(again.stateful.Capture(true).Encode(nil), want); err != nil {
		t.Fatalf("restored from the extended chain: %v", err)
	}
}

// A chain file holding another checkpoint (here the full one copied over
// the delta) is refused as corrupt, naming the file, as state.Load refuses
// it: restored, it would pass for the checkpoint its name says.
func TestRestoreRefusesAMisnamedFile(t *testing.T) {
	f := newChain(t, 500, []chainStep{{lo: 400, hi: 600}})
	full, err := f.n.store.Get(f.files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := f.n.store.Put(f.files[1], full); err != nil {
		t.Fatal(err)
	}
	_, err = f.instance(t).restore(f.files)
	if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), f.files[1]) {
		t.Fatalf("restore of a chain with a misnamed file: %v, want ErrCorrupt naming %s", err, f.files[1])
	}
}

// sameGroups says how got differs from want, or returns nil.
func sameGroups(got, want []state.GroupData) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d key groups, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.KG != w.KG || g.Len() != w.Len() {
			return fmt.Errorf("group %d: key group %d with %d keys, want %d with %d", i, g.KG, g.Len(), w.KG, w.Len())
		}
		gk, wk := g.KVs(), w.KVs()
		for j := range wk {
			ge, we := gk[j], wk[j]
			if !bytes.Equal(ge.Key, we.Key) || !bytes.Equal(ge.Value, we.Value) || ge.Deleted != we.Deleted {
				return fmt.Errorf("key group %d, entry %d: %q=%x, want %q=%x", w.KG, j, ge.Key, ge.Value, we.Key, we.Value)
			}
		}
	}
	return nil
}

// BenchmarkRestoreChain is the restore of count#0 at recovery: read,
// decode, merge and apply a chain of a full checkpoint of 110,000 keys and
// a delta of 50,000 (half of them in the full one), and rebuild the
// upstream backups (110,000 records each). cpu-ms/op is the CPU time of
// every thread (the garbage collector's too) during the restore.
func BenchmarkRestoreChain(b *testing.B) {
	f := newChain(b, 110_000, []chainStep{{lo: 85_000, hi: 135_000}})
	f.want = nil // not needed here: it would only add to what the collector marks
	var stored int
	for _, name := range f.files {
		data, err := f.n.store.Get(name)
		if err != nil {
			b.Fatal(err)
		}
		stored += len(data)
	}
	var cpu float64 // seconds of CPU, of every thread, spent in restore
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		in := f.instance(b)
		c0, _ := processUsage()
		b.StartTimer()
		if _, err := in.restore(f.files); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c1, _ := processUsage()
		cpu += c1 - c0
		b.StartTimer()
	}
	b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(stored)/(1<<20), "stored-MiB")
}

// BenchmarkRestoreChainEarly is BenchmarkRestoreChain's restore done
// early (load.go): ns/op is the time until the instance may answer
// restored and run, its key groups not built yet; loaded-ms/op, the
// time until the last of them is attached (built on GOMAXPROCS loaders).
func BenchmarkRestoreChainEarly(b *testing.B) {
	f := newChain(b, 110_000, []chainStep{{lo: 85_000, hi: 135_000}})
	f.want = nil
	var loaded time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		in := f.instance(b)
		b.StartTimer()
		t0 := time.Now()
		if _, err := in.restoreChain(f.files, true); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if in.ld == nil {
			b.Fatal("not restored early")
		}
		in.loadGroups(in.ld)
		for in.ld != nil {
			(<-in.ctlc)()
		}
		loaded += time.Since(t0)
		b.StartTimer()
	}
	b.ReportMetric(float64(loaded.Microseconds())/1e3/float64(b.N), "loaded-ms/op")
}

// TestNextCheckpointKeepsToTheGrid: a checkpoint taken late does not push
// the later ones back; one a whole interval late, or on demand, starts a
// new grid.
func TestNextCheckpointKeepsToTheGrid(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		due  time.Time
		now  int
		want int
	}{
		{at(1000), 1000, 2000},
		{at(1000), 1150, 2000}, // late: the grid holds
		{at(1000), 1999, 2000},
		{at(1000), 2000, 3000}, // a whole interval late: from now
		{at(1000), 2500, 3500},
		{time.Time{}, 1234, 2234}, // on demand
	} {
		if got := nextCheckpoint(c.due, at(c.now), time.Second); !got.Equal(at(c.want)) {
			t.Errorf("due %v, now %d ms: next at %v, want %d ms", c.due.Sub(t0), c.now, got.Sub(t0), c.want)
		}
	}
}

// A compacted chain is the base of the deltas that follow it: damaged, the
// next delta finds it (and is not taken, so a full one follows), as it
// finds a damaged base of its own. Seed 680 of the simulation lost
// rollup#1 for good: its compacted file was damaged, the deltas went on
// building on it, and the restore found every chain unreadable.
func TestDeltaScrubsTheCompactedFileItBuildsOn(t *testing.T) {
	f := newChain(t, 500, []chainStep{{lo: 400, hi: 600}, {lo: 100, hi: 200}})
	in := f.instance(t)
	if _, err := in.restore(f.files); err != nil {
		t.Fatal(err)
	}
	r := f.drive(t, in)
	compacted := state.FileName("count#0", 1, 3, true)
	if err := f.n.store.Put(compacted, []byte("a compacted chain, damaged")); err != nil {
		t.Fatal(err)
	}
	in.onCompacted(3, compacted)
	in.onCompacted(1, "count#0/stale") // an older compaction, finished late: not the chain's base
	if in.ck.baseFile != compacted {
		t.Fatalf("base file %q after the compactions, want %q", in.ck.baseFile, compacted)
	}
	r.feed(300, 350, 43_500)
	pc := in.capture(4, false)
	err := in.persist(pc)
	in.persisted(pc, err)
	if !errors.Is(err, errChainBroken) {
		t.Fatalf("a delta on a damaged compacted chain: %v, want the chain broken", err)
	}
	if !in.ck.wantFull(in.plan) {
		t.Fatal("the checkpoint after a broken chain is not full")
	}
}

// newestDamaged is an instance restored from a chain that then took
// checkpoints 2 and 3, both complete, and read on; the file of 3 is
// damaged where it lies. second is checkpoint 2's positions: what the
// trims must keep once 3 is known damaged.
func newestDamaged(t *testing.T) (in *instance, second [][]wire.Position, damaged string) {
	t.Helper()
	f := newChain(t, 300, nil)
	in = f.instance(t)
	if _, err := in.restore(f.files); err != nil {
		t.Fatal(err)
	}
	r := f.drive(t, in)
	r.feed(0, 100, 42_000)
	r.checkpoint(2, false)
	in.onCompleted(2, 0)
	r.feed(100, 200, 43_000)
	r.checkpoint(3, false)
	in.onCompleted(3, 0)
	if len(in.ck.done) != 2 {
		t.Fatalf("%d complete checkpoints remembered, want 2", len(in.ck.done))
	}
	second = in.ck.done[0].pos
	if slices.EqualFunc(second, in.ck.done[1].pos, slices.Equal) {
		t.Fatal("the fixture's two checkpoints have the same positions")
	}
	damaged = f.files[len(f.files)-1]
	if err := f.n.store.Put(damaged, []byte("damaged")); err != nil {
		t.Fatal(err)
	}
	r.feed(200, 300, 44_000)
	return in, second, damaged
}

// A scrub that finds the newest complete checkpoint's file damaged, under
// a delta (which is not taken) or beside a full one (which is), forgets
// that checkpoint for the trims: the next trims keep what the one before
// it needs, the fallback now. A full checkpoint did not look at the file
// before it, and seed 677 lost sink#0 for good: its latest two files
// damaged, the trims gone past what the older of them needed.
func TestDamagedNewestCheckpointIsForgottenForTheTrims(t *testing.T) {
	for _, full := range []bool{false, true} {
		in, second, damaged := newestDamaged(t)
		pc := in.capture(4, full)
		err := in.persist(pc)
		in.persisted(pc, err)
		if full != (err == nil) {
			t.Fatalf("full %v: persist: %v", full, err)
		}
		if pc.damaged != damaged || pc.damagedID != 3 {
			t.Fatalf("full %v: found %q (checkpoint %d) damaged, want %q (3)", full, pc.damaged, pc.damagedID, damaged)
		}
		if in.trimPoint(3) != nil || !slices.EqualFunc(second, in.trimPoint(2), slices.Equal) {
			t.Fatalf("full %v: a completion naming the damaged checkpoint 3 as the fallback would trim to it", full)
		}
	}
}

// The coordinator's answer to a full checkpoint that found the one
// before it damaged can reach the instance before persisted runs (seed
// 2750). persist, off the instance's goroutine, queues the forgetting
// before it reports the checkpoint, so the completion queued after it
// trims to what the checkpoint before the damaged one needs.
func TestACompletionBeforePersistedTrimsPastNoDamagedCheckpoint(t *testing.T) {
	in, second, _ := newestDamaged(t)
	pc := in.capture(4, true)
	pc.async = true // as the checkpoint's own goroutine persists it
	if err := in.persist(pc); err != nil {
		t.Fatal(err)
	}
	// What persist queued runs first, then the completion (both on the
	// instance's queue, in order), and only then persisted.
	for len(in.ctlc) > 0 {
		(<-in.ctlc)()
	}
	if in.trimPoint(3) != nil || !slices.EqualFunc(second, in.trimPoint(2), slices.Equal) {
		t.Fatal("the completion of checkpoint 4 could trim to what the damaged checkpoint 3 needed")
	}
	in.onCompleted(4, 2)
	in.persisted(pc, nil)
	if n := len(in.ck.done); n != 2 || in.ck.done[0].id != 2 || in.ck.done[1].id != 4 {
		t.Fatalf("complete checkpoints remembered %v, want 2 and 4", in.ck.done)
	}
}

// The backups' jumps (streams another instance numbered for a while) go
// into every checkpoint and come back at its restore: without them a new
// owner restored after a move refused a downstream restored from before
// the move (the soak: 483,566 results wrong).
func TestBackupJumpsSurviveARestore(t *testing.T) {
	f := newChain(t, 300, nil)
	in := f.instance(t)
	if _, err := in.restore(f.files); err != nil {
		t.Fatal(err)
	}
	r := f.drive(t, in)
	p, kg := job.MakeProducer(in.opIdx, 7), job.KeyGroup(7)
	in.ports[0].backup.Jump(p, kg, 5000)
	want := in.ports[0].backup.Jumps()
	if len(want) == 0 {
		t.Fatal("the jump left no trace in the backup")
	}
	r.feed(0, 50, 42_000)
	r.checkpoint(2, false)
	again := f.instance(t)
	if _, err := again.restore(f.files); err != nil {
		t.Fatal(err)
	}
	if got := again.ports[0].backup.Jumps(); !slices.Equal(got, want) {
		t.Fatalf("jumps after the restore %v, want %v", got, want)
	}
}
