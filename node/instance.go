package node

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"spate/events"
	"spate/internal/human"
	"spate/job"
	"spate/wire"
)

type msgKind uint8

const (
	msgBatch msgKind = iota + 1
	msgWatermark
	msgEnd
	msgLost
)

// inMsg is one frame for an instance, from its input number from, sent by
// that input's placement generation gen.
type inMsg struct {
	from    int
	gen     uint64
	stream  uint64 // which of the input's connections it came on (acceptInput)
	kind    msgKind
	payload []byte
	pooled  bool // payload is getPayload's: handle gives it back once applied
	wm      int64
}

// instance is one operator instance on this node. Its goroutine owns
// everything marked "owned by run"; other goroutines reach it through in
// (data) and ctlc (closures run on its goroutine). The counters are atomics
// read by the heartbeat.
type instance struct {
	n     *Node
	id    job.InstanceID
	place wire.Placement
	plan  *wire.Deploy
	spec  *job.Spec
	opIdx int
	kind  string

	in         chan inMsg
	ctlc       chan func()
	inputs     []job.InstanceID
	inputIndex map[job.InstanceID]int
	startOnce  sync.Once
	drainc     chan struct{}
	drainOnce  sync.Once
	drainTo    map[int]uint64              // set before drainc closes
	endAt      map[int]uint64              // a source restored after a generation of it drained: where each partition ended (wire.Restore.EndAt)
	dialing    atomic.Pointer[dialAttempt] // a connect waiting for its answer (links.go)
	quit       chan struct{}
	quitOnce   sync.Once

	// owned by run
	inputGen  []uint64 // the generation each input's stream must have
	inputConn []uint64 // the number of each input's newest connection (acceptInput)
	inputProd [][]job.Producer
	back      []backChannel // per input: where trims go
	wms       []int64
	ended     []bool
	wm        int64
	wmSent    time.Time // when wm was last sent downstream (forwardWatermark)
	wmDue     bool      // wm moved since: sent at the next tick
	op        job.Keyed
	stateful  job.Stateful
	sink      *job.Sink
	file      *countingFile
	owned     []bool
	dedup     map[job.Producer][]uint64
	ports     []*port
	fired     firedReport
	src       *sourceState
	ck        checkpointer
	align     aligner
	finished  bool
	// outputsEnded: every output stream has been ended (endOutputs); a
	// link relinked since ends once it has caught up.
	outputsEnded bool
	rs           rescaleState // live rescales (rescale.go)
	ld           *earlyLoad   // an early restore's key groups still loading (load.go); nil: none
	cost         simCost      // up --cost (cost.go)
	paused       time.Time    // since when input is paused on a full backup (backpressure.go)
	// The records applied (a source: read) and sent, counted by the loop
	// and published to nIn and nOut once a message or a source's round
	// (publishCounts): an atomic add per record cost more than the count.
	inN, outN uint64

	// read by heartbeats
	nIn, nOut, nLate, nDup, nStray, nReplayed atomic.Uint64
	curWM                                     atomic.Int64
	busyNs                                    atomic.Int64 // time spent processing input
	origin                                    atomic.Int64 // sources: first event time (pacing origin)
	startMs                                   atomic.Int64 // sources: when origin was due (Unix ms)
	atEnd                                     atomic.Bool  // sources: every partition read to its end, the end held for the drain
	posMu                                     sync.Mutex
	positions                                 map[int]uint64
}

// backChannel sends trims back to an input's sender.
type backChannel func(ps []wire.Position)

// countingFile is a sink's output file; it counts what reached the file.
type countingFile struct {
	f    syncWriter // a file, or segments in a store (store.go)
	name string     // relative to output/
	n    atomic.Int64
}

func (c *countingFile) Write(p []byte) (int, error) {
	k, err := c.f.Write(p)
	c.n.Add(int64(k))
	return k, err
}

