package node

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"spate/job"
	"spate/traces"
	"spate/wire"
)

type msgKind uint8

const (
	msgBatch msgKind = iota + 1
	msgWatermark
	msgEnd
	msgLost
)

// inMsg is one frame for an instance, from its input number from.
type inMsg struct {
	from    int
	kind    msgKind
	payload []byte
	wm      int64
}

// instance is one operator instance on this node. Its goroutine owns
// everything below "owned by run"; the counters are atomics read by the
// heartbeat.
type instance struct {
	n     *Node
	id    job.InstanceID
	place wire.Placement
	plan  *wire.Deploy
	spec  *job.Spec
	opIdx int
	kind  string

	in         chan inMsg
	inputs     []job.InstanceID
	inputIndex map[job.InstanceID]int
	startOnce  sync.Once
	drainc     chan struct{}
	drainOnce  sync.Once
	quit       chan struct{}
	quitOnce   sync.Once

	// owned by run
	wms     []int64
	ended   []bool
	wm      int64
	op      job.Keyed
	sink    *job.Sink
	file    *os.File
	fileBuf *bufio.Writer
	owned   []bool
	dedup   map[job.Producer][]uint64
	ports   []*port
	fired   firedReport

	// read by heartbeats
	nIn, nOut, nLate, nDup, nStray atomic.Uint64
	curWM                          atomic.Int64
	posMu                          sync.Mutex
	positions                      map[int]uint64
}

// port is one output port: a router from key group to link.
type port struct {
	owner []int // key group → index in links
	links []*link
	seqs  map[job.Producer][]uint64
}

// link is the stream from this instance to one downstream instance.
type link struct {
	to      job.InstanceID
	node    string
	fromIdx int // our input number at the destination
	local   *instance
	st      net.Conn
	w       *wire.Writer
	b       wire.BatchBuilder
	buf     []byte
	lastWM  int64
	err     error
}

func newInstance(n *Node, d *wire.Deploy, p *wire.Placement) (*instance, error) {
	spec := &d.Job
	opIdx := spec.Op(p.Op)
	if opIdx < 0 {
		return nil, fmt.Errorf("unknown operator %q", p.Op)
	}
	in := &instance{
		n: n, id: p.ID, place: *p, plan: d, spec: spec, opIdx: opIdx, kind: spec.Ops[opIdx].Kind,
		in: make(chan inMsg, 64), inputIndex: map[job.InstanceID]int{},
		drainc: make(chan struct{}), quit: make(chan struct{}),
		wm: job.NoWatermark, dedup: map[job.Producer][]uint64{}, positions: map[int]uint64{},
	}
	in.curWM.Store(job.NoWatermark)
	for _, src := range spec.Inputs(opIdx) {
		for _, q := range d.Instances {
			if q.Op == spec.Ops[src].Name {
				in.inputIndex[q.ID] = len(in.inputs)
				in.inputs = append(in.inputs, q.ID)
			}
		}
	}
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
	case job.KindCount:
		in.op = job.NewCount(spec)
	case job.KindRollup:
		in.op = job.NewRollup(spec)
	case job.KindSink:
		dir := filepath.Join(d.DataDir, "output")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%s-%d-g%d.jsonl", p.Op, p.Index, p.Gen)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, err
		}
		in.file = f
		in.fileBuf = bufio.NewWriterSize(f, 256<<10)
		in.sink = job.NewSink(in.fileBuf)
		in.op = in.sink
	default:
		return nil, fmt.Errorf("operator kind %q is not supported", in.kind)
	}
	return in, nil
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

func (in *instance) start(ctx context.Context) {
	in.startOnce.Do(func() {
		go func() {
			if err := in.openOutputs(ctx); err != nil {
				in.n.event("error", in.id, nil, "open outputs: %v", err)
				return
			}
			if in.kind == job.KindSource {
				in.runSource(ctx)
			} else {
				in.runKeyed(ctx)
			}
		}()
	})
}

func (in *instance) drain() { in.drainOnce.Do(func() { close(in.drainc) }) }
func (in *instance) stop()  { in.quitOnce.Do(func() { close(in.quit) }) }

// lost treats the streams from the given instances as ended.
func (in *instance) lost(ids []job.InstanceID) {
	for _, id := range ids {
		if i, ok := in.inputIndex[id]; ok {
			go in.deliver(context.Background(), inMsg{from: i, kind: msgLost})
		}
	}
}

