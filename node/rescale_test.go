package node

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"spate/job"
	"spate/state"
	"spate/wire"
)

// recorder is a keyed operator that remembers what it was given.
type recorder struct{ got []int64 }

func (r *recorder) Process(_ job.KeyGroup, rec job.Record, _ job.Emitter) {
	r.got = append(r.got, rec.Value)
}
func (r *recorder) Advance(int64, job.Emitter) {}

// testCount builds count#0 (all key groups) of a small windowcount job,
// its operator replaced by a recorder.
func testCount(t *testing.T, ft wire.FTMode) (*instance, *recorder) {
	t.Helper()
	spec := job.WindowCount(map[string]int{"source": 2, "count": 1, "rollup": 1, "sink": 1}, 1000, 0)
	all := []job.Range{{Lo: 0, Hi: job.KeyGroup(spec.Groups)}}
	d := &wire.Deploy{Job: spec, FT: ft, DataDir: t.TempDir(), Instances: []wire.Placement{
		{ID: "source#0", Op: "source", Index: 0, Node: "n1", Gen: 1, Partitions: []int{0}},
		{ID: "source#1", Op: "source", Index: 1, Node: "n1", Gen: 1, Partitions: []int{1}},
		{ID: "count#0", Op: "count", Index: 0, Node: "n1", Gen: 1, Ranges: all},
		{ID: "rollup#0", Op: "rollup", Index: 0, Node: "n1", Gen: 1, Ranges: all},
		{ID: "sink#0", Op: "sink", Index: 0, Node: "n1", Gen: 1, Ranges: all},
	}}
	in, err := newInstance(&Node{}, d, &d.Instances[2])
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	in.op, in.stateful = r, nil
	return in, r
}

func batch(p job.Producer, kg job.KeyGroup, seqs ...uint64) []byte {
	var b wire.BatchBuilder
	for _, s := range seqs {
		b.Append(p, kg, s, job.Record{Key: []byte("k"), Time: 1, Value: int64(s)})
	}
	return b.Encode(nil)
}

// TestGapHoldingReordersTwoStreams: after a move, the new owner's first
// outputs of a (producer, key group) can reach a downstream before the old
// owner's last ones, on another stream. Numbers are dense, so the
// downstream holds what comes early and applies everything once, in order.
func TestGapHoldingReordersTwoStreams(t *testing.T) {
	p := job.MakeProducer(1, 7)
	const kg = job.KeyGroup(5)
	cases := []struct {
		name    string
		ft      wire.FTMode
		batches [][]uint64 // in arrival order
		want    []int64    // applied, in order
		held    int64      // left held
		dups    uint64
	}{
		{"in order", "spate", [][]uint64{{1, 2}, {3, 4}}, []int64{1, 2, 3, 4}, 0, 0},
		{"new owner first", "spate", [][]uint64{{3, 4}, {1, 2}}, []int64{1, 2, 3, 4}, 0, 0},
		{"three streams", "spate", [][]uint64{{5, 6}, {3, 4}, {1, 2}}, []int64{1, 2, 3, 4, 5, 6}, 0, 0},
		{"replayed over held", "spate", [][]uint64{{3, 4}, {3}, {1, 2, 3, 4}}, []int64{1, 2, 3, 4}, 0, 3},
		{"gap never filled", "spate", [][]uint64{{1}, {3, 4}}, []int64{1}, 2, 0},
		{"no holding without --ft spate", wire.FTNone, [][]uint64{{3, 4}, {1, 2}}, []int64{3, 4}, 0, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, r := testCount(t, tc.ft)
			for _, b := range tc.batches {
				if err := in.applyBatch(batch(p, kg, b...)); err != nil {
					t.Fatal(err)
				}
			}
			if len(r.got) != len(tc.want) {
				t.Fatalf("applied %v, want %v", r.got, tc.want)
			}
			for i := range tc.want {
				if r.got[i] != tc.want[i] {
					t.Fatalf("applied %v, want %v", r.got, tc.want)
				}
			}
			if h := in.stats().Held; int64(h) != tc.held {
				t.Fatalf("held %d, want %d", h, tc.held)
			}
			if d := in.nDup.Load(); d != tc.dups {
				t.Fatalf("%d duplicates, want %d", d, tc.dups)
			}
		})
	}
}

