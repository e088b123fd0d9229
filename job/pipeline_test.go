package job

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sliceReader is a Reader over records in memory.
type sliceReader struct {
	recs []Record
	i    int
}

func (r *sliceReader) Next() (Record, bool, error) {
	if r.i >= len(r.recs) {
		return Record{}, false, nil
	}
	r.i++
	return r.recs[r.i-1], true, nil
}

func readers(parts [][]Record) []Reader {
	rs := make([]Reader, len(parts))
	for i, p := range parts {
		rs[i] = &sliceReader{recs: p}
	}
	return rs
}

// randomInput draws a job spec and source partitions whose times wander
// back and forth, so that some records are late and windows interleave.
func randomInput(rng *rand.Rand) (*Spec, [][]Record) {
	spec := testSpec(1+rng.Int64N(20), rng.Int64N(30), 1+rng.IntN(16), 1+rng.IntN(5))
	pool := []string{"a", "b", "c", "key-4", "key-5", "é", "<&>", "\xff", "a\xfeb", "", "zz", "q\"", "x y"}
	pool = pool[:1+rng.IntN(len(pool))]
	parts := make([][]Record, 1+rng.IntN(3))
	for p := range parts {
		base := rng.Int64N(100) - 50
		for range rng.IntN(300) {
			base += rng.Int64N(5)
			t := base
			if rng.IntN(4) == 0 {
				t -= rng.Int64N(spec.Lateness + 10) // behind: late or not
			}
			parts[p] = append(parts[p], Record{
				Key:   []byte(pool[rng.IntN(len(pool))]),
				Time:  t,
				Value: rng.Int64N(201) - 100,
			})
		}
	}
	return spec, parts
}

// The pipeline simulator: sources, count instances, rollup instances and
// one sink, linked by FIFO channels that carry records and watermarks, as
// in the runtime. One step delivers the head of a random channel, lets a
// random source produce, or makes a random instance advance, so both the
// interleaving of channels and the pattern of Advance calls are random.

type simMsg struct {
	isWm bool
	wm   int64
	kg   KeyGroup
	rec  Record // owned copy
}

type simChan struct {
	to int // instance index
	q  []simMsg
}

type simInst struct {
	kind  string
	op    Keyed
	ins   []int            // channel ids
	inWm  map[int]int64    // channel id -> last watermark
	outs  map[string][]int // downstream kind -> channel id by instance index of that kind
	adv   int64            // last watermark passed to Advance and forwarded
	owner []int            // for keyed kinds: key group -> instance index
}

// seqID names the output sequence of one key group of one operator.
type seqID struct {
	kind string
	kg   KeyGroup
}

type simSource struct {
	recs  []Record
	pos   int
	clock SourceClock
	outs  []int // channel ids by count instance
	wm    int64
	done  bool
}

type sim struct {
	t       *testing.T
	rng     *rand.Rand
	spec    *Spec
	chans   []*simChan
	insts   []*simInst
	byKind  map[string][]int // instance indices by kind
	sources []*simSource
	seqs    map[seqID][]emitted // what each (kind, from key group) emitted, in order
}

func (s *sim) addChan(to int) int {
	s.chans = append(s.chans, &simChan{to: to})
	id := len(s.chans) - 1
	s.insts[to].ins = append(s.insts[to].ins, id)
	s.insts[to].inWm[id] = NoWatermark
	return id
}

func (s *sim) push(ch int, m simMsg) {
	if !m.isWm {
		m.rec.Key = bytes.Clone(m.rec.Key)
		m.rec.Data = bytes.Clone(m.rec.Data)
	}
	s.chans[ch].q = append(s.chans[ch].q, m)
}

// randomOwners assigns the key groups to n instances at random.
func randomOwners(rng *rand.Rand, groups, n int) []int {
	own := make([]int, groups)
	for kg := range own {
		own[kg] = rng.IntN(n)
	}
	return own
}

