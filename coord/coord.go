package coord

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"spate/events"
	"spate/internal/human"
	"spate/job"
	"spate/wire"
)

// handleMsg acts on one message from a node.
func (c *core) handleMsg(m nodeMsg) error {
	ns := c.nodes[m.node]
	if ns == nil {
		return nil // a connection the core never took in
	}
	switch {
	case m.err != nil:
		c.nodeLost(ns, fmt.Sprintf("control stream ended: %v", m.err))
	case m.hb != nil:
		c.heartbeat(ns, m.hb, m.at)
	case m.ctl != nil:
		if c.resume != nil && m.ctl.Kind != wire.CtlRescale && m.ctl.Kind != wire.CtlEvent {
			// An old instance's report while a resume fences them all: a
			// checkpoint taken after a move the record does not hold
			// (its capture reported to the dead coordinator) would
			// restore the old owner without the range.
			return nil
		}
		switch m.ctl.Kind {
		case wire.CtlReady:
			if m.ctl.Error != "" && c.started {
				// A respawned node that could not join: it hosts nothing yet.
				c.emit(events.Error, ns.name, "", nil, "respawned node %s could not join: %s", ns.name, m.ctl.Error)
				if ns.local {
					c.do(signalOp{node: ns.name, sig: syscall.SIGKILL})
				}
				return nil
			}
			if m.ctl.Error != "" {
				return fmt.Errorf("node %s could not deploy: %s", ns.name, m.ctl.Error)
			}
			c.ready[ns.name] = true
			ns.state = nodeReady
			c.startIfReady()
		case wire.CtlDone:
			c.instanceDone(ns, m.ctl.Done)
		case wire.CtlCheckpointed:
			if m.ctl.Checkpoint != nil {
				c.onCheckpointed(ns, m.ctl.Checkpoint)
			}
		case wire.CtlGap:
			if m.ctl.Gap != nil {
				c.onGap(ns, m.ctl.Gap)
			}
		case wire.CtlDamaged:
			if m.ctl.Checkpoint != nil {
				c.onDamaged(ns, m.ctl.Checkpoint)
			}
		case wire.CtlRestored:
			c.onRestored(ns, m.ctl)
		case wire.CtlRescale:
			if m.ctl.Rescale != nil {
				c.onRescale(ns, m.ctl.Rescale)
			}
		case wire.CtlEvent:
			if e := m.ctl.Event; e != nil {
				c.emit(events.Kind(e.Kind), ns.name, string(e.Instance), events.FieldsOf(events.Kind(e.Kind), e.Fields), "%s", e.Text)
			}
		}
	}
	return nil
}

func (c *core) joined() int {
	n := 0
	for _, ns := range c.nodes {
		if ns.joined {
			n++
		}
	}
	return n
}

// join registers an authenticated node.
func (c *core) join(ns *nodeState) error {
	old := c.nodes[ns.name]
	if rs := c.resume; rs != nil && old != nil && (rs.waiting[ns.name] || old.state != nodeSpawned) {
		return c.rejoin(ns, old) // a recorded node (a respawned one joins as any)
	}
	if rs := c.resume; rs != nil && rs.phase == resumeRejoin && old != nil && !old.joined {
		// A spawned node, deployed once the rejoin is over: it dials
		// the live nodes it is told of, and the recorded ones still to
		// rejoin are not live yet.
		rs.late = append(rs.late, [2]*nodeState{ns, old})
		return nil
	}
	if c.plan != nil {
		if old == nil || old.state != nodeSpawned || old.joined {
			return fmt.Errorf("node %q joined after the job was deployed: refused", ns.name)
		}
		return c.lateJoin(ns, old)
	}
	switch {
	case old == nil && c.joined() >= c.cfg.Nodes:
		return fmt.Errorf("node %q: the cluster already has %d nodes", ns.name, c.cfg.Nodes)
	case old != nil && old.joined:
		return fmt.Errorf("node %q is already connected", ns.name)
	case old != nil:
		ns.local = old.local
	}
	ns.state, ns.lastBeat, ns.joined = nodeJoined, c.now, true
	c.nodes[ns.name] = ns
	c.emit(events.NodeJoined, ns.name, "", events.NodeJoinedFields{PID: ns.pid, Listen: ns.listen}, "node %s joined (pid %d, peers at %s)", ns.name, ns.pid, ns.listen)
	return nil
}