func newInstance(n *Node, d *wire.Deploy, p *wire.Placement) (*instance, error) {
	spec := &d.Job
	opIdx := spec.Op(p.Op)
	if opIdx < 0 {
		return nil, fmt.Errorf("unknown operator %q", p.Op)
	}
	in := &instance{
		n: n, id: p.ID, place: *p, plan: d, spec: spec, opIdx: opIdx, kind: spec.Ops[opIdx].Kind,
		in: make(chan inMsg, 64), ctlc: make(chan func(), 256), inputIndex: map[job.InstanceID]int{},
		drainc: make(chan struct{}), quit: make(chan struct{}),
		wm: job.NoWatermark, dedup: map[job.Producer][]uint64{}, positions: map[int]uint64{},
	}
	in.curWM.Store(job.NoWatermark)
	in.origin.Store(job.MaxWatermark)
	for _, src := range spec.Inputs(opIdx) {
		for _, q := range d.Instances {
			if q.Op == spec.Ops[src].Name {
				in.inputIndex[q.ID] = len(in.inputs)
				in.inputs = append(in.inputs, q.ID)
				in.inputGen = append(in.inputGen, q.Gen)
				in.inputConn = append(in.inputConn, 0)
				in.inputProd = append(in.inputProd, producersOf(spec, &q))
			}
		}
	}
	in.back = make([]backChannel, len(in.inputs))
	in.wms = make([]int64, len(in.inputs))
	in.ended = make([]bool, len(in.inputs))
	for i := range in.wms {
		in.wms[i] = job.NoWatermark
	}
	in.owned = make([]bool, spec.Groups)
	for _, r := range p.Ranges {
		for g := r.Lo; g < r.Hi; g++ {
			in.owned[g] = true
		}
	}
	switch in.kind {
	case job.KindSource:
		in.src = &sourceState{}
	case job.KindCount:
		c := job.NewCount(spec)
		in.op = c
		in.stateful, _ = any(c).(job.Stateful)
	case job.KindRollup:
		r := job.NewRollup(spec)
		in.op = r
		in.stateful, _ = any(r).(job.Stateful)
	case job.KindSink:
		name := fmt.Sprintf("%s-%d-g%d.jsonl", p.Op, p.Index, p.Gen)
		f, err := openSinkOutput(n, d, name) // store.go
		if err != nil {
			return nil, err
		}
		in.file = &countingFile{f: f, name: name}
		in.sink = job.NewSink(in.file)
		in.op = in.sink
	default:
		return nil, fmt.Errorf("operator kind %q is not supported", in.kind)
	}
	if err := in.buildPorts(); err != nil {
		return nil, err
	}
	return in, nil
}

// producersOf lists the producers an instance emits as: its partitions
// (a source) or its key groups.
func producersOf(spec *job.Spec, q *wire.Placement) []job.Producer {
	op := spec.Op(q.Op)
	var out []job.Producer
	for _, p := range q.Partitions {
		out = append(out, job.MakeProducer(op, p))
	}
	for _, r := range q.Ranges {
		for g := r.Lo; g < r.Hi; g++ {
			out = append(out, job.MakeProducer(op, int(g)))
		}
	}
	return out
}

// deliver queues m for the instance; false if the instance or ctx is gone.
func (in *instance) deliver(ctx context.Context, m inMsg) bool {
	select {
	case in.in <- m:
		return true
	case <-in.quit:
		return false
	case <-ctx.Done():
		return false
	}
}

// do runs f on the instance's goroutine; false if the instance is gone.
func (in *instance) do(f func()) bool {
	select {
	case in.ctlc <- f:
		return true
	case <-in.quit:
		return false
	}
}

// call runs f on the instance's goroutine and waits for it, at most
// callTimeout: an instance that never runs again must not hang its callers.
func (in *instance) call(ctx context.Context, f func()) bool {
	done := make(chan struct{})
	if !in.do(func() { f(); close(done) }) {
		return false
	}
	t := time.NewTimer(callTimeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-in.quit:
		return false
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	}
}

const callTimeout = 30 * time.Second

