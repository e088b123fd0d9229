package coord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"spate/chaos"
	"spate/control"
	"spate/events"
	"spate/internal/human"
	"spate/job"
	"spate/wire"
)

// The control API: the HTTP server (package control) runs on its own
// goroutines and hands every request to the event loop through ctlc, so
// the loop stays the only owner of the cluster's state.

// ctlReq is one control request for the event loop.
type ctlReq struct {
	act    *control.Action
	status bool
	reply  chan ctlReply
}

type ctlReply struct {
	res control.Result
	st  control.Status
}

// backend is the coordinator as a control.Backend.
type backend struct {
	c    *Coordinator
	hist *history
}

func (b backend) ask(ctx context.Context, r ctlReq) (ctlReply, error) {
	r.reply = make(chan ctlReply, 1)
	select {
	case b.c.ctlc <- r:
	case <-ctx.Done():
		return ctlReply{}, ctx.Err()
	case <-b.c.loopDone:
		return ctlReply{}, errors.New("the run has ended")
	}
	select {
	case rep := <-r.reply:
		return rep, nil
	case <-ctx.Done():
		return ctlReply{}, ctx.Err()
	case <-b.c.loopDone:
		return ctlReply{}, errors.New("the run has ended")
	}
}

func (b backend) Status(ctx context.Context) (control.Status, error) {
	rep, err := b.ask(ctx, ctlReq{status: true})
	return rep.st, err
}

func (b backend) Act(ctx context.Context, a control.Action) (control.Result, error) {
	rep, err := b.ask(ctx, ctlReq{act: &a})
	return rep.res, err
}

func (b backend) Events(after uint64) ([]events.Event, <-chan events.Event, func()) {
	return b.hist.events(after)
}

// history keeps the recent events for the control API's event stream and
// forwards new ones to its live readers. It is a must-deliver subscriber
// of the bus, so it sees every event; a slow live reader loses events
// (counted in its stream's gap of sequence numbers), never the bus.
type history struct {
	mu   sync.Mutex
	ring []events.Event
	max  int
	subs map[int]chan events.Event
	next int
}

func newHistory(bus *events.Bus, max int) *history {
	h := &history{max: max, subs: map[int]chan events.Event{}}
	sub := bus.Subscribe(4096, false)
	go func() {
		for e := range sub.C {
			h.add(e)
		}
		h.mu.Lock()
		for id, c := range h.subs {
			close(c)
			delete(h.subs, id)
		}
		h.mu.Unlock()
	}()
	return h
}

func (h *history) add(e events.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ring) == h.max {
		copy(h.ring, h.ring[1:])
		h.ring = h.ring[:h.max-1]
	}
	h.ring = append(h.ring, e)
	for _, c := range h.subs {
		select {
		case c <- e:
		default:
		}
	}
}

func (h *history) events(after uint64) ([]events.Event, <-chan events.Event, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.ring), func(i int) bool { return h.ring[i].Seq > after })
	past := append([]events.Event(nil), h.ring[i:]...)
	c := make(chan events.Event, 8192)
	id := h.next
	h.next++
	h.subs[id] = c
	return past, c, func() {
		h.mu.Lock()
		if _, ok := h.subs[id]; ok {
			delete(h.subs, id)
		}
		h.mu.Unlock()
	}
}

// startControl serves the control API and writes its address into the run
// directory. The returned function stops it and removes the address.
func (c *Coordinator) startControl() (stop func(), err error) {
	c.ctlc = make(chan ctlReq)
	c.loopDone = make(chan struct{})
	hist := newHistory(c.bus, 20000)
	if c.opt.Control != nil {
		c.opt.Control(backend{c: c, hist: hist})
		return func() {}, nil
	}
	srv, err := control.Listen("127.0.0.1:0", c.token, backend{c: c, hist: hist})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(c.dir, control.AddrFile)
	if err := WriteFileAtomic(path, []byte(srv.Addr()+"\n"), 0o600); err != nil {
		srv.Close()
		return nil, err
	}
	return func() {
		_ = os.Remove(path)
		_ = srv.Close()
	}, nil
}

// fault is an active fault the coordinator will lift.
type fault struct {
	id    int
	act   control.Action
	nodes []string
	start time.Time
	until time.Time
	net   *netFault // network and store faults (netfault.go)
}

// handleCtl answers one control request; it runs on the event loop. An
// action's answer goes out after the work it decided.
func (c *Coordinator) handleCtl(r ctlReq) {
	if r.status {
		c.now = c.opt.Now()
		st := c.status()
		st.Seq = c.bus.Seq()
		r.reply <- ctlReply{st: st}
		return
	}
	res, _ := c.actAt(c.opt.Now(), *r.act)
	c.carry(replyOp{to: r.reply, rep: ctlReply{res: res}})
}

