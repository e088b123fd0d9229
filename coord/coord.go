package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"

	"spate/control"
	"spate/events"
	"spate/job"
	"spate/netfault"
	"spate/state"
	"spate/stores"
	"spate/traces"
	"spate/wire"
)

// Options are the parts of a coordinator that tests replace.
type Options struct {
	Transport wire.Transport // nil: TCP
	// Spawn starts a local node process; nil re-executes this binary as
	// `spate node`. It returns a handle whose Wait reports the exit.
	Spawn func(name, coordAddr, token, logPath string) (Process, error)
	Now   func() time.Time
	Out   io.Writer // headless event lines; nil: discard
	// Observe, if set, sees every event (from its own goroutine; lossy
	// like every telemetry subscriber).
	Observe func(events.Event)
	// Started, if set, is called once the run directory and the control
	// API are up, with the run directory.
	Started func(dir string)
	// Control, if set, is handed the control API in process instead of
	// serving it over HTTP on loopback (the simulation, which has no
	// sockets).
	Control func(control.Backend)
	// Store holds the checkpoints; nil: checkpoints/ of the run
	// directory. The nodes must see the same one.
	Store state.Store
	// FrameAligned makes the link fault layer hold traffic only between
	// yamux frames (netfault.Config.FrameAligned): the simulation's.
	FrameAligned bool
}

// Process is a spawned node process.
type Process interface {
	Pid() int
	Wait() error
	Kill() error
	Signal(os.Signal) error // SIGSTOP, SIGCONT, SIGKILL
}

// nodeState is the coordinator's view of a node.
type nodeState struct {
	name   string
	pid    int
	listen string
	sess   *yamux.Session
	// out is the node's control messages on their way: the event loop
	// queues them and never waits for the node; the connection's writer
	// (writeControl) writes them in order. outErr is why it stopped.
	out      chan []byte // encoded wire.Control messages
	outErr   atomic.Pointer[error]
	lastBeat time.Time
	state    nodeStatus
	late     bool // joined the running job (a respawn): has not built the generator's key table
	// respawnedAt is when it was spawned in place of a lost node (zero:
	// at the start), for the crash-loop limit.
	respawnedAt time.Time
	killed      bool // signalled to die by an action: its death is no crash
	proc        Process
	stats       map[job.InstanceID]wire.InstanceStats
	cpu         float64 // CPU seconds, from the last heartbeat
	rss         int64
	lastCPU     float64 // at the last metrics event
}

// nodeStatus is where a node is in its life, as the coordinator sees it.
type nodeStatus string

const (
	nodeSpawned nodeStatus = "spawned" // its process is started; it has not joined
	nodeJoined  nodeStatus = "joined"  // authenticated, deploying
	nodeReady   nodeStatus = "ready"   // deployed
	nodeLost    nodeStatus = "lost"    // declared failed: its word no longer counts
	nodeExited  nodeStatus = "exited"  // its process is gone
)

// gone reports whether n is lost or exited.
func (n *nodeState) gone() bool { return n.state == nodeLost || n.state == nodeExited }

// live reports whether n is a joined node that is neither lost nor exited.
func (n *nodeState) live() bool {
	return n != nil && !n.gone() && n.out != nil
}

// outboxSize bounds a node's queue of control messages: a node that
// reads none of thousands is judged by its heartbeats, not waited for.
const outboxSize = 1 << 14

// send queues a control message for the node; it never blocks. The
// message is encoded here, on the caller's goroutine: it may share maps
// with the coordinator's state (the drain's positions), which the loop
// goes on changing.
func (n *nodeState) send(m wire.Control) error {
	if n.out == nil {
		return errors.New("no control stream")
	}
	if err := n.outErr.Load(); err != nil {
		return *err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("control message %s: %w", m.Kind, err)
	}
	select {
	case n.out <- b:
		return nil
	default:
		return fmt.Errorf("%d control messages queued: the node reads none", outboxSize)
	}
}

// writeControl writes the node's queued control messages to its control
// stream, in order, until the stream fails or its session closes.
func (n *nodeState) writeControl(w *wire.Writer, closed <-chan struct{}) {
	for {
		select {
		case b := <-n.out:
			err := w.WriteFrame(wire.TControl, b)
			if err == nil && len(n.out) == 0 {
				err = w.Flush()
			}
			if err != nil {
				n.outErr.Store(&err)
				return
			}
		case <-closed:
			return
		}
	}
}

// nodeMsg is what a node's reader goroutine hands the event loop.
type nodeMsg struct {
	node *nodeState
	hb   *wire.Heartbeat
	at   time.Time // when the heartbeat arrived
	ctl  *wire.Control
	err  error // the control stream ended
}

// drainLimit bounds a drain: a job that cannot finish (an instance that
// could not be restored, say) ends the run with an error, never a hang.
const drainLimit = 2 * time.Minute