// TestReleaseDropsHeldRecordsOfTheRange: records held for a key group that
// moves away are forgotten with it (the new owner gets them by replay).
func TestReleaseDropsHeldRecordsOfTheRange(t *testing.T) {
	in, _ := testCount(t, "spate")
	p := job.MakeProducer(1, 7)
	_ = in.applyBatch(batch(p, 5, 3))
	_ = in.applyBatch(batch(p, 9, 2))
	in.owned[5] = false
	in.dropHeld(func(kg job.KeyGroup) bool { return in.owned[kg] })
	if h := in.stats().Held; h != 1 {
		t.Fatalf("held %d after the release of key group 5, want 1 (key group 9's)", h)
	}
}

// TestRetiredInstanceSkipsEmptyCheckpoints: an instance that owns no key
// group takes one checkpoint once it owns none (it records that it holds
// nothing) and none after it, until it emits or owns again.
func TestRetiredInstanceSkipsEmptyCheckpoints(t *testing.T) {
	in, _ := testCount(t, "spate")
	if in.idle() {
		t.Fatal("idle before any checkpoint")
	}
	in.ck.lastID, in.ck.base = 4, 1
	in.noteEmpty(4)
	if in.idle() {
		t.Fatal("idle while owning key groups")
	}
	for kg := range in.owned {
		in.owned[kg] = false
	}
	if in.idle() {
		t.Fatal("idle before a checkpoint taken while owning nothing")
	}
	in.ck.lastID = 5
	in.noteEmpty(5)
	if !in.idle() {
		t.Fatal("not idle: owns nothing, emitted nothing since its empty checkpoint")
	}
	in.outN++
	if in.idle() {
		t.Fatal("idle although it emitted since its last checkpoint")
	}
	in.ck.lastID = 6
	in.noteEmpty(6)
	if !in.idle() {
		t.Fatal("not idle after a checkpoint that holds its outputs")
	}
	in.ck.base = 0 // a failed write broke the chain
	if in.idle() {
		t.Fatal("idle although its last checkpoint was not written")
	}
	in.ck.base = 6
	in.owned[7] = true
	if in.idle() {
		t.Fatal("idle although it owns a key group again")
	}
}

// TestTrimsSparePinnedAndForeignKeyGroups: a completed checkpoint trims
// only key groups the instance owns and has not pinned for a pre-copy.
func TestTrimsSparePinnedAndForeignKeyGroups(t *testing.T) {
	in, _ := testCount(t, "spate")
	p := job.MakeProducer(0, 0)
	ps := []wire.Position{{P: p, KG: 5, Seq: 9}, {P: p, KG: 15, Seq: 9}, {P: p, KG: 25, Seq: 9}}
	in.rs.pinned = []job.Range{{Lo: 10, Hi: 20}}
	in.owned[25] = false
	got := in.trimmable(ps)
	if len(got) != 1 || got[0].KG != 5 {
		t.Fatalf("trimmable = %v, want only key group 5", got)
	}
	if len(ps) != 3 || ps[1].KG != 15 {
		t.Fatalf("trimmable changed its input: %v", ps)
	}
}

// TestGivingUpARangeUnpinsIt: the pin of a pre-copy ends with the move,
// so key groups that come back later are trimmed again.
func TestGivingUpARangeUnpinsIt(t *testing.T) {
	in, _ := testCount(t, "spate")
	in.rs.pinned = []job.Range{{Lo: 10, Hi: 20}, {Lo: 40, Hi: 50}}
	in.giveUp([]job.Range{{Lo: 10, Hi: 20}})
	if len(in.rs.pinned) != 1 || in.rs.pinned[0] != (job.Range{Lo: 40, Hi: 50}) {
		t.Fatalf("pinned after giving up [10,20): %v", in.rs.pinned)
	}
	if in.owned[15] || !in.owned[45] {
		t.Fatal("giveUp changed the wrong key groups")
	}
}

