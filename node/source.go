package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"spate/events"
	"spate/job"
	"spate/traces"
	"spate/wire"
)

// sourceState is a source instance's input: its partitions, and the
// markers it keeps instead of copies of what it sent (its input is
// replayable, so a marker — a position with its counters — is enough to
// send anything after it again).
type sourceState struct {
	src      traces.Source
	parts    []*partState
	restored *sourceCheckpoint                    // where to resume, from a checkpoint
	trimv    map[job.InstanceID]map[[2]int]uint64 // latest trim per downstream: (producer, kg) → seq
	origin   int64                                // pacing: the event time due at start (MaxWatermark: not yet known)
	// atEnd: every partition read to its end, the end held for the
	// drain; the watermark stays at the last records' (a keyed
	// instance sends the end of event time only with its end of stream,
	// so a source's alone would leave its downstreams' behind theirs).
	atEnd bool
	start time.Time
}

// partState is one source partition being read.
type partState struct {
	p      int
	r      traces.Reader
	clock  job.SourceClock
	pos    uint64
	ended  bool
	held   bool // rec is read but not yet emitted (pacing)
	rec    job.Record
	kg     job.KeyGroup // rec's
	keyBuf []byte
	datBuf []byte
	// A traces.GroupReader is read a batch at a time, with the key groups
	// of its records from the generator's table: no key copied or hashed
	// here. Its records stay valid until the next batch is read, which is
	// only once every one of them is emitted.
	gr      traces.GroupReader
	batch   []job.Record
	kgs     []job.KeyGroup
	next    int       // batch[next:] is not read yet
	rerr    error     // what the read that filled batch returned: said once batch is all read
	markers []marker  // oldest first
	glog    *groupLog // --ft spate, a traces.Skipper and GroupReader: the key groups read (grouplog.go)
	endAt   uint64    // read no farther (a drained generation ended here; MaxUint64: no end)
	grant   uint64    // read no farther for now (Deploy.Grants; MaxUint64 without)
}

// marker is a point of a partition from which it can be read again: the
// position, the lateness clock there, and the counters per key group.
// Nothing writes a marker's Counters once it is taken: a checkpoint's
// capture shares them with the persist goroutine, which encodes them.
type marker struct {
	Pos      uint64   `json:"pos"`
	Max      int64    `json:"max"`
	Started  bool     `json:"started"`
	Counters []uint64 `json:"counters"`
}

// sourceCheckpoint is the "source" section of a source's checkpoint.
type sourceCheckpoint struct {
	Parts []partCheckpoint `json:"parts"`
	// The pacing clock: event time Origin was due at wall time StartMs
	// (Unix ms). A restored source keeps it, so it catches up with the
	// backlog that built up while it was down instead of lagging forever.
	Origin  int64 `json:"origin"`
	StartMs int64 `json:"start_ms"`
}

type partCheckpoint struct {
	P       int      `json:"p"`
	Ended   bool     `json:"ended"`
	Markers []marker `json:"markers"` // the last one is where reading resumes
}

// sourceOptions are the options a source of plan with that many
// partitions opens its input with.
func sourceOptions(plan *wire.Deploy, partitions int) traces.Options {
	o := plan.Source
	return traces.Options{Seed: o.Seed, Rate: o.Rate, Keys: o.Keys, Partitions: partitions, Speedup: o.Speedup}
}

