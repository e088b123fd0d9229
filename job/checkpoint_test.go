package job

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"spate/state"
)

// The checkpoint property test. Each stateful stage (count, then rollup)
// runs over a fixed input log: records of key groups and watermarks, in the
// order the runtime would deliver them. Instances of the stage take
// checkpoints at random points (full or delta, as a state.Planner says, with
// the capture encoded on another goroutine while processing goes on), write
// them to a state.MemStore, and garbage-collect what is no longer needed.
// At random points an instance crashes: a fresh instance is restored from
// the merged chain of its latest checkpoint (or, that file corrupted, of the
// previous one) and replays the log from the checkpointed position, its
// output numbered per key group from the checkpointed counters so that
// what it emits again is compared with what was emitted, not applied twice.
// Key groups also move between instances at runtime (a checkpoint of the
// old owner, Restore on the new one, DropGroups on the old). In the end
// every key group's output must be exactly that of one instance that never
// failed, and the sink's results exactly the oracle's.

// logEntry is one step of a stage's input: a record of key group kg, or a
// watermark.
type logEntry struct {
	isWm bool
	wm   int64
	kg   KeyGroup
	rec  Record
}

// countLog interleaves the source partitions at random into count's input:
// the records each partition's clock lets through and, now and then, the
// minimum of the partitions' watermarks (a finished partition counts as
// MaxWatermark); MaxWatermark last.
func countLog(rng *rand.Rand, spec *Spec, parts [][]Record) []logEntry {
	var log []logEntry
	clocks := make([]SourceClock, len(parts))
	wms := make([]int64, len(parts))
	pos := make([]int, len(parts))
	for p := range parts {
		clocks[p].Lateness = spec.Lateness
		wms[p] = NoWatermark
		if len(parts[p]) == 0 {
			wms[p] = MaxWatermark
		}
	}
	last := int64(NoWatermark)
	for {
		var live []int
		for p := range parts {
			if pos[p] < len(parts[p]) {
				live = append(live, p)
			}
		}
		if len(live) == 0 {
			break
		}
		p := live[rng.IntN(len(live))]
		rec := parts[p][pos[p]]
		pos[p]++
		if !clocks[p].Observe(rec.Time) {
			log = append(log, logEntry{kg: GroupOf(rec.Key, spec.Groups), rec: rec})
		}
		wms[p] = clocks[p].Watermark()
		if pos[p] == len(parts[p]) {
			wms[p] = MaxWatermark
		}
		if m := slices.Min(wms); m > last && m != MaxWatermark && rng.IntN(3) == 0 {
			log = append(log, logEntry{isWm: true, wm: m})
			last = m
		}
	}
	return append(log, logEntry{isWm: true, wm: MaxWatermark})
}

// byGroup is an Emitter that keeps what it gets per From key group.
type byGroup map[KeyGroup][]emitted

func (b byGroup) Emit(port int, from KeyGroup, rec Record) {
	b[from] = append(b[from], emitted{port, from, string(rec.Key), rec.Time, rec.Value, string(rec.Data)})
}

// posRecorder records, per From key group, the log position of each
// output.
type posRecorder struct {
	pos int
	at  map[KeyGroup][]int
}

func (p *posRecorder) Emit(_ int, from KeyGroup, _ Record) { p.at[from] = append(p.at[from], p.pos) }

// reference runs one instance of mk over log and returns its output per
// key group with the log position of each, and rollup's input log: after
// each watermark, what was fired toward rollup (port 0 of count), then the
// watermark.
func reference(spec *Spec, mk func() Stateful, log []logEntry) (byGroup, map[KeyGroup][]int, []logEntry) {
	op, out := mk(), byGroup{}
	at := &posRecorder{at: map[KeyGroup][]int{}}
	var next []logEntry
	var fired recorder
	for i, e := range log {
		at.pos = i
		if !e.isWm {
			op.Process(e.kg, e.rec, multiEmitter{out, at})
			continue
		}
		op.Advance(e.wm, multiEmitter{out, &fired, at})
		for _, f := range fired.take() {
			if f.Port == 0 {
				next = append(next, logEntry{kg: GroupOf([]byte(f.Key), spec.Groups),
					rec: Record{Key: []byte(f.Key), Time: f.Time, Value: f.Value, Data: []byte(f.Data)}})
			}
		}
		next = append(next, e)
	}
	return out, at.at, next
}

