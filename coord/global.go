package coord

import (
	"fmt"
	"time"

	"spate/events"
	"spate/internal/human"
	"spate/job"
	"spate/wire"
)

// globalState is the coordinator's side of --ft global: Flink-style aligned
// checkpoints of the whole job, and a rollback of the whole job on any
// failure.
type globalState struct {
	next        uint64 // the next checkpoint id
	pending     uint64 // the checkpoint in progress; 0: none
	since       time.Time
	got         map[job.InstanceID]bool
	complete    uint64 // the latest complete global checkpoint
	prev        uint64 // the one before: what a damaged latest one falls back to
	lastTrigger time.Time
	rolling     map[job.InstanceID]bool // instances still restoring in a rollback
}

// globalTick triggers the next global checkpoint when the interval has
// passed, and abandons one that takes too long.
func (c *core) globalTick() {
	g := &c.global
	now := c.now
	if !c.started || c.draining || g.rolling != nil {
		return
	}
	iv := c.globalInterval()
	if g.pending != 0 {
		if now.Sub(g.since) > max(10*iv, 10*time.Second) {
			c.emit(events.Error, "", "", events.ErrorFields{ID: g.pending}, "global checkpoint %d abandoned: not every instance reported in time", g.pending)
			g.pending = 0
		}
		return
	}
	if now.Sub(g.lastTrigger) < iv {
		return
	}
	g.next++
	g.pending, g.since, g.lastTrigger, g.got = g.next, now, now, map[job.InstanceID]bool{}
	for _, name := range c.order {
		if ns := c.nodes[name]; !ns.gone() {
			c.send(ns, wire.Control{Kind: wire.CtlBarrier, Checkpoint: &wire.Checkpoint{ID: g.pending}})
		}
	}
}

// globalCheckpointed counts an instance's part of the pending checkpoint.
func (c *core) globalCheckpointed(cp *wire.Checkpoint) {
	g := &c.global
	if cp.ID != g.pending {
		return
	}
	g.got[cp.Instance] = true
	for _, p := range c.plan.Instances {
		if !g.got[p.ID] && c.done[p.ID] == nil {
			return
		}
	}
	g.prev, g.complete, g.pending = g.complete, cp.ID, 0
	c.manifest.Global = cp.ID
	c.emit(events.Checkpoint, "", "", events.CheckpointFields{ID: cp.ID, Global: true, TookMs: c.now.Sub(g.since).Milliseconds()},
		"global checkpoint %d complete: every instance aligned and snapshotted in %v", cp.ID, c.now.Sub(g.since).Round(time.Millisecond))
}

// globalLost rolls the whole job back on the loss of node ns.
func (c *core) globalLost(ns *nodeState, ids []job.InstanceID, why string) {
	c.emit(events.NodeLost, ns.name, "", events.NodeLostFields{Reason: why, Instances: ids},
		"node %s lost: %s; the whole job rolls back", ns.name, why)
	c.rollback(ns.name)
}

// onGap takes in a link that reconnected short of what its sender had
// sent (a reset connection; PROTOCOL.md, "a reset under global"). Under
// --ft global the whole job rolls back, as for a lost node; under none
// the records are gone and the event says so. A report of an old
// generation, of either end, or one that comes while the job rolls back
// already, is about a link the rollback replaces.
func (c *core) onGap(ns *nodeState, g *wire.Gap) {
	from, to := c.placeOf[g.From], c.placeOf[g.To]
	if from == nil || to == nil || from.Gen != g.FromGen || to.Gen != g.ToGen || !c.started {
		return
	}
	f := events.LinkGapFields{From: string(g.From), Records: g.Records, To: string(g.To)}
	switch {
	case c.ft.mode() == wire.FTGlobal && c.global.rolling == nil:
		c.emit(events.LinkGap, ns.name, string(g.From), f,
			"the link from %s to %s reconnected without %s it had sent; the whole job rolls back", g.From, g.To, human.PluralCount(float64(g.Records), "record"))
		c.rollback("")
	case c.ft.mode() == wire.FTNone:
		c.emit(events.LinkGap, ns.name, string(g.From), f,
			"the link from %s to %s reconnected without %s it had sent; under --ft none they are lost", g.From, g.To, human.PluralCount(float64(g.Records), "record"))
	}
}