// nodeStatus is a node's state as the control API and the TUI name it.
func (c *core) nodeStatus(ns *nodeState) string {
	switch {
	case ns.state == nodeExited:
		return "exited"
	case ns.state == nodeLost:
		return "dead"
	case c.paused[ns.name]:
		return "paused"
	case c.partitioned(ns.name):
		return "partitioned"
	case !ns.joined:
		return "joining"
	case c.started && c.now.Sub(ns.lastBeat) > 3*c.cfg.Heartbeat:
		return "suspect"
	}
	return "alive"
}

func (c *core) status() control.Status {
	st := control.Status{Run: c.run, Job: c.spec.Name, FT: c.cfg.FT, Break: c.cfg.Break.String(), Phase: "joining"}
	switch {
	case c.started && c.finished():
		st.Phase = "finished"
	case c.draining:
		st.Phase = "draining"
	case c.started:
		st.Phase = "running"
	case c.plan != nil:
		st.Phase = "deploying"
	}
	hosted := map[string][]string{}
	if c.plan != nil {
		for _, p := range c.plan.Instances {
			in := control.Instance{ID: string(p.ID), Op: p.Op, Node: p.Node, Generation: p.Gen,
				KeyGroups: []int{}, IntervalMs: c.intervalOf(p.ID).Milliseconds()}
			for _, r := range p.Ranges {
				for g := r.Lo; g < r.Hi; g++ {
					in.KeyGroups = append(in.KeyGroups, int(g))
				}
			}
			st.Instances = append(st.Instances, in)
			if c.done[p.ID] == nil && !c.lost[p.ID] {
				hosted[p.Node] = append(hosted[p.Node], string(p.ID))
			}
		}
	}
	for _, name := range c.allNodes() {
		ns := c.nodes[name]
		st.Nodes = append(st.Nodes, control.Node{ID: name, PID: ns.pid, State: c.nodeStatus(ns), Addr: ns.listen, Instances: hosted[name]})
	}
	for _, f := range c.faults {
		st.Faults = append(st.Faults, control.Fault{ID: f.id, Action: f.act, Nodes: f.nodes, Started: f.start, Until: f.until})
	}
	sort.Slice(st.Faults, func(i, j int) bool { return st.Faults[i].ID < st.Faults[j].ID })
	return st
}

// allNodes is every node the coordinator knows, in name order.
func (c *core) allNodes() []string {
	names := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return nodeLess(names[i], names[j]) })
	return names
}

// act carries out one action.
func (c *core) act(a control.Action) (control.Result, error) {
	var dur time.Duration
	if v, ok := a.Args["for"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return control.Result{}, fmt.Errorf("%s: for: %q is not a positive duration", a.Verb, v)
		}
		dur = d
	}
	if a.Verb == "pause" && a.Target == "coord" {
		return c.stallSelf(a, dur)
	}
	switch a.Verb {
	case "kill", "restart", "pause", "resume":
		nodes, err := c.resolve(a.Target)
		if err != nil {
			return control.Result{}, fmt.Errorf("%s: %w", a.Verb, err)
		}
		return c.signal(a, nodes, dur)
	case "partition":
		return c.partition(a, dur)
	case "link":
		return c.link(a, dur)
	case "store":
		return c.storeFault(a, dur)
	case "checkpoint":
		return c.checkpointNow(a)
	case "heal":
		return c.healTarget(a.Target)
	case "interval":
		return c.actInterval(a)
	case "scale":
		return c.scale(a)
	case "drain":
		if !c.started {
			return control.Result{}, errors.New("drain: the job has not started")
		}
		c.drain("requested through the control API")
		return control.Result{Text: "draining"}, nil
	case "":
		return control.Result{}, errors.New("no verb")
	}
	return control.Result{}, fmt.Errorf("%s: not a verb this cluster knows (kill, restart, pause, resume, partition, link, store, checkpoint, interval, scale, heal, drain)", a.Verb)
}

