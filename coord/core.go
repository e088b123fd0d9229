package coord

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"spate/control"
	"spate/events"
	"spate/job"
	"spate/netfault"
	"spate/stores"
	"spate/wire"
)

// core is the coordinator's decisions: placement and generations, the
// checkpoint manifest and what is restorable, the output limits, trims,
// recovery, every rescale phase, global rollback, restart and the drain.
// It has no sockets, goroutines, files or clocks. An input goes in
// (step, act; the clock is the input's time, c.now) and the work it
// decides accumulates in c.w, which the driver takes (take) and carries
// out, in order, off the event loop (work.go). The core scripts of
// coord/testdata/core drive a core with no driver at all.
type core struct {
	cfg  Config
	spec job.Spec
	run  string
	dir  string // the run directory, as the deploy names it to the nodes
	info RunInfo

	now time.Time // the time of the input being taken in
	w   work      // decided and not yet taken by the driver

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
	// commit (drainWait): why it was asked, and when; drainOverdue once
	// it has waited past drainWaitLimit for a rescale that released.
	drainAsked   time.Time
	drainPending string
	drainOverdue bool
	names        int // nodes named so far: n1 .. n(names)

	lastIn, lastOut uint64
	lastTick        time.Time
	lastJudged      time.Time                         // the last heartbeat judgement (checkHeartbeats)
	stall           *fault                            // a pause of the coordinator itself, under way (stallSelf)
	endedAt         map[job.InstanceID]map[int]uint64 // sources recovered after they had drained: where they ended
	sinkWM          map[job.InstanceID]int64          // each sink's watermark as last reported, kept while it is not reporting
	lagClock        *wire.PacingClock                 // the sources' pacing clock, once one has reported it

	manifest   *Manifest
	storeSpec  stores.Spec // --store
	outputs    OutputManifest
	recovering map[job.InstanceID]*recovery
	awaiting   []awaiting // lost instances waiting for a respawned node
	global     globalState
	mw         manifestWriter

	rng      *rand.Rand // target resolution: seeded by --seed
	paused   map[string]bool
	faults   map[int]*fault
	faultSeq int

	coordAddr   string                                // where nodes connect ("": no listener, nothing can be spawned)
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

	// The durable record (record.go): durable makes every input end with
	// seal (off in the core scripts, which have no manifest writer);
	// recKey is the record's key as last written.
	durable bool
	recKey  []byte
	// resume is a resume in flight (resume.go); resuming is set while it
	// places the instances.
	resume   *resumeState
	resuming bool

	// halt, once set, ends the run with it (an instance with nothing
	// left to restore it from: ft.go unrecoverable).
	halt error
}

// newCore is a coordinator's decisions before any node has joined.
func newCore(cfg Config, run string, now time.Time) *core {
	c := &core{cfg: cfg, spec: cfg.Spec(), run: run, now: now, names: cfg.Local,
		nodes: map[string]*nodeState{}, placeOf: map[job.InstanceID]*wire.Placement{},
		done: map[job.InstanceID]*wire.Done{}, lost: map[job.InstanceID]bool{}, ready: map[string]bool{},
		outputs: OutputManifest{Limits: map[string]int64{}}, recovering: map[job.InstanceID]*recovery{},
		paused: map[string]bool{}, faults: map[int]*fault{}, restarts: map[string]bool{},
		compacting: map[job.InstanceID]bool{}, sinkRestores: map[job.InstanceID]restoredFrom{},
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5ca1ab1e))}
	c.ft = ftFor(wire.FTMode(cfg.FT))
	c.manifest = newManifest(run, c.spec.Name)
	return c
}

// nodeState is the core's view of a node. Its session, its queue of
// control messages and its process are the driver's (nodeLink).
type nodeState struct {
	name     string
	pid      int
	listen   string
	joined   bool // authenticated: it has (or had) a control stream
	local    bool // a process of the coordinator's: it can be signalled and respawned
	lastBeat time.Time
	state    nodeStatus
	late     bool // joined the running job (a respawn): has not built the generator's key table
	// respawnedAt is when it was spawned in place of a lost node (zero:
	// at the start), for the crash-loop limit.
	respawnedAt time.Time
	killed      bool // signalled to die by an action: its death is no crash
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
	return n != nil && !n.gone() && n.joined
}

