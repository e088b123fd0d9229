package node

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"spate/job"
	"spate/wire"
)

// received is what a fake downstream got: the sequence numbers of each
// (producer, key group), in arrival order.
type received struct {
	mu      sync.Mutex
	seqs    map[[2]uint64][]uint64
	n       int
	batches int
	ended   bool
}

func (r *received) count() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.ended
}

// half is, per (producer, key group), the number of the middle record
// received: where a new generation that applied about half of it is.
func (r *received) half() []wire.Position {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []wire.Position
	for k, s := range r.seqs {
		ps = append(ps, wire.Position{P: job.Producer(k[0]), KG: job.KeyGroup(k[1]), Seq: s[len(s)/2]})
	}
	return ps
}

// consume reads what in is sent until its end, while gate lets it.
func consume(t testing.TB, in *instance, r *received, gate <-chan struct{}) {
	go func() {
		<-gate
		for m := range in.in {
			r.mu.Lock()
			switch m.kind {
			case msgBatch:
				r.batches++
				err := wire.DecodeBatch(m.payload, func(p job.Producer, kg job.KeyGroup, seq uint64, _ job.Record) error {
					k := [2]uint64{uint64(p), uint64(kg)}
					r.seqs[k] = append(r.seqs[k], seq)
					r.n++
					return nil
				})
				if err != nil {
					t.Errorf("a batch does not decode: %v", err)
				}
			case msgEnd:
				r.ended = true
			}
			r.mu.Unlock()
		}
	}()
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSourceReplayLeavesTheOtherLinksLive: a source replays to a
// downstream that lost records on a goroutine of its own. While that
// downstream reads nothing (as a recovering instance still busy), the
// source's other downstream keeps receiving live records; once it reads
// again, it gets every record it lacked and every later one exactly once,
// in order, and the link goes back to the source's loop.
func TestSourceReplayLeavesTheOtherLinksLive(t *testing.T) {
	t.Run("handed back, then drained", func(t *testing.T) { testSourceReplay(t, false) })
	// The drain comes while the replay waits on its downstream: the source
	// finishes the replay before it ends the stream, and nothing the
	// waiting replay held is lost.
	t.Run("drained while replaying", func(t *testing.T) { testSourceReplay(t, true) })
}

func testSourceReplay(t *testing.T, drainEarly bool) {
	spec := job.WindowCount(map[string]int{"source": 1, "count": 2, "rollup": 1, "sink": 1}, 1000, 0)
	half := job.KeyGroup(spec.Groups / 2)
	d := &wire.Deploy{Job: spec, FT: "spate", DataDir: t.TempDir(), FlushMs: 5,
		Source: wire.SourceSpec{Keys: 1000, Rate: 100_000},
		Instances: []wire.Placement{
			{ID: "source#0", Op: "source", Index: 0, Node: "n1", Gen: 1, Partitions: []int{0}},
			{ID: "count#0", Op: "count", Index: 0, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: 0, Hi: half}}},
			{ID: "count#1", Op: "count", Index: 1, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: half, Hi: job.KeyGroup(spec.Groups)}}},
			{ID: "rollup#0", Op: "rollup", Index: 0, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: 0, Hi: job.KeyGroup(spec.Groups)}}},
			{ID: "sink#0", Op: "sink", Index: 0, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: 0, Hi: job.KeyGroup(spec.Groups)}}},
		}}
	newInst := func(i int) *instance {
		in, err := newInstance(&Node{}, d, &d.Instances[i])
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	src, first, other, second := newInst(0), newInst(1), newInst(2), newInst(1)
	second.in = make(chan inMsg) // a send to it waits until it reads: a downstream that is busy
	links := map[job.InstanceID]*link{}
	for _, l := range src.ports[0].links {
		l.err, l.fromIdx = nil, 0
		links[l.place.ID] = l
	}
	links["count#0"].local, links["count#1"].local = first, other
	if err := src.src.open(src, nil); err != nil {
		t.Fatal(err)
	}
	src.ck.next = time.Now().Add(time.Hour) // no checkpoints here
	open := make(chan struct{})
	close(open)
	r0, r1, r2 := &received{seqs: map[[2]uint64][]uint64{}}, &received{seqs: map[[2]uint64][]uint64{}}, &received{seqs: map[[2]uint64][]uint64{}}
	consume(t, first, r0, open)
	consume(t, other, r1, open)
	gate := make(chan struct{})
	consume(t, second, r2, gate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer src.stop()
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); src.runSource(ctx) }()

	waitFor(t, "count#0 receiving records", func() bool { n, _ := r0.count(); return n >= 20_000 })

	// count#0 is replaced by a new generation that has applied about half
	// of what the old one received.
	have := r0.half()
	l0 := links["count#0"]
	var rp *replay
	if !src.call(ctx, func() {
		l0.local = second
		src.src.startReplay(src, l0, have)
		rp = l0.replay
	}) {
		t.Fatal("the source's loop does not answer")
	}
	n1, _ := r1.count()
	waitFor(t, "count#1 receiving live records while count#0 reads nothing", func() bool {
		n, _ := r1.count()
		return n >= n1+50_000
	})
	if drainEarly {
		src.drain(map[int]uint64{0: 0})
		select { // the source stopped the replay's goroutine, which held a batch
		case <-rp.done:
		case <-time.After(2 * time.Minute):
			t.Fatal("the replay's goroutine did not stop")
		}
		close(gate) // count#0 reads again
	} else {
		close(gate)
		waitFor(t, "the replay handing the link back", func() bool {
			var live bool
			src.call(ctx, func() { live = l0.replay == nil })
			return live
		})
		n2, _ := r2.count()
		waitFor(t, "count#0 receiving live records", func() bool { n, _ := r2.count(); return n >= n2+10_000 })
		src.drain(map[int]uint64{0: 0})
	}
	<-loopDone
	waitFor(t, "both ends", func() bool { _, e1 := r1.count(); _, e2 := r2.count(); return e1 && e2 })

	from := map[[2]uint64]uint64{}
	for _, p := range have {
		from[[2]uint64{uint64(p.P), uint64(p.KG)}] = p.Seq
	}
	check := func(name string, r *received, lo, hi job.KeyGroup) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		for p, last := range src.ports[0].seqs {
			for kg := lo; kg < hi; kg++ {
				k := [2]uint64{uint64(p), uint64(kg)}
				got, next := r.seqs[k], from[k]+1
				if name == "count#1" {
					next = 1
				}
				for i, s := range got {
					if s != next {
						t.Fatalf("%s, producer %d key group %d: record %d has number %d, want %d", name, p, kg, i, s, next)
					}
					next++
				}
				if next-1 != last[kg] {
					t.Fatalf("%s, producer %d key group %d: got up to %d, the source sent %d", name, p, kg, next-1, last[kg])
				}
			}
		}
	}
	check("count#0 (new generation)", r2, 0, half)
	check("count#1", r1, half, job.KeyGroup(spec.Groups))
}

