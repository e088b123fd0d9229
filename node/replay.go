package node

import (
	"context"
	"sync/atomic"

	"spate/job"
	"spate/traces"
	"spate/wire"
)

// A source replays to a downstream that lost records (--ft spate, a
// recovery or a reconnect) on a goroutine of its own, so that its other
// downstreams keep receiving live records: the job's unaffected part never
// waits for a recovering instance to catch up.
//
// While a replay runs, the link belongs to it: the source's loop counts
// the records for that link (their sequence numbers are taken) but neither
// sends them nor watermarks. The replay re-reads each partition from its
// marker with its own reader, up to the position the loop had reached
// when it started; then, on the loop's goroutine, it learns how far the
// loop has gone since. When what is left is small it sends the rest there
// and hands the link back to the loop, which sends from then on; otherwise
// it goes on reading toward the new position. A replay reads all key
// groups of a partition and sends those of the link, so it gains on the
// loop and the hand-over comes.

// handoverGap is at most how many records of all partitions a replay
// leaves to be read on the loop's goroutine at the hand-over.
const handoverGap = 8192

// replay is a source's replay in progress toward one link.
type replay struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
	cur    []*replayCursor
	to     job.InstanceID // the downstream
	ranges []job.Range    // its key groups, as when the replay started
	b      wire.BatchBuilder
	buf    []byte
	n      uint64 // records the downstream lacked when the replay started
	err    error // the link failed while the goroutine wrote
	over   atomic.Bool
}

// replayCursor is where a replay is in one partition.
type replayCursor struct {
	ps       *partState
	prod     job.Producer
	r        traces.Reader
	clock    job.SourceClock
	counters []uint64
	have     []uint64 // what the downstream has applied, per key group
	pos      uint64   // the next position to read
	target   uint64   // read up to here
	lacked   uint64   // where the loop was when the replay started
}

// startReplay opens a replay toward l of every record it lacks after the
// given positions and starts it. It runs on the source's goroutine.
func (s *sourceState) startReplay(in *instance, l *link, after []wire.Position) {
	ctx, cancel := context.WithCancel(context.Background())
	rp := &replay{ctx: ctx, cancel: cancel, done: make(chan struct{}), to: l.place.ID, ranges: l.place.Ranges}
	for _, ps := range s.parts {
		prod := job.MakeProducer(in.opIdx, ps.p)
		have := make([]uint64, in.spec.Groups)
		for _, a := range after {
			if a.P == prod {
				have[a.KG] = a.Seq
			}
		}
		m := ps.markers[s.markerFor(ps, have, rp.owns)]
		if m.Pos >= ps.pos {
			continue
		}
		r, err := s.src.Open(ps.p, m.Pos)
		if err != nil {
			in.n.event("error", in.id, nil, "replay partition %d: %v", ps.p, err)
			continue
		}
		c := &replayCursor{ps: ps, prod: prod, r: r, counters: append([]uint64(nil), m.Counters...),
			have: have, pos: m.Pos, target: ps.pos, lacked: ps.pos}
		c.clock = job.SourceClock{Lateness: in.spec.Lateness}
		c.clock.Restore(m.Max, m.Started)
		rp.cur = append(rp.cur, c)
	}
	if len(rp.cur) == 0 {
		cancel()
		return
	}
	l.b.Reset() // what the loop batched for l is in the replay too
	l.replay = rp
	go rp.run(in, l)
}

// run is the replay's goroutine.
func (rp *replay) run(in *instance, l *link) {
	defer close(rp.done)
	defer func() {
		select {
		case <-in.quit: // the loop is gone: nobody else will
			rp.close(in)
		default:
		}
	}()
	for {
		if !rp.readAll(in, l) || !rp.flush(in, l) {
			return
		}
		handed := false
		ok := in.call(rp.ctx, func() {
			if l.replay != rp || rp.ctx.Err() != nil {
				return // stopped, or finished by the loop
			}
			gap := uint64(0)
			for _, c := range rp.cur {
				c.target = c.ps.pos
				gap += c.target - c.pos
			}
			if gap <= handoverGap {
				rp.finish(in, l)
				handed = true
			}
		})
		if !ok || handed {
			return
		}
	}
}

