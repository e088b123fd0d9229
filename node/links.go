package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"spate/backup"
	"spate/events"
	"spate/internal/breaks"
	"spate/internal/human"
	"spate/job"
	"spate/wire"
)

// port is one output port: a router from key group to link, the sequence
// counters of every (producer, key group) sent on it, and its upstream
// backup (--ft spate, keyed operators; a source's backup is its replayable
// input).
type port struct {
	to     string
	owner  []int // key group → index in links
	links  []*link
	seqs   map[job.Producer][]uint64
	backup *backup.Buffer
}

// link is the stream from this instance to one downstream instance.
type link struct {
	place   wire.Placement // the downstream instance
	fromIdx int            // our input number at the destination
	local   *instance
	st      net.Conn
	w       *wire.Writer
	b       wire.BatchBuilder
	buf     []byte
	lastWM  int64
	stream  uint64 // a local link's connection number at the destination (acceptInput)
	err     error
	replay  *replay // a source's replay owns the link (replay.go)
	// ahead holds, per producer and key group, how far the downstream
	// already is beyond what we had numbered when the link connected (a
	// restored instance regenerates records its old generation sent):
	// those are not sent again, the downstream would drop them. aheadN
	// counts the entries left; nil when there are none.
	ahead  map[job.Producer][]uint64
	aheadN int
	// A failed link is connected again (retryLinks) at retryAt, and
	// backoff later after each connect that fails.
	retryAt time.Time
	backoff time.Duration
}

