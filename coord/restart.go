package coord

import (
	"fmt"
	"math"
	"time"

	"spate/control"
	"spate/events"
	"spate/internal/human"
	"spate/job"
	eds "spate/slices"
	"spate/wire"
)

// --rescale restart: the baseline a live rescale is measured against,
// Flink's way. Nothing drains: every instance takes a full checkpoint
// (at once, not aligned: SPATE's positions and upstream backup make the
// set consistent, as for any recovery), then the whole job stops and
// restarts from those checkpoints with the new parallelism: every
// instance gets a new generation and is restored; the rescaled
// operator's key groups are re-split, each new owner loading the key
// groups it did not own from their old owner's latest complete
// checkpoint. Every record waits for the whole restart.

// restartOp is a --rescale restart in flight.
type restartOp struct {
	id       uint64
	op       string
	from, to int
	plan     eds.Plan
	asked    time.Time
	want     map[job.InstanceID]bool // instances whose full checkpoint is awaited
	bytes    int
	stopped  time.Time
	restored map[job.InstanceID]bool // instances not restored yet
	running  time.Time               // every instance restored
	waiting  map[string]bool         // nodes stopping their instances
}

// scaleRestart starts a --rescale restart of op to n instances.
func (c *core) scaleRestart(op string, n int) (control.Result, error) {
	if len(c.recovering) > 0 {
		return control.Result{}, fmt.Errorf("scale: a recovery is in flight; try again once it is done")
	}
	old, ids, err := c.assignment(op)
	if err != nil {
		return control.Result{}, fmt.Errorf("scale: %w", err)
	}
	load := c.loadOf(old, ids)
	plan, err := eds.Rescale(old, n, load)
	if err != nil {
		return control.Result{}, fmt.Errorf("scale: %w", err)
	}
	if len(plan.Moves) == 0 {
		return control.Result{Text: fmt.Sprintf("%s already has %d instances; nothing moves", op, n)}, nil
	}
	c.eds.seq++
	r := &restartOp{id: c.eds.seq, op: op, from: old.N(), to: n, plan: plan, asked: c.now, want: map[job.InstanceID]bool{}}
	for _, p := range c.plan.Instances {
		if c.done[p.ID] == nil && !c.lost[p.ID] {
			r.want[p.ID] = true
		}
	}
	c.eds.restart = r
	c.emit(events.RescalePlanned, "", "", events.RescalePlannedFields{Op: op, From: old.N(), To: n, MoveCount: len(plan.Moves), Load: load,
		KeyGroups: plan.Moved(), Mode: "restart", ID: r.id},
		"rescale %d of %s by restart: every instance checkpoints in full, then the job restarts with %v", r.id, op, plan)
	for _, name := range c.liveNodes() {
		c.send(c.nodes[name], wire.Control{Kind: wire.CtlRescale, Rescale: &wire.Rescale{ID: r.id, Step: wire.RescaleFull, Op: op}})
	}
	return control.Result{Text: fmt.Sprintf("rescale of %s %d→%d by restart started", op, old.N(), n)}, nil
}

// restartCheckpointed counts the full checkpoints a restart waits for.
func (c *core) restartCheckpointed(cp *wire.Checkpoint) {
	r := c.eds.restart
	if r == nil || !r.stopped.IsZero() || !cp.Full || !r.want[cp.Instance] {
		return
	}
	delete(r.want, cp.Instance)
	r.bytes += cp.Bytes
	for id := range r.want {
		if c.done[id] != nil || c.lost[id] {
			delete(r.want, id)
		}
	}
	if len(r.want) == 0 {
		c.restartStop(r)
	}
}

// restartStop stops every instance of the job; the restores follow once
// every node has stopped its own (so that no restored instance talks to
// an old one).
func (c *core) restartStop(r *restartOp) {
	r.stopped = c.now
	r.waiting = map[string]bool{}
	for _, name := range c.liveNodes() {
		r.waiting[name] = true
		c.send(c.nodes[name], wire.Control{Kind: wire.CtlRescale, Rescale: &wire.Rescale{ID: r.id, Step: wire.RescaleStop, Op: r.op}})
	}
}

// restartStopped counts the nodes that stopped their instances.
func (c *core) restartStopped(name string) {
	r := c.eds.restart
	if r == nil || r.waiting == nil || !r.waiting[name] {
		return
	}
	delete(r.waiting, name)
	if len(r.waiting) == 0 {
		r.waiting = nil
		c.restartAll(r)
	}
}