// Coordinator runs one job on a cluster. Its event loop (Run) owns all
// state; other goroutines talk to it through channels.
type Coordinator struct {
	cfg   Config
	opt   Options
	dir   string
	run   string
	token string
	spec  job.Spec
	bus   *events.Bus
	info  RunInfo

	joinc chan *nodeState
	msgc  chan nodeMsg
	exitc chan string // names of node processes that exited

	nodes    map[string]*nodeState
	order    []string
	ready    map[string]bool // nodes of the deploy that reported ready
	plan     *wire.Deploy
	placeOf  map[job.InstanceID]*wire.Placement
	done     map[job.InstanceID]*wire.Done
	lost     map[job.InstanceID]bool
	started  bool
	draining bool
	// A drain asked for while a rescale is in flight waits for it to
	// commit (drainWait): why it was asked, and when.
	drainAsked   time.Time
	drainPending string
	joinSeq      atomic.Int64 // names of joining nodes: n(Local+1), ...

	lastIn, lastOut uint64
	lastTick        time.Time
	lastJudged      time.Time                         // the last heartbeat judgement (checkHeartbeats)
	stall           *fault                            // a pause of the coordinator itself, pending (stallSelf)
	endedAt         map[job.InstanceID]map[int]uint64 // sources recovered after they had drained: where they ended
	stallFor        time.Duration
	sinkWM          map[job.InstanceID]int64 // each sink's watermark as last reported, kept while it is not reporting
	lagClock        *wire.PacingClock        // the sources' pacing clock, once one has reported it

	manifest   *Manifest
	store      state.Store
	outStore   state.Store    // the sinks' output and its manifest (store.go)
	storeSpec  stores.Spec    // --store
	storeSrv   *stores.Server // answers the nodes' store streams
	outputs    OutputManifest
	recovering map[job.InstanceID]*recovery
	awaiting   []awaiting // lost instances waiting for a respawned node
	global     globalState
	mw         manifestWriter

	// the control API (control.go)
	ctlc     chan ctlReq
	liftc    chan int // faults whose time is up
	loopDone chan struct{}
	rng      *rand.Rand
	paused   map[string]bool
	faults   map[int]*fault
	faultSeq int
	layer    *netfault.Layer // link faults on the coordinator's side of its links
	tls      tlsState        // the run's CA and the coordinator's certificate, with TLS (tls.go)

	coordAddr   string                                // where nodes connect (respawned ones too)
	quickDeaths int                                   // respawned nodes in a row that died young (respawn)
	srcHigh     map[int]uint64                        // per source partition, the farthest any generation reported
	drainAt     map[int]uint64                        // per source partition, where every generation of its source ends: fixed when the drain starts (grant.go)
	grants      grantState                            // the sources' read grants (grant.go)
	lastStats   map[job.InstanceID]wire.InstanceStats // at the last metrics event
	restarts    map[string]bool                       // nodes killed by `restart`: respawned whatever --respawn says

	ft  faultTolerance // what --ft decides (ftmode.go)
	tn  tunerState     // the interval tuner (tuner.go)
	eds edsState       // live rescales (rescale.go)

	sinkRestores map[job.InstanceID]restoredFrom // what each sink's generation was restored from (invariants.go)

	compacting map[job.InstanceID]bool // compactions in flight (compact.go)
	compactc   chan compaction
}

// newCoordinator is a coordinator's state before anything of its I/O
// exists: no run directory, store, listener or fault layer yet.
func newCoordinator(cfg Config, opt Options, token string) *Coordinator {
	c := &Coordinator{cfg: cfg, opt: opt, spec: cfg.Spec(), token: token,
		joinc: make(chan *nodeState), msgc: make(chan nodeMsg, 256), exitc: make(chan string, 64),
		nodes: map[string]*nodeState{}, placeOf: map[job.InstanceID]*wire.Placement{},
		done: map[job.InstanceID]*wire.Done{}, lost: map[job.InstanceID]bool{}, ready: map[string]bool{},
		outputs: OutputManifest{Limits: map[string]int64{}}, recovering: map[job.InstanceID]*recovery{},
		liftc: make(chan int, 16), paused: map[string]bool{}, faults: map[int]*fault{}, restarts: map[string]bool{},
		compacting: map[job.InstanceID]bool{}, compactc: make(chan compaction, 256), sinkRestores: map[job.InstanceID]restoredFrom{}}
	c.joinSeq.Store(int64(cfg.Local))
	c.ft = ftFor(wire.FTMode(cfg.FT))
	c.run = NewRunID(opt.Now())
	c.manifest = newManifest(c.run, c.spec.Name)
	c.mw.reqc, c.mw.donec = make(chan manifestWrite, 1), make(chan manifestWrite, 1)
	c.bus = events.NewBus(opt.Now)
	return c
}