// TestBackupReplayLeavesTheOtherLinksLive: the same for a keyed instance,
// which replays from its upstream backup: while the new generation of
// rollup#0 reads nothing, rollup#1 keeps receiving; then rollup#0 gets
// every record it lacked and every later one exactly once, in order.
func TestBackupReplayLeavesTheOtherLinksLive(t *testing.T) {
	spec := job.WindowCount(map[string]int{"source": 1, "count": 1, "rollup": 2, "sink": 1}, 1000, 0)
	all := []job.Range{{Lo: 0, Hi: job.KeyGroup(spec.Groups)}}
	half := job.KeyGroup(spec.Groups / 2)
	d := &wire.Deploy{Job: spec, FT: "spate", DataDir: t.TempDir(), FlushMs: 5,
		Instances: []wire.Placement{
			{ID: "source#0", Op: "source", Index: 0, Node: "n1", Gen: 1, Partitions: []int{0}},
			{ID: "count#0", Op: "count", Index: 0, Node: "n1", Gen: 1, Ranges: all},
			{ID: "rollup#0", Op: "rollup", Index: 0, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: 0, Hi: half}}},
			{ID: "rollup#1", Op: "rollup", Index: 1, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: half, Hi: job.KeyGroup(spec.Groups)}}},
			{ID: "sink#0", Op: "sink", Index: 0, Node: "n1", Gen: 1, Ranges: all},
		}}
	newInst := func(i int) *instance {
		in, err := newInstance(&Node{}, d, &d.Instances[i])
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	cnt, first, other, second, sink := newInst(1), newInst(2), newInst(3), newInst(2), newInst(4)
	second.in = make(chan inMsg) // busy: a send waits until it reads
	links := map[job.InstanceID]*link{}
	for _, pt := range cnt.ports {
		for _, l := range pt.links {
			l.err, l.fromIdx = nil, 0
			links[l.place.ID] = l
		}
	}
	links["rollup#0"].local, links["rollup#1"].local, links["sink#0"].local = first, other, sink
	cnt.ck.next = time.Now().Add(time.Hour)
	open := make(chan struct{})
	close(open)
	newReceived := func() *received { return &received{seqs: map[[2]uint64][]uint64{}} }
	r0, r1, r2 := newReceived(), newReceived(), newReceived()
	consume(t, first, r0, open)
	consume(t, other, r1, open)
	consume(t, sink, newReceived(), open)
	gate := make(chan struct{})
	consume(t, second, r2, gate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer cnt.stop()
	go cnt.runKeyed(ctx)

	next := 0
	emit := func(n int) {
		t.Helper()
		if !cnt.call(ctx, func() {
			for range n {
				key := []byte(fmt.Sprintf("key-%d", next%5000))
				cnt.Emit(0, job.GroupOf(key, spec.Groups), job.Record{Key: key, Time: int64(next), Value: 1})
				next++
			}
			cnt.flushAll()
		}) {
			t.Fatal("count#0's loop does not answer")
		}
	}
	emit(20_000)
	waitFor(t, "rollup#0 receiving records", func() bool { n, _ := r0.count(); return n >= 5_000 })

	have := r0.half() // what the new generation of rollup#0 has applied
	l0 := links["rollup#0"]
	if !cnt.call(ctx, func() {
		l0.local = second
		cnt.startBackupReplay(0, l0, have)
	}) {
		t.Fatal("count#0's loop does not answer")
	}
	n1, _ := r1.count()
	emit(20_000)
	waitFor(t, "rollup#1 receiving live records while rollup#0 reads nothing", func() bool {
		n, _ := r1.count()
		return n >= n1+5_000
	})
	close(gate)
	waitFor(t, "the replay handing the link back", func() bool {
		var live bool
		cnt.call(ctx, func() { live = l0.replay == nil })
		return live
	})
	emit(5_000)

	from := map[[2]uint64]uint64{}
	for _, p := range have {
		from[[2]uint64{uint64(p.P), uint64(p.KG)}] = p.Seq
	}
	var sent map[job.Producer][]uint64
	cnt.call(ctx, func() {
		sent = map[job.Producer][]uint64{}
		for p, s := range cnt.ports[0].seqs {
			sent[p] = slices.Clone(s)
		}
	})
	check := func(name string, r *received, lo, hi job.KeyGroup, from map[[2]uint64]uint64) {
		t.Helper()
		waitFor(t, name+" receiving everything", func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			for p, last := range sent {
				for kg := lo; kg < hi; kg++ {
					k := [2]uint64{uint64(p), uint64(kg)}
					if s := r.seqs[k]; last[kg] > from[k] && (len(s) == 0 || s[len(s)-1] < last[kg]) {
						return false
					}
				}
			}
			return true
		})
		r.mu.Lock()
		defer r.mu.Unlock()
		for p, last := range sent {
			for kg := lo; kg < hi; kg++ {
				k := [2]uint64{uint64(p), uint64(kg)}
				next := from[k] + 1
				for i, s := range r.seqs[k] {
					if s != next {
						t.Fatalf("%s, producer %d key group %d: record %d has number %d, want %d", name, p, kg, i, s, next)
					}
					next++
				}
				if next-1 != max(last[kg], from[k]) {
					t.Fatalf("%s, producer %d key group %d: got up to %d, count#0 sent %d", name, p, kg, next-1, last[kg])
				}
			}
		}
	}
	check("rollup#0 (new generation)", r2, 0, half, from)
	check("rollup#1", r1, half, job.KeyGroup(spec.Groups), map[[2]uint64]uint64{})
}