func newSim(t *testing.T, rng *rand.Rand, spec *Spec, parts [][]Record, sink *Sink) *sim {
	s := &sim{t: t, rng: rng, spec: spec, byKind: map[string][]int{}, seqs: map[seqID][]emitted{}}
	add := func(kind string, op Keyed, owner []int) {
		s.insts = append(s.insts, &simInst{kind: kind, op: op, inWm: map[int]int64{}, outs: map[string][]int{}, adv: NoWatermark, owner: owner})
		s.byKind[kind] = append(s.byKind[kind], len(s.insts)-1)
	}
	nc, nr := 1+rng.IntN(3), 1+rng.IntN(3)
	countOwner := randomOwners(rng, spec.Groups, nc)
	rollupOwner := randomOwners(rng, spec.Groups, nr)
	for range nc {
		add(KindCount, NewCount(spec), countOwner)
	}
	for range nr {
		add(KindRollup, NewRollup(spec), rollupOwner)
	}
	add(KindSink, sink, nil)
	sinkIdx := s.byKind[KindSink][0]
	for _, c := range s.byKind[KindCount] {
		for _, r := range s.byKind[KindRollup] {
			s.insts[c].outs[KindRollup] = append(s.insts[c].outs[KindRollup], s.addChan(r))
		}
		s.insts[c].outs[KindSink] = []int{s.addChan(sinkIdx)}
	}
	for _, r := range s.byKind[KindRollup] {
		s.insts[r].outs[KindSink] = []int{s.addChan(sinkIdx)}
	}
	for _, p := range parts {
		src := &simSource{recs: p, clock: SourceClock{Lateness: spec.Lateness}, wm: NoWatermark}
		for _, c := range s.byKind[KindCount] {
			src.outs = append(src.outs, s.addChan(c))
		}
		s.sources = append(s.sources, src)
	}
	return s
}

// emitter routes what instance i emits, as the runtime does, and records
// each key group's output sequence.
type simEmitter struct {
	s *sim
	i int
}

func (e simEmitter) Emit(port int, from KeyGroup, rec Record) {
	s, in := e.s, e.s.insts[e.i]
	var to string
	switch {
	case in.kind == KindCount && port == 0:
		to = KindRollup
	case in.kind == KindCount && port == 1 || in.kind == KindRollup && port == 0:
		to = KindSink
	default:
		s.t.Fatalf("%s emitted on port %d", in.kind, port)
	}
	// Count's sink records and rollup's records are computed from the key
	// group of their key.
	if (to == KindSink) && from != GroupOf(rec.Key, s.spec.Groups) {
		s.t.Fatalf("%s emitted key %q from %v, want %v", in.kind, rec.Key, from, GroupOf(rec.Key, s.spec.Groups))
	}
	id := seqID{in.kind, from}
	s.seqs[id] = append(s.seqs[id], emitted{port, from, string(rec.Key), rec.Time, rec.Value, string(rec.Data)})
	kg := GroupOf(rec.Key, s.spec.Groups)
	dest := 0
	if to == KindRollup {
		dest = s.insts[s.byKind[KindRollup][0]].owner[kg]
	}
	s.push(in.outs[to][dest], simMsg{kg: kg, rec: rec})
}

// advance moves instance i to a watermark no later than the minimum over
// its inputs, sometimes short of it, and forwards that watermark.
func (s *sim) advance(i int) {
	in := s.insts[i]
	m := int64(MaxWatermark)
	for _, ch := range in.ins {
		m = min(m, in.inWm[ch])
	}
	if m <= in.adv {
		in.op.Advance(m, simEmitter{s, i}) // a watermark that does not move: a no-op
		return
	}
	wm := m
	if m != MaxWatermark && s.rng.IntN(3) == 0 {
		wm = m - s.rng.Int64N(2*s.spec.Window) // short of the minimum
		if wm <= in.adv {
			wm = m
		}
	}
	in.op.Advance(wm, simEmitter{s, i})
	if s.rng.IntN(4) == 0 {
		in.op.Advance(wm, simEmitter{s, i}) // the same watermark again
	}
	in.adv = wm
	for _, chs := range in.outs {
		for _, ch := range chs {
			s.push(ch, simMsg{isWm: true, wm: wm})
		}
	}
}

func (s *sim) produce(src *simSource) {
	if src.pos == len(src.recs) {
		src.done = true
		for _, ch := range src.outs {
			s.push(ch, simMsg{isWm: true, wm: MaxWatermark})
		}
		return
	}
	rec := src.recs[src.pos]
	src.pos++
	if src.clock.Observe(rec.Time) {
		return
	}
	kg := GroupOf(rec.Key, s.spec.Groups)
	c := s.insts[s.byKind[KindCount][0]].owner[kg]
	s.push(src.outs[c], simMsg{kg: kg, rec: rec})
	if wm := src.clock.Watermark(); wm > src.wm && s.rng.IntN(2) == 0 {
		src.wm = wm
		for _, ch := range src.outs {
			s.push(ch, simMsg{isWm: true, wm: wm})
		}
	}
}