// Up runs `spate up` with cfg until the job drains. It returns the run
// directory.
func Up(ctx context.Context, cfg Config, opt Options) (dir string, err error) {
	if opt.Transport == nil {
		opt.Transport = wire.TCP{}
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Out == nil {
		opt.Out = io.Discard
	}
	if opt.Spawn == nil {
		opt.Spawn = spawnSelf
	}
	// Open the source once here (a file trace is read and checked in full),
	// so that a bad spec or a malformed line fails before any process starts.
	if _, err := traces.Open(cfg.Source, cfg.SourceOptions()); err != nil {
		return "", fmt.Errorf("%w: --source: %v", ErrUsage, err)
	}
	c := newCoordinator(cfg, opt, NewToken())
	fcfg := netfault.DefaultConfig()
	fcfg.FrameAligned = opt.FrameAligned
	if c.layer, err = netfault.NewLayer(fcfg); err != nil {
		return "", err
	}
	c.dir, err = CreateRunDir(cfg.Data, c.run, c.token)
	if err != nil {
		return "", fmt.Errorf("run directory: %w", err)
	}
	if err := c.openStores(); err != nil { // store.go
		return c.dir, err
	}
	logDone, err := c.startLogs()
	if err != nil {
		return c.dir, err
	}
	defer func() {
		c.bus.Close()
		if lerr := logDone(); err == nil && lerr != nil {
			err = lerr
		}
	}()
	err = c.serve(ctx)
	return c.dir, err
}

// startLogs subscribes the JSON-lines log(s) and the headless printer.
func (c *Coordinator) startLogs() (wait func() error, err error) {
	var files []*os.File
	f, err := os.Create(filepath.Join(c.dir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	files = append(files, f)
	if c.cfg.Events != "" {
		g, err := os.Create(c.cfg.Events)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("--events: %w", err)
		}
		files = append(files, g)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(files)+1)
	for i, f := range files {
		sub := c.bus.Subscribe(1024, false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = events.WriteJSONL(f, sub)
			if cerr := f.Close(); errs[i] == nil {
				errs[i] = cerr
			}
		}()
	}
	if c.opt.Observe != nil {
		obs := c.bus.Subscribe(4096, true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range obs.C {
				c.opt.Observe(e)
			}
		}()
	}
	pr := c.bus.Subscribe(4096, true)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e := range pr.C {
			fmt.Fprintln(c.opt.Out, e.Line())
		}
		if d := pr.Dropped(); d > 0 {
			fmt.Fprintf(c.opt.Out, "(%d events not printed: the terminal was too slow; all are in events.jsonl)\n", d)
		}
	}()
	return func() error { wg.Wait(); return errors.Join(errs...) }, nil
}

func (c *Coordinator) emit(kind events.Kind, node, inst string, fields events.Payload, format string, args ...any) {
	c.bus.Publish(events.Event{Kind: kind, Node: node, Instance: inst, Text: fmt.Sprintf(format, args...), Fields: fields})
}

// serve is the coordinator's life: listen, spawn, deploy, run, drain, stop.
func (c *Coordinator) serve(ctx context.Context) error {
	ln, err := c.opt.Transport.Listen(c.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.cfg.Listen, err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	c.coordAddr = addr
	c.info = RunInfo{Run: c.run, Started: c.opt.Now(), Config: c.cfg, Job: c.spec, Coord: addr}
	if err := c.setupTLS(ln); err != nil { // tls.go
		return err
	}
	if err := WriteRunInfo(c.dir, &c.info); err != nil {
		return err
	}
	c.emit(events.RunStarted, "", "", events.RunStartedFields{Dir: c.dir, Coord: addr},
		"run %s: job %s on %d nodes, source %s, data in %s", c.run, c.spec.Name, c.cfg.Nodes, c.cfg.Source, c.dir)
	if c.tlsOn() {
		c.emit(events.RunStarted, "", "", nil, "links are TLS 1.3 with the run's CA (%s); nodes get their certificates by the token challenge", c.caFile())
	}
	if c.cfg.Local < c.cfg.Nodes {
		c.emit(events.RunStarted, "", "", nil, "waiting for %d nodes to join: spate node --join %s --token $(cat %s)",
			c.cfg.Nodes-c.cfg.Local, addr, filepath.Join(c.dir, "token"))
	}
	stopControl, err := c.startControl()
	if err != nil {
		return err
	}
	defer stopControl()
	if c.opt.Started != nil {
		c.opt.Started(c.dir)
	}
	lctx, lcancel := context.WithCancel(context.Background())
	defer lcancel()
	go c.acceptLoop(lctx, ln)
	go c.runManifestWriter()
	defer c.flushManifest()

	for i := 1; i <= c.cfg.Local; i++ {
		name := fmt.Sprintf("n%d", i)
		proc, err := c.opt.Spawn(name, addr, c.token, filepath.Join(c.dir, "logs", name+".log"))
		if err != nil {
			c.stopNodes()
			return fmt.Errorf("spawn node %s: %w", name, err)
		}
		ns := &nodeState{name: name, state: nodeSpawned, proc: proc, pid: proc.Pid()}
		c.nodes[name] = ns
		c.emit(events.NodeSpawned, name, "", events.NodeSpawnedFields{PID: proc.Pid()}, "node %s spawned (pid %d)", name, proc.Pid())
		go func() { _ = proc.Wait(); c.exitc <- name }()
	}
	err = c.loop(ctx)
	close(c.loopDone)
	if len(c.faults) > 0 || len(c.paused) > 0 {
		c.heal() // a paused node could not stop
	}
	c.stopNodes()
	return err
}

// acceptLoop authenticates nodes and hands them to the event loop.
func (c *Coordinator) acceptLoop(ctx context.Context, ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			var name string
			var cert []byte
			remote := conn.RemoteAddr()
			refuse := func(err error) {
				c.emit(events.NodeRefused, "", "", events.NodeRefusedFields{Remote: remote.String()},
					"refused connection from %s: %v", remote, err)
				conn.Close()
			}
			h, err := wire.JoinServer(conn, 10*time.Second, c.token, c.tlsOn(), c.caDER(), c.joinCheck(remote),
				func(h wire.Hello, csr []byte) (wire.Welcome, error) {
					name = h.Node
					if name == "" { // a node joining from elsewhere gets the next free name
						name = fmt.Sprintf("n%d", c.joinSeq.Add(1))
					}
					if c.tlsOn() {
						var err error
						if cert, err = c.certify(csr, name); err != nil { // tls.go
							return wire.Welcome{}, err
						}
					}
					return wire.Welcome{Node: name, Run: c.run, Cert: cert}, nil
				})
			if err != nil {
				refuse(err)
				return
			}
			if c.tlsOn() {
				tc, err := c.upgrade(conn, name, cert) // tls.go
				if err != nil {
					refuse(err)
					return
				}
				conn = tc
			}
			conn = c.layer.Wrap(conn, netfault.Coord, name)
			netfault.Framed(conn)
			sess, err := yamux.Server(conn, wire.YamuxConfig())
			if err != nil {
				conn.Close()
				return
			}
			st, err := sess.AcceptStream()
			if err != nil {
				sess.Close()
				return
			}
			go c.serveStores(name, sess) // every later stream is a store request (store.go)
			ns := &nodeState{name: name, pid: h.PID, listen: h.Listen, sess: sess, out: make(chan []byte, outboxSize)}
			go ns.writeControl(wire.NewWriter(st), sess.CloseChan())
			select {
			case c.joinc <- ns:
			case <-ctx.Done():
				sess.Close()
				return
			}
			c.readNode(ns, st)
		}()
	}
}

// readNode forwards a node's control stream to the event loop.
func (c *Coordinator) readNode(ns *nodeState, st net.Conn) {
	r := wire.NewReader(st, 0)
	for {
		t, p, err := r.ReadFrame()
		if err == nil {
			switch t {
			case wire.THeartbeat:
				var hb wire.Heartbeat
				if err = wire.DecodeJSON(t, p, &hb); err == nil {
					c.msgc <- nodeMsg{node: ns, hb: &hb, at: c.opt.Now()}
					continue
				}
			case wire.TControl:
				var m wire.Control
				if err = wire.DecodeJSON(t, p, &m); err == nil {
					c.msgc <- nodeMsg{node: ns, ctl: &m}
					continue
				}
			default:
				err = fmt.Errorf("unexpected %v frame on the control stream", t)
			}
		}
		c.msgc <- nodeMsg{node: ns, err: err}
		return
	}
}