// logReplay is a source of one generator partition under --ft spate,
// its loop running, toward four count instances that take what it sends.
type logReplay struct {
	src     *instance
	ps      *partState
	l0      *link // toward count#0, with a quarter of the key groups
	r0      *received
	ctx     context.Context
	newInst func(i int) *instance
}

// sent is a record as a downstream got it.
type sent struct {
	p     job.Producer
	kg    job.KeyGroup
	seq   uint64
	key   string
	time  int64
	value int64
}

// startLogReplay starts the source, and returns once count#0 has got n
// records.
func startLogReplay(tb testing.TB, keys, n int) *logReplay {
	spec := job.WindowCount(map[string]int{"source": 1, "count": 4, "rollup": 1, "sink": 1}, 1000, 0)
	q := job.KeyGroup(spec.Groups / 4)
	all := job.Range{Lo: 0, Hi: job.KeyGroup(spec.Groups)}
	d := &wire.Deploy{Job: spec, FT: "spate", DataDir: tb.TempDir(), FlushMs: 5,
		Source: wire.SourceSpec{Keys: keys, Rate: 100_000},
		Instances: []wire.Placement{
			{ID: "source#0", Op: "source", Index: 0, Node: "n1", Gen: 1, Partitions: []int{0}},
			{ID: "count#0", Op: "count", Index: 0, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: 0, Hi: q}}},
			{ID: "count#1", Op: "count", Index: 1, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: q, Hi: 2 * q}}},
			{ID: "count#2", Op: "count", Index: 2, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: 2 * q, Hi: 3 * q}}},
			{ID: "count#3", Op: "count", Index: 3, Node: "n1", Gen: 1, Ranges: []job.Range{{Lo: 3 * q, Hi: all.Hi}}},
			{ID: "rollup#0", Op: "rollup", Index: 0, Node: "n1", Gen: 1, Ranges: []job.Range{all}},
			{ID: "sink#0", Op: "sink", Index: 0, Node: "n1", Gen: 1, Ranges: []job.Range{all}},
		}}
	lr := &logReplay{}
	lr.newInst = func(i int) *instance {
		in, err := newInstance(&Node{}, d, &d.Instances[i])
		if err != nil {
			tb.Fatal(err)
		}
		return in
	}
	src := lr.newInst(0)
	open := make(chan struct{})
	close(open)
	for _, l := range src.ports[0].links {
		l.err, l.fromIdx = nil, 0
		l.local = lr.newInst(1 + int(l.place.Index))
		r := &received{seqs: map[[2]uint64][]uint64{}}
		consume(tb, l.local, r, open)
		if l.place.ID == "count#0" {
			lr.l0, lr.r0 = l, r
		}
	}
	if err := src.src.open(src, nil); err != nil {
		tb.Fatal(err)
	}
	lr.src, lr.ps = src, src.src.parts[0]
	if lr.ps.glog == nil {
		tb.Fatal("a generator's partition under --ft spate keeps no log of key groups")
	}
	src.ck.next = time.Now().Add(time.Hour) // no checkpoints here
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	tb.Cleanup(src.stop)
	lr.ctx = ctx
	go src.runSource(ctx)
	waitFor(tb, "count#0 receiving records", func() bool { got, _ := lr.r0.count(); return got >= n })
	return lr
}