// open opens the source and positions each partition; restored markers
// (from a checkpoint) say where.
func (s *sourceState) open(in *instance, restored *sourceCheckpoint) error {
	src, err := traces.Open(in.plan.Source.Spec, sourceOptions(in.plan, in.spec.Ops[in.opIdx].Parallelism))
	if err != nil {
		return fmt.Errorf("open source: %w", err)
	}
	s.src = src
	s.trimv = map[job.InstanceID]map[[2]int]uint64{}
	s.origin, s.start = job.MaxWatermark, time.Now()
	if restored != nil && restored.StartMs != 0 {
		s.origin, s.start = restored.Origin, time.UnixMilli(restored.StartMs)
		in.origin.Store(s.origin)
		in.startMs.Store(restored.StartMs)
	}
	pt := in.ports[0]
	for _, p := range in.place.Partitions {
		ps := &partState{p: p, clock: job.SourceClock{Lateness: in.spec.Lateness}, endAt: math.MaxUint64, grant: math.MaxUint64}
		if e, ok := in.endAt[p]; ok {
			ps.endAt = e
		}
		ps.markers = []marker{{Counters: make([]uint64, in.spec.Groups)}}
		if restored != nil {
			for _, pc := range restored.Parts {
				if pc.P == p && len(pc.Markers) > 0 {
					ps.markers = pc.Markers
					ps.ended = pc.Ended
				}
			}
		}
		last := ps.markers[len(ps.markers)-1]
		ps.pos = last.Pos
		ps.clock.Restore(last.Max, last.Started)
		pt.seqs[job.MakeProducer(in.opIdx, p)] = append([]uint64(nil), last.Counters...)
		r, err := src.Open(p, ps.pos)
		if err != nil {
			return fmt.Errorf("open partition %d at %d: %w", p, ps.pos, err)
		}
		ps.r = r
		if gr, ok := r.(traces.GroupReader); ok {
			ps.gr = gr
			ps.batch = make([]job.Record, sourceBatch)
			ps.kgs = make([]job.KeyGroup, sourceBatch)
			ps.next = sourceBatch
		}
		if _, ok := r.(traces.Skipper); ok && ps.gr != nil && in.plan.FT == wire.FTSpate && in.spec.Groups <= maxLoggedGroups {
			ps.glog = newGroupLog(ps.pos)
		}
		s.parts = append(s.parts, ps)
	}
	in.publishPositions()
	if len(s.parts) > 0 {
		// The reads and the replays take key groups from the generator's
		// table: build it now, beside the rest of the deploy, rather than
		// in the first read.
		if r, err := src.Open(s.parts[0].p, 0); err == nil {
			go func() {
				if gr, ok := r.(traces.GroupReader); ok {
					_, _ = gr.NextGroups(nil, nil, in.spec.Groups)
				}
				r.Close()
			}()
		}
	}
	return nil
}

func (s *sourceState) close() {
	for _, ps := range s.parts {
		if ps.r != nil {
			ps.r.Close()
		}
	}
}

func (s *sourceState) watermark() int64 {
	wm := int64(job.MaxWatermark)
	for _, ps := range s.parts {
		if !ps.ended || s.atEnd {
			wm = min(wm, ps.clock.Watermark())
		}
	}
	return wm
}

// mark takes a marker of every partition (at a checkpoint) and returns the
// checkpoint section.
func (s *sourceState) mark(in *instance) sourceCheckpoint {
	cp := sourceCheckpoint{Origin: s.origin, StartMs: s.start.UnixMilli()}
	if s.origin == job.MaxWatermark {
		cp.StartMs = 0 // nothing read yet: a restore starts the clock afresh
	}
	for _, ps := range s.parts {
		s.markPart(in, ps)
		cp.Parts = append(cp.Parts, partCheckpoint{P: ps.p, Ended: ps.ended, Markers: append([]marker(nil), ps.markers...)})
	}
	return cp
}

// markEvery is how many records of a partition a source reads between
// two markers, checkpoint or not. A replay reads a partition again from
// the newest marker before what its downstream lacks, every key group of
// it: with markers at checkpoints only, up to two intervals of the
// partition (a downstream's positions fall anywhere in the source's
// interval, and trims keep the markers of the previous checkpoint) for
// the part of it the downstream lacks. Markers in between are in memory,
// and in the next checkpoint with the others.
const markEvery = 1 << 14

// maxMarkers is at most how many markers a partition keeps: past it the
// oldest but one goes (a replay that needed it starts from the one
// before, and reads more; the oldest stays, the start of what a trim has
// not released).
const maxMarkers = 64