// work is what the core decided since the driver last took it: the
// operations in the order they must be carried out, and the events.
type work struct {
	ops    []op
	events []events.Event
}

// op is one thing for the driver to do. The core never waits for one:
// what it must know of the outcome comes back as an input (a manifest
// written, a compaction finished, a process exited, a fault's time up).
type op interface{ opName() string }

type (
	// sendOp queues a control message (encoded when decided: it may
	// share maps with the core's state, which goes on changing).
	sendOp struct {
		to string
		b  []byte
	}
	// closeOp closes a node's session.
	closeOp struct{ node string }
	// spawnOp starts a local node process named name, in place of
	// replaces ("" at the start).
	spawnOp struct{ name, replaces string }
	// signalOp signals a node's process (kill, pause, resume).
	signalOp struct {
		node string
		sig  syscall.Signal
	}
	// deleteOp deletes a checkpoint file no restorable chain needs.
	deleteOp struct{ file string }
	// writeManifestOp writes checkpoints/MANIFEST.json; the core hears
	// back through manifestWritten.
	writeManifestOp struct{ w manifestWrite }
	// writeOutputsOp writes output/MANIFEST.json whole.
	writeOutputsOp struct{ data []byte }
	// writeRunInfoOp writes run.json whole (encoded when decided), so
	// that what it says survives the coordinator: a resume reads it.
	writeRunInfoOp struct{ data []byte }
	// compactOp compacts an instance's chain in the background; the core
	// hears back through compacted.
	compactOp struct {
		cp    wire.Checkpoint
		files []string
	}
	// timerOp arms the lifting of fault id after d; the core hears back
	// through lift.
	timerOp struct {
		d  time.Duration
		id int
	}
	// linkFaultsOp sets the link faults on the coordinator's side of its
	// links (netfault.Coord), replacing all.
	linkFaultsOp struct{ links map[string]netfault.LinkFault }
	// stallOp stands the event loop still for d (pause coord); the core
	// hears back through stalled.
	stallOp struct{ d time.Duration }
)

func (sendOp) opName() string          { return "send" }
func (closeOp) opName() string         { return "close" }
func (spawnOp) opName() string         { return "spawn" }
func (signalOp) opName() string        { return "signal" }
func (deleteOp) opName() string        { return "delete" }
func (writeManifestOp) opName() string { return "write manifest" }
func (writeOutputsOp) opName() string  { return "write output manifest" }
func (writeRunInfoOp) opName() string  { return "write run.json" }
func (compactOp) opName() string       { return "compact" }
func (timerOp) opName() string         { return "timer" }
func (linkFaultsOp) opName() string    { return "link faults" }
func (stallOp) opName() string         { return "stall" }

func (c *core) do(o op) { c.w.ops = append(c.w.ops, o) }

// take hands the driver the work decided so far.
func (c *core) take() work {
	w := c.w
	c.w = work{}
	return w
}

// emit records an event, stamped with the input's time.
func (c *core) emit(kind events.Kind, node, inst string, fields events.Payload, format string, args ...any) {
	c.w.events = append(c.w.events, events.Event{Kind: kind, Node: node, Instance: inst, Time: c.now,
		Text: fmt.Sprintf(format, args...), Fields: fields})
}

// send queues control message m for node ns, if it has a control stream.
func (c *core) send(ns *nodeState, m wire.Control) {
	if ns == nil || !ns.joined {
		return
	}
	b, err := encodeControl(m)
	if err != nil {
		c.emit(events.Error, ns.name, "", nil, "control message %s: %v", m.Kind, err)
		return
	}
	c.do(sendOp{to: ns.name, b: b})
}

func encodeControl(m wire.Control) ([]byte, error) { return json.Marshal(m) }

