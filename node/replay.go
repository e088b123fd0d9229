package node

import (
	"context"
	"sync/atomic"

	"spate/events"
	"spate/internal/human"
	"spate/job"
	"spate/traces"
	"spate/wire"
)

// An instance replays to a downstream that lost records (--ft spate, a
// recovery or a reconnect) on a goroutine of its own, so that its other
// downstreams keep receiving live records: the job's unaffected part never
// waits for a recovering instance to catch up.
//
// While a replay runs, the link belongs to it: the instance's loop numbers
// the records for that link (and a keyed instance keeps them in its
// backup, as always) but neither sends them nor watermarks. Then, on the
// loop's goroutine, the replay sends what is left and hands the link back
// to the loop, which sends from then on.
//
// A source's replay re-reads each partition from its marker with its own
// reader, up to the position the loop had reached when it started; then it
// learns how far the loop has gone since. When what is left is small it
// sends the rest on the loop's goroutine and hands over; otherwise it goes
// on reading toward the new position. It reads all key groups of a
// partition and sends those of the link, so it gains on the loop.
//
// A keyed instance's replay takes, on the loop's goroutine, the records
// the downstream lacks from the backup, batched (a copy: the loop goes on
// appending and trimming); the goroutine sends the batches; the hand-over
// sends from the backup what was appended since.

// handoverGap is at most how many records of all partitions a replay
// leaves to be read on the loop's goroutine at the hand-over.
const handoverGap = 1 << 16

// replay is a replay in progress toward one link.
type replay struct {
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}   // closed when the goroutine has returned
	cur     []*replayCursor // a source's
	keyed   *keyedReplay    // a keyed instance's
	to      job.InstanceID  // the downstream
	ranges  []job.Range     // its key groups, as when the replay started
	owned   []bool          // by key group: in ranges
	b       wire.BatchBuilder
	buf     []byte
	pending []byte // an encoded batch not sent yet
	n       uint64 // records the downstream lacked when the replay started
	err     error  // the link failed while the goroutine wrote
	over    atomic.Bool
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
	buf      []job.Record
	kgs      []job.KeyGroup // the key groups of buf, from a traces.GroupReader
	// From logFrom on, the partition's log of key groups (grouplog.go)
	// says which records to read: the reader is at rpos and skips to
	// each one l needs. Before it, the partition is read as it comes.
	logged  bool
	logFrom uint64
	log     groupView
	rpos    uint64
	sk      traces.Skipper     // with logged: r's
	gr      traces.GroupReader // with logged: r's
}

func newReplay(l *link, groups int) *replay {
	ctx, cancel := context.WithCancel(context.Background())
	rp := &replay{ctx: ctx, cancel: cancel, done: make(chan struct{}), to: l.place.ID, ranges: l.place.Ranges,
		owned: make([]bool, groups)}
	for _, r := range rp.ranges {
		for kg := r.Lo; kg < min(r.Hi, job.KeyGroup(groups)); kg++ {
			rp.owned[kg] = true
		}
	}
	return rp
}

// openReplay opens, at the markers, a replay toward l of every record
// it lacks after the given positions; nil if it lacks nothing.
func (s *sourceState) openReplay(in *instance, l *link, after []wire.Position) *replay {
	rp := newReplay(l, in.spec.Groups)
	for _, ps := range s.parts {
		prod := job.MakeProducer(in.opIdx, ps.p)
		have := make([]uint64, in.spec.Groups)
		for _, a := range after {
			if a.P == prod {
				have[a.KG] = a.Seq
			}
		}
		m := ps.markers[s.markerFor(ps, have, func(kg job.KeyGroup) bool { return rp.owned[kg] })]
		if m.Pos >= ps.pos {
			continue
		}
		r, err := s.src.Open(ps.p, m.Pos)
		if err != nil {
			in.n.event(events.Error, in.id, nil, "replay partition %d: %v", ps.p, err)
			continue
		}
		c := &replayCursor{ps: ps, prod: prod, r: r, counters: append([]uint64(nil), m.Counters...),
			have: have, pos: m.Pos, rpos: m.Pos, target: ps.pos, lacked: ps.pos, buf: make([]job.Record, 512), kgs: make([]job.KeyGroup, 512)}
		c.clock = job.SourceClock{Lateness: in.spec.Lateness}
		c.clock.Restore(m.Max, m.Started)
		c.sk, _ = r.(traces.Skipper)
		c.gr, _ = r.(traces.GroupReader)
		if c.sk != nil && c.gr != nil && ps.glog != nil {
			c.logged, c.logFrom = true, max(m.Pos, ps.glog.from)
			c.extend()
		}
		rp.cur = append(rp.cur, c)
	}
	if len(rp.cur) == 0 {
		rp.cancel()
		return nil
	}
	return rp
}

