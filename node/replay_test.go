package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"spate/job"
	"spate/wire"
)

// received is what a fake downstream got: the sequence numbers of each
// (producer, key group), in arrival order.
type received struct {
	mu    sync.Mutex
	seqs  map[[2]uint64][]uint64
	n     int
	ended bool
}

func (r *received) count() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.ended
}

// consume reads what in is sent until its end, while gate lets it.
func consume(t *testing.T, in *instance, r *received, gate <-chan struct{}) {
	go func() {
		<-gate
		for m := range in.in {
			r.mu.Lock()
			switch m.kind {
			case msgBatch:
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

func waitFor(t *testing.T, what string, cond func() bool) {
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
	var have []wire.Position
	r0.mu.Lock()
	for k, s := range r0.seqs {
		have = append(have, wire.Position{P: job.Producer(k[0]), KG: job.KeyGroup(k[1]), Seq: s[len(s)/2]})
	}
	r0.mu.Unlock()
	l0 := links["count#0"]
	if !src.call(ctx, func() {
		l0.local = second
		src.src.startReplay(src, l0, have)
	}) {
		t.Fatal("the source's loop does not answer")
	}
	n1, _ := r1.count()
	waitFor(t, "count#1 receiving live records while count#0 reads nothing", func() bool {
		n, _ := r1.count()
		return n >= n1+50_000
	})
	close(gate) // count#0 reads again
	waitFor(t, "the replay handing the link back", func() bool {
		var live bool
		src.call(ctx, func() { live = l0.replay == nil })
		return live
	})
	n2, _ := r2.count()
	waitFor(t, "count#0 receiving live records", func() bool { n, _ := r2.count(); return n >= n2+10_000 })
	src.drain(map[int]uint64{0: 0})
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