func (in *instance) start(ctx context.Context) {
	in.startOnce.Do(func() {
		go func() {
			// An instance whose loop has ended is gone, whatever ended
			// it: nothing runs what is queued for it any more, and its
			// callers must not wait (a replay waited on a call to an
			// instance its node's end had stopped, past the end of a
			// simulated run: synctest found it blocked).
			defer in.stop()
			in.label("")
			if in.src != nil {
				if err := in.src.open(in, in.src.restored); err != nil {
					in.n.event(events.Error, in.id, nil, "%v", err)
					return
				}
			}
			if err := in.openOutputs(ctx); err != nil {
				in.n.event(events.Error, in.id, nil, "open outputs: %v", err)
				return
			}
			// The checkpoints' grid is half an interval off the start:
			// windows end on whole seconds of the sources' clock, and a
			// checkpoint on the same beat persisted while the window
			// fired, the one moment the instance is busy. With 1 s
			// windows and interval at 200k records/s, the p99 output
			// lag (sampled every 20 ms) went from 250-330 ms to
			// 110-150 ms, none's 130-150 ms.
			in.ck.next = time.Now().Add(in.ck.interval(in.plan) * 3 / 2)
			if in.kind == job.KindSource {
				in.runSource(ctx)
				in.serveEnded(ctx)
			} else {
				in.runKeyed(ctx)
			}
		}()
	})
}

// label sets the profiler's labels of the calling goroutine: the
// instance, its generation and what the goroutine does for it (role;
// "" for its loop). A node's CPU profile (SPATE_CPUPROFILE) can then be
// cut by them: go tool pprof -tags lists the CPU by each;
// -tagfocus gen=2 on the profile of the node that restored an instance
// shows where its recovered generation's time went, and -tagfocus
// role=replay the replays'.
func (in *instance) label(role string) {
	ls := []string{"instance", string(in.id), "gen", strconv.FormatUint(uint64(in.place.Gen), 10)}
	if role != "" {
		ls = append(ls, "role", role)
	}
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(ls...)))
}

// drain ends the instance's input: a source stops reading once every
// partition has reached until (what an earlier generation of it read).
func (in *instance) drain(until map[int]uint64) {
	in.drainOnce.Do(func() {
		in.drainTo = until
		close(in.drainc)
	})
}

func (in *instance) stop() { in.quitOnce.Do(func() { close(in.quit) }) }

// lost treats the streams from the given instances as ended (--ft none).
func (in *instance) lost(ids []job.InstanceID) {
	in.do(func() { // inputIndex belongs to the instance goroutine (rescales add inputs)
		for _, id := range ids {
			if i, ok := in.inputIndex[id]; ok {
				go in.deliver(context.Background(), inMsg{from: i, kind: msgLost, gen: ^uint64(0)})
			}
		}
	})
}

func (in *instance) stats() wire.InstanceStats {
	s := wire.InstanceStats{ID: in.id, In: in.nIn.Load(), Out: in.nOut.Load(), Watermark: in.curWM.Load(), Backlog: len(in.in),
		Gen: in.place.Gen, BusyUs: in.busyNs.Load() / 1000, Held: int(in.rs.nheld.Load())}
	if in.kind == job.KindSource {
		in.posMu.Lock()
		s.Positions = make(map[int]uint64, len(in.positions))
		for k, v := range in.positions {
			s.Positions[k] = v
		}
		in.posMu.Unlock()
		if o := in.origin.Load(); o != job.MaxWatermark {
			s.Origin = &o
			s.StartMs = in.startMs.Load()
		}
		s.AtEnd = in.atEnd.Load()
	}
	return s
}