// startReplay starts a replay toward l of every record it lacks after the
// given positions. It runs on the source's goroutine.
func (s *sourceState) startReplay(in *instance, l *link, after []wire.Position) {
	if rp := s.openReplay(in, l, after); rp != nil {
		l.b.Reset() // what the loop batched for l is in the replay too
		l.replay = rp
		go rp.run(in, l)
	}
}

// replayTo sends l, here and now, every record it lacks after the given
// positions.
func (s *sourceState) replayTo(in *instance, l *link, after []wire.Position) {
	if rp := s.openReplay(in, l, after); rp != nil {
		if (!rp.readAll(in, l) || !rp.flush(in, l)) && rp.err != nil {
			in.linkFailed(l, rp.err)
		}
		rp.close(in)
	}
}

// run is the replay's goroutine.
func (rp *replay) run(in *instance, l *link) {
	defer close(rp.done)
	in.label("replay")
	defer func() {
		select {
		case <-in.quit: // the loop is gone: nobody else will
			rp.close(in)
		default:
		}
	}()
	if kr := rp.keyed; kr != nil {
		for ; kr.sent < len(kr.batches); kr.sent++ {
			if rp.ctx.Err() != nil || !rp.send(in, l, kr.batches[kr.sent]) {
				return
			}
		}
		in.call(rp.ctx, func() {
			if l.replay == rp && rp.ctx.Err() == nil {
				rp.finish(in, l)
			}
		})
		return
	}
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
				c.extend()
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
			if !rp.step(in, c) {
				break
			}
			if rp.b.Size() >= batchBytes && !rp.flush(in, l) {
				return false
			}
		}
	}
	return true
}

// extend gives c the view of its partition's log up to its target. It
// runs on the source's goroutine, with c's goroutine waiting or not
// started.
func (c *replayCursor) extend() {
	if c.logged {
		c.log = c.ps.glog.view(c.logFrom, c.target)
	}
}

// step reads the next records of c, up to its target, and batches those
// l needs; false if the partition cannot be read there.
func (rp *replay) step(in *instance, c *replayCursor) bool {
	if c.logged && c.pos >= c.logFrom {
		return rp.stepLogged(in, c)
	}
	want := int(min(uint64(len(c.buf)), c.target-c.pos))
	if c.logged {
		want = int(min(uint64(want), c.logFrom-c.pos)) // the log takes over there
	}
	got, err := 0, error(nil)
	if gr, ok := c.r.(traces.GroupReader); ok {
		// No key hashed: most records are of other key groups, and their
		// keys are never even read.
		got, err = gr.NextGroups(c.buf[:want], c.kgs, in.spec.Groups)
	} else {
		if br, ok := c.r.(traces.BatchReader); ok {
			got, err = br.NextBatch(c.buf[:want]) // much cheaper per record
		} else if rec, ok, e := c.r.Next(); ok {
			c.buf[0], got = rec, 1
		} else {
			err = e
		}
		for i := range got {
			c.kgs[i] = job.GroupOf(c.buf[i].Key, in.spec.Groups)
		}
	}
	for i, rec := range c.buf[:got] {
		if c.clock.Observe(rec.Time) {
			continue
		}
		kg := c.kgs[i]
		c.counters[kg]++
		if c.counters[kg] > c.have[kg] && rp.owned[kg] {
			rp.b.Append(c.prod, kg, c.counters[kg], rec)
			if c.pos+uint64(i) < c.lacked {
				rp.n++ // lacked at the start; later ones the loop skipped
			}
		}
	}
	c.pos += uint64(got)
	c.rpos = c.pos
	if got == 0 || err != nil {
		in.n.event(events.Error, in.id, nil, "replay partition %d ended early at %d: %v", c.ps.p, c.pos, err)
		c.target = c.pos // nothing more can come from here
		return false
	}
	return true
}

