package node

import (
	"slices"
	"testing"
	"time"

	"spate/job"
	"spate/state"
	"spate/traces"
	"spate/wire"
)

// tapOp is a keyed operator that notes every record it is given, in
// order, and hands it on to the real one.
type tapOp struct {
	job.Keyed
	got []tapped
}

type tapped struct {
	kg    job.KeyGroup
	value int64
}

func (t *tapOp) Process(kg job.KeyGroup, rec job.Record, out job.Emitter) {
	t.got = append(t.got, tapped{kg, rec.Value})
	t.Keyed.Process(kg, rec, out)
}

func (t *tapOp) of(kg job.KeyGroup) []int64 {
	var out []int64
	for _, g := range t.got {
		if g.kg == kg {
			out = append(out, g.value)
		}
	}
	return out
}

// earlyFixture is count#0 restored early from a chain fixture, its
// groups not built yet: the test is its loader, and attaches groups by
// hand (attach), on the goroutine that feeds it.
type earlyFixture struct {
	t   *testing.T
	f   *chainFixture
	in  *instance
	tap *tapOp
}

func newEarly(t *testing.T) *earlyFixture {
	t.Helper()
	f := newChain(t, 3000, []chainStep{{lo: 2000, hi: 4000}})
	in := f.instance(t)
	if _, err := in.restoreChain(f.files, true); err != nil {
		t.Fatal(err)
	}
	if in.ld == nil || in.ld.pending < 3 {
		t.Fatalf("restored early: load %+v, want key groups pending", in.ld)
	}
	tap := &tapOp{Keyed: in.op}
	in.op = tap
	f.drive(t, in)
	return &earlyFixture{t: t, f: f, in: in, tap: tap}
}

// loadingGroups returns n key groups still loading.
func (e *earlyFixture) loadingGroups(n int) []job.KeyGroup {
	var out []job.KeyGroup
	for _, g := range e.in.ld.groups {
		if len(out) < n && e.in.ld.loading[g.KG] {
			out = append(out, job.KeyGroup(g.KG))
		}
	}
	return out
}

// attach builds key group kg as a loader does and attaches it.
func (e *earlyFixture) attach(kg job.KeyGroup) {
	ld := e.in.ld
	i := slices.IndexFunc(ld.groups, func(g state.MergedGroup) bool { return g.KG == int(kg) })
	if i < 0 {
		e.t.Fatalf("key group %d is not in the chain", kg)
	}
	b, err := ld.gl.BuildGroup(&ld.groups[i])
	e.in.attachLoaded(ld, kg, b, err)
}

// attachAll attaches every group still loading.
func (e *earlyFixture) attachAll() {
	for e.in.ld != nil {
		e.attach(e.loadingGroups(1)[0])
	}
}

// keyOf returns the i-th key of the fixture's key space in key group kg.
func keyOf(kg job.KeyGroup, i int) []byte {
	for j := 0; j < 4000; j++ {
		key := []byte(traces.KeyName(j, chainKeys))
		if job.GroupOf(key, job.DefaultGroups) == kg {
			if i == 0 {
				return key
			}
			i--
		}
	}
	panic("no such key")
}

// rec is one record of a test batch: of key group kg, number seq from
// source 0, its value v (what the tap sees).
type rec struct {
	kg  job.KeyGroup
	seq uint64
	v   int64
}

func batchOf(rs ...rec) []byte {
	var b wire.BatchBuilder
	for _, r := range rs {
		b.Append(job.MakeProducer(0, 0), r.kg, r.seq, job.Record{Key: keyOf(r.kg, int(r.v)%3), Time: 42_500, Value: r.v})
	}
	return b.Encode(nil)
}

