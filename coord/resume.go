package coord

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"syscall"
	"time"

	"spate/events"
	"spate/internal/human"
	"spate/job"
	"spate/wire"
)

// A resumed coordinator (`spate up --resume DIR`; PROTOCOL.md, "A
// coordinator that can crash") rebuilds its core from the durable record
// and the nodes' reports, then fences everything it cannot trust: which
// is every running instance, since what they did after the record was
// written is nobody's knowledge. In three steps:
//
//  1. rejoin: the recorded nodes reconnect with the token (they wait for
//     a coordinator --coord-timeout long, their instances running until
//     the sources reach their grants) and report their instances in
//     their heartbeats; once every one has, or rejoinWait has passed, the
//     missing ones are lost;
//  2. stop: every rejoined node stops its instances (the step a
//     --rescale restart uses), so that no restored instance talks to an
//     old one;
//  3. restore: every instance gets a new generation and is restored from
//     its latest restorable checkpoint, exactly as after the loss of its
//     node (under --ft spate each from its own chain, on the node that
//     had it when that node came back; under --ft global the whole job
//     rolls back to the latest global checkpoint). Recovery goes on as
//     after any loss, and so does the drain if it had started.

// rejoinWait bounds how long a resumed coordinator waits for the
// recorded nodes: they redial every 200 ms.
const rejoinWait = 3 * time.Second

type resumePhase string

const (
	resumeRejoin resumePhase = "rejoin"
	resumeStop   resumePhase = "stop"
)

// resumeState is a resume in flight.
type resumeState struct {
	id       uint64
	since    time.Time
	phase    resumePhase
	waiting  map[string]bool // recorded nodes not back yet
	beat     map[string]bool // rejoined nodes whose instances were reported
	stopping map[string]bool // nodes stopping their instances
	respawn  []string        // local nodes lost before the rejoin was over: respawned at its end
	late     [][2]*nodeState // spawned nodes that joined before it was over (the joining, the spawned): deployed at its end
	unjoined []string        // recorded nodes spawned by the dead coordinator that had not joined it
	done     map[job.InstanceID]*wire.Done
}

// resumeFrom rebuilds a core from the manifest m of its run, with the
// record m.Coord, and the output manifest. What the nodes know and the
// record does not (their instances' watermarks, positions and pacing
// clocks) comes with their first heartbeats.
func (c *core) resumeFrom(m *Manifest, outputs OutputManifest) error {
	r := m.Coord
	switch {
	case r == nil:
		return errors.New("the checkpoint manifest has no coordinator record: the run was made by an older spate, or crashed before its first write")
	case r.Version != recordVersion:
		return fmt.Errorf("the coordinator record is of version %d; this spate reads %d", r.Version, recordVersion)
	case r.Plan == nil:
		return errors.New("the run crashed before its job was deployed: there is nothing to resume, start it anew")
	case c.ft.mode() == wire.FTNone:
		return errors.New("the run is --ft none: no state of its instances is durable, so it cannot resume")
	}
	c.manifest = m
	c.manifest.Coord = nil
	c.outputs = outputs
	if c.outputs.Limits == nil {
		c.outputs.Limits = map[string]int64{}
	}
	d := *r.Plan
	d.Instances = slices.Clone(r.Plan.Instances)
	c.plan = &d
	c.reindex()
	if err := c.tunerInit(); err != nil {
		return err
	}
	c.tunerStart()
	c.lastTick = c.now
	c.names, c.started, c.draining = r.Names, r.Started, r.Draining
	c.drainAt, c.endedAt, c.srcHigh, c.lagClock = r.DrainAt, r.EndedAt, r.SrcHigh, r.Clock
	if r.Granted != nil {
		c.grants.granted, c.grants.rate, c.grants.lastPos = r.Granted, map[int]float64{}, map[int]uint64{}
	}
	for _, id := range r.Lost {
		c.lost[id] = true
	}
	c.global.complete, c.global.prev = m.Global, r.GlobalPrev
	c.global.next = max(r.GlobalNext, m.Global)
	c.eds.init()
	c.eds.seq = r.EDSSeq + 1
	for id, list := range r.Slices {
		for _, s := range list {
			c.eds.slices[id] = append(c.eds.slices[id], &sliceRef{load: s.Load, owner: s.Owner, ckpt: s.Ckpt, prev: s.Prev, done: s.Done})
		}
	}
	c.resumeRestart(r.Restart)
	rs := &resumeState{id: c.eds.seq, since: c.now, phase: resumeRejoin, waiting: map[string]bool{},
		beat: map[string]bool{}, done: r.Done}
	c.eds.seq++
	for _, rn := range r.Nodes {
		ns := &nodeState{name: rn.Name, pid: rn.PID, local: rn.Local, listen: rn.Listen, state: nodeSpawned}
		switch {
		case rn.Gone:
			ns.state = nodeExited
		case !rn.Joined:
			// Spawned, not joined: it joins the running job as any
			// respawned node does, and is deployed then (lateJoin).
			ns.respawnedAt = c.now
			c.nodes[rn.Name] = ns
			rs.unjoined = append(rs.unjoined, rn.Name)
			continue
		default:
			rs.waiting[rn.Name] = true
		}
		c.nodes[rn.Name] = ns
		c.order = append(c.order, rn.Name)
	}
	slices.SortFunc(c.order, func(a, b string) int {
		if nodeLess(a, b) {
			return -1
		}
		return 1
	})
	if len(rs.waiting) == 0 && c.spawning() == "" {
		return errors.New("every node of the run was gone when it crashed: there is no node to resume on")
	}
	// The dead coordinator's faults died with it: a node it paused is
	// woken (then it can rejoin), and each rejoined node is told to lift
	// the link and store faults it was given (rejoin). A node paused past
	// the timeout was lost, and its instances recovered elsewhere: its
	// process is still there, stopped, and no timer of the dead
	// coordinator will wake it; it is ended as a zombie that cannot reach
	// this coordinator is (resumeTick), SIGKILL reaching a stopped process.
	for _, name := range r.Paused {
		ns := c.nodes[name]
		switch {
		case ns == nil || !ns.local:
		case ns.gone():
			ns.state = nodeLost // not exited: adoptNodes watches it until it is
			c.do(signalOp{node: name, sig: syscall.SIGKILL})
		default:
			c.do(signalOp{node: name, sig: syscall.SIGCONT})
		}
	}
	c.resume = rs
	// The record as read: its next write is one of this coordinator's.
	c.recKey = c.recordKey(c.recKey[:0])
	return nil
}