// A link whose placement a recovery's reroute has already widened to the
// new ranges (the coordinator widens them at the capture) still gains those
// key groups at the commit: the port routes them elsewhere until then, so
// the link must reconnect and replay them to their new owner.
func TestCommitReconnectsALinkRerouteWidened(t *testing.T) {
	old := &link{place: wire.Placement{ID: "count#2", Ranges: []job.Range{{Lo: 32, Hi: 64}}}}
	widened := &link{place: wire.Placement{ID: "count#0", Gen: 2, Ranges: []job.Range{{Lo: 0, Hi: 64}}}}
	pt := &port{links: []*link{widened, old}, owner: make([]int, 64)}
	for kg := range pt.owner {
		pt.owner[kg] = 0
		if kg >= 32 {
			pt.owner[kg] = 1
		}
	}
	if !gains(pt, widened, widened.place.Ranges) {
		t.Fatal("count#0 gains [32,64) at the commit, but it is not reconnected")
	}
	if gains(pt, widened, []job.Range{{Lo: 0, Hi: 32}}) {
		t.Fatal("a link that keeps its own key groups is reconnected")
	}
	if gains(pt, old, nil) {
		t.Fatal("a link that loses its key groups is reconnected")
	}
}

// TestAlignmentCompletesWhenAnInputEnds: under --ft global, count has
// barrier 5 from source#0 and holds its later messages, its end among
// them; source#1 stopped for the drain before the checkpoint's trigger
// reached it, so it sends its end and no barrier. Its end completes the
// alignment: the checkpoint is written, what was held is applied and
// count has every input ended. Before, the held end stayed held for ever
// and the drain never finished.
func TestAlignmentCompletesWhenAnInputEnds(t *testing.T) {
	in, r := testCount(t, "global")
	store := state.NewMemStore()
	in.n.store = &faultStore{Store: store}
	for _, pt := range in.ports {
		for _, l := range pt.links {
			l.err = errConnecting // no downstream: the barrier goes nowhere
		}
	}
	p := job.MakeProducer(1, 0)
	steps := []struct {
		m    inMsg
		done bool
	}{
		{inMsg{from: 0, gen: 1, kind: msgBarrier, wm: 5}, false},
		{inMsg{from: 0, gen: 1, kind: msgBatch, payload: batch(p, 3, 1, 2)}, false}, // held
		{inMsg{from: 0, gen: 1, kind: msgEnd}, false},                               // held
		{inMsg{from: 1, gen: 1, kind: msgEnd}, true},
	}
	for i, s := range steps {
		if got := in.handle(s.m); got != s.done {
			t.Fatalf("step %d: every input ended = %v, want %v", i, got, s.done)
		}
		if i == 2 && (len(in.align.held) != 2 || len(r.got) != 0) {
			t.Fatalf("step %d: %d messages held, %d records applied; want 2 held, none applied", i, len(in.align.held), len(r.got))
		}
	}
	if in.align.id != 0 || len(in.align.held) != 0 {
		t.Fatalf("alignment of checkpoint %d still holds %d messages", in.align.id, len(in.align.held))
	}
	if !slices.Equal(r.got, []int64{1, 2}) || !in.ended[0] || !in.ended[1] {
		t.Fatalf("applied %v, ended %v; want [1 2], both ended", r.got, in.ended)
	}
	if names, _ := store.List("count#0/"); len(names) != 1 {
		t.Fatalf("checkpoint files %q, want checkpoint 5's", names)
	}
}

// An instance made before a downstream moved (a pre-copy's staged
// instance, which no reroute reaches) looks for it where it went once
// it adopts the plan of its start, and counts only the new generation
// of a restored input.
func TestStagedInstanceAdoptsThePlacementsOfItsStart(t *testing.T) {
	f := newChain(t, 100, nil)
	in := f.instance(t)
	plan := slices.Clone(f.d.Instances)
	for i := range plan {
		switch plan[i].ID {
		case "sink#0", "source#1":
			plan[i].Node, plan[i].Gen = "n5", 2
		}
	}
	in.adoptPlacements(plan)
	found := false
	for _, pt := range in.ports {
		for _, l := range pt.links {
			if l.place.ID == "sink#0" {
				found = true
				if l.place.Node != "n5" || l.place.Gen != 2 {
					t.Fatalf("link to sink#0 at %s generation %d, want n5 generation 2", l.place.Node, l.place.Gen)
				}
			}
		}
	}
	if !found {
		t.Fatal("count#0 has no link to sink#0")
	}
	if g := in.inputGen[in.inputIndex["source#1"]]; g != 2 {
		t.Fatalf("source#1's generation at count#0: %d, want 2", g)
	}
}