// TestAnEarlyRestoreAppliesALiveKeyGroupAtOnce: restored early, count#0
// applies the records of a key group as soon as that group is attached,
// while the rest of the chain is still loading; the records of a group
// still loading wait (their positions too), and so do its watermark and
// its checkpoints.
func TestAnEarlyRestoreAppliesALiveKeyGroupAtOnce(t *testing.T) {
	e := newEarly(t)
	in := e.in
	gs := e.loadingGroups(2)
	live, loading := gs[0], gs[1]
	p := job.MakeProducer(0, 0)
	s0, s1 := in.dedupOf(p)[live], in.dedupOf(p)[loading]
	wm := in.wm
	e.attach(live)
	if in.ld == nil || !in.ld.loading[loading] {
		t.Fatal("the load ended with one group attached")
	}
	if err := in.applyBatch(batchOf(rec{live, s0 + 1, 1}, rec{loading, s1 + 1, 2}, rec{live, s0 + 2, 3})); err != nil {
		t.Fatal(err)
	}
	if got := e.tap.of(live); !slices.Equal(got, []int64{1, 3}) {
		t.Fatalf("live key group %d applied %v before the chain was loaded, want [1 3]", live, got)
	}
	if got := e.tap.of(loading); len(got) != 0 {
		t.Fatalf("key group %d, still loading, applied %v", loading, got)
	}
	if got := in.dedupOf(p)[loading]; got != s1 {
		t.Fatalf("the position of key group %d, still loading, moved to %d (from %d)", loading, got, s1)
	}
	if got := in.dedupOf(p)[live]; got != s0+2 {
		t.Fatalf("the position of live key group %d is %d, want %d", live, got, s0+2)
	}
	for i := range in.wms {
		in.handle(inMsg{from: i, gen: in.inputGen[i], kind: msgWatermark, wm: 99_000})
	}
	if in.wm != wm {
		t.Fatalf("watermark moved to %d while key groups load (restored at %d)", in.wm, wm)
	}
	in.maybeCheckpoint(time.Now().Add(time.Hour))
	if in.ck.inflight {
		t.Fatal("a checkpoint was captured while key groups load")
	}
	e.attachAll()
	if in.wm != 99_000 {
		t.Fatalf("watermark %d once every group is loaded, want 99000", in.wm)
	}
}

// TestAnEarlyRestoreAppliesHeldRecordsOnceInOrder: the records held for
// a loading key group are applied when it is attached, each once, in the
// order they came, through the duplicate check (a record applied before
// the checkpoint, and one repeated, are dropped); once every group is
// loaded the state is the state of a whole restore that got the same
// records, the next checkpoint is a delta of what they changed, and the
// chain with it restores that state.
func TestAnEarlyRestoreAppliesHeldRecordsOnceInOrder(t *testing.T) {
	e := newEarly(t)
	in := e.in
	gs := e.loadingGroups(2)
	a, b := gs[0], gs[1]
	p := job.MakeProducer(0, 0)
	sa, sb := in.dedupOf(p)[a], in.dedupOf(p)[b]
	batches := [][]byte{
		batchOf(rec{a, sa + 1, 10}, rec{b, sb + 1, 20}, rec{a, sa + 2, 11}),
		batchOf(rec{a, sa, 99}, rec{b, sb + 2, 21}, rec{a, sa + 2, 98}), // sa: applied before the checkpoint; sa+2: again
		batchOf(rec{b, sb + 3, 22}, rec{a, sa + 3, 12}),
	}
	for _, bt := range batches {
		if err := in.applyBatch(bt); err != nil {
			t.Fatal(err)
		}
	}
	if len(e.tap.got) != 0 || in.ld.nheld != 8 {
		t.Fatalf("applied %v and held %d before any group was loaded, want none and 8", e.tap.got, in.ld.nheld)
	}
	e.attach(b)
	if got := e.tap.of(b); !slices.Equal(got, []int64{20, 21, 22}) {
		t.Fatalf("key group %d applied %v once attached, want [20 21 22]", b, got)
	}
	if got := e.tap.of(a); len(got) != 0 {
		t.Fatalf("key group %d, still loading, applied %v", a, got)
	}
	e.attach(a)
	if got := e.tap.of(a); !slices.Equal(got, []int64{10, 11, 12}) {
		t.Fatalf("key group %d applied %v once attached, want [10 11 12]", a, got)
	}
	if in.nDup.Load() != 2 || in.inN != 6 {
		t.Fatalf("%d records applied, %d dropped as duplicates; want 6 and 2", in.inN, in.nDup.Load())
	}
	e.attachAll()
	if in.ld != nil {
		t.Fatal("still loading after every group was attached")
	}

	whole := e.f.instance(t)
	if _, err := whole.restore(e.f.files); err != nil {
		t.Fatal(err)
	}
	for _, bt := range batches {
		if err := whole.applyBatch(bt); err != nil {
			t.Fatal(err)
		}
	}
	want := whole.stateful.Capture(true).Encode(nil)

	r := e.f.drive(t, in)
	snap := r.checkpoint(3, false)
	keys := 0
	for _, g := range snap.Groups {
		keys += g.Len()
	}
	if snap.Full || snap.Parent != 2 || keys != 6 {
		t.Fatalf("checkpoint after the early restore: full %v, parent %d, %d keys; want a delta on 2 with the 6 keys the records changed", snap.Full, snap.Parent, keys)
	}
	if err := sameGroups(in.stateful.Capture(true).Encode(nil), want); err != nil {
		t.Fatalf("early restore and its records against a whole one: %v", err)
	}
	again := e.f.instance(t)
	if _, err := again.restore(e.f.files); err != nil {
		t.Fatal(err)
	}
	if err := sameGroups(again.stateful.Capture(true).Encode(nil), want); err != nil {
		t.Fatalf("restored from the chain extended after an early restore: %v", err)
	}
}