// readAll reads every cursor up to its target; false if the replay was
// stopped or the link failed.
func (rp *replay) readAll(in *instance, l *link) bool {
	for _, c := range rp.cur {
		for c.pos < c.target {
			if rp.ctx.Err() != nil {
				return false
			}
			if !rp.step(in, l, c) {
				break
			}
			if rp.b.Size() >= batchBytes && !rp.flush(in, l) {
				return false
			}
		}
	}
	return true
}

// step reads and, if l needs it, batches the record at c.pos; false if
// the partition cannot be read there.
func (rp *replay) step(in *instance, l *link, c *replayCursor) bool {
	rec, ok, err := c.r.Next()
	if err != nil || !ok {
		in.n.event("error", in.id, nil, "replay partition %d ended early at %d: %v", c.ps.p, c.pos, err)
		c.target = c.pos // nothing more can come from here
		return false
	}
	c.pos++
	if c.clock.Observe(rec.Time) {
		return true
	}
	kg := job.GroupOf(rec.Key, in.spec.Groups)
	c.counters[kg]++
	if c.counters[kg] > c.have[kg] && rp.owns(kg) {
		rp.b.Append(c.prod, kg, c.counters[kg], rec)
		if c.pos <= c.lacked {
			rp.n++ // lacked at the start; later ones the loop skipped
		}
	}
	return true
}

// flush sends the batch built so far on the link the replay owns.
func (rp *replay) flush(in *instance, l *link) bool {
	if rp.b.Len() == 0 {
		return true
	}
	if l.local != nil {
		payload := rp.b.Encode(nil)
		rp.b.Reset()
		return l.local.deliver(rp.ctx, inMsg{from: l.fromIdx, gen: in.place.Gen, kind: msgBatch, payload: payload})
	}
	rp.buf = rp.b.Encode(rp.buf[:0])
	rp.b.Reset()
	err := l.w.WriteFrame(wire.TBatch, rp.buf)
	if err == nil {
		err = l.w.Flush()
	}
	if err != nil {
		rp.err = err
		return false
	}
	return true
}

// finish reads the rest on the loop's goroutine, sends it and gives the
// link back to the loop.
func (rp *replay) finish(in *instance, l *link) {
	for _, c := range rp.cur {
		c.target = c.ps.pos
	}
	if rp.readAll(in, l) && rp.flush(in, l) {
		l.replay = nil
		in.sendWatermarkTo(l, in.currentWatermark())
	} else {
		l.replay = nil
		if rp.err != nil {
			in.linkFailed(l, rp.err)
		}
	}
	rp.close(in)
}

// close releases the readers and reports what was replayed, once.
func (rp *replay) close(in *instance) {
	if rp.over.Swap(true) {
		return
	}
	for _, c := range rp.cur {
		c.r.Close()
	}
	if rp.n > 0 {
		in.nReplayed.Add(rp.n)
		in.n.event("replay", in.id, map[string]any{"to": string(rp.to), "records": rp.n},
			"replayed %d records to %s", rp.n, rp.to)
	}
}

// endReplay ends the replay toward l, if one runs, on the source's
// goroutine. With complete, what is left is read and sent here (the
// source is ending its streams); otherwise the replay is dropped and its
// stream closed (the link is to be reconnected).
func (in *instance) endReplay(l *link, complete bool) {
	rp := l.replay
	if rp == nil {
		return
	}
	rp.cancel()
	if !complete && l.st != nil {
		l.st.Close() // a write blocked on it returns
	}
	<-rp.done
	if rp.err != nil {
		l.replay = nil
		in.linkFailed(l, rp.err)
		rp.close(in)
		return
	}
	if !complete {
		l.replay = nil
		rp.close(in)
		return
	}
	rp.ctx = context.Background() // reading on, here
	rp.finish(in, l)
}

// owns reports whether kg is one of the key groups the replay is for.
func (rp *replay) owns(kg job.KeyGroup) bool {
	for _, r := range rp.ranges {
		if r.Contains(kg) {
			return true
		}
	}
	return false
}
