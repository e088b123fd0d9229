package node

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"spate/internal/chanmu"
	"spate/netfault"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"

	"spate/events"
	"spate/job"
	"spate/pki"
	"spate/state"
	"spate/traces"
	"spate/wire"
)

// Config configures a node process.
type Config struct {
	Name      string        // the node's name; "" when joining
	Coord     string        // the coordinator's address
	Token     string        // the cluster token
	Listen    string        // where to accept peers; "": port 0 on the address the coordinator is reached from
	Heartbeat time.Duration // heartbeat period
	// CoordTimeout is how long the node waits for a coordinator once its
	// own is gone (a crash: `spate up --resume` starts the next), its
	// instances and streams kept; then it stops them and exits cleanly.
	// 0: it exits at once, as before there was --resume.
	CoordTimeout time.Duration
	Transport    wire.Transport // nil: TCP
	Log          *log.Logger
	// Store holds the checkpoints; nil: checkpoints/ of the run
	// directory (the product's). The simulation hands every node and the
	// coordinator one in-memory store.
	Store state.Store
	// FrameAligned makes the link fault layer hold traffic only between
	// yamux frames (netfault.Config.FrameAligned): the simulation's.
	FrameAligned bool
}

// DefaultConfig returns the defaults of a node.
func DefaultConfig() Config {
	return Config{Heartbeat: 100 * time.Millisecond, CoordTimeout: DefaultCoordTimeout, Transport: wire.TCP{}}
}

// DefaultCoordTimeout is how long a node waits for a coordinator that
// went away (--coord-timeout).
const DefaultCoordTimeout = 30 * time.Second

// peerListenAddr is where a node accepts its peers: listen when given,
// else port 0 on the address its coordinator connection leaves from
// (local, that connection's LocalAddr): on another host its address on
// the network the lab shares, which its peers can dial; on loopback,
// loopback. A connection that is not TCP (the in-memory transport)
// leaves the choice to the transport ("").
func peerListenAddr(listen string, local net.Addr) string {
	if listen != "" {
		return listen
	}
	if ta, ok := local.(*net.TCPAddr); ok && ta.IP != nil {
		return net.JoinHostPort(ta.IP.String(), "0")
	}
	return ""
}