// markPart takes a marker of ps where it is now, unless the newest one is
// there already.
func (s *sourceState) markPart(in *instance, ps *partState) {
	if ps.markers[len(ps.markers)-1].Pos == ps.pos {
		return
	}
	max, started := ps.clock.State()
	ps.markers = append(ps.markers, marker{Pos: ps.pos, Max: max, Started: started,
		Counters: append([]uint64(nil), in.ports[0].seqs[job.MakeProducer(in.opIdx, ps.p)]...)})
	if len(ps.markers) > maxMarkers {
		ps.markers = slices.Delete(ps.markers, 1, 2)
	}
}

// markerFor is the newest marker of ps from which every record l's
// downstream lacks can be read again.
func (s *sourceState) markerFor(ps *partState, have []uint64, owns func(job.KeyGroup) bool) int {
	for i := len(ps.markers) - 1; i > 0; i-- {
		ok := true
		for kg, c := range ps.markers[i].Counters {
			if c > have[kg] && owns(job.KeyGroup(kg)) {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return 0
}

// trim records what l's downstream no longer needs and drops the markers
// no downstream needs any more.
func (s *sourceState) trim(in *instance, l *link, ps []wire.Position) {
	tv := map[[2]int]uint64{}
	for _, p := range ps {
		tv[[2]int{int(p.P), int(p.KG)}] = p.Seq
	}
	s.trimv[l.place.ID] = tv
	links := in.ports[0].links
	for _, part := range s.parts {
		prod := job.MakeProducer(in.opIdx, part.p)
		keep := len(part.markers) - 1
		for _, lk := range links {
			t := s.trimv[lk.place.ID]
			if t == nil {
				keep = 0
				break
			}
			have := make([]uint64, in.spec.Groups)
			for kg := range have {
				have[kg] = t[[2]int{int(prod), kg}]
			}
			owns := func(kg job.KeyGroup) bool {
				for _, r := range lk.place.Ranges {
					if r.Contains(kg) {
						return true
					}
				}
				return false
			}
			keep = min(keep, s.markerFor(part, have, owns))
		}
		if keep > 0 {
			part.markers = append(part.markers[:0], part.markers[keep:]...)
		}
		if part.glog != nil {
			part.glog.drop(part.markers[0].Pos, pinnedLog(links, part))
		}
	}
}

// pinnedLog is where the earliest view of part's log that a running
// replay holds starts (MaxUint64: none): the log keeps it, so that the
// replay's view can be extended to its next target.
func pinnedLog(links []*link, part *partState) uint64 {
	pin := uint64(math.MaxUint64)
	for _, l := range links {
		if rp := l.replay; rp != nil {
			for _, c := range rp.cur {
				if c.ps == part && c.logged {
					pin = min(pin, c.logFrom)
				}
			}
		}
	}
	return pin
}

func (in *instance) runSource(ctx context.Context) {
	s := in.src
	defer s.close()
	pt := in.ports[0]
	o := in.plan.Source
	speed := o.Speedup
	if speed <= 0 {
		speed = 1
	}
	flushEvery := in.flushEvery()
	lastFlush := time.Now()
	const chunk = 1024

	// allowed is the latest event time that may be emitted now.
	allowed := func(now time.Time) int64 {
		if !o.Paced || s.origin == job.MaxWatermark {
			return job.MaxWatermark
		}
		return s.origin + int64(float64(now.Sub(s.start).Milliseconds())*speed)
	}
	draining := false
	spate := in.plan.FT == wire.FTSpate // the only one that replays from markers
	grantSeq := ^uint64(0)              // the node's grants as last read: never yet
	for {
		if in.plan.Grants {
			if g := in.n.grantSeq.Load(); g != grantSeq {
				grantSeq = g
				for _, ps := range s.parts {
					ps.grant = in.n.grantOf(ps.p)
				}
			}
		}
		select {
		case <-in.drainc:
			if in.drainReached() {
				in.endSource()
				return
			}
			draining = true // read on, unpaced, to where an earlier generation got
		case <-in.quit:
			return
		case <-ctx.Done():
			return
		default:
		}
		for len(in.ctlc) > 0 {
			(<-in.ctlc)()
		}
		now := time.Now()
		limit := allowed(now)
		if draining {
			limit = job.MaxWatermark
		}
		live, waiting := 0, false
		nextDue := int64(job.MaxWatermark)
		for _, ps := range s.parts {
			if ps.ended || draining && in.drainedTo(ps) {
				continue
			}
			live++
			for k := 0; k < chunk; k++ {
				if ps.pos >= ps.endAt {
					ps.ended = true
					break
				}
				if ps.pos >= ps.grant {
					waiting = true // until the coordinator grants more
					break
				}
				if draining && k > 0 && in.drainedTo(ps) {
					// Checked at every record while draining, not at
					// every chunk: a restored generation stops where its
					// downstreams are, not up to a chunk past it, which a
					// downstream that had drained already would never get.
					break
				}
				if !ps.held {
					if err := in.readNext(ps); err != nil {
						if err != io.EOF {
							in.n.event(events.Error, in.id, events.ErrorFields{Partition: &ps.p}, "source partition %d: %v", ps.p, err)
						}
						ps.ended = true
						break
					}
					ps.held = true
					if s.origin == job.MaxWatermark {
						s.origin, s.start = ps.rec.Time, now
						in.origin.Store(ps.rec.Time)
						in.startMs.Store(now.UnixMilli())
						limit = allowed(now)
					}
				}
				if ps.rec.Time > limit {
					waiting = true
					nextDue = min(nextDue, ps.rec.Time)
					break
				}
				ps.held = false
				ps.pos++
				in.inN++
				late := ps.clock.Observe(ps.rec.Time)
				if ps.glog != nil {
					ps.glog.add(ps.kg, late)
				}
				if late {
					in.nLate.Add(1)
					continue
				}
				in.emitTo(pt, job.MakeProducer(in.opIdx, ps.p), ps.kg, ps.rec)
			}
			if spate && ps.pos-ps.markers[len(ps.markers)-1].Pos >= markEvery {
				s.markPart(in, ps)
				if ps.glog != nil && len(ps.glog.chunks) > groupLogMax {
					ps.glog.drop(ps.markers[0].Pos, pinnedLog(pt.links, ps))
				}
			}
		}
		in.publishPositions()
		in.busy(now)
		if live == 0 && draining {
			in.endSource()
			return
		}
		if live == 0 && !in.plan.Grants {
			in.n.event(events.SourceEnded, in.id, nil, "all partitions read to the end")
			in.endSource()
			return
		}
		if live == 0 && !in.atEnd.Load() {
			// The end of a finite input is held until the drain: the
			// coordinator drains the job once every source is at its
			// end, and the drain waits for a rescale in flight, which an
			// end of stream sent now would cut in two.
			s.atEnd = true
			in.atEnd.Store(true)
			in.publishPositions()
			in.n.event(events.SourceEnded, in.id, nil, "all partitions read to the end; the end waits for the drain")
		}
		if time.Since(lastFlush) >= flushEvery {
			in.sendWatermark(s.watermark())
			lastFlush = time.Now()
			in.maybeCheckpoint(lastFlush)
			in.retryLinks(ctx, lastFlush)
		}
		if live == 0 {
			// At the end, held: wake for control, the drain and the next
			// flush (watermarks, checkpoints, links to retry).
			t := time.NewTimer(max(time.Until(lastFlush.Add(flushEvery)), time.Millisecond))
			select {
			case <-t.C:
			case f := <-in.ctlc:
				f()
			case <-in.drainc:
			case <-in.quit:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		if waiting {
			// Sleep until the next record is due and the batches are
			// due to be flushed, but wake for control. A paced source
			// sends what a flush period brought at once: flushed each
			// time a record was due (every millisecond of event time),
			// its batches were a few hundred records each, and the
			// frames, syscalls and wake-ups they cost downstream took
			// three times the CPU per record of an unpaced run.
			due := s.start.Add(time.Duration(float64(nextDue-s.origin)/speed) * time.Millisecond)
			if next := lastFlush.Add(flushEvery); next.After(due) {
				due = next
			}
			d := min(time.Until(due), flushEvery)
			if d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case f := <-in.ctlc:
					f()
				case <-in.drainc:
				case <-in.quit:
				case <-ctx.Done():
				}
				t.Stop()
			}
		}
	}
}

// sourceBatch is how many records a source reads at a time from a
// traces.GroupReader.
const sourceBatch = 256

// readNext reads ps's next record into rec and kg; io.EOF at the end of a
// finite partition.
func (in *instance) readNext(ps *partState) error {
	if ps.gr != nil {
		if ps.next == len(ps.batch) {
			if ps.rerr != nil {
				return ps.rerr
			}
			var n int
			n, ps.rerr = ps.gr.NextGroups(ps.batch[:cap(ps.batch)], ps.kgs, in.spec.Groups)
			ps.batch, ps.next = ps.batch[:n], 0
			if n == 0 {
				if ps.rerr == nil {
					ps.rerr = io.EOF
				}
				return ps.rerr
			}
		}
		ps.rec, ps.kg = ps.batch[ps.next], ps.kgs[ps.next]
		ps.next++
		return nil
	}
	rec, ok, err := ps.r.Next()
	if err != nil {
		return err
	}
	if !ok {
		return io.EOF
	}
	ps.keyBuf = append(ps.keyBuf[:0], rec.Key...)
	ps.datBuf = append(ps.datBuf[:0], rec.Data...)
	ps.rec = job.Record{Key: ps.keyBuf, Time: rec.Time, Value: rec.Value, Data: ps.datBuf}
	ps.kg = job.GroupOf(ps.rec.Key, in.spec.Groups)
	return nil
}

// drainReached reports whether every partition has ended or reached
// where the drain says it must.
func (in *instance) drainReached() bool {
	for _, ps := range in.src.parts {
		if !ps.ended && !in.drainedTo(ps) {
			return false
		}
	}
	return true
}

// drainedTo reports whether partition ps is read as far as the drain
// needs: to where the drain says, and to where every downstream already
// is. A downstream can be ahead of this generation's numbering: restored
// from a checkpoint of records that a generation read and the
// coordinator never heard of (an isolated node's heartbeats are held, then
// dropped with it). Ending before it would leave records applied that the
// final positions do not cover, and verify would find them unexpected.
// A generation restored after one of it drained reads exactly to where
// that one ended (endAt), whatever the drain says: downstreams may have
// drained on those records, and this generation's positions are the
// final ones (seed 65).
func (in *instance) drainedTo(ps *partState) bool {
	if ps.pos < in.drainTo[ps.p] || ps.endAt != math.MaxUint64 && ps.pos < ps.endAt {
		return false
	}
	if in.plan.Grants {
		// The drain's positions are past anything any generation was
		// granted: every generation ends exactly there (coord/grant.go).
		return true
	}
	prod := job.MakeProducer(in.opIdx, ps.p)
	for _, pt := range in.ports {
		for _, l := range pt.links {
			if l.aheadOf(prod, pt.seqs[prod]) {
				return false
			}
		}
	}
	return true
}

func (in *instance) publishPositions() {
	in.posMu.Lock()
	for _, ps := range in.src.parts {
		in.positions[ps.p] = ps.pos
	}
	in.posMu.Unlock()
	in.curWM.Store(in.src.watermark())
}

// serveEnded is the loop of a source after runSource: if it has ended
// its streams (rather than been stopped), it stays to serve trims, and
// the reroutes of downstreams restored since (a node lost while the rest
// of the job drains), which replay to them and end their streams, until
// it is stopped. Without it, the instance's
// functions queued up unserved and the node's control goroutine, blocked
// behind them, never restored anything: the drain waited for ever.
func (in *instance) serveEnded(ctx context.Context) {
	for {
		select {
		case f := <-in.ctlc:
			f()
		case <-in.quit:
			return
		case <-ctx.Done():
			return
		}
	}
}

// endSource ends the streams and reports the final positions.
func (in *instance) endSource() {
	in.publishPositions()
	in.endOutputs()
	pos := map[int]uint64{}
	for _, ps := range in.src.parts {
		pos[ps.p] = ps.pos
	}
	in.curWM.Store(job.MaxWatermark)
	in.reportDone(pos)
}

func encodeSourceCheckpoint(cp sourceCheckpoint) []byte {
	b, _ := json.Marshal(cp)
	return b
}