// stepLogged replays the next records of c from its partition's log, up
// to its target or a full batch: records of other key groups, and those
// the clock dropped, are passed over without being generated; each one l
// needs is generated where it is, its key group checked against the log.
// False if the log or the partition cannot be read there (a bug: the view
// holds every position to the target).
func (rp *replay) stepLogged(in *instance, c *replayCursor) bool {
	for c.pos < c.target {
		b, ok := c.log.at(c.pos)
		if !ok {
			in.n.event(events.Error, in.id, nil, "replay partition %d: position %d is not in the log of key groups (%d-%d)", c.ps.p, c.pos, c.log.base, c.log.to)
			c.target = c.pos
			return false
		}
		pos := c.pos
		c.pos++
		if b == groupLate {
			continue
		}
		if int(b) >= len(rp.owned) {
			in.n.event(events.Error, in.id, nil, "replay partition %d: the log of key groups names key group %d at %d, of %d", c.ps.p, b, pos, len(rp.owned))
			c.target = c.pos
			return false
		}
		if !rp.owned[b] {
			continue
		}
		kg := job.KeyGroup(b)
		c.counters[kg]++
		if c.counters[kg] <= c.have[kg] {
			continue
		}
		if c.rpos < pos {
			c.sk.Skip(pos - c.rpos)
			c.rpos = pos
		}
		got, err := c.gr.NextGroups(c.buf[:1], c.kgs[:1], in.spec.Groups)
		c.rpos += uint64(got)
		if got == 0 || err != nil || c.kgs[0] != kg {
			in.n.event(events.Error, in.id, nil, "replay partition %d: record %d is not the one its log of key groups says (key group %d, logged %d): %v", c.ps.p, pos, c.kgs[0], kg, err)
			c.target = c.pos
			return false
		}
		rp.b.Append(c.prod, kg, c.counters[kg], c.buf[0])
		if pos < c.lacked {
			rp.n++
		}
		if rp.b.Size() >= batchBytes {
			return true
		}
	}
	return true
}

// flush sends the batch built so far on the link the replay owns. A batch
// that could not be sent (the replay was stopped while it waited) is sent
// first by the next flush.
func (rp *replay) flush(in *instance, l *link) bool {
	for {
		if rp.pending == nil {
			if rp.b.Len() == 0 {
				return true
			}
			if l.local != nil {
				rp.pending = rp.b.Encode(nil) // the local instance keeps it
			} else {
				rp.buf = rp.b.Encode(rp.buf[:0])
				rp.pending = rp.buf
			}
			rp.b.Reset()
		}
		if !rp.send(in, l, rp.pending) {
			return false
		}
		rp.pending = nil
	}
}

// send sends one encoded batch on the link the replay owns; a local
// instance keeps the payload.
func (rp *replay) send(in *instance, l *link, payload []byte) bool {
	if l.local != nil {
		return l.local.deliver(rp.ctx, inMsg{from: l.fromIdx, gen: in.place.Gen, stream: l.stream, kind: msgBatch, payload: payload})
	}
	err := l.w.WriteFrame(wire.TBatch, payload)
	if err == nil {
		err = l.w.Flush()
	}
	if err != nil {
		rp.err = err
		return false
	}
	return true
}