// Main is `spate node`: it parses args and runs a node until the
// coordinator stops it or goes away. It returns the process exit code.
func Main(args []string, stderr io.Writer) int {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Name, "name", "", "node name (assigned by the coordinator when empty)")
	fs.StringVar(&cfg.Coord, "coord", "", "coordinator address HOST:PORT")
	join := fs.String("join", "", "join a running cluster at HOST:PORT (same as --coord)")
	fs.StringVar(&cfg.Token, "token", "", "cluster token (default $SPATE_TOKEN)")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "address for peer connections (default: port 0 on the address this host reaches the coordinator from)")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", cfg.Heartbeat, "heartbeat period")
	fs.DurationVar(&cfg.CoordTimeout, "coord-timeout", cfg.CoordTimeout, "how long to wait for a coordinator that went away (spate up --resume starts the next), the instances kept; then stop and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *join != "" {
		cfg.Coord = *join
	}
	if cfg.Token == "" {
		cfg.Token = os.Getenv("SPATE_TOKEN")
	}
	if cfg.Coord == "" || cfg.Token == "" {
		fmt.Fprintln(stderr, "spate node: --coord (or --join) and --token are required")
		return 2
	}
	cfg.Log = log.New(stderr, "", log.LstdFlags|log.Lmicroseconds)
	// A worker holds state, in-flight batches and upstream backup: trade
	// memory for garbage-collector time (the default, 100, spends a tenth
	// of a worker's CPU marking), under a soft limit. GOGC and GOMEMLIMIT
	// in the environment win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(2 << 30)
	}
	// SPATE_CPUPROFILE=DIR writes DIR/NAME-PID.prof: where a node's time
	// goes (the pid keeps the runs of a benchmark apart). See doc.go.
	if dir := os.Getenv("SPATE_CPUPROFILE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.prof", cfg.Name, os.Getpid())))
		if err == nil {
			if err = pprof.StartCPUProfile(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			cfg.Log.Printf("node %s: SPATE_CPUPROFILE: %v", cfg.Name, err)
		} else {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	adviseHugePages(ctx, func(format string, args ...any) {
		cfg.Log.Printf("node %s: "+format, append([]any{cfg.Name}, args...)...)
	})
	if err := Run(ctx, cfg); err != nil {
		cfg.Log.Printf("node %s: %v", cfg.Name, err)
		return 1
	}
	return 0
}

// Node is a running worker.
type Node struct {
	cfg Config
	tr  wire.Transport
	log *log.Logger

	// staged is the instances a pre-copy created and loaded but has not
	// started yet (rescale.go, stage). It was a package-level map keyed
	// by node, which kept every node that ever staged alive: the
	// simulation runs thousands of nodes in one process.
	stagedMu sync.Mutex
	staged   map[job.InstanceID]*stagedInst

	ctl *ctlConn

	// rerouted is the newest placement a reroute named for each instance
	// (supersede).
	reroutedMu sync.Mutex
	rerouted   map[job.InstanceID]wire.Placement

	mu        sync.Mutex
	name      string
	peers     map[string]*yamux.Session // by peer name
	peerc     chan struct{}             // closed and replaced whenever peers changes
	plan      *wire.Deploy
	store     *faultStore
	out       state.Store                   // the sinks' output store; nil: files in the run directory (store.go)
	coordSess *yamux.Session                // the coordinator session, for the coordinator store
	spillDir  string                        // where backups spill; "": the run directory's spill/ (store.go)
	localDir  string                        // a node that cannot see the run directory: its own files, removed at exit (store.go)
	traffic   atomic.Pointer[trafficReport] // the network traffic of the stores, once deployed (store.go)
	layer     *netfault.Layer               // injected link faults on the peer links (faults.go)
	dials     map[string]bool               // peers this node dials (and redials)
	insts     map[job.InstanceID]*instance
	grants    map[int]uint64 // the highest read grant of each source partition (wire.CtlGrant); guarded by mu
	grantSeq  atomic.Uint64  // bumped at every change of grants: the sources read them again
	cancel    context.CancelFunc

	// joined is closed once the join is done: id is set then, and never
	// changes (tls.go).
	joined chan struct{}
	id     *pki.Identity // with TLS: this node's certificate and the run's CA; nil without
}

// ctlConn is the control stream; writes are serialised.
type ctlConn struct {
	mu chanmu.Mutex // held across a write that may wait for the coordinator
	w  *wire.Writer
}

var errNoCoordinator = errors.New("no coordinator connection")

// errNotDeployed answers what needs the plan before any deploy came.
var errNotDeployed = errors.New("this node was never deployed")

// swap makes w, a new coordinator's control stream, the one written to.
func (c *ctlConn) swap(w *wire.Writer) {
	c.mu.Lock()
	c.w = w
	c.mu.Unlock()
}

func (c *ctlConn) send(t wire.Type, v any) error {
	if c == nil { // an instance tested on its own
		return errNoCoordinator
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.w.WriteJSON(t, v); err != nil {
		return err
	}
	return c.w.Flush()
}

// Run runs a node until ctx ends, the coordinator says stop, or the
// coordinator connection is lost (an error).
func Run(ctx context.Context, cfg Config) error {
	if cfg.Transport == nil {
		cfg.Transport = wire.TCP{}
	}
	if cfg.Log == nil {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 100 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fcfg := netfault.DefaultConfig()
	fcfg.FrameAligned = cfg.FrameAligned
	layer, err := netfault.NewLayer(fcfg)
	if err != nil {
		return err
	}
	n := &Node{cfg: cfg, tr: cfg.Transport, log: cfg.Log, name: cfg.Name, layer: layer,
		peers: map[string]*yamux.Session{}, peerc: make(chan struct{}), dials: map[string]bool{},
		insts: map[job.InstanceID]*instance{}, cancel: cancel, joined: make(chan struct{})}
	defer n.closePeers()
	defer func() {
		if n.localDir != "" {
			_ = os.RemoveAll(n.localDir)
		}
	}()

	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := n.tr.Dial(dctx, cfg.Coord)
	dcancel()
	if err != nil {
		return fmt.Errorf("dial coordinator %s: %w", cfg.Coord, err)
	}
	defer conn.Close()
	// After the dial: with no --listen, the peers' address is the one
	// this node reaches the coordinator from.
	ln, err := n.tr.Listen(peerListenAddr(cfg.Listen, conn.LocalAddr()))
	if err != nil {
		return fmt.Errorf("listen for peers: %w", err)
	}
	defer ln.Close()
	go n.acceptPeers(ctx, ln)
	listen := ln.Addr().String()
	sess, st, w, err := n.open(conn, listen)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.name = w.Node
	n.mu.Unlock()
	close(n.joined)
	go n.heartbeats(ctx)
	for {
		err := n.serveControl(ctx, sess, st)
		sess.Close()
		if !errors.Is(err, errCoordLost) || cfg.CoordTimeout <= 0 {
			return err
		}
		// The coordinator is gone: keep the instances and their streams
		// (the sources stop at their grants) and wait for the next one.
		n.log.Printf("node %s: %v; waiting up to %v for a coordinator at %s (spate up --resume)", n.nodeName(), err, cfg.CoordTimeout, cfg.Coord)
		if sess, st, err = n.rejoin(ctx, w.Run, listen); err != nil {
			n.stopAll()
			if ctx.Err() != nil {
				return nil
			}
			n.log.Printf("node %s: %v: stopping", n.nodeName(), err)
			return nil // a clean exit: nothing is left running
		}
		n.log.Printf("node %s: rejoined the coordinator at %s", n.nodeName(), cfg.Coord)
	}
}

// errCoordLost is a control stream that ended without a stop.
var errCoordLost = errors.New("coordinator connection lost")

// open joins the coordinator over conn and opens the control stream: the
// node's link to the coordinator from now on (n.ctl, n.coordSess).
func (n *Node) open(conn net.Conn, listen string) (*yamux.Session, net.Conn, wire.Welcome, error) {
	w, conn, err := n.join(conn, listen) // tls.go
	if err != nil {
		conn.Close()
		return nil, nil, w, err
	}
	sess, err := yamux.Client(wire.Coalesce(conn), wire.YamuxConfig())
	if err != nil {
		conn.Close()
		return nil, nil, w, err
	}
	st, err := sess.OpenStream()
	if err != nil {
		sess.Close()
		return nil, nil, w, fmt.Errorf("open control stream: %w", err)
	}
	n.mu.Lock()
	n.coordSess = sess // later streams are store requests (store.go)
	n.mu.Unlock()
	if n.ctl == nil {
		n.ctl = &ctlConn{w: wire.NewWriter(st)}
	} else {
		n.ctl.swap(wire.NewWriter(st))
	}
	return sess, st, w, nil
}

// rejoin dials the coordinator again and again, until one of run answers
// or CoordTimeout has passed.
func (n *Node) rejoin(ctx context.Context, run, listen string) (*yamux.Session, net.Conn, error) {
	deadline := time.Now().Add(n.cfg.CoordTimeout)
	var last error
	for time.Now().Before(deadline) {
		dctx, dcancel := context.WithTimeout(ctx, time.Second)
		conn, err := n.tr.Dial(dctx, n.cfg.Coord)
		dcancel()
		if err == nil {
			var sess *yamux.Session
			var st net.Conn
			var w wire.Welcome
			if sess, st, w, err = n.open(conn, listen); err == nil {
				if w.Run == run {
					return sess, st, nil
				}
				sess.Close()
				return nil, nil, fmt.Errorf("the coordinator at %s runs %s, not this node's run %s", n.cfg.Coord, w.Run, run)
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, nil, fmt.Errorf("no coordinator within %v (last: %v)", n.cfg.CoordTimeout, last)
}

// serveControl acts on the coordinator's control messages until it says
// stop (nil), ctx ends (nil) or the stream ends (errCoordLost).
//
// A reader goroutine reads the messages and hands them, in order, to this
// one, which acts on them. A reroute takes effect at once in one respect:
// the reader ends the wait of any connect still waiting for an answer
// from the rerouted instance's old placement (supersede). Acting on a
// message may wait for an instance's goroutine (a rescale's prepare and
// commit call it), and that goroutine may be inside such a connect, to a
// node cut off and lost: the reroute that ends the connect then waited
// behind the call, the whole 30 s of the connect's deadline (seed 216).
func (n *Node) serveControl(ctx context.Context, sess *yamux.Session, st net.Conn) error {
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	msgs := make(chan *wire.Control, 256)
	errc := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		r := wire.NewReader(st, 0)
		for {
			t, p, err := r.ReadFrame()
			if err != nil {
				errc <- fmt.Errorf("%w: %w", errCoordLost, err)
				return
			}
			if t != wire.TControl {
				errc <- fmt.Errorf("coordinator sent a %v frame on the control stream", t)
				return
			}
			m := new(wire.Control)
			if err := wire.DecodeJSON(t, p, m); err != nil {
				errc <- fmt.Errorf("coordinator: %w", err)
				return
			}
			if m.Kind == wire.CtlReroute && m.Reroute != nil {
				n.supersede(*m.Reroute)
			}
			select {
			case msgs <- m:
			case <-done:
				return
			}
		}
	}()
	for {
		var m *wire.Control
		select {
		case m = <-msgs:
		case err := <-errc:
			// What was read before the error is acted on first.
			for len(msgs) > 0 {
				if n.act(ctx, <-msgs) {
					return nil
				}
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if n.act(ctx, m) {
			return nil
		}
	}
}

// act acts on one control message; it reports whether the node stops.
func (n *Node) act(ctx context.Context, m *wire.Control) bool {
	if !n.handle(ctx, m) {
		return false
	}
	if m.Error != "" {
		n.log.Printf("node %s: the coordinator stops this node: %s", n.nodeName(), m.Error)
	}
	n.stopAll()
	return true
}

// supersede records q as the newest placement a reroute named for its
// instance and ends every connect of a local instance still waiting for
// an answer from an older one (abandonDial); a connect that starts waiting
// after this looks here itself (supersededDial). Any goroutine may call it.
func (n *Node) supersede(q wire.Placement) {
	n.reroutedMu.Lock()
	if old, ok := n.rerouted[q.ID]; !ok || q.Gen >= old.Gen {
		if n.rerouted == nil {
			n.rerouted = map[job.InstanceID]wire.Placement{}
		}
		n.rerouted[q.ID] = q
	}
	n.reroutedMu.Unlock()
	for _, in := range n.instances() {
		in.abandonDial(q)
	}
}

// supersededDial reports whether a reroute has named a placement of d's
// target newer than the one d dials.
func (n *Node) supersededDial(d *dialAttempt) bool {
	n.reroutedMu.Lock()
	q, ok := n.rerouted[d.to]
	n.reroutedMu.Unlock()
	return ok && supersedes(q, d)
}

// closePeers closes the sessions to every peer: a node that stops leaves
// no link open (a process's exit closes its sockets; an in-process node's
// must be closed by hand).
func (n *Node) closePeers() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.peers {
		s.Close()
	}
}

// handle acts on one control message; it reports whether to stop.
func (n *Node) handle(ctx context.Context, m *wire.Control) bool {
	switch m.Kind {
	case wire.CtlDeploy:
		err := n.deploy(ctx, m.Deploy)
		msg := wire.Control{Kind: wire.CtlReady}
		if err != nil {
			// Said here too: a node on another host is watched on its
			// own terminal, not in the coordinator's.
			n.log.Printf("node %s could not deploy: %v", n.nodeName(), err)
			msg.Error = err.Error()
		}
		_ = n.ctl.send(wire.TControl, msg)
	case wire.CtlStart:
		for _, in := range n.instances() {
			in.start(ctx)
		}
	case wire.CtlDrain:
		n.grant(m.Until) // the drain's end is past every grant: the sources read to it
		for _, in := range n.instances() {
			in.drain(m.Until)
		}
	case wire.CtlGrant:
		n.grant(m.Until)
	case wire.CtlLost:
		for _, in := range n.instances() {
			in.lost(m.Instances)
		}
	case wire.CtlCompleted:
		if c := m.Checkpoint; c != nil {
			if in := n.instance(c.Instance); in != nil && in.place.Gen == c.Gen {
				in.do(func() { in.onCompleted(c.ID, c.Fallback) })
			}
		}
	case wire.CtlCompacted:
		if c := m.Checkpoint; c != nil {
			if in := n.instance(c.Instance); in != nil && in.place.Gen == c.Gen {
				in.do(func() { in.onCompacted(c.ID, c.Compacted) })
			}
		}
	case wire.CtlRestore:
		if m.Restore != nil {
			n.restoreInstance(ctx, m.Restore)
		}
	case wire.CtlBarrier:
		if c := m.Checkpoint; c != nil {
			for _, in := range n.instances() {
				if in.src != nil {
					in.do(func() { in.sourceBarrier(c.ID) })
				}
			}
		}
	case wire.CtlReroute:
		if q := m.Reroute; q != nil {
			n.reroute(ctx, *q)
		}
	case wire.CtlRescale:
		if m.Rescale != nil {
			n.rescale(ctx, m.Rescale)
		}
	case wire.CtlInterval:
		if m.Interval != nil {
			n.setInterval(*m.Interval)
		}
	case wire.CtlCheckpoint:
		for _, in := range n.instances() {
			if len(m.Instances) == 0 || slices.Contains(m.Instances, in.id) {
				in.do(func() { in.ck.next = time.Time{} })
			}
		}
	case wire.CtlFaults:
		if m.Faults != nil {
			n.applyFaults(m.Faults)
		}
	case wire.CtlStop:
		return true
	}
	return false
}

// instance returns the instance id hosted here, or nil.
func (n *Node) instance(id job.InstanceID) *instance {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.insts[id]
}

// restoreInstance hosts a failed instance: it loads the latest complete
// checkpoint (or, if that fails, the previous one), reports, and starts it.
func (n *Node) restoreInstance(ctx context.Context, r *wire.Restore) {
	if n.plan == nil {
		_ = n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlRestored, Restore: &wire.Restore{Place: r.Place}, Error: errNotDeployed.Error()})
		return
	}
	for _, q := range r.Plan {
		n.setPlacement(q)
	}
	n.setPlacement(r.Place)
	answer := wire.Restore{Place: r.Place}
	// Early (load.go): restored, and started, before its key groups'
	// state is built; not with slices to load after the chain.
	early := len(r.Slices) == 0
	in, err := newInstance(n, n.plan, &r.Place)
	if err == nil {
		answer.ID, err = in.restoreChain(r.Chain, early)
		if err != nil && (len(r.Fallback) > 0 || r.Scratch) {
			n.event(events.CheckpointFallback, r.Place.ID, events.CheckpointFallbackFields{Error: err.Error()},
				"latest checkpoint of %s unusable (%v); falling back to the previous one", r.Place.ID, err)
			if in, err = newInstance(n, n.plan, &r.Place); err == nil {
				answer.ID, err = in.restoreChain(r.Fallback, early)
				answer.Fellback = true
			}
		}
	}
	if err == nil && in.src == nil {
		err = in.restoreSlices(r, answer.ID) // rescale.go
	}
	if err == nil {
		// Ids only grow: after a fallback the checkpoints of the dead
		// branch keep theirs, and the next one must not take one of them.
		in.ck.lastID = max(in.ck.lastID, r.NextID-min(r.NextID, 1))
	}
	if err == nil {
		in.endAt = r.EndAt
	}
	if err == nil && answer.ID == 0 && r.Clock != nil && in.src != nil {
		in.src.restored = &sourceCheckpoint{Origin: r.Clock.Origin, StartMs: r.Clock.StartMs}
	}
	msg := wire.Control{Kind: wire.CtlRestored, Restore: &answer}
	if err != nil {
		msg.Error = err.Error()
		_ = n.ctl.send(wire.TControl, msg)
		return
	}
	n.mu.Lock()
	if old := n.insts[r.Place.ID]; old != nil {
		old.stop()
	}
	n.insts[r.Place.ID] = in
	n.mu.Unlock()
	_ = n.ctl.send(wire.TControl, msg)
	if in.ld != nil {
		in.loadGroups(in.ld) // attached as they are built, once the instance runs
	}
	if !r.Hold {
		in.start(ctx)
	}
}

// setPlacement records an instance's new placement in the plan. Only the
// control goroutine touches the plan after deploy.
func (n *Node) setPlacement(q wire.Placement) {
	for i := range n.plan.Instances {
		if n.plan.Instances[i].ID == q.ID {
			n.plan.Instances[i] = q
			return
		}
	}
	n.plan.Instances = append(n.plan.Instances, q) // a new instance of a rescale
}

// reroute tells every local instance that q moved.
func (n *Node) reroute(ctx context.Context, q wire.Placement) {
	n.setPlacement(q)
	for _, in := range n.instances() {
		if in.id == q.ID {
			continue
		}
		in.do(func() { in.reroute(ctx, q) }) // its waiting connects were ended as the message was read (supersede)
	}
}

// grant raises the read grants of the source partitions (they never
// shrink), for the sources on this node now and those it will host.
func (n *Node) grant(g map[int]uint64) {
	n.mu.Lock()
	if n.grants == nil {
		n.grants = map[int]uint64{}
	}
	for p, pos := range g {
		n.grants[p] = max(n.grants[p], pos)
	}
	n.mu.Unlock()
	n.grantSeq.Add(1)
}

// grantOf is partition p's read grant (none yet: 0).
func (n *Node) grantOf(p int) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.grants[p]
}

func (n *Node) instances() []*instance {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*instance, 0, len(n.insts))
	for _, in := range n.insts {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (n *Node) stopAll() {
	for _, in := range n.instances() {
		in.stop()
	}
}

// event sends an event to the coordinator; it never blocks the caller for
// long: events are small and the control stream is otherwise idle. fields
// is the kind's payload, or nil.
func (n *Node) event(kind events.Kind, id job.InstanceID, fields events.Payload, format string, args ...any) {
	if n.ctl == nil {
		return
	}
	text := fmt.Sprintf(format, args...)
	var raw json.RawMessage
	if fields != nil {
		var err error
		if raw, err = json.Marshal(fields); err != nil { // a NaN: the text still says what happened
			raw, text = nil, text+" (fields: "+err.Error()+")"
		}
	}
	_ = n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlEvent,
		Event: &wire.Event{Kind: string(kind), Instance: id, Text: text, Fields: raw}})
}

func (n *Node) heartbeats(ctx context.Context) {
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.reportTraffic(false)
		hb := wire.Heartbeat{Node: n.nodeName()}
		hb.CPU, hb.RSS = processUsage()
		for _, in := range n.instances() {
			hb.Instances = append(hb.Instances, in.stats())
		}
		_ = n.ctl.send(wire.THeartbeat, hb) // with no coordinator: until the next one

	}
}

func (n *Node) nodeName() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.name
}