func (s *sim) deliver(ch int) {
	c := s.chans[ch]
	m := c.q[0]
	c.q = c.q[1:]
	in := s.insts[c.to]
	if !m.isWm {
		in.op.Process(m.kg, m.rec, simEmitter{s, c.to})
		return
	}
	if m.wm < in.inWm[ch] {
		s.t.Fatalf("channel %d: watermark went back from %d to %d", ch, in.inWm[ch], m.wm)
	}
	in.inWm[ch] = m.wm
	if s.rng.IntN(2) == 0 {
		s.advance(c.to)
	}
}

// run steps the simulation until every source has ended, every channel is
// empty and every instance has advanced to MaxWatermark.
func (s *sim) run() {
	type step struct {
		kind string
		i    int
	}
	var steps []step
	for {
		steps = steps[:0]
		for i, src := range s.sources {
			if !src.done {
				steps = append(steps, step{"produce", i})
			}
		}
		for i, c := range s.chans {
			if len(c.q) > 0 {
				steps = append(steps, step{"deliver", i})
			}
		}
		for i, in := range s.insts {
			for _, ch := range in.ins {
				if in.inWm[ch] <= in.adv {
					goto next
				}
			}
			steps = append(steps, step{"advance", i})
		next:
		}
		if len(steps) == 0 {
			break
		}
		st := steps[s.rng.IntN(len(steps))]
		switch st.kind {
		case "produce":
			s.produce(s.sources[st.i])
		case "deliver":
			s.deliver(st.i)
		case "advance":
			s.advance(st.i)
		}
	}
	for i, in := range s.insts {
		if in.adv != MaxWatermark {
			s.t.Fatalf("instance %d (%s) ended at watermark %d", i, in.kind, in.adv)
		}
		switch op := in.op.(type) {
		case *Count:
			if op.Late() != 0 {
				s.t.Fatalf("count instance %d: %d late records", i, op.Late())
			}
		case *Rollup:
			if op.Late() != 0 || op.Malformed() != 0 {
				s.t.Fatalf("rollup instance %d: %d late, %d malformed records", i, op.Late(), op.Malformed())
			}
		}
	}
}

// referenceSeqs runs the records that the sources let through one single
// count instance and then one single rollup instance, each with a single
// final Advance, and returns each key group's output sequence.
func referenceSeqs(spec *Spec, parts [][]Record) map[seqID][]emitted {
	seqs := map[seqID][]emitted{}
	note := func(kind string, out []emitted) {
		for _, e := range out {
			id := seqID{kind, e.From}
			seqs[id] = append(seqs[id], e)
		}
	}
	c, r := NewCount(spec), NewRollup(spec)
	var out recorder
	for _, p := range parts {
		clock := SourceClock{Lateness: spec.Lateness}
		for _, rec := range p {
			if !clock.Observe(rec.Time) {
				c.Process(GroupOf(rec.Key, spec.Groups), rec, &out)
			}
		}
	}
	c.Advance(MaxWatermark, &out)
	counted := out.take()
	note(KindCount, counted)
	for _, e := range counted {
		if e.Port == 0 {
			r.Process(GroupOf([]byte(e.Key), spec.Groups), Record{Key: []byte(e.Key), Time: e.Time, Value: e.Value, Data: []byte(e.Data)}, &out)
		}
	}
	r.Advance(MaxWatermark, &out)
	note(KindRollup, out.take())
	return seqs
}

// TestPipelineMatchesOracle feeds random input through count, rollup and
// the sink under random channel interleavings, key-group placements and
// Advance patterns, and checks that the sink wrote exactly the oracle's
// results, and that each key group emitted exactly the same sequence as a
// single instance that advances once at the end.
func TestPipelineMatchesOracle(t *testing.T) {
	cases := 100
	if testing.Short() {
		cases = 20
	}
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 99))
		spec, parts := randomInput(rng)
		want, err := Oracle(spec, readers(parts), nil)
		if err != nil {
			t.Fatal(err)
		}
		ref := referenceSeqs(spec, parts)
		for run := range 3 {
			var buf bytes.Buffer
			sink := NewSink(&buf)
			s := newSim(t, rng, spec, parts, sink)
			s.run()
			if err := sink.Flush(); err != nil {
				t.Fatal(err)
			}
			got, err := ReadResults(&buf, "sink")
			if err != nil {
				t.Fatalf("seed %d run %d: %v", seed, run, err)
			}
			if rep := Compare(want, got); !rep.OK() || len(got) != len(want) {
				t.Fatalf("seed %d run %d: %v\n%v", seed, run, rep, rep.Diffs)
			}
			if !maps.EqualFunc(s.seqs, ref, slices.Equal) {
				for id, seq := range ref {
					checkEmitted(t, fmt.Sprintf("seed %d run %d: %s/%v", seed, run, id.kind, id.kg), s.seqs[id], seq)
				}
				t.Fatalf("seed %d run %d: %d key groups emitted, want %d", seed, run, len(s.seqs), len(ref))
			}
		}
	}
}