// replay runs, on the source's goroutine (in a call), a replay toward
// count#0 of what it lacks after the positions, to a new instance that
// collects what it is sent (keep: the records; else only how many), from
// the log of key groups or reading the partition whole. It returns
// whether the replay read the log, and from where.
func (lr *logReplay) replay(tb testing.TB, after []wire.Position, logged, keep bool) (out []sent, n int, usedLog bool, logFrom uint64) {
	coll, live := lr.newInst(1), lr.l0.local
	lr.l0.local = coll
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range coll.in {
			if m.kind != msgBatch {
				continue
			}
			if err := wire.DecodeBatch(m.payload, func(p job.Producer, kg job.KeyGroup, seq uint64, r job.Record) error {
				if keep {
					out = append(out, sent{p, kg, seq, string(r.Key), r.Time, r.Value})
				}
				n++
				return nil
			}); err != nil {
				tb.Errorf("a batch does not decode: %v", err)
			}
		}
	}()
	saved := lr.ps.glog
	if !logged {
		lr.ps.glog = nil
	}
	rp := lr.src.src.openReplay(lr.src, lr.l0, after)
	lr.ps.glog = saved
	if rp == nil {
		tb.Fatal("nothing to replay")
	}
	usedLog, logFrom = rp.cur[0].logged, rp.cur[0].logFrom
	if !rp.readAll(lr.src, lr.l0) || !rp.flush(lr.src, lr.l0) {
		tb.Fatalf("the replay failed: %v", rp.err)
	}
	rp.close(lr.src)
	lr.l0.local = live
	close(coll.in)
	<-done
	return out, n, usedLog, logFrom
}