// checkpointNow asks instances to checkpoint at once: `checkpoint` (all),
// `checkpoint count` (an operator's instances), `checkpoint count#1`. With
// --ft global it triggers the next global checkpoint.
func (c *core) checkpointNow(a control.Action) (control.Result, error) {
	switch {
	case c.ft.mode() == wire.FTNone:
		return control.Result{}, errors.New("checkpoint: this run has no checkpoints (--ft none)")
	case !c.started:
		return control.Result{}, errors.New("checkpoint: the job has not started")
	case c.ft.mode() == wire.FTGlobal:
		if a.Target != "" && a.Target != "all" {
			return control.Result{}, errors.New("checkpoint: --ft global checkpoints the whole job; no target")
		}
		c.global.lastTrigger = time.Time{}
		c.globalTick()
		return control.Result{Text: fmt.Sprintf("global checkpoint %d triggered", c.global.pending)}, nil
	}
	var ids []job.InstanceID
	byNode := map[string][]job.InstanceID{}
	for _, p := range c.plan.Instances {
		t := strings.Replace(a.Target, "/", "#", 1)
		if a.Target == "" || a.Target == "all" || t == string(p.ID) || a.Target == p.Op {
			if c.done[p.ID] == nil && !c.lost[p.ID] {
				ids = append(ids, p.ID)
				byNode[p.Node] = append(byNode[p.Node], p.ID)
			}
		}
	}
	if len(ids) == 0 {
		return control.Result{}, fmt.Errorf("checkpoint: target %q names no running instance", a.Target)
	}
	for node, list := range byNode {
		if ns := c.nodes[node]; ns != nil {
			c.send(ns, wire.Control{Kind: wire.CtlCheckpoint, Instances: list})
		}
	}
	c.emit(events.CheckpointRequested, "", "", events.CheckpointRequestedFields{Instances: ids}, "checkpoint requested of %s", human.Plural(len(ids), "instance"))
	return control.Result{Text: fmt.Sprintf("checkpoint requested of %s", human.Plural(len(ids), "instance"))}, nil
}

// resolve names the nodes a target means: a node name, one, minority,
// majority, all, an instance (count#1 or count/1) or an operator (count).
func (c *core) resolve(target string) ([]string, error) {
	if target == "" {
		return nil, errors.New("no target (a node, one, minority, majority, all, an instance or an operator)")
	}
	var out []string
	for _, t := range strings.Split(target, ",") { // n1,n2: a list
		nodes, err := chaos.ResolveTarget(t, c.nodeInfos(), c.rng)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return nodeLess(out[i], out[j]) })
	return out, nil
}

// nodeInfos describes the nodes for target resolution and partition plans.
func (c *core) nodeInfos() []chaos.NodeInfo {
	hosted := map[string][]string{}
	if c.plan != nil {
		for _, p := range c.plan.Instances {
			if c.done[p.ID] == nil && !c.lost[p.ID] {
				hosted[p.Node] = append(hosted[p.Node], strings.Replace(string(p.ID), "#", "/", 1))
			}
		}
	}
	var out []chaos.NodeInfo
	for _, name := range c.allNodes() {
		s := c.nodeStatus(c.nodes[name])
		out = append(out, chaos.NodeInfo{ID: name, Alive: s != "dead" && s != "exited", Instances: hosted[name]})
	}
	return out
}

// signal kills, pauses or resumes node processes.
func (c *core) signal(a control.Action, nodes []string, dur time.Duration) (control.Result, error) {
	sig := map[string]syscall.Signal{"kill": syscall.SIGKILL, "restart": syscall.SIGKILL, "pause": syscall.SIGSTOP, "resume": syscall.SIGCONT}[a.Verb]
	var done []string
	var errs []string
	for _, name := range nodes {
		ns := c.nodes[name]
		if !ns.local {
			errs = append(errs, name+": not a local process")
			continue
		}
		if ns.state == nodeExited || (ns.state == nodeLost && a.Verb != "resume") {
			errs = append(errs, name+": already "+string(ns.state))
			continue
		}
		c.do(signalOp{node: name, sig: sig})
		switch a.Verb {
		case "kill":
			ns.killed = true
		case "restart":
			ns.killed = true
			c.restarts[name] = true // respawned when its loss is seen
		case "pause":
			c.paused[name] = true
		case "resume":
			delete(c.paused, name)
		}
		done = append(done, name)
	}
	if len(done) == 0 {
		return control.Result{}, fmt.Errorf("%s: %s", a.Verb, strings.Join(errs, "; "))
	}
	text := fmt.Sprintf("%s %s", a.Verb, strings.Join(done, ","))
	if len(errs) > 0 {
		text += " (skipped " + strings.Join(errs, "; ") + ")"
	}
	switch a.Verb {
	case "kill", "restart":
		c.endFault(c.startFault(a, done, 0))
	case "resume":
		c.endPausesOf(done)
	case "pause":
		c.startFault(a, done, dur)
	}
	return control.Result{Text: text, Nodes: done}, nil
}

// maxStall bounds a pause of the coordinator.
const maxStall = time.Minute

