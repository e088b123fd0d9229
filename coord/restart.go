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
	// resumed: taken over from the record by a resumed coordinator, past
	// its re-split; the resume's restore carries it out (resumeRestart).
	resumed bool
}

// Where a restart is, as the record has it (PROTOCOL.md, "--rescale
// restart"): before the re-split a crash rolls it back, after it the
// resumed coordinator's restore finishes it.
const (
	restartCheckpoint = "checkpoint" // the full checkpoints are awaited
	restartStopping   = "stop"       // the nodes stop their instances
	restartRestoring  = "restore"    // re-split: the plan and the moved slices are the new ones
)

// phase is where r is, for the record.
func (r *restartOp) phase() string {
	switch {
	case r.resumed || r.restored != nil:
		return restartRestoring
	case !r.stopped.IsZero():
		return restartStopping
	default:
		return restartCheckpoint
	}
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
	ckpts := map[job.InstanceID]uint64{}
	for _, id := range owner {
		if _, ok := chains[id]; !ok {
			if ch, cps := c.manifest.restorable(id); len(ch) > 0 {
				chains[id], ckpts[id] = ch[0], cps[0].ID
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
	c.restartSlices(r, owner, chains, ckpts)
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
		rs.Slices, _, _ = c.edsRestore(p.ID) // the moved key groups among them (restartSlices)
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

// restartSlices makes the key groups the restart moves moved slices of
// their new owners (eds.slices), as a live rescale's captures are: each
// loads them from the old owner's latest complete chain at this restore
// and at every later one until two complete checkpoints of its own hold
// them (edsCheckpointed), the old owner's chain (and the checkpoint
// before it, the slice's fallback) stays pinned (edsPinned) meanwhile,
// and the record holds them before any restore is sent. Before, they
// were only in the restart's restore message: a new owner lost before
// its first checkpoint restored empty, and the upstreams' backup of its
// key groups was trimmed past the old owner's positions already.
// The operator's slices from earlier rescales keep only the key groups
// their instance still owns.
func (c *core) restartSlices(r *restartOp, owner []job.InstanceID, chains map[job.InstanceID][]string, ckpts map[job.InstanceID]uint64) {
	c.eds.init()
	added := map[job.InstanceID][]*sliceRef{}
	for _, p := range c.plan.Instances {
		if p.Op != r.op {
			continue
		}
		var list []*sliceRef
		for _, g := range keyGroupsOfRanges(p.Ranges) {
			o := owner[g]
			if o == p.ID || len(chains[o]) == 0 {
				continue // its own, or no checkpoint: the key group starts empty, by replay
			}
			if n := len(list); n > 0 && list[n-1].owner == o && list[n-1].load.Ranges[0].Hi == g {
				list[n-1].load.Ranges[0].Hi = g + 1
				continue
			}
			list = append(list, &sliceRef{load: wire.SliceLoad{Chain: chains[o], Ranges: []job.Range{{Lo: g, Hi: g + 1}}, After: math.MaxUint64},
				owner: o, ckpt: ckpts[o]})
		}
		for _, s := range list {
			s.prev = c.captureFallback(s.owner, s.ckpt, s.load.Ranges[0])
		}
		added[p.ID] = list
	}
	for _, p := range c.plan.Instances {
		if p.Op != r.op {
			continue
		}
		var kept []*sliceRef
		for _, s := range c.eds.slices[p.ID] {
			if s.load.Ranges = intersect(s.load.Ranges, p.Ranges); len(s.load.Ranges) > 0 {
				kept = append(kept, s)
			}
		}
		if kept = append(kept, added[p.ID]...); len(kept) > 0 {
			c.eds.slices[p.ID] = kept
		} else {
			delete(c.eds.slices, p.ID)
		}
	}
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
	if r != nil && r.resumed && r.running.IsZero() && c.resume == nil {
		r.running = c.now // the resume's restore has placed every instance
	}
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

// resumeRestart takes over the restart a crashed coordinator had in
// flight, from its record. Before the re-split nothing of it is in the
// plan or the slices: it is rolled back (the full checkpoints are
// checkpoints like any; the resume stops and restores every instance
// with the old assignment). After it the plan and the moved slices are
// the new ones, and the resume's restore of every instance is the
// restart's: it is done once every instance has caught up.
func (c *core) resumeRestart(rr *RecordRestart) {
	if rr == nil {
		return
	}
	if rr.Phase != restartRestoring {
		c.emit(events.CoordResumed, "", "", events.CoordResumedFields{Phase: "restart rolled back"},
			"resume: rescale %d of %s %d→%d by restart was in its %s phase, before the re-split: it is rolled back, %s stays at %d",
			rr.ID, rr.Op, rr.From, rr.To, rr.Phase, rr.Op, rr.From)
		return
	}
	c.eds.restart = &restartOp{id: rr.ID, op: rr.Op, from: rr.From, to: rr.To, asked: c.now, stopped: c.now, resumed: true}
	c.emit(events.CoordResumed, "", "", events.CoordResumedFields{Phase: "restart resumed"},
		"resume: rescale %d of %s %d→%d by restart was re-split: the resume's restore finishes it", rr.ID, rr.Op, rr.From, rr.To)
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