// TestSourceReplayFromTheLogOfKeyGroups: a source's replay that reads
// its partition's log of key groups, generating only the records its
// downstream lacks, sends the same records (numbers, keys, times,
// values), each key group's in order, as one that reads the partition
// whole; also when the log starts after the replay's marker, so that it
// reads up to the log's start and takes the log from there.
func TestSourceReplayFromTheLogOfKeyGroups(t *testing.T) {
	lr := startLogReplay(t, 1000, 60_000)
	check := func(name string, after []wire.Position, wantFrom func(uint64) bool) {
		var viaLog, whole []sent
		var from uint64
		var used bool
		if !lr.src.call(lr.ctx, func() {
			viaLog, _, used, from = lr.replay(t, after, true, true)
			whole, _, _, _ = lr.replay(t, after, false, true)
		}) {
			t.Fatal("the source's loop does not answer")
		}
		if !used || !wantFrom(from) {
			t.Fatalf("%s: the replay read the log %v, from %d", name, used, from)
		}
		if len(whole) < 1000 {
			t.Fatalf("%s: only %d records replayed", name, len(whole))
		}
		// A batch holds its records by key group: compare them in the
		// order of their numbers, which each path sends in order.
		for _, xs := range [][]sent{viaLog, whole} {
			slices.SortStableFunc(xs, func(a, b sent) int {
				return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.kg, b.kg))
			})
			for i := 1; i < len(xs); i++ {
				if a, b := xs[i-1], xs[i]; a.p == b.p && a.kg == b.kg && b.seq != a.seq+1 {
					t.Fatalf("%s: producer %d key group %d: %d follows %d", name, b.p, b.kg, b.seq, a.seq)
				}
			}
		}
		if len(viaLog) != len(whole) {
			t.Fatalf("%s: %d records sent from the log, %d reading the partition", name, len(viaLog), len(whole))
		}
		for i := range whole {
			if viaLog[i] != whole[i] {
				t.Fatalf("%s: record %d sent from the log is %+v, reading the partition %+v", name, i, viaLog[i], whole[i])
			}
		}
	}
	check("half of what count#0 got", lr.r0.half(), func(from uint64) bool { return from > 0 })
	// The log loses its first chunk: a replay of everything reads the
	// partition up to where the log starts now, then the log.
	if !lr.src.call(lr.ctx, func() { lr.ps.glog.drop(groupLogChunk, ^uint64(0)) }) {
		t.Fatal("the source's loop does not answer")
	}
	check("everything, the log's first chunk dropped", nil, func(from uint64) bool { return from == groupLogChunk })
}

// BenchmarkSourceReplay: the CPU a source spends on a replay toward one
// of four count instances (a quarter of the key groups), from the log of
// key groups or reading the partition whole, per record sent; 1,000,000
// keys, the recovery benchmark's.
func BenchmarkSourceReplay(b *testing.B) {
	lr := startLogReplay(b, 1_000_000, 250_000)
	for _, mode := range []struct {
		name   string
		logged bool
	}{{"log", true}, {"read", false}} {
		b.Run(mode.name, func(b *testing.B) {
			sent := 0
			if !lr.src.call(lr.ctx, func() {
				b.ResetTimer()
				for b.Loop() {
					_, n, _, _ := lr.replay(b, nil, mode.logged, false)
					sent += n
				}
			}) {
				b.Fatal("the source's loop does not answer")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sent), "ns/record")
		})
	}
}