// rollback restarts the whole job from the last complete global checkpoint:
// every instance gets a new generation, the lost node's instances move.
func (c *core) rollback(lost string) {
	g := &c.global
	g.pending = 0
	g.rolling = map[job.InstanceID]bool{}
	for i := range c.plan.Instances {
		p := &c.plan.Instances[i]
		p.Gen++
		if p.Node == lost || c.nodes[p.Node].gone() {
			p.Node = c.leastLoaded(lost, c.isSource(p.Op))
		}
		c.placeOf[p.ID] = p
		delete(c.done, p.ID)
		g.rolling[p.ID] = true
	}
	what := "the start (no global checkpoint was complete)"
	if g.complete > 0 {
		what = fmt.Sprintf("global checkpoint %d", g.complete)
	}
	// What the sources must read again: from the checkpoint's positions to
	// where they had got.
	var again uint64
	for _, p := range c.plan.Instances {
		if !c.isSource(p.Op) {
			continue
		}
		cp := c.manifest.byID[p.ID][g.complete]
		for _, ns := range c.nodes {
			if s, ok := ns.stats[p.ID]; ok {
				for part, pos := range s.Positions {
					if from := cp.Positions[part]; pos > from {
						again += pos - from
					}
				}
			}
		}
	}
	c.emit(events.RecoveryPlaced, lost, "", events.RecoveryPlacedFields{Checkpoint: g.complete, Records: again},
		"rolling the whole job back to %s: every instance restarts, the sources read %s again", what, human.PluralCount(float64(again), "record"))
	plan := append([]wire.Placement(nil), c.plan.Instances...)
	for _, p := range plan {
		rs := &wire.Restore{Place: p, Hold: true, Plan: plan, Clock: c.pacingClock(p.Node, p.ID)}
		if cp, ok := c.manifest.byID[p.ID][g.complete]; ok && g.complete > 0 {
			rs.Chain = []string{cp.File}
		}
		if p.Node == "" {
			c.emit(events.Error, "", string(p.ID), nil, "no live node left to host %s", p.ID)
			c.lost[p.ID] = true
			delete(g.rolling, p.ID)
			continue
		}
		c.send(c.nodes[p.Node], wire.Control{Kind: wire.CtlRestore, Restore: rs})
	}
}

// globalRestoreFailed handles an instance that could not load its part of
// the global checkpoint (a damaged file): the whole job rolls back again,
// to the global checkpoint before it, whose files are kept for this.
func (c *core) globalRestoreFailed(ns *nodeState, p *wire.Placement, why string) {
	g := &c.global
	if g.complete == 0 {
		// Nothing was loaded, so nothing can be damaged; an instance that
		// cannot even start from nothing is lost.
		c.emit(events.Error, ns.name, string(p.ID), nil, "restore of %s failed: %s", p.ID, why)
		c.globalRestored(p)
		return
	}
	from := "the start"
	if g.prev > 0 {
		from = fmt.Sprintf("global checkpoint %d", g.prev)
	}
	c.emit(events.CheckpointFallback, ns.name, string(p.ID), events.CheckpointFallbackFields{Error: why, Checkpoint: g.complete, Fallback: g.prev},
		"global checkpoint %d unusable (%s could not load it: %s); the whole job rolls back to %s", g.complete, p.ID, why, from)
	g.complete, g.prev = g.prev, 0
	c.manifest.Global = g.complete
	c.rollback("")
}

// globalRestored counts restored instances; when all are, the job starts
// again and the sinks' older files count up to the checkpoint.
func (c *core) globalRestored(p *wire.Placement) {
	g := &c.global
	delete(g.rolling, p.ID)
	if len(g.rolling) > 0 {
		return
	}
	g.rolling = nil
	for _, q := range c.plan.Instances {
		if c.spec.Ops[c.spec.Op(q.Op)].Kind != job.KindSink {
			continue
		}
		var cp *wire.Checkpoint
		if got, ok := c.manifest.byID[q.ID][g.complete]; ok && g.complete > 0 {
			cp = &got
		}
		c.sinkRestores[q.ID] = restoredFrom{gen: q.Gen, cp: cp}
		c.restoreSink(&q, cp)
	}
	if err := c.writeOutputManifest(); err != nil {
		c.emit(events.Error, "", "", nil, "write output manifest: %v", err)
	}
	c.emit(events.RecoveryRestored, "", "", events.RecoveryRestoredFields{Checkpoint: g.complete}, "every instance restored; the job restarts")
	for _, name := range c.order {
		if ns := c.nodes[name]; !ns.gone() {
			c.send(ns, wire.Control{Kind: wire.CtlStart})
			if c.draining { // every instance is new: the drain must reach them again
				c.send(ns, wire.Control{Kind: wire.CtlDrain, Until: c.drainAt})
			}
		}
	}
	g.lastTrigger = c.now
}