func (in *instance) stats() wire.InstanceStats {
	s := wire.InstanceStats{ID: in.id, In: in.nIn.Load(), Out: in.nOut.Load(), Watermark: in.curWM.Load(), Backlog: len(in.in)}
	if in.kind == job.KindSource {
		in.posMu.Lock()
		s.Positions = make(map[int]uint64, len(in.positions))
		for k, v := range in.positions {
			s.Positions[k] = v
		}
		in.posMu.Unlock()
	}
	return s
}

// openOutputs builds the routers of every output port and opens the streams.
func (in *instance) openOutputs(ctx context.Context) error {
	me := in.n.nodeName()
	for _, e := range in.spec.Ops[in.opIdx].Outputs {
		pt := &port{owner: make([]int, in.spec.Groups), seqs: map[job.Producer][]uint64{}}
		for i := range pt.owner {
			pt.owner[i] = -1
		}
		for _, q := range in.plan.Instances {
			if q.Op != e.To {
				continue
			}
			l := &link{to: q.ID, node: q.Node, lastWM: job.NoWatermark}
			in.n.mu.Lock()
			l.local = in.n.insts[q.ID]
			in.n.mu.Unlock()
			if q.Node != me || l.local == nil {
				l.local = nil
				sess := in.n.peer(q.Node)
				if sess == nil {
					return fmt.Errorf("no session to node %s for %s", q.Node, q.ID)
				}
				st, err := sess.OpenStream()
				if err != nil {
					return fmt.Errorf("open stream to %s on %s: %w", q.ID, q.Node, err)
				}
				l.st, l.w = st, wire.NewWriter(st)
				if err := l.w.WriteJSON(wire.TStreamHello, wire.StreamHello{From: in.id, To: q.ID, Gen: in.place.Gen}); err != nil {
					return err
				}
			}
			for _, r := range q.Ranges {
				for g := r.Lo; g < r.Hi; g++ {
					pt.owner[g] = len(pt.links)
				}
			}
			pt.links = append(pt.links, l)
		}
		for g, o := range pt.owner {
			if o < 0 {
				return fmt.Errorf("output to %s: key group %d has no owner", e.To, g)
			}
		}
		in.ports = append(in.ports, pt)
	}
	// Our input number at each destination: by the plan's order.
	for _, pt := range in.ports {
		for _, l := range pt.links {
			l.fromIdx = -1
			dst := in.spec.Op(opOf(l.to))
			k := 0
			for _, src := range in.spec.Inputs(dst) {
				for _, q := range in.plan.Instances {
					if q.Op == in.spec.Ops[src].Name {
						if q.ID == in.id {
							l.fromIdx = k
						}
						k++
					}
				}
			}
		}
	}
	return nil
}

func opOf(id job.InstanceID) string {
	op, _, _ := id.Split()
	return op
}

// Emit routes one output record (job.Emitter).
func (in *instance) Emit(portIdx int, from job.KeyGroup, rec job.Record) {
	pt := in.ports[portIdx]
	kg := job.GroupOf(rec.Key, in.spec.Groups)
	in.emitTo(pt, job.MakeProducer(in.opIdx, int(from)), kg, rec)
}

func (in *instance) emitTo(pt *port, prod job.Producer, kg job.KeyGroup, rec job.Record) {
	seqs := pt.seqs[prod]
	if seqs == nil {
		seqs = make([]uint64, in.spec.Groups)
		pt.seqs[prod] = seqs
	}
	seqs[kg]++
	l := pt.links[pt.owner[kg]]
	l.b.Append(prod, kg, seqs[kg], rec)
	in.nOut.Add(1)
	if l.b.Size() >= batchBytes {
		in.flushLink(l)
	}
}

// batchBytes is the size at which a batch is sent without waiting.
const batchBytes = 64 << 10

func (in *instance) flushLink(l *link) {
	if l.b.Len() == 0 || l.err != nil {
		return
	}
	if l.local != nil {
		payload := l.b.Encode(nil)
		l.b.Reset()
		l.local.deliver(context.Background(), inMsg{from: l.fromIdx, kind: msgBatch, payload: payload})
		return
	}
	l.buf = l.b.Encode(l.buf[:0])
	l.b.Reset()
	if err := l.w.WriteFrame(wire.TBatch, l.buf); err != nil {
		in.linkFailed(l, err)
		return
	}
	if err := l.w.Flush(); err != nil {
		in.linkFailed(l, err)
	}
}

func (in *instance) linkFailed(l *link, err error) {
	if l.err == nil {
		l.err = err
		in.n.event("frame_error", in.id, map[string]any{"to": string(l.to)}, "stream to %s on %s failed: %v", l.to, l.node, err)
	}
}