// rejoin takes back a recorded node that reconnected to a resumed
// coordinator: it keeps its instances until the stop.
func (c *core) rejoin(ns, old *nodeState) error {
	rs := c.resume
	if rs == nil || rs.phase != resumeRejoin || !rs.waiting[ns.name] {
		return fmt.Errorf("node %q came back after the resume had given it up: refused", ns.name)
	}
	delete(rs.waiting, ns.name)
	ns.local, ns.state, ns.lastBeat, ns.joined = old.local, nodeReady, c.now, true
	c.nodes[ns.name] = ns
	c.emit(events.NodeJoined, ns.name, "", events.NodeJoinedFields{PID: ns.pid, Listen: ns.listen, Rejoined: true},
		"node %s rejoined the resumed coordinator (pid %d)", ns.name, ns.pid)
	c.send(ns, wire.Control{Kind: wire.CtlFaults, Faults: &wire.Faults{}}) // no fault outlives the coordinator that made it
	return nil
}

// resumeBeat notes that a rejoined node has reported its instances.
func (c *core) resumeBeat(ns *nodeState) {
	if rs := c.resume; rs != nil && rs.phase == resumeRejoin && ns.live() && !rs.beat[ns.name] {
		rs.beat[ns.name] = true
		c.resumeTick()
	}
}

// resumeTick moves a resume on from its rejoin: once every recorded node
// has rejoined and reported, or rejoinWait has passed.
func (c *core) resumeTick() error {
	rs := c.resume
	if rs == nil || rs.phase != resumeRejoin {
		return nil
	}
	var back []string
	for _, name := range c.order {
		if ns := c.nodes[name]; ns.live() {
			back = append(back, name)
		}
	}
	all := len(rs.waiting) == 0 && len(rs.beat) == len(back)
	if !all && c.now.Sub(rs.since) < rejoinWait {
		return nil
	}
	missing := slices.Sorted(maps.Keys(rs.waiting))
	for _, name := range rs.respawn {
		c.respawn(name) // lost while the others rejoined (resumeLost)
	}
	for _, j := range rs.late {
		if j[1].state == nodeSpawned {
			_ = c.lateJoin(j[0], j[1]) // never refuses
		}
	}
	for _, name := range missing {
		ns := c.nodes[name]
		ns.state = nodeLost
		if ns.local && ns.pid > 0 {
			c.do(signalOp{node: name, sig: syscall.SIGKILL}) // a zombie that cannot reach us must not go on
		}
		c.emit(events.NodeLost, name, "", events.NodeLostFields{Reason: "did not rejoin the resumed coordinator"},
			"node %s lost: it did not rejoin the resumed coordinator within %v", name, rejoinWait)
		if ns.local {
			c.respawn(name) // as for any lost local node (--respawn)
		}
	}
	c.giveUpUnjoined(rs)
	if len(back) == 0 && len(rs.late) == 0 && c.spawning() == "" {
		return fmt.Errorf("no node of the run came back within %v and none can be respawned: the job cannot go on (nodes wait --coord-timeout for a coordinator, then exit)", rejoinWait)
	}
	rs.waiting = nil
	c.emit(events.CoordResumed, "", "", events.CoordResumedFields{Phase: "rejoined", Rejoined: back, Missing: missing,
		Ms: c.now.Sub(rs.since).Milliseconds()},
		"resume: %s rejoined (%v), %d missing; every instance stops, then is restored from its checkpoints", human.Plural(len(back), "node"), back, len(missing))
	rs.phase, rs.stopping = resumeStop, map[string]bool{}
	for _, name := range back {
		rs.stopping[name] = true
		c.send(c.nodes[name], wire.Control{Kind: wire.CtlRescale, Rescale: &wire.Rescale{ID: rs.id, Step: wire.RescaleStop,
			Plan: append([]wire.Placement(nil), c.plan.Instances...)}})
	}
	if len(back) == 0 {
		c.resumeRestore() // on the nodes that joined the running job, or once the respawned ones do (placeAwaiting)
	}
	return nil
}