// nextName names a node: a respawned one, or one joining from elsewhere.
func (c *core) nextName() string {
	c.names++
	return fmt.Sprintf("n%d", c.names)
}

// The inputs of step, besides a node's message (nodeMsg).
type (
	// joinIn is an authenticated node (admit).
	joinIn struct {
		name, listen string
		pid          int
	}
	// exitIn is a node process that exited.
	exitIn struct{ name string }
	// tickIn is a heartbeat period gone by.
	tickIn struct{}
	// drainIn asks for the drain (the run's duration, an interrupt).
	drainIn struct{ why string }
	// liftIn is a fault whose time is up.
	liftIn struct{ id int }
	// stalledIn is the end of the coordinator's own pause.
	stalledIn struct{}
)

// step takes in one input at time now. An error ends the run.
func (c *core) step(now time.Time, in any) (err error) {
	c.now = now
	defer c.seal()
	defer func() {
		if err == nil {
			err = c.halt
		}
	}()
	switch in := in.(type) {
	case nodeMsg:
		return c.handleMsg(in)
	case manifestWrite:
		c.manifestWritten(in)
	case compaction:
		c.compacted(in)
	case exitIn:
		c.exited(in.name)
	case tickIn:
		return c.tick()
	case drainIn:
		c.drain(in.why)
	case liftIn:
		c.lift(in.id)
	case stalledIn:
		c.stalled()
	default:
		return fmt.Errorf("the coordinator's core takes no %T", in)
	}
	return nil
}

// admit takes in an authenticated node at time now: refused says why
// the core will not have it; err, a deploy that failed, ends the run.
func (c *core) admit(now time.Time, in joinIn) (refused, err error) {
	c.now = now
	defer c.seal()
	if refused = c.join(&nodeState{name: in.name, pid: in.pid, listen: in.listen}); refused != nil {
		return refused, nil
	}
	if c.plan == nil && c.joined() == c.cfg.Nodes {
		err = c.deploy()
	}
	return nil, err
}

// spawned records a local node process started before the loop runs.
func (c *core) spawned(name string, pid int) {
	c.nodes[name] = &nodeState{name: name, state: nodeSpawned, local: true, pid: pid}
}

// actAt carries out a control action at time now.
func (c *core) actAt(now time.Time, a control.Action) (control.Result, error) {
	c.now = now
	defer c.seal()
	var res control.Result
	var err error
	if c.resume != nil && a.Verb != "kill" && a.Verb != "pause" && a.Verb != "resume" {
		err = fmt.Errorf("%s: the coordinator is resuming the job; try again once its instances are restored", a.Verb)
	} else {
		res, err = c.act(a)
	}
	if err != nil {
		res = control.Result{Text: err.Error()}
		c.emit(events.Error, "", "", events.ErrorFields{Action: a.String()}, "control: %s: %v", a, err)
	} else {
		res.OK = true
	}
	return res, err
}

// tick is what the loop does every heartbeat period.
func (c *core) tick() error {
	if c.resume != nil {
		c.checkHeartbeats()
		return c.resumeTick()
	}
	if !c.mw.busy && c.mw.written < c.mw.version {
		c.writeManifest() // the last write failed: again
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
	} else if c.sourcesAtEnd() {
		c.drain("every source read its input to the end")
	}
	c.sampleLag()
	return nil
}

// exited takes in a node process that is gone.
func (c *core) exited(name string) {
	ns := c.nodes[name]
	if ns == nil {
		return
	}
	if !ns.gone() && !c.finished() {
		c.nodeLost(ns, "process exited")
	}
	ns.state = nodeExited
	c.emit(events.NodeExited, ns.name, "", nil, "node %s exited", ns.name)
}

// waiting is the instances the drain still waits for.
func (c *core) waiting() []string {
	var out []string
	if c.plan != nil {
		for _, p := range c.plan.Instances {
			if c.done[p.ID] == nil && !c.lost[p.ID] {
				out = append(out, string(p.ID))
			}
		}
	}
	return out
}