// restartAll stops and restores every instance, the rescaled operator's
// with the new assignment.
func (c *core) restartAll(r *restartOp) {
	c.emit(events.RescaleCaptured, "", "", events.RescaleCapturedFields{Op: r.op, FromN: r.from, ToN: r.to, Bytes: r.bytes, Mode: "restart",
		Ms: r.stopped.Sub(r.asked).Milliseconds(), ID: r.id},
		"rescale %d: every instance has a full checkpoint (%s); the job stops and restarts", r.id, human.Bytes(float64(r.bytes)))
	// The old owner of every key group of the operator, and its chain.
	owner := make([]job.InstanceID, c.spec.Groups)
	for _, p := range c.plan.Instances {
		if p.Op == r.op {
			for _, g := range keyGroupsOfRanges(p.Ranges) {
				owner[g] = p.ID
			}
		}
	}
	chains := map[job.InstanceID][]string{}
	for _, id := range owner {
		if _, ok := chains[id]; !ok {
			if ch, _ := c.manifest.restorable(id); len(ch) > 0 {
				chains[id] = ch[0]
			} else {
				chains[id] = nil
			}
		}
	}
	// The operator's new placements.
	placed := map[string]int{}
	for i := 0; i < max(r.to, r.plan.Old.N()) || c.placeOf[job.MakeInstanceID(r.op, i)] != nil; i++ {
		id := job.MakeInstanceID(r.op, i)
		var rs []job.Range
		if i < r.to {
			rs = r.plan.New.Ranges[i]
		}
		if p := c.placeOf[id]; p != nil {
			p.Ranges = rs
			continue
		}
		node := c.leastLoadedFor(placed)
		placed[node]++
		c.plan.Instances = append(c.plan.Instances, wire.Placement{ID: id, Op: r.op, Index: i, Node: node, Gen: 0, Ranges: rs})
		c.reindex()
	}
	r.restored = map[job.InstanceID]bool{}
	var sends []func()
	for i := range c.plan.Instances {
		p := &c.plan.Instances[i]
		if c.done[p.ID] != nil || c.lost[p.ID] {
			continue
		}
		node := c.nodes[p.Node]
		if node == nil || node.gone() {
			continue // its node's loss restores it
		}
		p.Gen++
		rs := &wire.Restore{Place: *p, Clock: c.pacingClock(p.Node, p.ID), NextID: c.manifest.nextID(p.ID)}
		own, _ := c.manifest.restorable(p.ID)
		if len(own) > 0 {
			rs.Chain = own[0]
		}
		if len(own) > 1 {
			rs.Fallback = own[1]
		}
		rs.Scratch = len(own) == 1 && c.manifest.untrimmed(p.ID)
		if p.Op == r.op {
			for _, g := range keyGroupsOfRanges(p.Ranges) {
				if o := owner[g]; o != p.ID {
					rs.Slices = appendSlice(rs.Slices, chains[o], g)
				}
			}
		}
		if c.recovering[p.ID] == nil {
			c.recovering[p.ID] = &recovery{id: p.ID, from: p.Node, detected: r.stopped, placed: r.stopped,
				lastWM: c.nodes[p.Node].stats[p.ID].Watermark}
		}
		r.restored[p.ID] = true
		target := p.Node
		sends = append(sends, func() {
			rs.Plan = append([]wire.Placement(nil), c.plan.Instances...)
			c.send(c.nodes[target], wire.Control{Kind: wire.CtlRestore, Restore: rs})
		})
	}
	for _, f := range sends {
		f()
	}
}

// appendSlice adds key group g, from chain, to a restore's slices
// (adjacent key groups of one chain share a slice).
func appendSlice(sl []wire.SliceLoad, chain []string, g job.KeyGroup) []wire.SliceLoad {
	if len(chain) == 0 {
		return sl // no checkpoint: the key group starts empty, by replay
	}
	if n := len(sl); n > 0 {
		last := &sl[n-1]
		rr := &last.Ranges[len(last.Ranges)-1]
		if last.Chain[len(last.Chain)-1] == chain[len(chain)-1] && rr.Hi == g {
			rr.Hi = g + 1
			return sl
		}
	}
	return append(sl, wire.SliceLoad{Chain: chain, Ranges: []job.Range{{Lo: g, Hi: g + 1}}, After: math.MaxUint64})
}

// restartRestored counts the restored instances of a restart.
func (c *core) restartRestored(p *wire.Placement) {
	r := c.eds.restart
	if r == nil || r.restored == nil || !r.restored[p.ID] {
		return
	}
	delete(r.restored, p.ID)
	if len(r.restored) > 0 {
		return
	}
	r.running = c.now
	c.emit(events.RescaleRerouted, "", "", events.RescaleReroutedFields{Op: r.op, From: r.from, To: r.to, Mode: "restart", ID: r.id,
		Ms: r.running.Sub(r.stopped).Milliseconds()},
		"rescale %d: every instance restored with %s at %d after %v; upstreams replay", r.id, r.op, r.to, r.running.Sub(r.stopped).Round(time.Millisecond))
	c.restartTick()
}

// restartTick ends a restart once every restored instance has caught up.
func (c *core) restartTick() {
	r := c.eds.restart
	if r == nil || r.running.IsZero() || len(c.recovering) > 0 {
		return
	}
	now := c.now
	c.emit(events.RescaleDone, "", "", events.RescaleDoneFields{Op: r.op, From: r.from, To: r.to, BytesMoved: r.bytes, Bytes: r.bytes,
		PauseMs: r.running.Sub(r.stopped).Milliseconds(), CatchUpMs: now.Sub(r.running).Milliseconds(), TotalMs: now.Sub(r.asked).Milliseconds(), Mode: "restart", ID: r.id},
		"rescale %d of %s %d→%d by restart done: the whole job stood still %v (full checkpoints %v before, caught up %v after)", r.id, r.op, r.from, r.to,
		r.running.Sub(r.stopped).Round(time.Millisecond), r.stopped.Sub(r.asked).Round(time.Millisecond), now.Sub(r.running).Round(time.Millisecond))
	c.eds.restart = nil
}

func keyGroupsOfRanges(rs []job.Range) []job.KeyGroup {
	var out []job.KeyGroup
	for _, r := range rs {
		for g := r.Lo; g < r.Hi; g++ {
			out = append(out, g)
		}
	}
	return out
}