// lateJoin takes in a node the coordinator respawned while the job runs:
// it dials every live peer, hosts the lost node's instances that wait for
// it (placeAwaiting), and is there for the next recoveries.
func (c *core) lateJoin(ns, old *nodeState) (err error) {
	defer func() {
		if err == nil {
			c.placeAwaiting(ns.name)
		}
	}()
	ns.local, ns.state, ns.lastBeat, ns.late, ns.respawnedAt, ns.joined = old.local, nodeJoined, c.now, true, old.respawnedAt, true
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
	c.send(ns, wire.Control{Kind: wire.CtlDeploy, Deploy: &d})
	c.sendGrants(ns)
	return nil
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
func (c *core) respawn(lost string) string {
	restart := c.restarts[lost]
	delete(c.restarts, lost)
	if (!restart && (!c.cfg.Respawn || !c.ft.respawns())) || c.finished() || c.coordAddr == "" {
		return ""
	}
	now := c.now
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
	name := c.nextName()
	c.nodes[name] = &nodeState{name: name, state: nodeSpawned, local: true, respawnedAt: now}
	c.do(spawnOp{name: name, replaces: lost})
	return name
}

// deploy places every instance on the live nodes and sends the plan. A
// node lost before the deploy (it joined, then its stream ended) hosts
// nothing: its loss was taken with no plan, so nothing would ever have
// recovered what it was given (the job started without those instances
// and the drain waited for them for ever). A node spawned in its place
// joins the running job (lateJoin).
func (c *core) deploy() error {
	c.order = c.order[:0]
	addrs := map[string]string{}
	for name, ns := range c.nodes {
		if !ns.live() {
			continue
		}
		c.order = append(c.order, name)
		addrs[name] = ns.listen
	}
	if len(c.order) == 0 {
		return errors.New("every node was lost before the job was deployed")
	}
	sort.Slice(c.order, func(i, j int) bool { return nodeLess(c.order[i], c.order[j]) })
	d := &wire.Deploy{Run: c.run, DataDir: c.dir, Job: c.spec, Nodes: addrs, FlushMs: c.cfg.FlushMs,
		FT: c.ft.mode(), Interval: c.cfg.IntervalDuration().Milliseconds(), FullEvery: 10, Cost: costNs(c.cfg.Cost),
		BackupMem: c.cfg.BackupMem, BackupBlock: c.cfg.BackupFull == "block", Store: c.storeSpec.String(), Grants: true, Break: c.cfg.Break,
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
		c.send(c.nodes[name], wire.Control{Kind: wire.CtlDeploy, Deploy: d})
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
func (c *core) startIfReady() {
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

func (c *core) start() {
	c.started = true
	c.lastTick = c.now
	started := c.lastTick
	c.info.JobStart = &started
	// run.json says when the job started from now on, not only once the
	// run has finished: a coordinator that dies leaves it to the one that
	// resumes the run, whose duration and output lag count from it.
	if b, err := c.info.encode(); err == nil {
		c.do(writeRunInfoOp{b})
	}
	c.tunerStart()
	c.grant() // before the start, on the same streams
	for _, name := range c.order {
		if ns := c.nodes[name]; !ns.gone() {
			c.send(ns, wire.Control{Kind: wire.CtlStart})
		}
	}
	c.emit(events.JobStarted, "", "", nil, "job %s started: %s on %s", c.spec.Name, human.Plural(len(c.plan.Instances), "instance"), human.Plural(len(c.order), "node"))
}

func (c *core) heartbeat(ns *nodeState, hb *wire.Heartbeat, at time.Time) {
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
	c.resumeBeat(ns)
}

func (c *core) checkHeartbeats() {
	now := c.now
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
func (c *core) nodeLost(ns *nodeState, why string) {
	if ns.gone() {
		return
	}
	if c.finished() {
		ns.state = nodeExited
		return
	}
	if c.resume != nil {
		c.resumeLost(ns, why)
		return
	}
	ns.state = nodeLost
	defer func() { ns.stats = nil }() // after the rollback has read them
	c.do(closeOp{ns.name})
	fresh := ""
	if ns.local {
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
func (c *core) spateLost(ns *nodeState, ids []job.InstanceID, fresh, why string) {
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
// planned is the plan's placements, none before the deploy.
func (c *core) planned() []wire.Placement {
	if c.plan == nil {
		return nil
	}
	return c.plan.Instances
}

func (c *core) noneLost(ns *nodeState, ids []job.InstanceID, why string) {
	for _, id := range ids {
		c.lost[id] = true
	}
	c.emit(events.NodeLost, ns.name, "", events.NodeLostFields{Reason: why, Instances: ids},
		"node %s lost: %s; instances %v lost (no recovery with --ft none)", ns.name, why, ids)
	// The streams of the node's drained instances end with it too: their
	// end of stream may not have reached a downstream yet (held by a
	// partition when the node died), and no one sends it again.
	streams := append([]job.InstanceID(nil), ids...)
	for _, p := range c.planned() {
		if p.Node == ns.name && c.done[p.ID] != nil && !slices.Contains(streams, p.ID) {
			streams = append(streams, p.ID)
		}
	}
	for _, name := range c.order {
		if other := c.nodes[name]; other != ns && !other.gone() && len(streams) > 0 {
			c.send(other, wire.Control{Kind: wire.CtlLost, Instances: streams})
		}
	}
}

func (c *core) instanceDone(ns *nodeState, d *wire.Done) {
	if d == nil {
		return
	}
	p := c.placeOf[d.Instance]
	if p == nil {
		return
	}
	if (ns.state == nodeLost || p.Node != ns.name || d.Gen != 0 && d.Gen != p.Gen) && !c.acceptFenced(d.Gen, p.Gen) {
		return // a fenced generation never counts as done
	}
	c.done[d.Instance] = d
	c.emit(events.InstanceDone, ns.name, string(d.Instance), events.InstanceDoneFields{In: d.In, Out: d.Out, Late: d.Late},
		"%s drained: %s in, %s out", d.Instance, human.Count(float64(d.In)), human.Count(float64(d.Out)))
}

// reopen forgets that instance p drained, for its recovery: a source
// keeps where it ended, which its restore reads exactly to.
func (c *core) reopen(p wire.Placement) {
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
func (c *core) downstreamRunning(op string) bool {
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

func (c *core) finished() bool {
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

// sourcesAtEnd reports whether the job runs and every source instance
// of its plan, in its current placement, has said that it read its
// finite input to the end: the end of the job is then a drain, which
// waits for a rescale in flight (PROTOCOL.md, "the end of a finite
// input").
func (c *core) sourcesAtEnd() bool {
	if c.plan == nil || !c.started || c.draining {
		return false
	}
	n := 0
	for _, p := range c.plan.Instances {
		if !c.isSource(p.Op) {
			continue
		}
		ns := c.nodes[p.Node]
		if c.lost[p.ID] || ns == nil || ns.gone() {
			return false
		}
		if s, ok := ns.stats[p.ID]; !ok || !s.AtEnd || s.Gen != p.Gen {
			return false
		}
		n++
	}
	return n > 0
}

func (c *core) drain(why string) {
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
			c.send(ns, wire.Control{Kind: wire.CtlDrain, Until: c.drainAt})
		}
	}
}

// throughput reports the job's rates about once a second.
func (c *core) throughput() {
	now := c.now
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
		wmText = human.EventTime(wm)
	}
	fields := events.ThroughputFields{InRps: rin, OutRps: rout, In: in, Out: out, Watermark: wm}
	lagText := ""
	if n := len(c.info.Lag); n > 0 {
		lag := c.info.Lag[n-1][1]
		fields.LagMs = &lag
		lagText = ", output lag " + human.Duration(time.Duration(c.info.Lag[n-1][1])*time.Millisecond)
	}
	c.emit(events.Throughput, "", "", fields,
		"%s records/s in, %s results/s out (total %s in); sink watermark %s%s", human.Count(rin), human.Count(rout), human.Count(float64(in)), wmText, lagText)
	c.metrics(dt)
}

// metrics reports, per node and per instance, what the dashboard shows:
// CPU, memory, records in and out per second, backlog and backpressure.
func (c *core) metrics(dt float64) {
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
				Backpressure: pressure(s.Backlog)}, "%s: %s in/s, %s out/s, backlog %d", id, human.Count(rin), human.Count(rout), s.Backlog)
		}
		cpu := 0.0
		if ns.lastCPU > 0 && ns.cpu >= ns.lastCPU {
			cpu = 100 * (ns.cpu - ns.lastCPU) / dt
		}
		ns.lastCPU = ns.cpu
		c.emit(events.Metrics, name, "", events.MetricsFields{CPU: cpu, RSS: ns.rss, InRate: nin, OutRate: nout, Backlog: backlog},
			"node %s: cpu %.0f%%, rss %s, %s in/s, %s out/s", name, cpu, human.Bytes(float64(ns.rss)), human.Count(nin), human.Count(nout))
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
func (c *core) sampleLag() {
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
	now := c.now
	due := float64(c.lagClock.StartMs) + float64(wm-c.lagClock.Origin)/c.cfg.Speedup
	lag := max(int64(float64(now.UnixMilli())-due), 0)
	c.info.Lag = append(c.info.Lag, [2]int64{now.Sub(*c.info.JobStart).Milliseconds(), lag})
}

// finish records the final source positions and the run's figures in
// c.info, for run.json, and returns the event that says the run is over
// (the driver publishes it once run.json is written).
func (c *core) finish() events.Event {
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
	now := c.now
	c.info.Finished = &now
	for _, ns := range c.nodes {
		c.info.NodeCPU += ns.cpu
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
	msg := fmt.Sprintf("run %s finished: %s read; output in %s; check it with: spate verify --data %s", c.run, human.PluralCount(float64(total), "record"), c.outputWhere(), c.dir)
	if len(lost) > 0 {
		msg += fmt.Sprintf(" (instances lost: %s)", strings.Join(lost, ", "))
	}
	return events.Event{Kind: events.RunFinished, Time: c.now, Text: msg, Fields: events.RunFinishedFields{Records: total, Lost: lost}}
}