// buildPorts makes the routers of every output port from the plan.
func (in *instance) buildPorts() error {
	for _, e := range in.spec.Ops[in.opIdx].Outputs {
		pt := &port{to: e.To, owner: make([]int, in.spec.Groups), seqs: map[job.Producer][]uint64{}}
		if in.plan.FT == wire.FTSpate && in.kind != job.KindSource {
			b, err := backup.New(in.backupConfig())
			if err != nil {
				return err
			}
			pt.backup = b
		}
		for i := range pt.owner {
			pt.owner[i] = -1
		}
		for _, q := range in.plan.Instances {
			if q.Op != e.To {
				continue
			}
			l := &link{place: q, lastWM: job.NoWatermark, fromIdx: -1}
			for _, r := range q.Ranges {
				for g := r.Lo; g < r.Hi; g++ {
					pt.owner[g] = len(pt.links)
				}
			}
			// Our input number at the destination, in the plan's order.
			dst := in.spec.Op(q.Op)
			k := 0
			for _, src := range in.spec.Inputs(dst) {
				for _, u := range in.plan.Instances {
					if u.Op == in.spec.Ops[src].Name {
						if u.ID == in.id {
							l.fromIdx = k
						}
						k++
					}
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
	return nil
}

// backupConfig bounds an upstream backup's memory: past the limit it
// spills to the run directory, or with --backup-full block it reports
// Full and the instance stops taking input (an event says which).
func (in *instance) backupConfig() backup.Config {
	cfg := backup.DefaultConfig()
	if in.plan.BackupMem > 0 {
		cfg.MemLimit = in.plan.BackupMem
	}
	if in.plan.BackupBlock {
		return cfg
	}
	dir := in.n.spillDir // a node that cannot see the run directory spills locally (store.go)
	if dir == "" {
		dir = filepath.Join(in.plan.DataDir, "spill")
	}
	if os.MkdirAll(dir, 0o755) == nil {
		cfg.SpillDir = dir
	}
	return cfg
}

// openOutputs connects every link: each downstream answers with how far it
// has applied our records, and we replay the rest from our backup.
func (in *instance) openOutputs(ctx context.Context) error {
	for pi, pt := range in.ports {
		for _, l := range pt.links {
			if err := in.connect(ctx, pi, l, false); err != nil {
				// The downstream may be moving: its reroute reconnects.
				in.linkFailed(l, err)
			} else {
				// A restored instance's watermark, which may never move
				// again (its sources at the end of their input).
				in.linkUp(l)
			}
		}
	}
	return nil
}

// connect opens the stream of l, learns the downstream's positions and
// replays what it lacks. With wait, a missing session to the downstream's
// node is waited for (up to peerWait): the coordinator has just placed the
// downstream on a node that joined a moment ago (a reroute, a rescale's
// commit). Without it a missing session fails the connect at once: the
// plan's placement may be on a node that is lost, whose session never
// comes, and the downstream's reroute will reconnect.
func (in *instance) connect(ctx context.Context, pi int, l *link, wait bool) error {
	in.endReplay(l, false)
	l.local, l.st, l.w, l.err, l.lastWM = nil, nil, nil, errConnecting, job.NoWatermark
	l.b.Reset()
	if l.place.Node == "" {
		return errUnplaced
	}
	me := in.n.nodeName()
	var resume []wire.Position
	if l.place.Node == me {
		target := in.n.instance(l.place.ID)
		if target == nil {
			return fmt.Errorf("%s is not on this node", l.place.ID)
		}
		l.local = target
		idx, known, stale := -1, false, false
		ok := target.call(ctx, func() {
			if stale = target.place.Gen < l.place.Gen; stale {
				return // an older generation, stopped, that a restore queued on this node replaces
			}
			// Our input number there, by id: a rescale appends inputs.
			if idx, known = target.inputIndex[in.id]; known {
				resume, l.stream = target.acceptInput(idx, in.place.Gen, func(ps []wire.Position) {
					in.do(func() { in.applyTrim(pi, l, ps) })
				})
			}
		})
		if !ok {
			return fmt.Errorf("%s is gone", l.place.ID)
		}
		if stale {
			return fmt.Errorf("%s generation %d is not restored on this node yet", l.place.ID, l.place.Gen)
		}
		if !known {
			return fmt.Errorf("%s is not an input of %s", in.id, l.place.ID)
		}
		l.fromIdx = idx
	} else {
		sess := in.n.peer(l.place.Node)
		if sess == nil && wait {
			// A node that has just joined dialed us, but our side of the
			// session may not be registered yet when the coordinator,
			// told by that node, reroutes to an instance on it.
			if in.n.waitPeers(ctx, []string{l.place.Node}, peerWait) == nil {
				sess = in.n.peer(l.place.Node)
			}
		}
		if sess == nil {
			return fmt.Errorf("no session to node %s for %s", l.place.Node, l.place.ID)
		}
		st, err := sess.OpenStream()
		if err != nil {
			return fmt.Errorf("open stream to %s on %s: %w", l.place.ID, l.place.Node, err)
		}
		w := wire.NewWriter(st)
		if err := w.WriteJSON(wire.TStreamHello, wire.StreamHello{From: in.id, To: l.place.ID, Gen: in.place.Gen, ToGen: l.place.Gen}); err == nil {
			err = w.Flush()
		}
		if err != nil {
			st.Close()
			return fmt.Errorf("stream to %s: %w", l.place.ID, err)
		}
		_ = st.SetReadDeadline(time.Now().Add(30 * time.Second))
		r := wire.NewReader(st, 0)
		// The answer may never come (the downstream's node cut off from
		// ours): a reroute of the downstream ends the wait as the node's
		// control reader reads it (Node.supersede), before or after the
		// wait begins, or the instance, waiting here, would not see it
		// for the whole deadline.
		d := &dialAttempt{to: l.place.ID, node: l.place.Node, gen: l.place.Gen, st: st}
		in.dialing.Store(d)
		if in.n.supersededDial(d) {
			_ = st.SetReadDeadline(time.Now()) // a reroute came before this connect waited
		}
		t, p, err := r.ReadFrame()
		in.dialing.Store(nil)
		if err == nil && t != wire.TResume {
			err = fmt.Errorf("want a resume frame, got %v", t)
		}
		if err == nil {
			resume, err = wire.DecodePositions(p)
		}
		if err != nil {
			st.Close()
			return fmt.Errorf("stream to %s on %s: %w", l.place.ID, l.place.Node, err)
		}
		_ = st.SetReadDeadline(time.Time{})
		l.st, l.w = st, w
		go in.readTrims(pi, l, st, r)
	}
	l.err, l.backoff = nil, 0
	in.markAhead(pi, l, resume)
	from := resume // where a replay starts
	if in.plan.Break.Has(breaks.ReplayLate) {
		from = oneLate(resume) // broken on purpose: the first record it lacks is never sent
	}
	switch {
	case in.plan.FT == wire.FTSpate && in.src != nil: // on a goroutine of its own (replay.go)
		in.src.startReplay(in, l, from)
	case in.plan.FT == wire.FTSpate:
		in.startBackupReplay(pi, l, from)
	case in.src != nil:
		// Global's barriers go in band on every link, so its sources
		// replay (after a link reset) before anything else.
		in.src.replayTo(in, l, from)
	default:
		// A keyed sender without a backup: what the closed connection
		// took is gone, and only the coordinator can get it back (a
		// global rollback).
		in.reportGap(pi, l, resume)
	}
	return nil
}

// reportGap tells the coordinator how many records numbered for l's
// downstream it does not have by its resume positions, if any.
func (in *instance) reportGap(pi int, l *link, resume []wire.Position) {
	pt := in.ports[pi]
	have := map[[2]int]uint64{}
	for _, p := range resume {
		have[[2]int{int(p.P), int(p.KG)}] = p.Seq
	}
	idx := slices.Index(pt.links, l)
	var n uint64
	for prod, seqs := range pt.seqs {
		for kg, seq := range seqs {
			if pt.owner[kg] == idx {
				if h := have[[2]int{int(prod), kg}]; seq > h {
					n += seq - h
				}
			}
		}
	}
	if n == 0 || in.n.ctl == nil {
		return
	}
	_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlGap, Gap: &wire.Gap{
		From: in.id, FromGen: in.place.Gen, To: l.place.ID, ToGen: l.place.Gen, Records: n}})
}

// dialAttempt is a connect waiting for its downstream's resume frame.
type dialAttempt struct {
	to   job.InstanceID
	node string
	gen  uint64
	st   net.Conn
}

// abandonDial ends the wait of a connect still waiting for q's answer at
// an older placement of q: the reroute to q's new one is queued behind
// it. It sets the stream's read deadline to now (a close could wait on
// the cut-off link); the connect then closes the stream.
func (in *instance) abandonDial(q wire.Placement) {
	if d := in.dialing.Load(); d != nil && supersedes(q, d) {
		_ = d.st.SetReadDeadline(time.Now())
	}
}

// supersedes reports whether q is a newer placement of d's target than
// the one d dials.
func supersedes(q wire.Placement, d *dialAttempt) bool {
	return d.to == q.ID && (d.node != q.Node || d.gen < q.Gen)
}

// acceptInput runs on the receiving instance's goroutine when input i
// (re)connects: it fences older generations, remembers where trims go and
// returns the positions the sender must resume after, and the number of
// the new connection, which its messages carry (inMsg.stream).
//
// The input's watermark is forgotten: it was said on the replaced
// connection, and the new one may replay records behind it (key groups
// re-routed to us by a rescale). The sender says it again on the new
// connection once its replay is sent. The instance's own watermark never
// goes back; it only waits for the input's new one to move on.
func (in *instance) acceptInput(i int, gen uint64, back backChannel) ([]wire.Position, uint64) {
	if i < 0 || i >= len(in.inputs) || gen < in.inputGen[i] {
		return nil, 0
	}
	in.inputGen[i] = gen
	in.back[i] = back
	in.inputConn[i]++
	if !in.ended[i] {
		in.wms[i] = job.NoWatermark
	}
	return in.positionsFor(i), in.inputConn[i]
}

// oneLate is positions each one record further on: where a replay broken
// on purpose (--break replay-late) starts.
func oneLate(ps []wire.Position) []wire.Position {
	out := make([]wire.Position, len(ps))
	for i, p := range ps {
		p.Seq++
		out[i] = p
	}
	return out
}

// readTrims reads what a downstream sends back on our stream: trims.
func (in *instance) readTrims(pi int, l *link, st net.Conn, r *wire.Reader) {
	for {
		t, p, err := r.ReadFrame()
		if err != nil {
			return
		}
		if t != wire.TTrim {
			continue
		}
		ps, err := wire.DecodePositions(p)
		if err != nil {
			in.n.event(events.FrameError, in.id, nil, "trim from %s: %v", l.place.ID, err)
			return
		}
		if !in.do(func() {
			if l.st == st { // still the current stream of l
				in.applyTrim(pi, l, ps)
			}
		}) {
			return
		}
	}
}

// applyTrim drops what the downstream of l no longer needs.
func (in *instance) applyTrim(pi int, l *link, ps []wire.Position) {
	if in.src != nil {
		in.src.trim(in, l, ps)
		return
	}
	pt := in.ports[pi]
	if pt.backup == nil {
		return
	}
	var freed int64
	var upTo uint64
	for _, p := range ps {
		if pt.owner[p.KG] >= 0 && pt.links[pt.owner[p.KG]] == l {
			freed += pt.backup.Trim(p.P, p.KG, p.Seq)
			upTo = max(upTo, p.Seq)
		}
	}
	if freed > 0 {
		st := pt.backup.Stats()
		in.n.event(events.Trim, in.id, events.TrimFields{To: string(l.place.ID), Slice: events.Ranges(l.place.Ranges), Positions: len(ps),
			UpTo: upTo, FreedBytes: freed, HeldBytes: st.MemBytes + st.SpillBytes},
			"backup toward %s %v trimmed: %s freed, %s held", l.place.ID, l.place.Ranges, human.Bytes(float64(freed)), human.Bytes(float64(st.MemBytes+st.SpillBytes)))
	}
}

// reroute points the links toward a moved instance at its new place and
// fences the old generation of an input.
func (in *instance) reroute(ctx context.Context, q wire.Placement) {
	if i, ok := in.inputIndex[q.ID]; ok && q.Gen > in.inputGen[i] {
		in.inputGen[i] = q.Gen
	}
	for pi, pt := range in.ports {
		for _, l := range pt.links {
			// A link up to the same placement stays. One to the same
			// generation on another node is moved too: a rescale's new
			// instance lost with its node while staged is rerouted to no
			// node, and its connect then dials nothing (errUnplaced).
			if l.place.ID != q.ID || l.place.Gen > q.Gen || (l.place.Gen == q.Gen && l.place.Node == q.Node && l.err == nil) {
				continue
			}
			if l.st != nil {
				l.st.Close()
			}
			l.place = q
			in.relink(ctx, pi, l, true)
		}
	}
}

// adoptPlacements brings an instance that has not started yet up to the
// placements of plan: what reroute does for a running one, without the
// connects, which its start makes.
func (in *instance) adoptPlacements(plan []wire.Placement) {
	for _, q := range plan {
		if i, ok := in.inputIndex[q.ID]; ok && q.Gen > in.inputGen[i] {
			in.inputGen[i] = q.Gen
		}
		for _, pt := range in.ports {
			for _, l := range pt.links {
				if l.place.ID == q.ID && q.Gen >= l.place.Gen {
					l.place = q
				}
			}
		}
	}
}

// relink reconnects l (see connect) and brings its downstream up to now:
// the watermark and, if this instance has ended its outputs already (its
// downstream was restored during the drain, or gained key groups from a
// rescale after a finite source ended), the end of the stream once the
// replay is over.
func (in *instance) relink(ctx context.Context, pi int, l *link, wait bool) {
	if err := in.connect(ctx, pi, l, wait); err != nil {
		in.linkFailed(l, err)
		return
	}
	in.linkUp(l)
}

// linkUp brings the downstream of a link just connected up to now.
func (in *instance) linkUp(l *link) {
	in.sendWatermarkTo(l, in.currentWatermark())
	if in.outputsEnded && l.replay == nil {
		in.endLink(l)
	}
}

// The first retry of a failed link, and the longest wait between two.
const (
	linkRetryFirst = 100 * time.Millisecond
	linkRetryMax   = 5 * time.Second
)

// retryLinks connects again, with --ft spate, every link whose stream
// failed (a write or a connect) while the downstream's node is still in
// session with ours: a stream the receiver closed, a resume handshake
// that timed out. A lost node's instances are rerouted and a session
// that ended is redialed, each reconnecting its links; nothing did so
// for a stream that failed on its own, and the downstream waited for
// ever. The resume handshake and the replay make a reconnect lossless,
// as for any other. A connect that fails again waits twice as long,
// up to linkRetryMax, without another event: the first failure said it.
func (in *instance) retryLinks(ctx context.Context, now time.Time) {
	if in.plan.FT != wire.FTSpate {
		return
	}
	for pi, pt := range in.ports {
		for _, l := range pt.links {
			if l.err == nil || l.err == errConnecting || now.Before(l.retryAt) {
				continue
			}
			l.backoff = min(max(2*l.backoff, linkRetryFirst), linkRetryMax)
			l.retryAt = now.Add(l.backoff)
			if l.place.Node != in.n.nodeName() && in.n.peer(l.place.Node) == nil {
				continue // the redial or the reroute reconnects it
			}
			was := l.err
			if err := in.connect(ctx, pi, l, false); err != nil {
				l.err = err
				continue
			}
			in.n.event(events.LinkReconnected, in.id, events.LinkReconnectedFields{To: string(l.place.ID)},
				"stream to %s on %s reconnected (it had failed: %v)", l.place.ID, l.place.Node, was)
			in.linkUp(l)
		}
	}
}

// currentWatermark is what this instance has promised downstream so far.
func (in *instance) currentWatermark() int64 {
	if in.outputsEnded {
		return job.MaxWatermark
	}
	if in.src != nil {
		return in.src.watermark()
	}
	return in.wm
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
	if pt.backup != nil {
		if err := pt.backup.Append(prod, kg, seqs[kg], rec); err != nil {
			in.n.event(events.Error, in.id, nil, "backup: %v", err)
		}
	}
	l := pt.links[pt.owner[kg]]
	in.outN++
	if l.replay != nil {
		return // the replay will read it again and send it
	}
	if l.ahead != nil && l.knownTo(prod, kg, seqs[kg]) {
		return
	}
	l.b.Append(prod, kg, seqs[kg], rec)
	if l.b.Size() >= batchBytes {
		in.flushLink(l)
	}
}

// markAhead records where the downstream of l, by its resume positions,
// is ahead of our numbering on port pi.
func (in *instance) markAhead(pi int, l *link, resume []wire.Position) {
	l.ahead, l.aheadN = nil, 0
	pt := in.ports[pi]
	for _, p := range resume {
		if int(p.KG) >= in.spec.Groups {
			continue
		}
		var have uint64
		if seqs := pt.seqs[p.P]; seqs != nil {
			have = seqs[p.KG]
		}
		if p.Seq <= have {
			continue
		}
		if l.ahead == nil {
			l.ahead = map[job.Producer][]uint64{}
		}
		h := l.ahead[p.P]
		if h == nil {
			h = make([]uint64, in.spec.Groups)
			l.ahead[p.P] = h
		}
		if h[p.KG] == 0 {
			l.aheadN++
		}
		h[p.KG] = p.Seq
	}
}

// knownTo reports whether record seq of (prod, kg) is one the downstream
// of l had when it connected, and forgets the mark once seq reaches it.
func (l *link) knownTo(prod job.Producer, kg job.KeyGroup, seq uint64) bool {
	h := l.ahead[prod]
	if h == nil || seq > h[kg] {
		return false
	}
	if seq == h[kg] {
		h[kg] = 0
		if l.aheadN--; l.aheadN == 0 {
			l.ahead = nil
		}
	}
	return true
}

// aheadOf reports whether the downstream of l had, when it connected,
// records of prod that our numbering (seqs, by key group) has not reached
// yet. It compares with the numbering, not with the marks knownTo clears:
// a mark passed while the link was in a replay is never cleared.
func (l *link) aheadOf(prod job.Producer, seqs []uint64) bool {
	for kg, seq := range l.ahead[prod] {
		if seq != 0 && (kg >= len(seqs) || seqs[kg] < seq) {
			return true
		}
	}
	return false
}

// errConnecting marks a link whose stream is not open yet.
var errConnecting = errors.New("connecting")

// errUnplaced marks a link to an instance that is on no node for now (a
// rescale's new instance lost with its node while staged): nothing is
// dialed until a reroute places it.
var errUnplaced = errors.New("not placed on any node")

// peerWait bounds how long a connect waits for the session to a node
// that has just joined.
const peerWait = 5 * time.Second

// batchBytes is the size at which a batch is sent without waiting.
const batchBytes = 64 << 10

func (in *instance) flushLink(l *link) {
	if in.writeBatch(l) {
		in.flushStream(l)
	}
}

// writeBatch writes the batch of l into its stream's buffer, or hands it
// to a local instance; it reports whether the stream has bytes to flush.
func (in *instance) writeBatch(l *link) bool {
	if l.b.Len() == 0 || l.replay != nil {
		return false
	}
	if l.err != nil {
		l.b.Reset() // the records are in the backup; the link is down
		return false
	}
	if l.local != nil {
		payload := l.b.Encode(getPayload(l.b.Size())[:0])
		l.b.Reset()
		l.local.deliver(context.Background(), inMsg{from: l.fromIdx, gen: in.place.Gen, stream: l.stream, kind: msgBatch, payload: payload, pooled: true})
		return false
	}
	l.buf = l.b.Encode(l.buf[:0])
	l.b.Reset()
	if err := l.w.WriteFrame(wire.TBatch, l.buf); err != nil {
		in.linkFailed(l, err)
		return false
	}
	return true
}

// flushStream sends what the stream of l has buffered.
func (in *instance) flushStream(l *link) {
	if err := l.w.Flush(); err != nil {
		in.linkFailed(l, err)
	}
}

func (in *instance) linkFailed(l *link, err error) {
	if err == errUnplaced {
		l.err = err // no failure: its reroute connects it
		return
	}
	if l.err == nil || l.err == errConnecting { // a failed connect is a failure too
		l.err = err
		l.retryAt = time.Now().Add(linkRetryFirst)
		in.n.event(events.FrameError, in.id, events.FrameErrorFields{To: string(l.place.ID)}, "stream to %s on %s failed: %v", l.place.ID, l.place.Node, err)
	}
}

// sendWatermark flushes every link and sends wm on those that have not seen it.
func (in *instance) sendWatermark(wm int64) {
	for _, pt := range in.ports {
		for _, l := range pt.links {
			in.sendWatermarkTo(l, wm)
		}
	}
}

func (in *instance) sendWatermarkTo(l *link, wm int64) {
	pending := in.writeBatch(l) // the batch and the watermark go in one write
	if wm <= l.lastWM || l.err != nil || l.replay != nil {
		if pending {
			in.flushStream(l)
		}
		return
	}
	l.lastWM = wm
	if l.local != nil {
		l.local.deliver(context.Background(), inMsg{from: l.fromIdx, gen: in.place.Gen, stream: l.stream, kind: msgWatermark, wm: wm})
		return
	}
	if err := l.w.WriteFrame(wire.TWatermark, wire.EncodeWatermark(nil, wm)); err != nil {
		in.linkFailed(l, err)
		return
	}
	in.flushStream(l)
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
	for _, pt := range in.ports {
		for _, l := range pt.links {
			in.endReplay(l, true)
		}
	}
	in.sendWatermark(job.MaxWatermark)
	for _, pt := range in.ports {
		for _, l := range pt.links {
			in.endLink(l)
		}
	}
	in.outputsEnded = true
}

// endLink ends the stream of l, if it is up.
func (in *instance) endLink(l *link) {
	if l.err != nil {
		return
	}
	if l.local != nil {
		l.local.deliver(context.Background(), inMsg{from: l.fromIdx, gen: in.place.Gen, stream: l.stream, kind: msgEnd})
		return
	}
	if err := l.w.WriteFrame(wire.TEnd, nil); err == nil {
		_ = l.w.Flush()
	}
	_ = l.st.Close()
}

// remoteBack is the trim channel of an inbound stream: trims go back to
// the sender on the same yamux stream.
type remoteBack struct {
	mu sync.Mutex
	w  *wire.Writer
}

func newRemoteBack(st net.Conn) *remoteBack { return &remoteBack{w: wire.NewWriter(st)} }

func (b *remoteBack) send(ps []wire.Position) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w.WriteFrame(wire.TTrim, wire.EncodePositions(nil, ps)) == nil {
		_ = b.w.Flush()
	}
}