// loop is the event loop. It returns when the job has drained (or could not run).
func (c *Coordinator) loop(ctx context.Context) error {
	tick := time.NewTicker(c.cfg.Heartbeat)
	defer tick.Stop()
	var durc <-chan time.Time
	joinDeadline := time.NewTimer(30 * time.Second)
	defer joinDeadline.Stop()
	if c.cfg.Local < c.cfg.Nodes {
		joinDeadline.Stop() // remote nodes may take as long as they take
	}
	sigc := ctx.Done()
	var finishDeadline <-chan time.Time
	durArmed := false
	for {
		if c.started && !durArmed && c.cfg.Duration > 0 {
			durArmed, durc = true, time.After(c.cfg.Duration)
		}
		select {
		case ns := <-c.joinc:
			if err := c.join(ns); err != nil {
				c.emit(events.NodeRefused, ns.name, "", nil, "%v", err)
				ns.sess.Close()
				continue
			}
			if c.plan == nil && c.joined() == c.cfg.Nodes {
				if err := c.deploy(); err != nil {
					return err
				}
			}
		case m := <-c.msgc:
			if err := c.handleMsg(m); err != nil {
				return err
			}
		case w := <-c.mw.donec:
			c.manifestWritten(w)
		case name := <-c.exitc:
			ns := c.nodes[name]
			if !ns.gone() && !c.finished() {
				c.nodeLost(ns, "process exited")
			}
			ns.state = nodeExited
			c.emit(events.NodeExited, ns.name, "", nil, "node %s exited", ns.name)
		case <-tick.C:
			// Take in what the nodes already said before judging them: a
			// slow loop must not mistake its own delay for their silence.
			for drained := false; !drained; {
				select {
				case m := <-c.msgc:
					if err := c.handleMsg(m); err != nil {
						return err
					}
				default:
					drained = true
				}
			}
			c.checkHeartbeats()
			c.grant()
			c.placeAwaiting("")
			c.throughput()
			c.checkCaughtUp()
			c.ft.tick(c)
			c.tunerTick()
			c.edsTick()
			if c.drainPending != "" {
				c.drain(c.drainPending)
			}
			c.sampleLag()
		case r := <-c.ctlc:
			c.handleCtl(r)
			c.stallNow()
		case id := <-c.liftc:
			c.lift(id)
		case r := <-c.compactc:
			c.compacted(r)
		case <-joinDeadline.C:
			if c.plan == nil {
				return fmt.Errorf("only %d of %d nodes joined within 30s (see %s)", c.joined(), c.cfg.Nodes, filepath.Join(c.dir, "logs"))
			}
		case <-durc:
			durc = nil
			c.drain("duration reached")
			finishDeadline = time.After(drainLimit)
		case <-sigc:
			sigc = nil
			if !c.started {
				return errors.New("interrupted before the job started")
			}
			c.drain("interrupted")
			finishDeadline = time.After(30 * time.Second)
		case <-finishDeadline:
			var waiting []string
			for _, p := range c.plan.Instances {
				if c.done[p.ID] == nil && !c.lost[p.ID] {
					waiting = append(waiting, string(p.ID))
				}
			}
			c.emit(events.Error, "", "", events.ErrorFields{Waiting: waiting}, "the drain did not finish: still waiting for %v", waiting)
			return fmt.Errorf("the drain did not finish in time: still waiting for %v", waiting)
		}
		if c.cfg.CheckInvariants {
			if err := c.checkInvariants(); err != nil {
				c.emit(events.Error, "", "", nil, "invariant broken: %v", err)
				return fmt.Errorf("invariant broken: %w", err)
			}
		}
		if c.started && c.finished() {
			return c.finish()
		}
	}
}

// handleMsg acts on one message from a node.
func (c *Coordinator) handleMsg(m nodeMsg) error {
	switch {
	case m.err != nil:
		c.nodeLost(m.node, fmt.Sprintf("control stream ended: %v", m.err))
	case m.hb != nil:
		c.heartbeat(m.node, m.hb, m.at)
	case m.ctl != nil:
		switch m.ctl.Kind {
		case wire.CtlReady:
			if m.ctl.Error != "" && c.started {
				// A respawned node that could not join: it hosts nothing yet.
				c.emit(events.Error, m.node.name, "", nil, "respawned node %s could not join: %s", m.node.name, m.ctl.Error)
				if m.node.proc != nil {
					_ = m.node.proc.Kill()
				}
				return nil
			}
			if m.ctl.Error != "" {
				return fmt.Errorf("node %s could not deploy: %s", m.node.name, m.ctl.Error)
			}
			c.ready[m.node.name] = true
			m.node.state = nodeReady
			c.startIfReady()
		case wire.CtlDone:
			c.instanceDone(m.node, m.ctl.Done)
		case wire.CtlCheckpointed:
			if m.ctl.Checkpoint != nil {
				c.onCheckpointed(m.node, m.ctl.Checkpoint)
			}
		case wire.CtlDamaged:
			if m.ctl.Checkpoint != nil {
				c.onDamaged(m.node, m.ctl.Checkpoint)
			}
		case wire.CtlRestored:
			c.onRestored(m.node, m.ctl)
		case wire.CtlRescale:
			if m.ctl.Rescale != nil {
				c.onRescale(m.node, m.ctl.Rescale)
			}
		case wire.CtlEvent:
			if e := m.ctl.Event; e != nil {
				c.emit(events.Kind(e.Kind), m.node.name, string(e.Instance), events.FieldsOf(events.Kind(e.Kind), e.Fields), "%s", e.Text)
			}
		}
	}
	return nil
}

func (c *Coordinator) joined() int {
	n := 0
	for _, ns := range c.nodes {
		if ns.sess != nil {
			n++
		}
	}
	return n
}

// join registers an authenticated node.
func (c *Coordinator) join(ns *nodeState) error {
	old := c.nodes[ns.name]
	if c.plan != nil {
		if old == nil || old.state != nodeSpawned || old.sess != nil {
			return fmt.Errorf("node %q joined after the job was deployed: refused", ns.name)
		}
		return c.lateJoin(ns, old)
	}
	switch {
	case old == nil && c.joined() >= c.cfg.Nodes:
		return fmt.Errorf("node %q: the cluster already has %d nodes", ns.name, c.cfg.Nodes)
	case old != nil && old.sess != nil:
		return fmt.Errorf("node %q is already connected", ns.name)
	case old != nil:
		ns.proc = old.proc
	}
	ns.state, ns.lastBeat = nodeJoined, c.opt.Now()
	c.nodes[ns.name] = ns
	c.emit(events.NodeJoined, ns.name, "", events.NodeJoinedFields{PID: ns.pid, Listen: ns.listen}, "node %s joined (pid %d, peers at %s)", ns.name, ns.pid, ns.listen)
	return nil
}