// deploy builds the instances this node hosts and connects its peers.
func (n *Node) deploy(ctx context.Context, d *wire.Deploy) error {
	if d == nil {
		return errors.New("deploy without a plan")
	}
	if err := d.Job.Validate(); err != nil {
		return err
	}
	me := n.nodeName()
	store, out, hidden, err := n.openStores(d) // store.go
	if err != nil {
		return err
	}
	if hidden {
		// Another host: the run's input comes from the coordinator too.
		n.localDir = localDirFor(d, me)
		if d.Source.Spec, err = fetchInput(n.openCoordStream, d.Source.Spec, filepath.Join(n.localDir, "input")); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.plan = d
	n.store = &faultStore{Store: store}
	n.out = out
	n.spillDir = spillDirFor(d, n.name, hidden)
	n.mu.Unlock()
	// Before the job starts, so that a source restored here later reads at
	// once (a million keys' table takes 150 ms and 0.2 s of CPU). Not on a
	// node joining a running job: it is there for restores, which the
	// table's CPU would slow, and lost sources go to nodes that have it
	// (the coordinator's leastLoaded); one placed here builds it on open.
	if !d.Late {
		traces.Warm(d.Source.Spec, sourceOptions(d, d.Job.Ops[0].Parallelism))
	}
	for i := range d.Instances {
		p := &d.Instances[i]
		if p.Node != me {
			continue
		}
		in, err := newInstance(n, d, p)
		if err != nil {
			return fmt.Errorf("instance %s: %w", p.ID, err)
		}
		n.mu.Lock()
		n.insts[p.ID] = in
		n.mu.Unlock()
	}
	// Connect every peer whose name sorts after ours; the others dial us.
	var want []string
	for name, addr := range d.Nodes {
		if name == me {
			continue
		}
		want = append(want, name)
		if me < name || d.Late {
			n.mu.Lock()
			n.dials[name] = true
			n.mu.Unlock()
			if err := n.dialPeer(ctx, name, addr); err != nil {
				if !d.Late {
					return err
				}
				// A late joiner's view may list a peer that has just died:
				// the coordinator will find out; do not wait for it.
				n.log.Printf("late join: %v", err)
				want = want[:len(want)-1]
			}
		}
	}
	return n.waitPeers(ctx, want, 15*time.Second)
}

func (n *Node) dialPeer(ctx context.Context, name, addr string) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := n.tr.Dial(dctx, addr)
	if err != nil {
		return fmt.Errorf("dial peer %s at %s: %w", name, addr, err)
	}
	conn = n.layer.Wrap(conn, n.nodeName(), name) // a partition stalls the handshake too
	hello := wire.Hello{Token: n.cfg.Token, Role: wire.RolePeer, Node: n.nodeName(), PID: os.Getpid()}
	if n.id != nil { // tls.go: the certificates authenticate, the token stays home
		tc, err := wire.TLSClient(conn, n.id.ClientConfig(name), 10*time.Second)
		if err != nil {
			conn.Close()
			return fmt.Errorf("peer %s: %w", name, err)
		}
		conn, hello.Token = tc, ""
	}
	if _, err := wire.ClientHandshake(conn, hello, 10*time.Second); err != nil {
		conn.Close()
		return fmt.Errorf("peer %s: %w", name, err)
	}
	netfault.Framed(conn)
	sess, err := yamux.Client(wire.Coalesce(conn), wire.YamuxConfig())
	if err != nil {
		conn.Close()
		return err
	}
	n.addPeer(ctx, name, sess)
	return nil
}