// giveUpUnjoined ends, at the end of the rejoin, the wait for the nodes
// the dead coordinator had spawned that have not joined this one: such a
// node dials its coordinator once, found none while there was none, and
// exited. Kept as spawned, it was a node to wait for for ever: a lost
// instance with no live node left waited for it, and so did the drain.
// One that still runs is killed (it must not join later), and it is
// replaced as any lost local node is.
func (c *core) giveUpUnjoined(rs *resumeState) {
	for _, name := range rs.unjoined {
		ns := c.nodes[name]
		if ns == nil || ns.state != nodeSpawned {
			continue // it joined the running job (lateJoin), or its exit was seen
		}
		ns.state, ns.respawnedAt = nodeLost, time.Time{} // the crash ended it, not a crash loop

		if ns.local && ns.pid > 0 {
			c.do(signalOp{node: name, sig: syscall.SIGKILL})
		}
		c.emit(events.NodeLost, name, "", events.NodeLostFields{Reason: "spawned before the coordinator crashed, it did not join the resumed one"},
			"node %s lost: spawned before the coordinator crashed, it had not joined the resumed one when the rejoin ended", name)
		if ns.local {
			c.respawn(name)
		}
	}
}

// resumeStopped counts the nodes that stopped their instances (or were
// lost meanwhile); the restore follows the last.
func (c *core) resumeStopped(name string) {
	rs := c.resume
	if rs == nil || rs.phase != resumeStop || !rs.stopping[name] {
		return
	}
	delete(rs.stopping, name)
	if len(rs.stopping) == 0 {
		c.resumeRestore()
	}
}

// resumeRestore restores every instance with a new generation, as after
// the loss of its node.
func (c *core) resumeRestore() {
	rs := c.resume
	c.resume = nil
	var ids []job.InstanceID
	for _, p := range c.plan.Instances {
		if c.lost[p.ID] {
			continue
		}
		if d := rs.done[p.ID]; d != nil && c.done[p.ID] == nil {
			c.done[p.ID] = d
		}
		if c.done[p.ID] != nil {
			c.reopen(p) // it drains again, a source exactly as far as it had
		}
		ids = append(ids, p.ID)
	}
	c.emit(events.CoordResumed, "", "", events.CoordResumedFields{Phase: "restoring", Instances: len(ids),
		Ms: c.now.Sub(rs.since).Milliseconds()},
		"resume: %s restored from their checkpoints with new generations (%v since the resume started)", human.Plural(len(ids), "instance"), c.now.Sub(rs.since).Round(time.Millisecond))
	if c.ft.mode() == wire.FTGlobal {
		c.rollback("")
		return
	}
	// Each where it was if its node came back, else on a survivor; all
	// placed before any restore is sent (place), so that each new owner
	// learns where the others went.
	c.resuming = true
	defer func() { c.resuming = false }()
	from := map[job.InstanceID]string{}
	for _, id := range ids {
		from[id] = c.placeOf[id].Node
	}
	slices.SortStableFunc(ids, func(a, b job.InstanceID) int { // the plan's order, node by node
		if x, y := from[a], from[b]; x != y {
			if nodeLess(x, y) {
				return -1
			}
			return 1
		}
		return 0
	})
	c.placeFrom(ids, func(id job.InstanceID) (string, string) { return from[id], from[id] })
}

// resumeLost takes in a node lost while the resume has not restored the
// instances yet: they go to the others at the restore.
func (c *core) resumeLost(ns *nodeState, why string) {
	rs := c.resume
	ns.state = nodeLost
	ns.stats = nil
	c.do(closeOp{ns.name})
	c.emit(events.NodeLost, ns.name, "", events.NodeLostFields{Reason: why},
		"node %s lost while the coordinator resumes: %s; its instances are restored elsewhere", ns.name, why)
	switch {
	case !ns.local:
	case rs.phase == resumeRejoin:
		// Respawned once the rejoin is over: a node that joins the
		// running job dials the live nodes it is told of, and the
		// recorded ones that are still to rejoin are not live yet.
		rs.respawn = append(rs.respawn, ns.name)
	default:
		c.respawn(ns.name)
	}
	delete(rs.waiting, ns.name)
	delete(rs.beat, ns.name)
	c.resumeStopped(ns.name)
}