// lateJoin takes in a node the coordinator respawned while the job runs:
// it dials every live peer, hosts the lost node's instances that wait for
// it (placeAwaiting), and is there for the next recoveries.
func (c *Coordinator) lateJoin(ns, old *nodeState) (err error) {
	defer func() {
		if err == nil {
			c.placeAwaiting(ns.name)
		}
	}()
	ns.proc, ns.state, ns.lastBeat, ns.late, ns.respawnedAt = old.proc, nodeJoined, c.opt.Now(), true, old.respawnedAt
	c.nodes[ns.name] = ns
	c.order = append(c.order, ns.name)
	sort.Slice(c.order, func(i, j int) bool { return nodeLess(c.order[i], c.order[j]) })
	d := *c.plan
	d.Late = true
	d.Nodes = map[string]string{}
	for _, name := range c.order {
		if n := c.nodes[name]; n.live() {
			d.Nodes[name] = n.listen
		}
	}
	c.emit(events.NodeJoined, ns.name, "", events.NodeJoinedFields{PID: ns.pid, Listen: ns.listen, Late: true},
		"node %s joined the running job (pid %d); it hosts the next recoveries", ns.name, ns.pid)
	err = ns.send(wire.Control{Kind: wire.CtlDeploy, Deploy: &d})
	c.sendGrants(ns)
	return err
}

// A crash loop is a respawned node that dies within crashLoopLife of its
// spawn, crashLoopRuns times in a row: then no more are respawned. A node
// killed by an action is not counted (chaos may kill every new node in
// turn). Nodes lost to faults now and then are always replaced (a limit
// on respawns per run, then per minute, shrank the 10-minute soak to no
// node at all).
const (
	crashLoopLife = 5 * time.Second
	crashLoopRuns = 3
)

// respawn starts a fresh local node process in place of a lost one and
// returns its name ("" if none was started).
func (c *Coordinator) respawn(lost string) string {
	restart := c.restarts[lost]
	delete(c.restarts, lost)
	if (!restart && (!c.cfg.Respawn || !c.ft.respawns())) || c.finished() || c.coordAddr == "" {
		return ""
	}
	now := c.opt.Now()
	switch old := c.nodes[lost]; {
	case old != nil && old.killed:
	case old != nil && old.respawnedAt != (time.Time{}) && now.Sub(old.respawnedAt) < crashLoopLife:
		c.quickDeaths++
	default:
		c.quickDeaths = 0
	}
	if c.quickDeaths >= crashLoopRuns {
		c.emit(events.Error, lost, "", nil, "not respawning %s: the last %d respawned nodes died within %v of their start (a crash loop?)", lost, c.quickDeaths, crashLoopLife)
		return ""
	}
	name := fmt.Sprintf("n%d", c.joinSeq.Add(1))
	proc, err := c.opt.Spawn(name, c.coordAddr, c.token, filepath.Join(c.dir, "logs", name+".log"))
	if err != nil {
		c.emit(events.Error, name, "", nil, "could not respawn a node for %s: %v", lost, err)
		return ""
	}
	c.nodes[name] = &nodeState{name: name, state: nodeSpawned, proc: proc, pid: proc.Pid(), respawnedAt: now}
	c.emit(events.NodeSpawned, name, "", events.NodeSpawnedFields{PID: proc.Pid(), Replaces: lost},
		"node %s spawned (pid %d) in place of %s", name, proc.Pid(), lost)
	go func() { _ = proc.Wait(); c.exitc <- name }()
	return name
}

// deploy places every instance and sends the plan.
func (c *Coordinator) deploy() error {
	c.order = c.order[:0]
	addrs := map[string]string{}
	for name, ns := range c.nodes {
		c.order = append(c.order, name)
		addrs[name] = ns.listen
	}
	sort.Slice(c.order, func(i, j int) bool { return nodeLess(c.order[i], c.order[j]) })
	d := &wire.Deploy{Run: c.run, DataDir: c.dir, Job: c.spec, Nodes: addrs, FlushMs: c.cfg.FlushMs,
		FT: c.ft.mode(), Interval: c.cfg.IntervalDuration().Milliseconds(), FullEvery: 10, Cost: costNs(c.cfg.Cost),
		BackupMem: c.cfg.BackupMem, BackupBlock: c.cfg.BackupFull == "block", Store: c.storeSpec.String(), Grants: true,
		Source: wire.SourceSpec{Spec: c.cfg.Source, Seed: c.cfg.Seed, Rate: c.cfg.Rate, Keys: c.cfg.Keys, Speedup: c.cfg.Speedup, Paced: c.cfg.Paced()}}
	d.Instances = Place(&c.spec, c.order)
	c.plan = d
	if err := c.tunerInit(); err != nil {
		return err
	}
	for i := range d.Instances {
		p := &d.Instances[i]
		c.placeOf[p.ID] = p
		what := fmt.Sprintf("key groups %v", p.Ranges)
		if p.Partitions != nil {
			what = fmt.Sprintf("partitions %v", p.Partitions)
		}
		c.emit(events.InstancePlaced, p.Node, string(p.ID), events.InstancePlacedFields{Op: p.Op, Ranges: p.Ranges, Partitions: p.Partitions},
			"%s placed on %s: %s", p.ID, p.Node, what)
	}
	for _, name := range c.order {
		if err := c.nodes[name].send(wire.Control{Kind: wire.CtlDeploy, Deploy: d}); err != nil {
			return fmt.Errorf("deploy to %s: %w", name, err)
		}
	}
	return nil
}

// Place spreads the instances of spec over nodes round-robin, operator after
// operator, so neighbouring operators land on different nodes. Keyed
// operators get contiguous key-group ranges; source instance i reads
// partition i.
func Place(spec *job.Spec, nodes []string) []wire.Placement {
	var out []wire.Placement
	k := 0
	for _, op := range spec.Ops {
		var ranges []job.Range
		if op.Kind != job.KindSource {
			ranges = job.SplitRanges(spec.Groups, op.Parallelism)
		}
		for i := range op.Parallelism {
			p := wire.Placement{ID: job.MakeInstanceID(op.Name, i), Op: op.Name, Index: i, Node: nodes[k%len(nodes)], Gen: 1}
			if op.Kind == job.KindSource {
				p.Partitions = []int{i}
			} else {
				p.Ranges = []job.Range{ranges[i]}
			}
			out = append(out, p)
			k++
		}
	}
	return out
}