// TestAnEarlyRestoreEndsItsInputOnceLoaded: every input ending while key
// groups load does not finish the instance (its last windows would fire
// without them); it finishes once the last group is attached, with every
// window fired.
func TestAnEarlyRestoreEndsItsInputOnceLoaded(t *testing.T) {
	e := newEarly(t)
	in := e.in
	for i := range in.wms {
		if in.handle(inMsg{from: i, gen: in.inputGen[i], kind: msgEnd}) && !in.finished {
			in.ld.finish = true // what runKeyed does while loading
		}
	}
	if in.finished || in.outN != 0 {
		t.Fatalf("finished %v, %d records out while key groups load", in.finished, in.outN)
	}
	e.attachAll()
	if !in.finished || in.outN == 0 {
		t.Fatalf("finished %v, %d records out once loaded; want finished, windows fired", in.finished, in.outN)
	}
}

// TestEarlyLoadersBuildWhileTheInstanceRuns: the loader goroutines build
// key groups while the instance's goroutine (here the test's) applies
// records and attaches what they hand it, in whatever interleaving; the
// state at the end is the state of a whole restore that got the same
// records. Under -race it checks that building a group off the table
// shares nothing with processing.
func TestEarlyLoadersBuildWhileTheInstanceRuns(t *testing.T) {
	e := newEarly(t)
	in := e.in
	p := job.MakeProducer(0, 0)
	var batches [][]byte
	seq := map[job.KeyGroup]uint64{}
	for i := range 40 {
		var rs []rec
		for _, g := range in.ld.groups[i%7 : i%7+5] {
			kg := job.KeyGroup(g.KG)
			if seq[kg] == 0 {
				seq[kg] = in.dedupOf(p)[kg]
			}
			seq[kg]++
			rs = append(rs, rec{kg, seq[kg], int64(i)})
		}
		batches = append(batches, batchOf(rs...))
	}
	in.loadGroups(in.ld)
	next := 0
	for in.ld != nil || next < len(batches) {
		select {
		case f := <-in.ctlc:
			f()
		default:
			if next < len(batches) {
				if err := in.applyBatch(batches[next]); err != nil {
					t.Fatal(err)
				}
				next++
			} else {
				(<-in.ctlc)()
			}
		}
	}
	whole := e.f.instance(t)
	if _, err := whole.restore(e.f.files); err != nil {
		t.Fatal(err)
	}
	for _, bt := range batches {
		if err := whole.applyBatch(bt); err != nil {
			t.Fatal(err)
		}
	}
	if in.inN != whole.inN {
		t.Fatalf("%d records applied, a whole restore %d", in.inN, whole.inN)
	}
	if err := sameGroups(in.stateful.Capture(true).Encode(nil), whole.stateful.Capture(true).Encode(nil)); err != nil {
		t.Fatalf("early restore with its loaders against a whole one: %v", err)
	}
}
