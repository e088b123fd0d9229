package coord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"spate/control"
	"spate/events"
	"spate/internal/human"
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
	// Crash, when closed, makes the coordinator die as its process would
	// under SIGKILL: the loop stops where it is, the work not carried out
	// yet is dropped, every node session is closed, nothing is flushed or
	// written at the end, and Up returns ErrCrashed (the simulation's
	// crash of the coordinator; the product is killed for real).
	Crash <-chan struct{}
	// Adopt, if set, gives a resumed coordinator the handle of a node
	// process another coordinator started (the simulation's in-process
	// nodes); nil: the process of that pid (adopt.go).
	Adopt func(name string, pid int) Process
}

// ErrCrashed is what Up returns after Options.Crash.
var ErrCrashed = errors.New("the coordinator crashed (Options.Crash)")

// Process is a spawned node process.
type Process interface {
	Pid() int
	Wait() error
	Kill() error
	Signal(os.Signal) error // SIGSTOP, SIGCONT, SIGKILL
}

// nodeLink is the driver's side of a node: its session, its control
// messages on their way, and its process if the coordinator spawned it.
type nodeLink struct {
	sess *yamux.Session
	// out is the node's control messages on their way: the driver queues
	// them and never waits for the node; the connection's writer
	// (writeControl) writes them in order. outErr is why it stopped.
	out    chan []byte // encoded wire.Control messages
	outErr atomic.Pointer[error]
	proc   Process
}

// outboxSize bounds a node's queue of control messages: a node that
// reads none of thousands is judged by its heartbeats, not waited for.
const outboxSize = 1 << 14

// queue queues an encoded control message for the node; it never blocks.
func (l *nodeLink) queue(b []byte) error {
	if l.out == nil {
		return errors.New("no control stream")
	}
	if err := l.outErr.Load(); err != nil {
		return *err
	}
	select {
	case l.out <- b:
		return nil
	default:
		return fmt.Errorf("%d control messages queued: the node reads none", outboxSize)
	}
}

// writeControl writes the node's queued control messages to its control
// stream, in order, until the stream fails or its session closes.
func (l *nodeLink) writeControl(w *wire.Writer, closed <-chan struct{}) {
	for {
		select {
		case b := <-l.out:
			err := w.WriteFrame(wire.TControl, b)
			if err == nil && len(l.out) == 0 {
				err = w.Flush()
			}
			if err != nil {
				l.outErr.Store(&err)
				return
			}
		case <-closed:
			return
		}
	}
}

// nodeMsg is what a node's reader goroutine hands the event loop.
type nodeMsg struct {
	node string
	hb   *wire.Heartbeat
	at   time.Time // when the heartbeat arrived
	ctl  *wire.Control
	err  error // the control stream ended
}

// drainLimit bounds a drain: a job that cannot finish (an instance that
// could not be restored, say) ends the run with an error, never a hang.
const drainLimit = 2 * time.Minute

// Coordinator runs one job on a cluster: the driver of its core. Its
// event loop (loop) is the only goroutine that touches the core: it
// stamps each input with the time, steps the core, publishes the events
// the core emitted and hands the rest of the work to the executor
// (work.go), which carries it out in order. Reader goroutines, the
// manifest writer, the executor and the accept loop talk to the loop
// through channels only.
type Coordinator struct {
	*core
	opt   Options
	token string
	bus   *events.Bus

	joinc  chan joinReq
	namec  chan chan string // the accept loop asks the core for a joining node's name
	msgc   chan nodeMsg
	exitc  chan string // names of node processes that exited
	execc  chan []op   // work for the executor, in order
	linkMu sync.Mutex
	links  map[string]*nodeLink

	store    state.Store
	outStore state.Store    // the sinks' output and its manifest (store.go)
	storeSrv *stores.Server // answers the nodes' store streams
	mwc      chan manifestWrite
	mwDone   chan manifestWrite

	// the control API (control.go)
	ctlc     chan ctlReq
	liftc    chan int // faults whose time is up
	loopDone chan struct{}
	layer    *netfault.Layer // link faults on the coordinator's side of its links
	tls      tlsState        // the run's CA and the coordinator's certificate, with TLS (tls.go)
	compactc chan compaction

	// The version of the manifest (with its record) known durable, for
	// the executor's durableOp; durStop releases a waiting executor when
	// the loop ends.
	durMu   sync.Mutex
	durCond *sync.Cond
	durV    uint64
	durStop bool

	resumed bool        // started with --resume (resume.go)
	crashed atomic.Bool // Options.Crash: nothing more is carried out
}