func (n *Node) addPeer(ctx context.Context, name string, sess *yamux.Session) {
	n.mu.Lock()
	old := n.peers[name]
	if old != nil {
		old.Close()
	}
	n.peers[name] = sess
	close(n.peerc)
	n.peerc = make(chan struct{})
	n.mu.Unlock()
	go n.acceptStreams(ctx, name, sess)
	go n.watchPeer(ctx, name, sess)
	if old != nil {
		go n.reconnectPeer(ctx, name)
	}
}

func (n *Node) waitPeers(ctx context.Context, names []string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		n.mu.Lock()
		var missing []string
		for _, name := range names {
			if n.peers[name] == nil {
				missing = append(missing, name)
			}
		}
		ch := n.peerc
		n.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			sort.Strings(missing)
			return fmt.Errorf("peers %v did not connect within %v", missing, timeout)
		}
	}
}

func (n *Node) peer(name string) *yamux.Session {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.peers[name]
}

func (n *Node) acceptPeers(ctx context.Context, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			remote := c.RemoteAddr()
			refuse := func(err error) {
				n.log.Printf("refused peer connection from %s: %v", remote, err)
				n.event(events.NodeRefused, "", events.NodeRefusedFields{Remote: remote.String()}, "refused peer connection from %s: %v", remote, err)
				c.Close()
			}
			select { // the join says whether peers speak TLS
			case <-n.joined:
			case <-ctx.Done():
				c.Close()
				return
			}
			certName := "" // with TLS, the name the peer's certificate gives it
			if n.id != nil {
				tc, name, err := wire.TLSServer(c, n.id.ServerConfig(), 10*time.Second)
				if err != nil {
					refuse(err)
					return
				}
				c, certName = tc, name
			}
			h, err := wire.ServerHandshake(c, 10*time.Second, func(h wire.Hello) (wire.Welcome, error) {
				if certName == "" && !wire.TokenEqual(h.Token, n.cfg.Token) {
					return wire.Welcome{}, errors.New("bad token")
				}
				if h.Role != wire.RolePeer || h.Node == "" {
					return wire.Welcome{}, fmt.Errorf("role %q: only peers connect here", h.Role)
				}
				if certName != "" && h.Node != certName {
					return wire.Welcome{}, fmt.Errorf("%w: the hello says %q, the certificate %q", pki.ErrBadCertificate, h.Node, certName)
				}
				return wire.Welcome{Node: h.Node}, nil
			})
			if err != nil {
				refuse(err)
				return
			}
			c = n.layer.Wrap(c, n.nodeName(), h.Node)
			netfault.Framed(c)
			sess, err := yamux.Server(wire.Coalesce(c), wire.YamuxConfig())
			if err != nil {
				c.Close()
				return
			}
			n.addPeer(ctx, h.Node, sess)
		}()
	}
}

