package coord

import (
	"spate/job"
	"spate/wire"
)

// faultTolerance is what a run's --ft decides: one implementation per
// mode, chosen once (ftFor), instead of string comparisons in every
// handler. The handlers do what every mode shares (fencing, the manifest,
// the events of a loss) and hand the rest to it.
type faultTolerance interface {
	mode() wire.FTMode
	// lost acts on the loss of node ns, whose live instances were ids;
	// fresh is the node respawned in its place ("" if none).
	lost(c *core, ns *nodeState, ids []job.InstanceID, fresh, why string)
	// restored takes a node's answer to a restore of placement p.
	restored(c *core, ns *nodeState, p *wire.Placement, m *wire.Control)
	// checkpointed takes a checkpoint of ns that the manifest has just
	// recorded as complete.
	checkpointed(c *core, ns *nodeState, cp *wire.Checkpoint)
	// tick is the mode's share of the loop's tick.
	tick(c *core)
	// respawns reports whether a lost local node is replaced by a fresh
	// process (it would host nothing without recovery).
	respawns() bool
}

func ftFor(m wire.FTMode) faultTolerance {
	switch m {
	case wire.FTGlobal:
		return globalFT{}
	case wire.FTNone:
		return noneFT{}
	}
	return spateFT{}
}

// spateFT is --ft spate: per-instance checkpoints, local recovery (ft.go).
type spateFT struct{}

func (spateFT) mode() wire.FTMode { return wire.FTSpate }
func (spateFT) lost(c *core, ns *nodeState, ids []job.InstanceID, fresh, why string) {
	c.spateLost(ns, ids, fresh, why)
}
func (spateFT) restored(c *core, ns *nodeState, p *wire.Placement, m *wire.Control) {
	c.spateRestored(ns, p, m)
}
func (spateFT) checkpointed(c *core, ns *nodeState, cp *wire.Checkpoint) {
	c.spateCheckpointed(ns, cp)
}
func (spateFT) tick(*core)     {}
func (spateFT) respawns() bool { return true }

// globalFT is --ft global: aligned global checkpoints, and any loss rolls
// the whole job back (global.go).
type globalFT struct{}

func (globalFT) mode() wire.FTMode { return wire.FTGlobal }
func (globalFT) lost(c *core, ns *nodeState, ids []job.InstanceID, _, why string) {
	c.globalLost(ns, ids, why)
}
func (globalFT) restored(c *core, ns *nodeState, p *wire.Placement, m *wire.Control) {
	if m.Error != "" {
		c.globalRestoreFailed(ns, p, m.Error)
		return
	}
	c.globalRestored(p)
}

// checkpointed counts the instance's part of the pending global
// checkpoint; the event is one per global checkpoint, once every instance
// has its part.
func (globalFT) checkpointed(c *core, _ *nodeState, cp *wire.Checkpoint) {
	c.globalCheckpointed(cp)
}
func (globalFT) tick(c *core)   { c.globalTick() }
func (globalFT) respawns() bool { return true }

// noneFT is --ft none: no checkpoints; a lost instance is lost.
type noneFT struct{}

func (noneFT) mode() wire.FTMode { return wire.FTNone }
func (noneFT) lost(c *core, ns *nodeState, ids []job.InstanceID, _, why string) {
	c.noneLost(ns, ids, why)
}
func (noneFT) restored(*core, *nodeState, *wire.Placement, *wire.Control) {}
func (noneFT) checkpointed(*core, *nodeState, *wire.Checkpoint)           {}
func (noneFT) tick(*core)                                                 {}
func (noneFT) respawns() bool                                             { return false }