// sendWatermark flushes every link and sends wm on those that have not seen it.
func (in *instance) sendWatermark(wm int64) {
	for _, pt := range in.ports {
		for _, l := range pt.links {
			in.flushLink(l)
			if wm <= l.lastWM || l.err != nil {
				continue
			}
			l.lastWM = wm
			if l.local != nil {
				l.local.deliver(context.Background(), inMsg{from: l.fromIdx, kind: msgWatermark, wm: wm})
				continue
			}
			if err := l.w.WriteFrame(wire.TWatermark, wire.EncodeWatermark(nil, wm)); err != nil {
				in.linkFailed(l, err)
				continue
			}
			if err := l.w.Flush(); err != nil {
				in.linkFailed(l, err)
			}
		}
	}
}

func (in *instance) flushAll() {
	for _, pt := range in.ports {
		for _, l := range pt.links {
			in.flushLink(l)
		}
	}
}

// endOutputs sends the final watermark and the end of every stream.
func (in *instance) endOutputs() {
	in.sendWatermark(job.MaxWatermark)
	for _, pt := range in.ports {
		for _, l := range pt.links {
			if l.err != nil {
				continue
			}
			if l.local != nil {
				l.local.deliver(context.Background(), inMsg{from: l.fromIdx, kind: msgEnd})
				continue
			}
			if err := l.w.WriteFrame(wire.TEnd, nil); err == nil {
				_ = l.w.Flush()
			}
			_ = l.st.Close()
		}
	}
}

// runKeyed is the loop of a keyed operator instance.
func (in *instance) runKeyed(ctx context.Context) {
	tick := time.NewTicker(time.Duration(max(in.plan.FlushMs, 1)) * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case m := <-in.in:
			if in.handle(m) {
				in.finish()
				return
			}
			if len(in.in) == 0 {
				in.flushAll()
			}
		case <-tick.C:
			in.flushAll()
			if in.fileBuf != nil {
				_ = in.fileBuf.Flush()
			}
			in.fired.maybeReport(in, false)
		case <-in.quit:
			return
		case <-ctx.Done():
			return
		}
	}
}

// handle applies one input message; it reports whether every input has ended.
func (in *instance) handle(m inMsg) bool {
	switch m.kind {
	case msgBatch:
		if err := in.applyBatch(m.payload); err != nil {
			in.n.event("frame_error", in.id, map[string]any{"from": string(in.inputs[m.from])}, "batch from %s: %v; input closed", in.inputs[m.from], err)
			in.ended[m.from] = true
			in.wms[m.from] = job.MaxWatermark
		}
	case msgWatermark:
		if m.wm > in.wms[m.from] {
			in.wms[m.from] = m.wm
		}
	case msgEnd, msgLost:
		in.ended[m.from] = true
		in.wms[m.from] = job.MaxWatermark
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
	if low <= in.wm {
		return
	}
	in.wm = low
	before := in.nOut.Load()
	in.op.Advance(low, in)
	if in.kind == job.KindRollup {
		in.fired.add(low, in.nOut.Load()-before)
	}
	in.curWM.Store(low)
	if low != job.MaxWatermark {
		in.sendWatermark(low)
	}
}

func (in *instance) applyBatch(payload []byte) error {
	var lastP job.Producer
	var last []uint64
	return wire.DecodeBatch(payload, func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
		if int(kg) >= len(in.owned) || !in.owned[kg] {
			in.nStray.Add(1)
			return nil
		}
		if last == nil || p != lastP {
			last = in.dedup[p]
			if last == nil {
				last = make([]uint64, in.spec.Groups)
				in.dedup[p] = last
			}
			lastP = p
		}
		if seq <= last[kg] {
			in.nDup.Add(1)
			return nil
		}
		last[kg] = seq
		in.nIn.Add(1)
		in.op.Process(kg, rec, in)
		return nil
	})
}

// finish runs when every input has ended: fire the rest, end the outputs,
// make the sink's file durable and report.
func (in *instance) finish() {
	in.endOutputs()
	in.fired.maybeReport(in, true)
	if in.file != nil {
		if err := in.sink.Flush(); err == nil {
			err = in.fileBuf.Flush()
		}
		_ = in.file.Sync()
		_ = in.file.Close()
	}
	in.reportDone(nil)
}

func (in *instance) reportDone(pos map[int]uint64) {
	_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlDone, Done: &wire.Done{
		Instance: in.id, Positions: pos, In: in.nIn.Load(), Out: in.nOut.Load(), Late: in.nLate.Load()}})
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
		upTo = fmt.Sprintf("%.3fs", float64(f.upTo)/1000)
	}
	in.n.event("window_fired", in.id, map[string]any{"watermark": f.upTo, "results": f.results},
		"windows up to %s fired: %d results", upTo, f.results)
	f.last, f.results = time.Now(), 0
}