// stallSelf is `pause coord for=D`: the coordinator's event loop stands
// still for D once the action is answered, as a GC pause, a slow disk or
// SIGSTOP would hold it, while the nodes run on and their messages queue.
// Heartbeats judged after it count only the time it ran
// (checkHeartbeats). A real SIGSTOP of the coordinator process, from
// outside, stops its readers too.
func (c *core) stallSelf(a control.Action, dur time.Duration) (control.Result, error) {
	if dur <= 0 || dur > maxStall {
		return control.Result{}, fmt.Errorf("pause coord: for= must be a duration up to %v", maxStall)
	}
	if c.stall != nil {
		return control.Result{}, errors.New("pause coord: the coordinator is pausing already")
	}
	c.stall = c.startFault(a, []string{"coord"}, 0)
	c.do(stallOp{dur})
	return control.Result{Text: fmt.Sprintf("pause coord for %v", dur)}, nil
}

// stalled is the end of the coordinator's own pause.
func (c *core) stalled() {
	if c.stall != nil {
		c.endFault(c.stall)
		c.stall = nil
	}
}

// startFault records a fault and, with a duration, arms its lifting.
func (c *core) startFault(a control.Action, nodes []string, dur time.Duration) *fault {
	c.faultSeq++
	f := &fault{id: c.faultSeq, act: a, nodes: nodes, start: c.now}
	c.faults[f.id] = f
	if dur > 0 {
		f.until = f.start.Add(dur)
		c.do(timerOp{d: dur, id: f.id})
	}
	c.emit(events.FaultStarted, "", "", events.FaultStartedFields{ID: f.id, Verb: a.Verb, Target: a.Target, Nodes: nodes, Args: a.Args},
		"fault %d: %s on %s", f.id, a, strings.Join(nodes, ","))
	return f
}

// endFault records that a fault is over.
func (c *core) endFault(f *fault) {
	delete(c.faults, f.id)
	c.emit(events.FaultEnded, "", "", events.FaultEndedFields{ID: f.id, Verb: f.act.Verb}, "fault %d over: %s", f.id, f.act.Verb)
}

// partitioned reports whether an active partition cuts node name off.
func (c *core) partitioned(name string) bool {
	for _, f := range c.faults {
		if f.net != nil && slices.Contains(f.net.cut, name) {
			return true
		}
	}
	return false
}

// endPausesOf ends the pause faults whose nodes have all been resumed.
func (c *core) endPausesOf(resumed []string) {
	for _, id := range c.faultIDs() {
		f := c.faults[id]
		if f.act.Verb != "pause" {
			continue
		}
		all := true
		for _, n := range f.nodes {
			all = all && !c.paused[n]
		}
		if all {
			c.endFault(f)
		}
	}
}

func (c *core) faultIDs() []int {
	ids := make([]int, 0, len(c.faults))
	for id := range c.faults {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// lift undoes one fault whose time is up.
func (c *core) lift(id int) {
	f := c.faults[id]
	if f == nil {
		return
	}
	c.undo(f)
	c.endFault(f)
	if f.net != nil {
		c.pushFaults(false, nil)
	}
}

// undo reverses what a fault did.
func (c *core) undo(f *fault) {
	if f.act.Verb == "pause" {
		for _, name := range f.nodes {
			if ns := c.nodes[name]; ns.local && c.paused[name] {
				c.do(signalOp{node: name, sig: syscall.SIGCONT})
				delete(c.paused, name)
			}
		}
	}
}

// heal lifts every fault: paused nodes resume.
func (c *core) heal() control.Result {
	r, _ := c.healTarget("")
	return r
}

// healTarget lifts the faults that touch the nodes target names (every
// fault when target is empty) and resumes those of them paused by hand.
func (c *core) healTarget(target string) (control.Result, error) {
	var only []string
	if target != "" {
		var err error
		if only, err = c.resolve(target); err != nil {
			return control.Result{}, fmt.Errorf("heal: %w", err)
		}
	}
	touches := func(nodes []string) bool {
		return only == nil || slices.ContainsFunc(nodes, func(n string) bool { return slices.Contains(only, n) })
	}
	var ids []int
	for _, id := range c.faultIDs() {
		if f := c.faults[id]; touches(f.nodes) || f.net != nil && touches(f.net.cut) {
			ids = append(ids, id)
			c.lift(id)
		}
	}
	for _, name := range c.allNodes() { // paused by hand, without a fault record
		if ns := c.nodes[name]; c.paused[name] && ns.local && touches([]string{name}) {
			c.do(signalOp{node: name, sig: syscall.SIGCONT})
			delete(c.paused, name)
		}
	}
	what := ""
	if target != "" {
		what = " on " + strings.Join(only, ",")
	}
	c.emit(events.Healed, "", "", events.HealedFields{Faults: len(ids), Target: target}, "healed%s: %s lifted", what, human.Plural(len(ids), "fault"))
	return control.Result{Text: fmt.Sprintf("healed %d faults%s", len(ids), what), Nodes: only}, nil
}