// nodeLess orders node names n1 < n2 < n10.
func nodeLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// startIfReady starts the job once every node of the deploy has
// reported ready or is gone, one at least ready. A node lost before it
// was ready does not hold the start: its instances are recovered on the
// others (or, with --ft none, lost) as after any loss; the job used to
// wait for its ready for ever, unless a respawned node sent one.
func (c *Coordinator) startIfReady() {
	if c.started || c.plan == nil || len(c.ready) == 0 {
		return
	}
	for _, name := range c.order {
		if !c.ready[name] && !c.nodes[name].gone() {
			return
		}
	}
	c.start()
}

func (c *Coordinator) start() {
	c.started = true
	c.lastTick = c.opt.Now()
	started := c.lastTick
	c.info.JobStart = &started
	c.tunerStart()
	c.grant() // before the start, on the same streams
	for _, name := range c.order {
		if ns := c.nodes[name]; !ns.gone() {
			_ = ns.send(wire.Control{Kind: wire.CtlStart})
		}
	}
	c.emit(events.JobStarted, "", "", nil, "job %s started: %d instances on %d nodes", c.spec.Name, len(c.plan.Instances), len(c.order))
}

func (c *Coordinator) heartbeat(ns *nodeState, hb *wire.Heartbeat, at time.Time) {
	if ns.state == nodeLost {
		return // a zombie: its word no longer counts
	}
	if at.After(ns.lastBeat) {
		ns.lastBeat = at
	}
	if ns.stats == nil {
		ns.stats = map[job.InstanceID]wire.InstanceStats{}
	}
	ns.cpu, ns.rss = hb.CPU, hb.RSS
	for _, s := range hb.Instances {
		ns.stats[s.ID] = s
		for part, pos := range s.Positions {
			if c.srcHigh == nil {
				c.srcHigh = map[int]uint64{}
			}
			c.srcHigh[part] = max(c.srcHigh[part], pos)
		}
	}
}