// acceptStreams receives the data streams a peer opens toward our instances.
func (n *Node) acceptStreams(ctx context.Context, peer string, sess *yamux.Session) {
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return
		}
		go n.serveStream(ctx, peer, st)
	}
}

// serveStream reads one data stream into its instance's input.
func (n *Node) serveStream(ctx context.Context, peer string, st net.Conn) {
	defer st.Close()
	r := wire.NewReader(st, 0)
	fail := func(id job.InstanceID, err error) {
		n.log.Printf("stream from %s: %v", peer, err)
		n.event(events.FrameError, id, events.FrameErrorFields{Peer: peer}, "stream from %s closed: %v", peer, err)
	}
	t, p, err := r.ReadFrame()
	if err != nil {
		fail("", err)
		return
	}
	var h wire.StreamHello
	if t != wire.TStreamHello {
		fail("", fmt.Errorf("want stream hello, got %v frame", t))
		return
	}
	if err := wire.DecodeJSON(t, p, &h); err != nil {
		fail("", err)
		return
	}
	in := n.instance(h.To)
	if in == nil {
		fail(h.To, fmt.Errorf("stream %s -> %s: no such instance here", h.From, h.To))
		return
	}
	// Resume: tell the sender how far we got, fencing older generations.
	// The back channel is locked until the resume frame is out, so that no
	// trim can overtake it.
	back := newRemoteBack(st)
	back.mu.Lock()
	var resume []wire.Position
	accepted, known := false, false
	var from int
	var stream uint64
	stale := false
	ok := in.call(ctx, func() {
		if stale = in.place.Gen < h.ToGen; stale {
			// An older generation, stopped, that a restore queued here
			// replaces: accepted, the stream would feed the stopped one
			// and the new one would never hear from this input (seed
			// 1910: a restart rescale's restore after a recovery's).
			return
		}
		// The input numbers belong to the instance goroutine: a rescale adds inputs.
		if from, known = in.inputIndex[h.From]; known && h.Gen >= in.inputGen[from] {
			resume, stream = in.acceptInput(from, h.Gen, back.send)
			accepted = true
		}
	})
	if ok && stale {
		back.mu.Unlock()
		fail(h.To, fmt.Errorf("stream %s -> %s: generation %d is not restored on this node yet", h.From, h.To, h.ToGen))
		return
	}
	if ok && !known {
		back.mu.Unlock()
		fail(h.To, fmt.Errorf("stream %s -> %s: %s is not an input of %s", h.From, h.To, h.From, h.To))
		return
	}
	if !ok || !accepted {
		back.mu.Unlock()
		if ok {
			fail(h.To, fmt.Errorf("stream %s -> %s: generation %d is fenced off", h.From, h.To, h.Gen))
		}
		return
	}
	err = back.w.WriteFrame(wire.TResume, wire.EncodePositions(nil, resume))
	if err == nil {
		err = back.w.Flush()
	}
	back.mu.Unlock()
	if err != nil {
		fail(h.To, fmt.Errorf("stream %s -> %s: resume: %w", h.From, h.To, err))
		return
	}
	for {
		t, p, err := r.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) || ctx.Err() == nil {
				if ctx.Err() == nil {
					fail(h.To, fmt.Errorf("stream %s -> %s: %w", h.From, h.To, err))
				}
			}
			return
		}
		m := inMsg{from: from, gen: h.Gen, stream: stream}
		switch t {
		case wire.TBatch:
			m.kind, m.pooled = msgBatch, true
			m.payload = getPayload(len(p))
			copy(m.payload, p)
		case wire.TWatermark:
			wm, err := wire.DecodeWatermark(p)
			if err != nil {
				fail(h.To, fmt.Errorf("stream %s -> %s: %w", h.From, h.To, err))
				return
			}
			m.kind, m.wm = msgWatermark, wm
		case wire.TEnd:
			m.kind = msgEnd
		case wire.TBarrier:
			id, ok := decodeBarrier(p)
			if !ok {
				fail(h.To, fmt.Errorf("stream %s -> %s: malformed barrier frame", h.From, h.To))
				return
			}
			m.kind, m.wm = msgBarrier, int64(id)
		default:
			fail(h.To, fmt.Errorf("stream %s -> %s: unexpected %v frame", h.From, h.To, t))
			return
		}
		if !in.deliver(ctx, m) {
			return
		}
		if m.kind == msgEnd {
			return
		}
	}
}