// finish sends the rest on the loop's goroutine and gives the link back
// to the loop.
func (rp *replay) finish(in *instance, l *link) {
	ok := true
	if kr := rp.keyed; kr != nil {
		ok = kr.finish(in, rp, l)
	} else {
		for _, c := range rp.cur {
			c.target = c.ps.pos
			c.extend()
		}
		ok = rp.readAll(in, l)
	}
	ok = ok && rp.flush(in, l)
	l.replay = nil
	if ok {
		in.sendWatermarkTo(l, in.currentWatermark())
		if in.outputsEnded {
			in.endLink(l) // the replay of a link relinked after the end
		}
	} else if rp.err != nil {
		in.linkFailed(l, rp.err)
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
		in.n.event(events.Replay, in.id, events.ReplayFields{To: string(rp.to), Records: rp.n},
			"replayed %s to %s", human.PluralCount(float64(rp.n), "record"), rp.to)
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

// keyedReplay is what a keyed instance's replay sends: batches taken from
// its backup, each with how far it reaches.
type keyedReplay struct {
	pi      int
	batches [][]byte
	reach   [][]wire.Position // per batch: its last number per (producer, key group)
	sent    int               // batches sent
	after   map[job.KeyGroup]map[job.Producer]uint64
}

// startBackupReplay takes from the backup of port pi what l's downstream
// lacks after the given positions and starts sending it. It runs on the
// instance's goroutine.
func (in *instance) startBackupReplay(pi int, l *link, after []wire.Position) {
	pt := in.ports[pi]
	if pt.backup == nil {
		return
	}
	kr := &keyedReplay{pi: pi, after: map[job.KeyGroup]map[job.Producer]uint64{}}
	for _, p := range after {
		kr.advance(p)
	}
	var (
		b    wire.BatchBuilder
		last = map[[2]uint64]uint64{}
		n    uint64
	)
	cut := func() {
		if b.Len() == 0 {
			return
		}
		kr.batches = append(kr.batches, b.Encode(nil))
		b.Reset()
		ps := make([]wire.Position, 0, len(last))
		for k, s := range last {
			ps = append(ps, wire.Position{P: job.Producer(k[0]), KG: job.KeyGroup(k[1]), Seq: s})
		}
		kr.reach = append(kr.reach, ps)
		clear(last)
	}
	rp := newReplay(l, in.spec.Groups)
	for _, r := range rp.ranges {
		for kg := r.Lo; kg < r.Hi; kg++ {
			err := pt.backup.Replay(kg, kr.after[kg], func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
				b.Append(p, kg, seq, rec)
				last[[2]uint64{uint64(p), uint64(kg)}] = seq
				n++
				if b.Size() >= batchBytes {
					cut()
				}
				return nil
			})
			if err != nil {
				in.n.event(events.Error, in.id, events.ErrorFields{To: string(l.place.ID)}, "replay to %s: %v", l.place.ID, err)
			}
		}
	}
	cut()
	if len(kr.batches) == 0 {
		rp.cancel()
		return
	}
	rp.keyed, rp.n = kr, n
	l.b.Reset()
	l.replay = rp
	go rp.run(in, l)
}

// advance records that the downstream has (or is sent) up to p.
func (kr *keyedReplay) advance(p wire.Position) {
	m := kr.after[p.KG]
	if m == nil {
		m = map[job.Producer]uint64{}
		kr.after[p.KG] = m
	}
	m[p.P] = max(m[p.P], p.Seq)
}

// finish sends, on the loop's goroutine, the batches the goroutine did not
// send and then what the backup gained since the batches were taken.
func (kr *keyedReplay) finish(in *instance, rp *replay, l *link) bool {
	for ; kr.sent < len(kr.batches); kr.sent++ {
		if !rp.send(in, l, kr.batches[kr.sent]) {
			return false
		}
	}
	for _, ps := range kr.reach {
		for _, p := range ps {
			kr.advance(p)
		}
	}
	kr.batches, kr.reach = nil, nil
	pt := in.ports[kr.pi]
	for _, r := range rp.ranges {
		for kg := r.Lo; kg < r.Hi; kg++ {
			err := pt.backup.Replay(kg, kr.after[kg], func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
				rp.b.Append(p, kg, seq, rec)
				if rp.b.Size() >= batchBytes && !rp.flush(in, l) {
					return rp.err
				}
				return nil
			})
			if err != nil {
				if rp.err == nil {
					in.n.event(events.Error, in.id, events.ErrorFields{To: string(rp.to)}, "replay to %s: %v", rp.to, err)
				}
				return rp.err == nil
			}
		}
	}
	return true
}