// A slice whose pre-copy base is damaged is loaded from the old owner's
// checkpoint before it, when the restore names one; without it the
// restore fails (seed 585 lost the new owner so, and the run with it).
func TestSliceFallsBackBelowADamagedBase(t *testing.T) {
	f := newChain(t, 300, []chainStep{{lo: 200, hi: 400}})
	base, prev := f.files, f.files[:1]
	want, err := f.n.store.Get(prev[0])
	if err != nil {
		t.Fatal(err)
	}
	snap, err := state.Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.n.store.Put(base[1], []byte("damaged")); err != nil {
		t.Fatal(err)
	}
	all := []job.Range{{Lo: 0, Hi: job.KeyGroup(f.d.Job.Groups)}}
	for _, fallback := range [][]string{nil, prev} {
		in := f.instance(t)
		r := &wire.Restore{Slices: []wire.SliceLoad{{Chain: base, Fallback: fallback, Ranges: all, After: 1 << 62}}}
		err := in.restoreSlices(r, 0)
		if fallback == nil {
			if err == nil {
				t.Fatal("a damaged base without a fallback loaded")
			}
			continue
		}
		if err != nil {
			t.Fatalf("with the fallback: %v", err)
		}
		keys := 0
		for _, g := range in.stateful.Capture(true).Encode(nil) {
			keys += g.Len()
		}
		wantKeys := 0
		for _, g := range snap.Groups {
			wantKeys += g.Len()
		}
		if keys != wantKeys {
			t.Fatalf("loaded %d keys from the fallback, want its %d", keys, wantKeys)
		}
	}
}