type multiEmitter []Emitter

func (m multiEmitter) Emit(port int, from KeyGroup, rec Record) {
	for _, e := range m {
		e.Emit(port, from, rec)
	}
}

// ckInst is one instance of the stage under test.
type ckInst struct {
	name     string
	gen      uint64
	maxID    uint64 // the highest checkpoint id it ever used
	op       Stateful
	counters map[KeyGroup]int // output numbers per key group
	planner  *state.Planner
	points   []state.Ref // restore points, oldest first (the last two count)
	flight   *ckFlight
}

// ckFlight is a checkpoint being encoded.
type ckFlight struct {
	plan     state.Plan
	gen      uint64
	sections map[string][]byte
	done     chan []state.GroupData
}

type ckSim struct {
	t       *testing.T
	rng     *rand.Rand
	what    string
	spec    *Spec
	mk      func() Stateful
	log     []logEntry
	store   *state.MemStore
	cfg     state.Config
	insts   []*ckInst
	owner   []int // key group -> instance index
	out     byGroup
	want    byGroup            // the reference output
	wantAt  map[KeyGroup][]int // the log position of each reference output
	pos     int                // the log position being applied
	crashes int
	moves   int
	events  []string
}

func (s *ckSim) fatalf(format string, args ...any) {
	s.t.Helper()
	tail := s.events[max(0, len(s.events)-12):]
	s.t.Fatalf("%s: %s\nlast events:\n  %s", s.what, fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
}

func (s *ckSim) note(format string, args ...any) {
	s.events = append(s.events, fmt.Sprintf(format, args...))
}

// ckEmitter numbers an instance's output per key group and applies it at
// most once: a number already applied must carry the same record. Each
// output must be the reference's of that number, emitted at the same log
// position: a restored instance behaves exactly as one that never failed.
type ckEmitter struct {
	s   *ckSim
	idx int
}

func (e ckEmitter) Emit(port int, from KeyGroup, rec Record) {
	s, in := e.s, e.s.insts[e.idx]
	if s.owner[from] != e.idx {
		s.fatalf("%s emitted for %v, owned by %s", in.name, from, s.insts[s.owner[from]].name)
	}
	n := in.counters[from]
	in.counters[from] = n + 1
	em := emitted{port, from, string(rec.Key), rec.Time, rec.Value, string(rec.Data)}
	if n >= len(s.want[from]) || s.want[from][n] != em || s.wantAt[from][n] != s.pos {
		var want emitted
		at := -1
		if n < len(s.want[from]) {
			want, at = s.want[from][n], s.wantAt[from][n]
		}
		s.fatalf("%s emitted output %d of %v at log position %d:\n  %v\nthe reference, at %d:\n  %v", in.name, n, from, s.pos, em, at, want)
	}
	have := s.out[from]
	switch {
	case n < len(have):
		if have[n] != em {
			s.fatalf("%s re-emitted output %d of %v as\n  %v\nbut it was\n  %v", in.name, n, from, em, have[n])
		}
	case n == len(have):
		s.out[from] = append(have, em)
	default:
		s.fatalf("%s emitted output %d of %v, only %d applied", in.name, n, from, len(have))
	}
}

func (s *ckSim) apply(idx, pos int) {
	e := s.log[pos]
	s.pos = pos
	in := s.insts[idx]
	if e.isWm {
		in.op.Advance(e.wm, ckEmitter{s, idx})
	} else if s.owner[e.kg] == idx {
		in.op.Process(e.kg, e.rec, ckEmitter{s, idx})
	}
}

func (s *ckSim) owned(idx int) map[KeyGroup]bool {
	own := map[KeyGroup]bool{}
	for kg, o := range s.owner {
		if o == idx {
			own[KeyGroup(kg)] = true
		}
	}
	return own
}

// Sections: "pos" is the log position, "counters" the output numbers.
func sections(pos int, counters map[KeyGroup]int) map[string][]byte {
	b := binary.AppendUvarint(nil, uint64(len(counters)))
	for _, kg := range slices.Sorted(maps.Keys(counters)) {
		b = binary.AppendUvarint(b, uint64(kg))
		b = binary.AppendUvarint(b, uint64(counters[kg]))
	}
	return map[string][]byte{"pos": binary.AppendUvarint(nil, uint64(pos)), "counters": b}
}

func readSections(sec map[string][]byte, own map[KeyGroup]bool) (pos int, counters map[KeyGroup]int) {
	p, _ := binary.Uvarint(sec["pos"])
	b := sec["counters"]
	n, w := binary.Uvarint(b)
	b = b[w:]
	counters = map[KeyGroup]int{}
	for range n {
		kg, w1 := binary.Uvarint(b)
		c, w2 := binary.Uvarint(b[w1:])
		b = b[w1+w2:]
		if own[KeyGroup(kg)] {
			counters[KeyGroup(kg)] = int(c)
		}
	}
	return int(p), counters
}

// checkpoint starts a checkpoint of instance idx at log position pos: the
// capture on this goroutine, the encoding on another.
func (s *ckSim) checkpoint(idx, pos int) {
	in := s.insts[idx]
	if in.flight != nil {
		s.join(idx, true)
	}
	plan := in.planner.Next()
	c := in.op.Capture(plan.Full)
	f := &ckFlight{plan: plan, gen: in.gen, sections: sections(pos, in.counters), done: make(chan []state.GroupData, 1)}
	go func() { f.done <- c.Encode(nil) }()
	in.flight = f
	in.maxID = max(in.maxID, plan.ID)
	s.note("%s: checkpoint %d (full %v) at %d", in.name, plan.ID, plan.Full, pos)
}

// join waits for instance idx's checkpoint and writes it; ok false makes
// the write fail.
func (s *ckSim) join(idx int, ok bool) {
	in := s.insts[idx]
	f := in.flight
	in.flight = nil
	groups := <-f.done
	snap := &state.Snapshot{Instance: in.name, Gen: f.gen, ID: f.plan.ID, Full: f.plan.Full,
		Base: f.plan.Base, Parent: f.plan.Parent, Sections: f.sections, Groups: groups}
	if !ok {
		s.store.FailPuts(errors.New("disk full"))
	}
	name, size, err := state.Put(s.store, snap)
	s.store.FailPuts(nil)
	if !ok {
		if err == nil {
			s.fatalf("a failing Put succeeded")
		}
		in.planner.Failed()
		s.note("%s: checkpoint %d lost", in.name, f.plan.ID)
		return
	}
	if err != nil {
		s.fatalf("%s: %v", in.name, err)
	}
	in.planner.Persisted(int64(size))
	ref, _ := state.ParseRef(name)
	in.points = append(in.points, ref)
	s.note("%s: checkpoint %d durable (%d bytes)", in.name, f.plan.ID, size)
	s.collect(in.name)
}

// collect deletes the files of instance name that no restore point needs:
// its own latest two, and those other instances restore from.
func (s *ckSim) collect(name string) {
	var keep []state.Ref
	for _, in := range s.insts {
		if in.name == name && len(in.points) > 2 {
			in.points = in.points[len(in.points)-2:]
		}
		for _, r := range in.points {
			if r.Instance == name {
				keep = append(keep, r)
			}
		}
	}
	if len(keep) == 0 {
		return
	}
	names, _ := s.store.List(name + "/")
	drop, err := state.Collectable(state.ParseRefs(names), keep)
	if err != nil {
		s.fatalf("collect %s: %v", name, err)
	}
	for _, r := range drop {
		if err := s.store.Delete(r.Name()); err != nil {
			s.fatalf("collect: %v", err)
		}
	}
}

// shared reports whether another instance restores from ref.
func (s *ckSim) shared(ref state.Ref, not *ckInst) bool {
	for _, in := range s.insts {
		if in != not && slices.Contains(in.points, ref) {
			return true
		}
	}
	return false
}

// crash replaces instance idx by a fresh one restored from its latest
// restore point (corrupting that file first, sometimes, to force the
// fallback to the previous one), which then replays the log up to pos.
func (s *ckSim) crash(idx, pos int) {
	in := s.insts[idx]
	if in.flight != nil { // lost with the process
		<-in.flight.done
		in.flight = nil
	}
	s.crashes++
	cands := in.points
	if n := len(cands); n >= 2 && cands[n-1].Instance == in.name && !s.shared(cands[n-1], in) && s.rng.IntN(3) == 0 {
		if err := s.store.Corrupt(cands[n-1].Name()); err != nil {
			s.fatalf("corrupt: %v", err)
		}
		s.note("%s: corrupted %s", in.name, cands[n-1].Name())
	}
	var snap *state.Snapshot
	var target state.Ref
	for len(cands) > 0 {
		target = cands[len(cands)-1]
		var err error
		if snap, err = state.Load(s.store, target); err == nil {
			break
		}
		if !errors.Is(err, state.ErrCorrupt) {
			s.fatalf("%s: load %s: %v", in.name, target.Name(), err)
		}
		cands = cands[:len(cands)-1]
	}
	if len(cands) == 0 && len(in.points) > 0 {
		s.fatalf("%s: no restore point loads", in.name)
	}
	in.points = cands
	in.gen++
	in.op = s.mk()
	own := s.owned(idx)
	from := 0
	in.counters = map[KeyGroup]int{}
	in.planner = state.NewPlanner(s.cfg, in.maxID+1)
	if snap != nil {
		var groups []state.GroupData
		for _, g := range snap.Groups {
			if own[KeyGroup(g.KG)] {
				groups = append(groups, g)
			}
		}
		if err := in.op.Restore(state.WholeGroups(groups)); err != nil {
			s.fatalf("%s: restore %s: %v", in.name, target.Name(), err)
		}
		from, in.counters = readSections(snap.Sections, own)
		if target.Instance == in.name && len(groups) == len(snap.Groups) && s.rng.IntN(2) == 0 {
			// Continue the restored chain instead of starting over.
			names, _ := s.store.List(in.name + "/")
			chain, err := state.Chain(state.ParseRefs(names), target)
			if err != nil {
				s.fatalf("%s: %v", in.name, err)
			}
			in.planner = state.Resume(s.cfg, state.ChainState{Base: true, Deltas: len(chain) - 1}, chain[0].ID, target.ID)
		}
	}
	s.note("%s: crashed at %d, generation %d restored from %v (position %d)", in.name, pos, in.gen, target, from)
	for j := from; j < pos; j++ {
		s.apply(idx, j)
	}
}

// move hands some key groups of instance a to a new instance or to an
// existing one, at log position pos.
func (s *ckSim) move(a, pos int) {
	ia := s.insts[a]
	own := slices.Sorted(maps.Keys(s.owned(a)))
	if len(own) == 0 {
		return
	}
	s.rng.Shuffle(len(own), func(i, j int) { own[i], own[j] = own[j], own[i] })
	moving := own[:1+s.rng.IntN(len(own))]
	mset := map[KeyGroup]bool{}
	for _, kg := range moving {
		mset[kg] = true
	}
	// The old owner's checkpoint is the slice's recovery point.
	s.checkpoint(a, pos)
	s.join(a, true)
	ref := ia.points[len(ia.points)-1]
	snap, err := state.Load(s.store, ref)
	if err != nil {
		s.fatalf("move: %v", err)
	}
	var groups []state.GroupData
	for _, g := range snap.Groups {
		if mset[KeyGroup(g.KG)] {
			groups = append(groups, g)
		}
	}
	_, counters := readSections(snap.Sections, mset)

	b := s.rng.IntN(len(s.insts) + 1)
	if b == a || len(s.insts) >= 4 {
		b = len(s.insts)
	}
	isNew := b == len(s.insts)
	if isNew {
		nb := &ckInst{name: fmt.Sprintf("%s#%d", s.what, b), gen: 1, op: s.mk(), counters: map[KeyGroup]int{},
			planner: state.NewPlanner(s.cfg, 1), points: []state.Ref{ref}}
		s.insts = append(s.insts, nb)
	}
	ib := s.insts[b]
	if ib.flight != nil {
		s.join(b, true)
	}
	if err := ib.op.Restore(state.WholeGroups(groups)); err != nil {
		s.fatalf("move: restore into %s: %v", ib.name, err)
	}
	maps.Copy(ib.counters, counters)
	ia.op.DropGroups(moving)
	for _, kg := range moving {
		s.owner[kg] = b
		delete(ia.counters, kg)
	}
	if !isNew {
		// An instance that took groups over checkpoints them with its own,
		// fully, before it goes on: its earlier restore points lack them.
		ib.planner = state.NewPlanner(s.cfg, ib.maxID+1)
		s.checkpoint(b, pos)
		s.join(b, true)
		ib.points = ib.points[len(ib.points)-1:]
	}
	s.moves++
	s.note("moved %v from %s to %s at %d", moving, ia.name, ib.name, pos)
}

// run drives the stage over its log with random checkpoints, crashes and
// moves, and returns the applied output per key group.
func (s *ckSim) run(ninst int) byGroup {
	s.out = byGroup{}
	s.owner = randomOwners(s.rng, s.spec.Groups, ninst)
	for i := range ninst {
		s.insts = append(s.insts, &ckInst{name: fmt.Sprintf("%s#%d", s.what, i), gen: 1, op: s.mk(),
			counters: map[KeyGroup]int{}, planner: state.NewPlanner(s.cfg, 1)})
	}
	ckProb := 2 + s.rng.IntN(10) // percent per instance and step
	for pos := 0; pos <= len(s.log); pos++ {
		for idx, in := range s.insts {
			switch r := s.rng.IntN(1000); {
			case r < 10*ckProb:
				s.checkpoint(idx, pos)
			case r < 300 && in.flight != nil:
				s.join(idx, s.rng.IntN(10) != 0)
			case r < 310 && s.crashes < 4:
				s.crash(idx, pos)
			case r < 313 && s.moves < 3:
				s.move(idx, pos)
			}
		}
		if pos < len(s.log) {
			for idx := range s.insts {
				s.apply(idx, pos)
			}
		}
	}
	for idx, in := range s.insts {
		if in.flight != nil {
			s.join(idx, true)
		}
	}
	if s.rng.IntN(2) == 0 { // a crash after the end replays only duplicates
		s.crash(s.rng.IntN(len(s.insts)), len(s.log))
	}
	return s.out
}

func TestCheckpointRestoreMatchesOracle(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	stats := map[string]int{}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 2024))
		spec, parts := randomInput(rng)
		cfg := state.Config{FullEvery: 1 + rng.IntN(6), MaxChainRatio: []float64{0, 1, 3}[rng.IntN(3)]}
		log := countLog(rng, spec, parts)

		var results []Result
		for _, stage := range []struct {
			name string
			mk   func() Stateful
		}{
			{KindCount, func() Stateful { return NewCount(spec) }},
			{KindRollup, func() Stateful { return NewRollup(spec) }},
		} {
			want, wantAt, next := reference(spec, stage.mk, log)
			s := &ckSim{t: t, rng: rng, what: fmt.Sprintf("seed %d %s", seed, stage.name), spec: spec, mk: stage.mk,
				log: log, store: state.NewMemStore(), cfg: cfg, want: want, wantAt: wantAt}
			got := s.run(1 + rng.IntN(3))
			for kg, seq := range want {
				if !slices.Equal(got[kg], seq) {
					checkEmitted(t, fmt.Sprintf("%s: %v", s.what, kg), got[kg], seq)
				}
			}
			if len(got) != len(want) {
				s.fatalf("output for %d key groups, want %d", len(got), len(want))
			}
			for _, seq := range got {
				for _, e := range seq {
					if stage.name == KindCount && e.Port == 1 || stage.name == KindRollup {
						var r Result
						if err := ResultOf(Record{Key: []byte(e.Key), Time: e.Time, Value: e.Value, Data: []byte(e.Data)}, &r); err != nil {
							t.Fatal(err)
						}
						rs, err := ReadResults(strings.NewReader(string(r.AppendJSON(nil))+"\n"), "sink") // what the sink writes
						if err != nil {
							t.Fatal(err)
						}
						results = append(results, rs...)
					}
				}
			}
			stats["crashes"] += s.crashes
			stats["moves"] += s.moves
			stats["checkpoints"] += s.store.Puts()
			log = next
		}
		want, err := Oracle(spec, readers(parts), nil)
		if err != nil {
			t.Fatal(err)
		}
		SortResults(results)
		if rep := Compare(want, results); !rep.OK() || len(results) != len(want) {
			t.Fatalf("seed %d: %v\n%v", seed, rep, rep.Diffs)
		}
	}
	t.Logf("%v", stats)
	if stats["crashes"] == 0 || stats["moves"] == 0 || stats["checkpoints"] == 0 {
		t.Fatalf("the test did not exercise recovery: %v", stats)
	}
}