// ---- sources ----

// partState is one source partition being read.
type partState struct {
	p      int
	r      traces.Reader
	clock  job.SourceClock
	pos    uint64
	ended  bool
	held   bool // rec is read but not yet emitted (pacing)
	rec    job.Record
	keyBuf []byte
	datBuf []byte
}

func (in *instance) runSource(ctx context.Context) {
	s := in.plan.Source
	src, err := traces.Open(s.Spec, traces.Options{Seed: s.Seed, Rate: s.Rate, Keys: s.Keys, Partitions: in.spec.Ops[in.opIdx].Parallelism, Speedup: s.Speedup})
	if err != nil {
		in.n.event("error", in.id, nil, "open source: %v", err)
		return
	}
	var parts []*partState
	for _, p := range in.place.Partitions {
		r, err := src.Open(p, 0)
		if err != nil {
			in.n.event("error", in.id, nil, "open partition %d: %v", p, err)
			return
		}
		defer r.Close()
		parts = append(parts, &partState{p: p, r: r, clock: job.SourceClock{Lateness: in.spec.Lateness}})
	}
	pt := in.ports[0]
	speed := s.Speedup
	if speed <= 0 {
		speed = 1
	}
	start := time.Now()
	t0 := int64(job.MaxWatermark)
	flushEvery := time.Duration(max(in.plan.FlushMs, 1)) * time.Millisecond
	lastFlush := start
	const chunk = 1024

	// allowed is the latest event time that may be emitted now.
	allowed := func(now time.Time) int64 {
		if !s.Paced || t0 == job.MaxWatermark {
			return job.MaxWatermark
		}
		return t0 + int64(float64(now.Sub(start).Milliseconds())*speed)
	}
	for {
		select {
		case <-in.drainc:
			in.endSource(parts)
			return
		case <-in.quit:
			return
		case <-ctx.Done():
			return
		default:
		}
		now := time.Now()
		limit := allowed(now)
		live, waiting := 0, false
		nextDue := int64(job.MaxWatermark)
		for _, ps := range parts {
			if ps.ended {
				continue
			}
			live++
			for k := 0; k < chunk; k++ {
				if !ps.held {
					rec, ok, err := ps.r.Next()
					if err != nil {
						in.n.event("error", in.id, map[string]any{"partition": ps.p}, "source partition %d: %v", ps.p, err)
						ps.ended = true
						break
					}
					if !ok {
						ps.ended = true
						break
					}
					ps.keyBuf = append(ps.keyBuf[:0], rec.Key...)
					ps.datBuf = append(ps.datBuf[:0], rec.Data...)
					ps.rec = job.Record{Key: ps.keyBuf, Time: rec.Time, Value: rec.Value, Data: ps.datBuf}
					ps.held = true
					if t0 == job.MaxWatermark {
						t0 = rec.Time
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
				in.nIn.Add(1)
				if ps.clock.Observe(ps.rec.Time) {
					in.nLate.Add(1)
					continue
				}
				kg := job.GroupOf(ps.rec.Key, in.spec.Groups)
				in.emitTo(pt, job.MakeProducer(in.opIdx, ps.p), kg, ps.rec)
			}
		}
		in.publishPositions(parts)
		if live == 0 {
			in.n.event("source_ended", in.id, nil, "all partitions read to the end")
			in.endSource(parts)
			return
		}
		if waiting || time.Since(lastFlush) >= flushEvery {
			in.sendWatermark(sourceWatermark(parts))
			lastFlush = time.Now()
		}
		if waiting {
			// Sleep until the next record is due, but wake for drain.
			due := start.Add(time.Duration(float64(nextDue-t0)/speed) * time.Millisecond)
			d := min(time.Until(due), flushEvery)
			if d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-in.drainc:
				case <-in.quit:
				case <-ctx.Done():
				}
				t.Stop()
			}
		}
	}
}

func sourceWatermark(parts []*partState) int64 {
	wm := int64(job.MaxWatermark)
	for _, ps := range parts {
		if !ps.ended {
			wm = min(wm, ps.clock.Watermark())
		}
	}
	return wm
}

func (in *instance) publishPositions(parts []*partState) {
	in.posMu.Lock()
	for _, ps := range parts {
		in.positions[ps.p] = ps.pos
	}
	in.posMu.Unlock()
	in.curWM.Store(sourceWatermark(parts))
}

func (in *instance) endSource(parts []*partState) {
	in.publishPositions(parts)
	in.endOutputs()
	pos := map[int]uint64{}
	for _, ps := range parts {
		pos[ps.p] = ps.pos
	}
	in.curWM.Store(job.MaxWatermark)
	in.reportDone(pos)
}