// runKeyed is the loop of a keyed operator instance.
func (in *instance) runKeyed(ctx context.Context) {
	tick := time.NewTicker(in.flushEvery())
	defer tick.Stop()
	for {
		select {
		case m := <-in.input():
			t0 := time.Now()
			if in.handle(m) && !in.finished {
				if in.ld != nil {
					in.ld.finish = true // once the state is whole (load.go)
				} else {
					in.finish()
				}
			}
			if len(in.in) == 0 {
				in.flushAll()
			}
			in.busy(t0)
		case f := <-in.ctlc:
			f()
		case now := <-tick.C:
			in.flushWatermark(now)
			in.flushAll()
			if in.sink != nil {
				_ = in.sink.Flush()
			}
			in.fired.maybeReport(in, false)
			if !in.finished {
				in.maybeCheckpoint(now)
				in.rescaleTick(ctx, now)
			}
			in.retryLinks(ctx, now)
			in.publishCounts()
		case <-in.quit:
			return
		case <-ctx.Done():
			return
		}
	}
}

// handle applies one input message; it reports whether every input has ended.
func (in *instance) handle(m inMsg) bool {
	if m.gen < in.inputGen[m.from] {
		return false // from a zombie: an older placement of that input
	}
	if m.kind == msgWatermark && m.stream < in.inputConn[m.from] {
		// Sent on a connection the input has replaced, and still queued
		// here: it promises nothing about what the new one brings (a
		// replay of key groups re-routed to us, behind it).
		return false
	}
	if in.holds(m) {
		return false
	}
	switch m.kind {
	case msgBarrier:
		in.onBarrier(m.from, uint64(m.wm))
		return false
	case msgBatch:
		err := in.applyBatch(m.payload)
		if m.pooled {
			putPayload(m.payload) // its records were borrowed (payload.go)
		}
		if err != nil {
			in.n.event(events.FrameError, in.id, events.FrameErrorFields{From: string(in.inputs[m.from])}, "batch from %s: %v; input closed", in.inputs[m.from], err)
			in.ended[m.from] = true
			in.wms[m.from] = job.MaxWatermark
			in.checkAligned()
		}
	case msgWatermark:
		if m.wm > in.wms[m.from] {
			in.wms[m.from] = m.wm
		}
	case msgEnd, msgLost:
		in.ended[m.from] = true
		in.wms[m.from] = job.MaxWatermark
		in.checkAligned()
	}
	if m.kind != msgBatch {
		in.advance()
	}
	for _, e := range in.ended {
		if !e {
			return false
		}
	}
	return true
}

func (in *instance) advance() {
	low := int64(job.MaxWatermark)
	for _, w := range in.wms {
		low = min(low, w)
	}
	if low <= in.wm || in.heldWM() || in.ld != nil {
		return // held: a receiver of a rescale, or key groups still loading (load.go)
	}
	in.wm = low
	in.rs.fresh = false
	before := in.outN
	in.op.Advance(low, in)
	if in.kind == job.KindRollup {
		in.fired.add(low, in.outN-before)
	}
	in.curWM.Store(low)
	if low != job.MaxWatermark {
		in.forwardWatermark(time.Now())
	}
}

// forwardWatermark sends the instance's watermark downstream, at most
// once a flush period: it moves with every input watermark (each
// source's, every flush period, arriving at different moments), and a
// frame for each move on every output link cost more frames, syscalls
// and wake-ups downstream than the records themselves at a paced rate.
// A move held back is sent at the next tick (runKeyed), so a watermark
// is at most a flush period late; the watermarks a downstream sees stay
// monotonic, and the records before each are sent before it.
func (in *instance) forwardWatermark(now time.Time) {
	if now.Sub(in.wmSent) < in.flushEvery() {
		in.wmDue = true
		return
	}
	in.wmDue, in.wmSent = false, now
	in.sendWatermark(in.wm)
}

// flushEvery is the plan's flush period (up --flush).
func (in *instance) flushEvery() time.Duration {
	return time.Duration(max(in.plan.FlushMs, 1)) * time.Millisecond
}

// flushWatermark sends a move of the watermark that forwardWatermark
// held back (the final watermark goes with the end of the outputs).
func (in *instance) flushWatermark(now time.Time) {
	if in.wmDue && in.wm != job.MaxWatermark {
		in.wmDue, in.wmSent = false, now
		in.sendWatermark(in.wm)
	}
}