// joinReq is an authenticated node for the loop: the core's verdict goes
// back on ok.
type joinReq struct {
	in   joinIn
	link *nodeLink
	ok   chan error
}

// newCoordinator is a coordinator's state before anything of its I/O
// exists: no run directory, store, listener or fault layer yet.
func newCoordinator(cfg Config, opt Options, token string) *Coordinator {
	c := &Coordinator{core: newCore(cfg, NewRunID(opt.Now()), opt.Now()), opt: opt, token: token,
		joinc: make(chan joinReq), namec: make(chan chan string), msgc: make(chan nodeMsg, 256), exitc: make(chan string, 64),
		execc: make(chan []op, 1<<12), links: map[string]*nodeLink{},
		liftc: make(chan int, 16), compactc: make(chan compaction, 256),
		mwc: make(chan manifestWrite, 1), mwDone: make(chan manifestWrite, 1)}
	c.bus = events.NewBus(opt.Now)
	c.durCond = sync.NewCond(&c.durMu)
	c.core.durable = true
	return c
}

// setDurable records that the manifest of version v is durable.
func (c *Coordinator) setDurable(v uint64) {
	c.durMu.Lock()
	c.durV = max(c.durV, v)
	c.durMu.Unlock()
	c.durCond.Broadcast()
}

// awaitDurable waits until the manifest of version v is durable, or the
// loop has ended.
func (c *Coordinator) awaitDurable(v uint64) {
	c.durMu.Lock()
	for c.durV < v && !c.durStop {
		c.durCond.Wait()
	}
	c.durMu.Unlock()
}

// stopDurable releases the executor from every wait for a write.
func (c *Coordinator) stopDurable() {
	c.durMu.Lock()
	c.durStop = true
	c.durMu.Unlock()
	c.durCond.Broadcast()
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
		opt.Spawn = spawnSelf(cfg.CoordTimeout)
	}
	if cfg.Resume != "" {
		return resumeUp(ctx, cfg, opt)
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
	return c.dir, c.run1(ctx)
}

// run1 starts the logs and serves the run.
func (c *Coordinator) run1(ctx context.Context) (err error) {
	logDone, err := c.startLogs()
	if err != nil {
		return err
	}
	defer func() {
		c.bus.Close()
		if lerr := logDone(); err == nil && lerr != nil {
			err = lerr
		}
	}()
	return c.serve(ctx)
}