func (c *Coordinator) checkHeartbeats() {
	now := c.opt.Now()
	// A gap between two judgements longer than a few heartbeats is the
	// coordinator's own stall (its loop paused: a GC pause, SIGSTOP, a
	// slow disk), not the nodes' silence: the nodes' last heartbeats move
	// on by it, and the timeout counts only time the coordinator ran.
	// Judged as silence, every node was lost at once after a pause.
	if gap := now.Sub(c.lastJudged); !c.lastJudged.IsZero() && gap > 3*c.cfg.Heartbeat {
		stall := gap - c.cfg.Heartbeat
		for _, ns := range c.nodes {
			if ns.live() {
				ns.lastBeat = minTime(ns.lastBeat.Add(stall), now)
			}
		}
	}
	c.lastJudged = now
	for _, name := range c.order {
		ns := c.nodes[name]
		if !ns.live() {
			continue
		}
		if gap := now.Sub(ns.lastBeat); gap > c.cfg.Timeout {
			c.nodeLost(ns, fmt.Sprintf("no heartbeat for %v", gap.Round(time.Millisecond)))
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// nodeLost marks a node dead. With --ft spate its instances are restored
// elsewhere from their checkpoints while the rest of the job runs on; with
// --ft none they are lost, their downstreams treat their streams as ended,
// and verify reports what is missing.
func (c *Coordinator) nodeLost(ns *nodeState, why string) {
	if ns.gone() {
		return
	}
	if c.finished() {
		ns.state = nodeExited
		return
	}
	ns.state = nodeLost
	defer func() { ns.stats = nil }() // after the rollback has read them
	if ns.sess != nil {
		ns.sess.Close()
	}
	fresh := ""
	if ns.proc != nil {
		fresh = c.respawn(ns.name) // joins later: placements skip it until then
	}
	var ids []job.InstanceID
	if c.plan != nil {
		for _, p := range c.plan.Instances {
			if p.Node != ns.name || c.lost[p.ID] {
				continue
			}
			if c.done[p.ID] != nil && c.ft.mode() == wire.FTSpate && c.downstreamRunning(p.Op) {
				// Drained, but a downstream is not: it may be restored yet
				// and need a replay from it (seed 65: count#1, restored
				// after source#0 had drained and was lost, waited for
				// ever). Restored, it drains again; a source reads
				// exactly as far as it had, where the downstreams that
				// drained saw it end.
				c.reopen(p)
			}
			if c.done[p.ID] == nil {
				ids = append(ids, p.ID)
			}
		}
		// An instance recovered so may need a drained upstream that was
		// lost earlier, when nothing downstream of it ran any more (seed
		// 37: count#1 restored after source#1's node was lost).
		for again := len(ids) > 0 && c.ft.mode() == wire.FTSpate; again; {
			again = false
			for _, p := range c.plan.Instances {
				if d := c.done[p.ID]; d != nil && !c.lost[p.ID] && c.nodes[p.Node].gone() && c.downstreamRunning(p.Op) {
					c.reopen(p)
					ids = append(ids, p.ID)
					again = true
				}
			}
		}
	}
	if c.plan == nil {
		c.emit(events.NodeLost, ns.name, "", events.NodeLostFields{Reason: why}, "node %s lost before the job was deployed: %s", ns.name, why)
		return
	}
	c.ft.lost(c, ns, ids, fresh, why)
	c.startIfReady()
}

// spateLost recovers the instances of a lost node where they can go,
// while the rest of the job runs on.
func (c *Coordinator) spateLost(ns *nodeState, ids []job.InstanceID, fresh, why string) {
	// The lost instances are placed together, so that each new owner
	// learns where the others went: a source placed before the keyed
	// instance it feeds was seen never to replay to it. Keyed instances
	// go to the survivors, or with --recover-on respawned to the
	// respawned node; sources (no state to load) to a node with the
	// generator's table built (place).
	keyed := slices.ContainsFunc(ids, func(id job.InstanceID) bool {
		return !c.isSource(c.placeOf[id].Op)
	})
	if fresh != "" && c.eds.cur == nil && keyed && c.cfg.RecoverOn == "respawned" {
		c.emit(events.NodeLost, ns.name, "", events.NodeLostFields{Reason: why, Instances: ids, Awaiting: fresh},
			"node %s lost: %s; recovering %v once %s, the node respawned in its place, joins (keyed instances on it, sources on survivors)", ns.name, why, ids, fresh)
		c.awaitRespawn(ns.name, ids, fresh)
	} else {
		c.emit(events.NodeLost, ns.name, "", events.NodeLostFields{Reason: why, Instances: ids},
			"node %s lost: %s; recovering %v", ns.name, why, ids)
		c.recover(ns.name, ids, "")
	}
	c.edsNodeLost(ns.name)
	c.splitRecovery(ids) // parallel.go
}

// noneLost gives up the instances of a lost node: their downstreams treat
// their streams as ended, and verify reports what is missing.
func (c *Coordinator) noneLost(ns *nodeState, ids []job.InstanceID, why string) {
	for _, id := range ids {
		c.lost[id] = true
	}
	c.emit(events.NodeLost, ns.name, "", events.NodeLostFields{Reason: why, Instances: ids},
		"node %s lost: %s; instances %v lost (no recovery with --ft none)", ns.name, why, ids)
	for _, name := range c.order {
		if other := c.nodes[name]; other != ns && !other.gone() && len(ids) > 0 {
			_ = other.send(wire.Control{Kind: wire.CtlLost, Instances: ids})
		}
	}
}

func (c *Coordinator) instanceDone(ns *nodeState, d *wire.Done) {
	if d == nil {
		return
	}
	p := c.placeOf[d.Instance]
	if ns.state == nodeLost || p == nil || p.Node != ns.name || d.Gen != 0 && d.Gen != p.Gen {
		return // a fenced generation never counts as done
	}
	c.done[d.Instance] = d
	c.emit(events.InstanceDone, ns.name, string(d.Instance), events.InstanceDoneFields{In: d.In, Out: d.Out, Late: d.Late},
		"%s drained: %d in, %d out", d.Instance, d.In, d.Out)
}

// reopen forgets that instance p drained, for its recovery: a source
// keeps where it ended, which its restore reads exactly to.
func (c *Coordinator) reopen(p wire.Placement) {
	if c.isSource(p.Op) {
		if c.endedAt == nil {
			c.endedAt = map[job.InstanceID]map[int]uint64{}
		}
		c.endedAt[p.ID] = c.done[p.ID].Positions
	}
	delete(c.done, p.ID)
}

// downstreamRunning reports whether an instance of an operator op feeds
// has not drained yet.
func (c *Coordinator) downstreamRunning(op string) bool {
	i := c.spec.Op(op)
	for _, p := range c.plan.Instances {
		if c.done[p.ID] != nil || c.lost[p.ID] {
			continue
		}
		if slices.Contains(c.spec.Inputs(c.spec.Op(p.Op)), i) {
			return true
		}
	}
	return false
}

func (c *Coordinator) finished() bool {
	if c.plan == nil {
		return false
	}
	for _, p := range c.plan.Instances {
		if c.done[p.ID] == nil && !c.lost[p.ID] {
			return false
		}
	}
	return true
}

func (c *Coordinator) drain(why string) {
	if c.draining {
		return
	}
	if c.drainWait(why) {
		return
	}
	c.draining = true
	c.fixDrainPositions()
	c.emit(events.DrainStarted, "", "", nil, "draining (%s): sources stop, every open window fires, sinks flush", why)
	for _, name := range c.order {
		if ns := c.nodes[name]; !ns.gone() {
			_ = ns.send(wire.Control{Kind: wire.CtlDrain, Until: c.drainAt})
		}
	}
}

// throughput reports the job's rates about once a second.
func (c *Coordinator) throughput() {
	now := c.opt.Now()
	if !c.started || now.Sub(c.lastTick) < time.Second {
		return
	}
	var in, out uint64
	wm := int64(job.MaxWatermark)
	for _, ns := range c.nodes {
		for id, s := range ns.stats {
			p := c.placeOf[id]
			if p == nil {
				continue // not in the plan (yet): a pre-copy's staged instance
			}
			switch p.Op {
			case "source":
				in += s.In
			case "sink":
				out += s.In
				wm = min(wm, s.Watermark)
			}
		}
	}
	dt := now.Sub(c.lastTick).Seconds()
	rate := func(now, before uint64) float64 {
		if now < before { // an instance moved: its counters restarted
			return 0
		}
		return float64(now-before) / dt
	}
	rin, rout := rate(in, c.lastIn), rate(out, c.lastOut)
	c.lastIn, c.lastOut, c.lastTick = in, out, now
	wmText := "none yet"
	if wm != job.NoWatermark && wm != job.MaxWatermark {
		wmText = fmt.Sprintf("%.1fs", float64(wm)/1000)
	}
	fields := events.ThroughputFields{InRps: rin, OutRps: rout, In: in, Out: out, Watermark: wm}
	lagText := ""
	if n := len(c.info.Lag); n > 0 {
		lag := c.info.Lag[n-1][1]
		fields.LagMs = &lag
		lagText = fmt.Sprintf(", output lag %dms", c.info.Lag[n-1][1])
	}
	c.emit(events.Throughput, "", "", fields,
		"%s records/s in, %s results/s out (total %s in); sink watermark %s%s", human(rin), human(rout), human(float64(in)), wmText, lagText)
	c.metrics(dt)
}

// metrics reports, per node and per instance, what the dashboard shows:
// CPU, memory, records in and out per second, backlog and backpressure.
func (c *Coordinator) metrics(dt float64) {
	if c.lastStats == nil {
		c.lastStats = map[job.InstanceID]wire.InstanceStats{}
	}
	for _, name := range c.order {
		ns := c.nodes[name]
		if ns.gone() || ns.stats == nil {
			continue
		}
		var nin, nout float64
		backlog := 0
		ids := make([]job.InstanceID, 0, len(ns.stats))
		for id := range ns.stats {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			s := ns.stats[id]
			if p := c.placeOf[id]; p == nil || p.Node != name {
				continue
			}
			prev, ok := c.lastStats[id]
			var rin, rout float64
			if ok && s.In >= prev.In && s.Out >= prev.Out {
				rin, rout = float64(s.In-prev.In)/dt, float64(s.Out-prev.Out)/dt
			}
			c.lastStats[id] = s
			nin, nout, backlog = nin+rin, nout+rout, backlog+s.Backlog
			c.emit(events.Metrics, name, string(id), events.MetricsFields{InRate: rin, OutRate: rout, Backlog: s.Backlog,
				Backpressure: pressure(s.Backlog)}, "%s: %s in/s, %s out/s, backlog %d", id, human(rin), human(rout), s.Backlog)
		}
		cpu := 0.0
		if ns.lastCPU > 0 && ns.cpu >= ns.lastCPU {
			cpu = 100 * (ns.cpu - ns.lastCPU) / dt
		}
		ns.lastCPU = ns.cpu
		c.emit(events.Metrics, name, "", events.MetricsFields{CPU: cpu, RSS: ns.rss, InRate: nin, OutRate: nout, Backlog: backlog},
			"node %s: cpu %.0f%%, rss %s, %s in/s, %s out/s", name, cpu, bytesText(int(ns.rss)), human(nin), human(nout))
	}
}

// pressure grades an input backlog (batches queued, of 64 places) as
// Flink's dashboard does its backpressure.
func pressure(backlog int) string {
	switch {
	case backlog >= 48:
		return "HIGH"
	case backlog >= 8:
		return "LOW"
	}
	return "OK"
}

// sampleLag records the output lag of a paced run: how far the sinks'
// watermark is behind the event time the sources have reached by now,
// in wall-clock milliseconds: now, less the moment the sources' pacing
// clock had that watermark due. The clock is the sources' own (event time
// Origin due at StartMs, from their heartbeats), not the job's start: a
// source reads its first record some tens of milliseconds after the
// start, more with fault tolerance (every node builds the generator's key
// table at deploy), and counting from the start added that much to every
// sample, a constant that differed between configurations.
func (c *Coordinator) sampleLag() {
	if !c.started || !c.cfg.Paced() || c.draining || c.info.JobStart == nil {
		return
	}
	if c.sinkWM == nil {
		c.sinkWM = map[job.InstanceID]int64{}
	}
	for _, ns := range c.nodes {
		for id, s := range ns.stats {
			switch {
			case s.Origin != nil:
				// The earliest clock any source reported (a restored
				// source keeps its predecessor's).
				if k := c.lagClock; k == nil || *s.Origin < k.Origin || *s.Origin == k.Origin && s.StartMs < k.StartMs {
					c.lagClock = &wire.PacingClock{Origin: *s.Origin, StartMs: s.StartMs}
				}
			case c.placeOf[id] == nil:
				// Not in the plan (yet): a pre-copy's staged instance.
			case c.placeOf[id].Op == "sink" && s.Watermark != job.NoWatermark:
				c.sinkWM[id] = s.Watermark
			}
		}
	}
	// A sink that is not reporting (lost, being restored, rolled back with
	// the whole job, or not watermarked since) has not moved its output on
	// since it last did: its last watermark stands, and the lag grows
	// until it reports again.
	wm := int64(job.MaxWatermark)
	for id, w := range c.sinkWM {
		if p := c.placeOf[id]; p != nil && p.Op == "sink" {
			wm = min(wm, w)
		}
	}
	if c.lagClock == nil || wm == job.NoWatermark || wm == job.MaxWatermark {
		return
	}
	now := c.opt.Now()
	due := float64(c.lagClock.StartMs) + float64(wm-c.lagClock.Origin)/c.cfg.Speedup
	lag := max(int64(float64(now.UnixMilli())-due), 0)
	c.info.Lag = append(c.info.Lag, [2]int64{now.Sub(*c.info.JobStart).Milliseconds(), lag})
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// finish records the final source positions, stops the nodes and reports.
func (c *Coordinator) finish() error {
	c.info.Positions = map[int]uint64{}
	c.info.Complete = true
	for _, p := range c.plan.Instances {
		if !c.isSource(p.Op) {
			continue
		}
		if d := c.done[p.ID]; d != nil {
			for k, v := range d.Positions {
				c.info.Positions[k] = v
			}
			continue
		}
		c.info.Complete = false // a lost source: its last reported position
		if ns := c.nodes[p.Node]; ns != nil {
			for k, v := range ns.stats[p.ID].Positions {
				c.info.Positions[k] = v
			}
		}
	}
	c.tunerFinish()
	now := c.opt.Now()
	c.info.Finished = &now
	for _, ns := range c.nodes {
		c.info.NodeCPU += ns.cpu
	}
	c.recordStoreTraffic() // store.go
	if err := WriteRunInfo(c.dir, &c.info); err != nil {
		return err
	}
	var lost []string
	for id := range c.lost {
		lost = append(lost, string(id))
	}
	sort.Strings(lost)
	var total uint64
	for _, v := range c.info.Positions {
		total += v
	}
	msg := fmt.Sprintf("run %s finished: %d records read; output in %s; check it with: spate verify --data %s", c.run, total, c.outputWhere(), c.dir)
	if len(lost) > 0 {
		msg += fmt.Sprintf(" (instances lost: %s)", strings.Join(lost, ", "))
	}
	c.emit(events.RunFinished, "", "", events.RunFinishedFields{Records: total, Lost: lost}, "%s", msg)
	return nil
}

// stopNodes tells every node to stop and waits for the local processes.
func (c *Coordinator) stopNodes() {
	for _, ns := range c.nodes {
		if ns.sess != nil && ns.state != nodeLost {
			_ = ns.send(wire.Control{Kind: wire.CtlStop})
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		alive := 0
		for _, ns := range c.nodes {
			if ns.proc != nil && ns.state != nodeExited {
				alive++
			}
		}
		if alive == 0 {
			break
		}
		select {
		case name := <-c.exitc:
			c.nodes[name].state = nodeExited
		case m := <-c.msgc:
			_ = m
		case <-deadline:
			for _, ns := range c.nodes {
				if ns.proc != nil && ns.state != nodeExited {
					_ = ns.proc.Kill()
					ns.state = nodeExited
				}
			}
		}
	}
	for _, ns := range c.nodes {
		if ns.sess != nil {
			ns.sess.Close()
		}
	}
}

// execProcess is a spawned node process.
type execProcess struct{ cmd *exec.Cmd }

func (p execProcess) Pid() int    { return p.cmd.Process.Pid }
func (p execProcess) Wait() error { return p.cmd.Wait() }
func (p execProcess) Kill() error { return p.cmd.Process.Kill() }
func (p execProcess) Signal(s os.Signal) error {
	return p.cmd.Process.Signal(s)
}

// spawnSelf re-executes this binary as `spate node`.
func spawnSelf(name, coordAddr, token, logPath string) (Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "node", "--name", name, "--coord", coordAddr)
	cmd.Env = append(os.Environ(), "SPATE_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C at the terminal reaches the
	// coordinator only, which then drains the nodes in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	logf.Close()
	return execProcess{cmd}, nil
}