func TestOracle(t *testing.T) {
	spec := testSpec(10, 5, 8, 1)
	parts := [][]Record{
		{
			{Key: []byte("a"), Time: 1, Value: 1},
			{Key: []byte("b"), Time: 3, Value: 2},
			{Key: []byte("a"), Time: 20, Value: 4},
			{Key: []byte("a"), Time: 14, Value: 8}, // late: 14 < 20-5
			{Key: []byte("c"), Time: 15, Value: 16},
		},
		{
			{Key: []byte("b"), Time: 100, Value: 32},
			{Key: []byte("a"), Time: 5, Value: 64},  // late in this partition
			{Key: []byte("c"), Time: 2, Value: 128}, // late
		},
	}
	g := GroupName(nil, 1)
	want := []Result{
		{Op: KindCount, Key: "a", Window: 0, Count: 1, Sum: 1, Total: 1},
		{Op: KindCount, Key: "a", Window: 20, Count: 1, Sum: 4, Total: 2},
		{Op: KindCount, Key: "b", Window: 0, Count: 1, Sum: 2, Total: 1},
		{Op: KindCount, Key: "b", Window: 100, Count: 1, Sum: 32, Total: 2},
		{Op: KindCount, Key: "c", Window: 10, Count: 1, Sum: 16, Total: 1},
		{Op: KindRollup, Key: g, Window: 0, Count: 2, Sum: 3, Top: []TopKey{{"a", 1}, {"b", 1}}},
		{Op: KindRollup, Key: g, Window: 10, Count: 1, Sum: 16, Top: []TopKey{{"c", 1}}},
		{Op: KindRollup, Key: g, Window: 20, Count: 1, Sum: 4, Top: []TopKey{{"a", 1}}},
		{Op: KindRollup, Key: g, Window: 100, Count: 1, Sum: 32, Top: []TopKey{{"b", 1}}},
	}
	got, err := Oracle(spec, readers(parts), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep := Compare(want, got); !rep.OK() || !slices.EqualFunc(got, want, func(a, b Result) bool { return sameResult(&a, &b) }) {
		t.Fatalf("%v\ngot  %+v\nwant %+v", rep, got, want)
	}

	// Limits cut each partition.
	got, err = Oracle(spec, readers(parts), []uint64{2, 0})
	if err != nil {
		t.Fatal(err)
	}
	want = []Result{
		{Op: KindCount, Key: "a", Window: 0, Count: 1, Sum: 1, Total: 1},
		{Op: KindCount, Key: "b", Window: 0, Count: 1, Sum: 2, Total: 1},
		{Op: KindRollup, Key: g, Window: 0, Count: 2, Sum: 3, Top: []TopKey{{"a", 1}, {"b", 1}}},
	}
	if rep := Compare(want, got); !rep.OK() || len(got) != len(want) {
		t.Fatalf("limits 2, 0: %v\ngot %+v", rep, got)
	}

	if _, err := Oracle(spec, readers(parts), []uint64{1}); err == nil {
		t.Fatal("one limit for two partitions: no error")
	}
	if _, err := Oracle(spec, []Reader{errReader{}}, nil); err == nil {
		t.Fatal("a failing reader: no error")
	}
}

type errReader struct{}

func (errReader) Next() (Record, bool, error) { return Record{}, false, errSinkTest }

// TestOracleTopTies checks the oracle's top 3 on its own: ties by key.
func TestOracleTopTies(t *testing.T) {
	spec := testSpec(math.MaxInt32, 0, 4, 1)
	var p []Record
	for _, kc := range []struct {
		key string
		n   int
	}{{"d", 2}, {"c", 3}, {"b", 2}, {"a", 1}, {"e", 3}} {
		for range kc.n {
			p = append(p, Record{Key: []byte(kc.key), Time: 0, Value: 1})
		}
	}
	got, err := Oracle(spec, readers([][]Record{p}), nil)
	if err != nil {
		t.Fatal(err)
	}
	roll := got[len(got)-1]
	if want := []TopKey{{"c", 3}, {"e", 3}, {"b", 2}}; roll.Op != KindRollup || !slices.Equal(roll.Top, want) {
		t.Fatalf("rollup %+v, want top %v", roll, want)
	}
}