// A slice brings its old owner's backup of the slice's producers along:
// once that owner falls back below the slice's chain, the new owner is
// the only one that still holds those outputs (seed 223: a downstream
// restored from before them waited on the gap for ever). Producers of
// other key groups stay where they are.
func TestSliceBringsTheBackupOfItsProducers(t *testing.T) {
	f := newChain(t, 300, []chainStep{{lo: 200, hi: 400}})
	old := f.instance(t)
	if _, err := old.restore(f.files); err != nil {
		t.Fatal(err)
	}
	moved := job.Range{Lo: 10, Hi: 70}
	in := f.instance(t)
	r := &wire.Restore{Slices: []wire.SliceLoad{{Chain: f.files, Ranges: []job.Range{moved}, After: 1 << 62}}}
	if err := in.restoreSlices(r, 0); err != nil {
		t.Fatal(err)
	}
	records := func(pi int, b interface {
		Replay(job.KeyGroup, map[job.Producer]uint64, func(job.Producer, job.KeyGroup, uint64, job.Record) error) error
	}, kg job.KeyGroup, p job.Producer) []string {
		var out []string
		err := b.Replay(kg, map[job.Producer]uint64{}, func(q job.Producer, _ job.KeyGroup, seq uint64, rec job.Record) error {
			if q == p {
				out = append(out, fmt.Sprintf("%d %v", seq, rec))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("port %d %v %v: %v", pi, p, kg, err)
		}
		return out
	}
	streams := 0
	for pi, pt := range old.ports {
		if pt.backup == nil {
			continue
		}
		got := in.ports[pi].backup
		for _, kg := range pt.backup.KeyGroups() {
			for _, p := range pt.backup.Producers(kg) {
				if !moved.Contains(job.KeyGroup(p.Unit())) {
					if h := got.High(p, kg); h != 0 {
						t.Fatalf("port %d: %v→%v of a key group that did not move is held up to %d", pi, p, kg, h)
					}
					continue
				}
				streams++
				if lo, hi := got.Low(p, kg), got.High(p, kg); lo != pt.backup.Low(p, kg) || hi != pt.backup.High(p, kg) {
					t.Fatalf("port %d: %v→%v held (%d, %d], the old owner's (%d, %d]", pi, p, kg, lo, hi, pt.backup.Low(p, kg), pt.backup.High(p, kg))
				}
				if w, g := records(pi, pt.backup, kg, p), records(pi, got, kg, p); !slices.Equal(w, g) {
					t.Fatalf("port %d: %v→%v replays %d records, the old owner's %d", pi, p, kg, len(g), len(w))
				}
			}
		}
	}
	if streams == 0 {
		t.Fatal("the fixture's backup has no stream of a moved key group")
	}
}

// TestADamagedCaptureIsWrittenAgain: an old owner keeps each capture it
// wrote (the moved range's only durable copy) until the rescale commits;
// a capture damaged at rest before the new owner loaded it is written
// again from that copy, and then loads (seed 1804: a capture damaged
// under a scale-in of rollup, 2,171 windows lost).
func TestADamagedCaptureIsWrittenAgain(t *testing.T) {
	f := newChain(t, 300, nil)
	old := f.instance(t)
	if _, err := old.restore(f.files); err != nil {
		t.Fatal(err)
	}
	pc := old.capture(7, true)
	pc.keep = true
	if err := old.persist(pc); err != nil {
		t.Fatal(err)
	}
	old.persisted(pc, nil)
	name := state.FileName(string(old.id), old.place.Gen, 7, true)
	all := []job.Range{{Lo: 0, Hi: job.KeyGroup(f.d.Job.Groups)}}
	old.rs.kept = map[uint64][]keptCapture{1: {{answer: &wire.Rescale{ID: 1, File: name, Ranges: all}, data: pc.kept}}}
	if err := f.n.store.Put(name, []byte("damaged at rest")); err != nil {
		t.Fatal(err)
	}
	if err := f.instance(t).loadSlice(name, all, true); err == nil {
		t.Fatal("a damaged capture loaded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old.rewrite(ctx, &wire.Rescale{ID: 1, File: name})
	waitFor(t, "the capture written again", func() bool {
		b, err := f.n.store.Get(name)
		return err == nil && bytes.Equal(b, pc.kept)
	})
	if err := f.instance(t).loadSlice(name, all, true); err != nil {
		t.Fatalf("the capture written again does not load: %v", err)
	}
}

// TestAHeldGiverFiresWhatItsReceiverHasPassed: an instance held by a
// rescale (a receiver of it too) that gives a range to a receiver whose
// watermark is past its own fires the range's windows up to the
// receiver's watermark before its capture, and nothing else; one not
// behind the receiver fires nothing (seed 79 under --recover parallel).
func TestAHeldGiverFiresWhatItsReceiverHasPassed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wm    int64
		fired bool
	}{{"behind the receiver", 4980, true}, {"level with it", 5000, false}} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := testCount(t, "spate")
			in.op = job.NewCount(in.spec)
			var out firedFrom
			for kg := range job.KeyGroup(4) {
				in.op.Process(kg, job.Record{Key: []byte(fmt.Sprintf("k%d", kg)), Time: 4100, Value: 1}, nil)
			}
			in.wm, in.rs.hold = tc.wm, true
			in.fireGiven(&wire.Rescale{Ranges: []job.Range{{Lo: 1, Hi: 3}}, MinWM: 5000}, &out)
			fired := out.kgs
			var want []job.KeyGroup
			if tc.fired {
				want = []job.KeyGroup{1, 1, 2, 2} // to rollup and to the sink
			}
			slices.Sort(fired)
			if !slices.Equal(fired, want) {
				t.Fatalf("fired the windows of key groups %v, want %v", fired, want)
			}
		})
	}
}

// firedFrom is an Emitter that keeps the key group of each output.
type firedFrom struct{ kgs []job.KeyGroup }

func (f *firedFrom) Emit(_ int, from job.KeyGroup, _ job.Record) { f.kgs = append(f.kgs, from) }