func (in *instance) applyBatch(payload []byte) error {
	var lastP job.Producer
	var last []uint64
	gaps := in.gapHolding()
	return wire.DecodeBatch(payload, func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
		if int(kg) >= len(in.owned) || !in.owned[kg] {
			in.nStray.Add(1)
			return nil
		}
		if in.ld != nil && in.ld.loading[kg] {
			in.ld.hold(p, kg, seq, rec) // applied once its state is (load.go)
			return nil
		}
		if last == nil || p != lastP {
			last = in.dedupOf(p)
			lastP = p
		}
		in.accept(p, kg, seq, rec, last, gaps)
		return nil
	})
}

// accept applies record seq of (p, kg), an owned key group whose state
// is here, unless it is a duplicate or its predecessor has not come yet
// (gaps: then it is held); last is p's positions (dedupOf).
func (in *instance) accept(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record, last []uint64, gaps bool) {
	switch {
	case seq <= last[kg]:
		in.nDup.Add(1)
	case seq == last[kg]+1 || !gaps:
		last[kg] = seq
		in.applyRecord(kg, rec)
		if in.rs.nheld.Load() > 0 {
			in.fillGap(p, kg, last)
		}
	default:
		// Its predecessor is still on its way (a move reordered two
		// streams): it waits (rescale.go).
		in.holdRecord(p, kg, seq, rec)
	}
}

func (in *instance) dedupOf(p job.Producer) []uint64 {
	last := in.dedup[p]
	if last == nil {
		last = make([]uint64, in.spec.Groups)
		in.dedup[p] = last
	}
	return last
}

// positionsFor lists how far this instance applied the producers of input
// i, for its own key groups (zeros left out).
func (in *instance) positionsFor(i int) []wire.Position {
	var ps []wire.Position
	for _, p := range in.inputProd[i] {
		last := in.dedup[p]
		if last == nil {
			continue
		}
		for kg, s := range last {
			if s > 0 && in.owned[kg] {
				ps = append(ps, wire.Position{P: p, KG: job.KeyGroup(kg), Seq: s})
			}
		}
	}
	return ps
}

// finish runs when every input has ended: fire the rest, end the outputs,
// make the sink's file durable and report.
func (in *instance) finish() {
	in.finished = true
	in.endOutputs()
	in.fired.maybeReport(in, true)
	if in.file != nil {
		_ = in.sink.Flush()
		if err := in.file.f.Sync(); err != nil {
			in.n.event(events.Error, in.id, nil, "sink output not made durable: %v", err)
		}
	}
	in.reportDone(nil)
}

func (in *instance) reportDone(pos map[int]uint64) {
	in.publishCounts()
	in.n.reportTraffic(true) // before the done: the coordinator may finish the run on it
	_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlDone, Done: &wire.Done{
		Instance: in.id, Gen: in.place.Gen, Positions: pos, In: in.nIn.Load(), Out: in.nOut.Load(), Late: in.nLate.Load()}})
}

// firedReport rate-limits window_fired events to one a second per instance.
type firedReport struct {
	last    time.Time
	upTo    int64
	results uint64
}

func (f *firedReport) add(wm int64, n uint64) {
	if n > 0 {
		f.upTo, f.results = wm, f.results+n
	}
}

func (f *firedReport) maybeReport(in *instance, final bool) {
	if f.results == 0 || (!final && time.Since(f.last) < time.Second) {
		return
	}
	upTo := "the end"
	if f.upTo != job.MaxWatermark {
		upTo = human.EventTime(f.upTo)
	}
	in.n.event(events.WindowFired, in.id, events.WindowFiredFields{Watermark: float64(f.upTo), Results: f.results},
		"windows up to %s fired: %s", upTo, human.PluralCount(float64(f.results), "result"))
	f.last, f.results = time.Now(), 0
}