// startLogs subscribes the JSON-lines log(s) and the headless printer.
func (c *Coordinator) startLogs() (wait func() error, err error) {
	var files []*os.File
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if c.resumed {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND // the dead coordinator's events stay
		c.bus.ContinueAt(lastSeq(filepath.Join(c.dir, "events.jsonl")))
	}
	f, err := os.OpenFile(filepath.Join(c.dir, "events.jsonl"), flags, 0o644)
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

// publish puts an event of the driver's own on the bus.
func (c *Coordinator) publish(kind events.Kind, node, inst string, fields events.Payload, format string, args ...any) {
	c.bus.Publish(events.Event{Kind: kind, Node: node, Instance: inst, Text: fmt.Sprintf(format, args...), Fields: fields})
}

// serve is the coordinator's life: listen, spawn, deploy, run, drain, stop.
func (c *Coordinator) serve(ctx context.Context) error {
	listen := c.cfg.Listen
	if c.resumed {
		listen = c.info.Coord // where the nodes look for their coordinator
	}
	ln, err := c.opt.Transport.Listen(listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	c.coordAddr = addr
	if c.resumed {
		c.info.Resumed = append(c.info.Resumed, c.opt.Now())
	} else {
		c.info = RunInfo{Run: c.run, Started: c.opt.Now(), Config: c.cfg, Job: c.spec, Coord: addr}
	}
	if err := c.setupTLS(ln); err != nil { // tls.go
		return err
	}
	if err := WriteRunInfo(c.dir, &c.info); err != nil {
		return err
	}
	if c.resumed {
		c.publish(events.CoordResumed, "", "", events.CoordResumedFields{Phase: "started"},
			"run %s resumed by a new coordinator at %s: waiting for its nodes to rejoin", c.run, addr)
	} else {
		c.publish(events.RunStarted, "", "", events.RunStartedFields{Dir: c.dir, Coord: addr, Break: c.cfg.Break.String()},
			"run %s: job %s on %s, source %s, data in %s", c.run, c.spec.Name, human.Plural(c.cfg.Nodes, "node"), c.cfg.Source, c.dir)
	}
	if !c.cfg.Break.Empty() {
		c.publish(events.RunStarted, "", "", nil, "%s: the protocol runs with a mechanism deliberately wrong (spate up --break list)", c.cfg.Break.Banner())
	}
	if c.tlsOn() {
		c.publish(events.RunStarted, "", "", nil, "links are TLS 1.3 with the run's CA (%s); nodes get their certificates by the token challenge", c.caFile())
	}
	if c.cfg.Local < c.cfg.Nodes && !c.resumed {
		c.publish(events.RunStarted, "", "", nil, "waiting for %s to join: spate node --join %s --token $(cat %s)",
			human.Plural(c.cfg.Nodes-c.cfg.Local, "node"), addr, filepath.Join(c.dir, "token"))
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
	execDone := make(chan struct{})
	go c.runExecutor(execDone)

	if c.resumed {
		c.adoptNodes() // resume.go: the dead coordinator's local nodes
	}
	for i := 1; i <= c.cfg.Local && !c.resumed; i++ {
		name := fmt.Sprintf("n%d", i)
		if err := c.spawn(name, ""); err != nil {
			c.stopNodes()
			return err
		}
		c.spawned(name, c.link(name).proc.Pid())
	}
	err = c.loop(ctx)
	close(c.loopDone)
	if errors.Is(err, ErrCrashed) {
		c.crashed.Store(true) // the executor carries out nothing more
		c.stopDurable()
		close(c.execc)
		<-execDone
		close(c.mwc)
		c.linkMu.Lock()
		for _, l := range c.links {
			if l.sess != nil {
				l.sess.Close() // as the kernel closes a dead process's sockets
			}
		}
		c.linkMu.Unlock()
		return err
	}
	if len(c.faults) > 0 || len(c.paused) > 0 {
		c.now = c.opt.Now()
		c.heal() // a paused node could not stop
		c.carry()
	}
	c.flushManifest()
	c.stopDurable()
	close(c.execc)
	<-execDone // every decision carried out
	close(c.mwc)
	if err == nil && c.started && c.finished() {
		err = c.finishRun()
	}
	c.stopNodes()
	return err
}

// link is the driver's side of node name (nil if it has none).
func (c *Coordinator) link(name string) *nodeLink {
	c.linkMu.Lock()
	defer c.linkMu.Unlock()
	return c.links[name]
}

// spawn starts a local node process and watches for its exit.
func (c *Coordinator) spawn(name, replaces string) error {
	proc, err := c.opt.Spawn(name, c.coordAddr, c.token, filepath.Join(c.dir, "logs", name+".log"))
	if err != nil {
		if replaces != "" {
			return fmt.Errorf("could not respawn a node for %s: %w", replaces, err)
		}
		return fmt.Errorf("spawn node %s: %w", name, err)
	}
	c.linkMu.Lock()
	if l := c.links[name]; l != nil {
		l.proc = proc // it joined already
	} else {
		c.links[name] = &nodeLink{proc: proc}
	}
	c.linkMu.Unlock()
	text := fmt.Sprintf("node %s spawned (pid %d)", name, proc.Pid())
	if replaces != "" {
		text += " in place of " + replaces
	}
	c.publish(events.NodeSpawned, name, "", events.NodeSpawnedFields{PID: proc.Pid(), Replaces: replaces}, "%s", text)
	go func() { _ = proc.Wait(); c.exitc <- name }()
	return nil
}

// acceptLoop authenticates nodes and hands them to the event loop.
func (c *Coordinator) acceptLoop(ctx context.Context, ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go c.accept(ctx, conn)
	}
}

// accept authenticates one connection and, if the core takes the node
// in, reads its control stream.
func (c *Coordinator) accept(ctx context.Context, conn net.Conn) {
	// Whatever comes of it, the connection ends with the coordinator
	// (its end, or a crash: one still joining must not outlive it).
	// The raw connection: conn is rewrapped below (TLS, the fault layer).
	raw := conn
	context.AfterFunc(ctx, func() { raw.Close() })
	var name string
	var cert []byte
	remote := conn.RemoteAddr()
	refuse := func(err error) {
		c.publish(events.NodeRefused, "", "", events.NodeRefusedFields{Remote: remote.String()},
			"refused connection from %s: %v", remote, err)
		conn.Close()
	}
	h, err := wire.JoinServer(conn, 10*time.Second, c.token, c.tlsOn(), c.caDER(), c.joinCheck(remote),
		func(h wire.Hello, csr []byte) (wire.Welcome, error) {
			name = h.Node
			if name == "" { // a node joining from elsewhere gets the next free name
				r := make(chan string, 1)
				select {
				case c.namec <- r:
					name = <-r
				case <-ctx.Done():
					return wire.Welcome{}, errors.New("the coordinator is stopping")
				}
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
	sess, err := yamux.Server(wire.Coalesce(conn), wire.YamuxConfig())
	if err != nil {
		conn.Close()
		return
	}
	context.AfterFunc(ctx, func() { sess.Close() }) // closes the fault layer's conn too
	st, err := sess.AcceptStream()
	if err != nil {
		sess.Close()
		return
	}
	go c.serveStores(name, sess) // every later stream is a store request (store.go)
	l := &nodeLink{sess: sess, out: make(chan []byte, outboxSize)}
	req := joinReq{in: joinIn{name: name, pid: h.PID, listen: h.Listen}, link: l, ok: make(chan error, 1)}
	select {
	case c.joinc <- req:
	case <-ctx.Done():
		sess.Close()
		return
	}
	w := wire.NewWriter(st)
	if err := <-req.ok; err != nil {
		c.publish(events.NodeRefused, name, "", nil, "%v", err)
		// Said to the node, which stops: one that lost its coordinator
		// would otherwise dial again until its --coord-timeout.
		if b, merr := encodeControl(wire.Control{Kind: wire.CtlStop, Error: err.Error()}); merr == nil {
			_ = st.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if w.WriteFrame(wire.TControl, b) == nil && w.Flush() == nil {
				_ = st.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, _ = io.Copy(io.Discard, st) // until the node closes, so that the stop is read first
			}
		}
		sess.Close()
		return
	}
	go l.writeControl(w, sess.CloseChan())
	c.readNode(name, st)
}

// readNode forwards a node's control stream to the event loop.
func (c *Coordinator) readNode(name string, st net.Conn) {
	r := wire.NewReader(st, 0)
	for {
		t, p, err := r.ReadFrame()
		if err == nil {
			switch t {
			case wire.THeartbeat:
				var hb wire.Heartbeat
				if err = wire.DecodeJSON(t, p, &hb); err == nil {
					c.msgc <- nodeMsg{node: name, hb: &hb, at: c.opt.Now()}
					continue
				}
			case wire.TControl:
				var m wire.Control
				if err = wire.DecodeJSON(t, p, &m); err == nil {
					c.msgc <- nodeMsg{node: name, ctl: &m}
					continue
				}
			default:
				err = fmt.Errorf("unexpected %v frame on the control stream", t)
			}
		}
		c.msgc <- nodeMsg{node: name, err: err}
		return
	}
}

// loop is the event loop: it takes each input to the core, stamped with
// the time, and carries out what the core decided. It returns when the
// job has drained (or could not run).
func (c *Coordinator) loop(ctx context.Context) error {
	tick := time.NewTicker(c.cfg.Heartbeat)
	defer tick.Stop()
	var durc <-chan time.Time
	joinDeadline := time.NewTimer(30 * time.Second)
	defer joinDeadline.Stop()
	if c.cfg.Local < c.cfg.Nodes || c.resumed {
		joinDeadline.Stop() // remote nodes may take as long as they take; a resume waits rejoinWait (resume.go)
	}
	left := c.cfg.Duration
	if c.resumed && c.info.JobStart != nil && left > 0 {
		// The run's duration counts from the job's first start.
		left = max(c.info.JobStart.Add(c.cfg.Duration).Sub(c.opt.Now()), time.Second)
	}
	sigc := ctx.Done()
	var finishDeadline <-chan time.Time
	durArmed := false
	for {
		if c.started && !durArmed && c.cfg.Duration > 0 && c.resume == nil {
			durArmed, durc = true, time.After(left)
			if c.draining { // the dead coordinator had started the drain
				durc, finishDeadline = nil, time.After(drainLimit)
			}
		}
		var in any
		select {
		case r := <-c.joinc:
			refused, err := c.admit(c.opt.Now(), r.in)
			if refused == nil {
				c.linkMu.Lock()
				if old := c.links[r.in.name]; old != nil {
					r.link.proc = old.proc // a spawned node joins
				}
				c.links[r.in.name] = r.link
				c.linkMu.Unlock()
			}
			r.ok <- refused
			if err != nil {
				c.carry()
				return err
			}
		case r := <-c.namec:
			r <- c.nextName()
			continue
		case m := <-c.msgc:
			in = m
		case w := <-c.mwDone:
			in = w
		case name := <-c.exitc:
			in = exitIn{name}
		case <-tick.C:
			// Take in what the nodes already said before judging them: a
			// slow loop must not mistake its own delay for their silence.
			for drained := false; !drained; {
				select {
				case m := <-c.msgc:
					if err := c.step(c.opt.Now(), m); err != nil {
						c.carry()
						return err
					}
				default:
					drained = true
				}
			}
			in = tickIn{}
		case r := <-c.ctlc:
			c.handleCtl(r) // control.go
		case id := <-c.liftc:
			in = liftIn{id}
		case r := <-c.compactc:
			in = r
		case <-joinDeadline.C:
			if c.plan == nil {
				return fmt.Errorf("only %d of %d nodes joined within 30s (see %s)", c.joined(), c.cfg.Nodes, filepath.Join(c.dir, "logs"))
			}
			continue
		case <-durc:
			durc = nil
			in = drainIn{"duration reached"}
			finishDeadline = time.After(drainLimit)
		case <-sigc:
			sigc = nil
			if !c.started {
				return errors.New("interrupted before the job started")
			}
			in = drainIn{"interrupted"}
			finishDeadline = time.After(30 * time.Second)
		case <-c.opt.Crash:
			return ErrCrashed
		case <-finishDeadline:
			waiting := c.waiting()
			c.publish(events.Error, "", "", events.ErrorFields{Waiting: waiting}, "the drain did not finish: still waiting for %v", waiting)
			return fmt.Errorf("the drain did not finish in time: still waiting for %v", waiting)
		}
		var err error
		if in != nil {
			err = c.step(c.opt.Now(), in)
		}
		c.carry()
		if err != nil {
			return err
		}
		if err := c.checked(); err != nil {
			return err
		}
		if c.started && c.finished() {
			return nil
		}
	}
}

// finishRun writes run.json and says the run is over.
func (c *Coordinator) finishRun() error {
	c.now = c.opt.Now()
	e := c.finish()
	w := c.take() // the executor is done: what finish decided is carried out here
	for _, e := range w.events {
		c.bus.Publish(e)
	}
	for _, o := range w.ops {
		c.carryOut(o)
	}
	c.recordStoreTraffic() // store.go
	if err := WriteRunInfo(c.dir, &c.info); err != nil {
		return err
	}
	c.bus.Publish(e)
	return nil
}

// checked checks the invariants, with --check-invariants.
func (c *Coordinator) checked() error {
	if !c.cfg.CheckInvariants {
		return nil
	}
	if err := c.checkInvariants(); err != nil {
		c.publish(events.Error, "", "", nil, "invariant broken: %v", err)
		return fmt.Errorf("invariant broken: %w", err)
	}
	return nil
}

// stopNodes tells every node to stop and waits for the local processes.
func (c *Coordinator) stopNodes() {
	c.linkMu.Lock()
	links := make(map[string]*nodeLink, len(c.links))
	for name, l := range c.links {
		links[name] = l
	}
	c.linkMu.Unlock()
	for name, l := range links {
		if ns := c.nodes[name]; l.sess != nil && (ns == nil || ns.state != nodeLost) {
			if b, err := encodeControl(wire.Control{Kind: wire.CtlStop}); err == nil {
				_ = l.queue(b)
			}
		}
	}
	exited := map[string]bool{}
	for name, ns := range c.nodes {
		if ns.state == nodeExited {
			exited[name] = true
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		alive := 0
		for name, l := range links {
			if l.proc != nil && !exited[name] {
				alive++
			}
		}
		if alive == 0 {
			break
		}
		select {
		case name := <-c.exitc:
			exited[name] = true
		case <-c.msgc:
		case <-deadline:
			for name, l := range links {
				if l.proc != nil && !exited[name] {
					_ = l.proc.Kill()
					exited[name] = true
				}
			}
		}
	}
	for _, l := range links {
		if l.sess != nil {
			l.sess.Close()
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

// spawnSelf re-executes this binary as `spate node`, its nodes waiting
// coordTimeout for a coordinator that went away.
func spawnSelf(coordTimeout time.Duration) func(name, coordAddr, token, logPath string) (Process, error) {
	return func(name, coordAddr, token, logPath string) (Process, error) {
		return spawnNode(name, coordAddr, token, logPath, coordTimeout)
	}
}

func spawnNode(name, coordAddr, token, logPath string, coordTimeout time.Duration) (Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "node", "--name", name, "--coord", coordAddr, "--coord-timeout", coordTimeout.String())
	cmd.Env = append(os.Environ(), "SPATE_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C at the terminal reaches the
	// coordinator only, which then drains the nodes in order.
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	logf.Close()
	return execProcess{cmd}, nil
}
