package coord

import (
	"fmt"
	"slices"

	"spate/events"
	"spate/internal/human"
	"spate/job"
	eds "spate/slices"
	"spate/wire"
)

// Parallel recovery (--recover parallel; PROTOCOL.md, "Parallel
// recovery"). A lost keyed instance is restored as usual, and at once a
// live rescale of its operator moves parts of its key groups to new
// instances on other survivors, each staged from the lost instance's
// restorable checkpoint (a pre-copy whose base is that checkpoint) and
// replayed to by the upstreams: the catch-up runs on several nodes at
// once instead of one. The restored instance drops the parts as a
// pre-copy's old owner does, once restored. When that rescale is done and
// nothing is being recovered, a second one merges the parts back into
// the operator's parallelism of before (unless the auto-scaler runs: it
// decides then).

// maxSplit is the most parts a lost instance's key groups are split into.
const maxSplit = 4

// mergeDue is the merge back a parallel recovery owes its operator.
type mergeDue struct {
	op string
	to int
}

// splitRecovery starts the parallel recovery of the lost instances ids
// (placed anew already), if --recover parallel and nothing stands in its
// way; else their recovery stays single.
func (c *core) splitRecovery(ids []job.InstanceID) {
	if c.cfg.Recover != "parallel" || c.ft.mode() != wire.FTSpate || c.cfg.Rescale == "restart" ||
		c.eds.cur != nil || c.eds.restart != nil || c.draining || c.drainPending != "" || !c.started {
		return
	}
	c.eds.init()
	// One operator per rescale: the one whose lost instances took the
	// most input (heaviest).
	lost := map[string][]job.InstanceID{}
	var ops []string
	for _, id := range ids {
		p := c.placeOf[id]
		oi := c.spec.Op(p.Op)
		if oi < 0 || (c.spec.Ops[oi].Kind != job.KindCount && c.spec.Ops[oi].Kind != job.KindRollup) || c.lost[id] || !c.splittable(id) {
			continue
		}
		if lost[p.Op] == nil {
			ops = append(ops, p.Op)
		}
		lost[p.Op] = append(lost[p.Op], id)
	}
	cands := make([]splitCandidate, len(ops))
	for i, op := range ops {
		cands[i] = splitCandidate{op: op, groups: groupsOf(c, lost[op])}
		for _, id := range lost[op] {
			cands[i].rate += c.eds.rates[id]
		}
	}
	best := heaviest(cands)
	live := c.liveNodes()
	k := min(len(live), maxSplit)
	if best == "" || k < 2 {
		return
	}
	old, oldIDs, err := c.assignment(best)
	if err != nil {
		return
	}
	next := old.N()
	plan := eds.Plan{Old: old}
	var parts []string
	for _, id := range lost[best] {
		p := c.placeOf[id]
		split := splitRanges(p.Ranges, k)
		parts = append(parts, fmt.Sprintf("%s keeps %v", id, split[0]))
		for _, part := range split[1:] {
			to := job.MakeInstanceID(best, next)
			for _, r := range part {
				plan.Moves = append(plan.Moves, eds.Move{Range: r, From: p.Index, To: next})
			}
			parts = append(parts, fmt.Sprintf("%s gets %v", to, part))
			next++
		}
	}
	if len(plan.Moves) == 0 {
		return
	}
	slices.SortFunc(plan.Moves, func(a, b eds.Move) int { return int(a.Range.Lo) - int(b.Range.Lo) })
	if plan.New, err = eds.Apply(old, next, plan.Moves); err != nil {
		c.emit(events.Error, "", "", nil, "parallel recovery of %v: %v; recovering it whole", lost[best], err)
		return
	}
	load := c.loadOf(old, oldIDs)
	if load != nil {
		plan.OldMaxLoad, plan.MaxLoad = slices.Max(old.Loads(load)), slices.Max(plan.New.Loads(load))
	}
	c.emit(events.RecoverySplit, "", "", events.RecoverySplitFields{Op: best, Instances: lost[best], Parts: parts, KeyGroups: plan.Moved()},
		"parallel recovery of %v: %s move to %s, restored at once (%v)", lost[best], human.Plural(plan.Moved(), "key group"), human.Plural(next-old.N(), "new instance"), parts)
	why := fmt.Sprintf("parallel recovery of %v", lost[best])
	r := c.beginRescale(best, old.N(), next, plan, load, why, lost[best])
	if r != nil && !c.cfg.Autoscale {
		c.eds.merge = &mergeDue{op: best, to: old.N()}
	}
}

// splitCandidate is an operator that lost instances a parallel recovery
// could split: their input rate (records/s, as last sampled) and their
// key groups.
type splitCandidate struct {
	op     string
	rate   float64
	groups int
}

// heaviest is the candidate whose lost instances took the most input,
// where the catch-up is longest and splitting it gains the most (count
// over rollup, whose input is count's few results); by key groups if no
// rate was sampled yet. The first of equals wins; "" if none.
func heaviest(cands []splitCandidate) string {
	if len(cands) == 0 {
		return ""
	}
	best := cands[0]
	for _, x := range cands[1:] {
		if x.rate > best.rate || x.rate == best.rate && x.groups > best.groups {
			best = x
		}
	}
	return best.op
}

// splittable reports whether lost instance id can be split: its latest
// complete checkpoint is restorable (the base every part is staged from)
// and holds every key group id owns, which it does not while id restores
// slices moved to it since (edsRestore): a part staged from that base
// started the moved key groups empty, their output counters at zero, and
// downstream dropped what it then sent as repeats (seed 4316).
func (c *core) splittable(id job.InstanceID) bool {
	list := c.manifest.Instances[id]
	_, cps := c.manifest.restorable(id)
	return len(cps) > 0 && len(list) > 0 && list[len(list)-1].ID == cps[0].ID && len(c.eds.slices[id]) == 0
}

// groupsOf counts the key groups of the instances ids.
func groupsOf(c *core, ids []job.InstanceID) int {
	n := 0
	for _, id := range ids {
		for _, r := range c.placeOf[id].Ranges {
			n += int(r.Hi - r.Lo)
		}
	}
	return n
}

// splitRanges cuts the key groups of rs (sorted) into at most k parts of
// near-equal size, in order, each a list of ranges: part i holds the key
// groups numbered i*total/k to (i+1)*total/k - 1 in rs's order.
func splitRanges(rs []job.Range, k int) [][]job.Range {
	total := 0
	for _, r := range rs {
		total += int(r.Hi - r.Lo)
	}
	k = max(1, min(k, total))
	parts := make([][]job.Range, k)
	seen, i := 0, 0
	for _, r := range rs {
		for lo := r.Lo; lo < r.Hi; {
			for (i+1)*total/k <= seen {
				i++
			}
			hi := min(r.Hi, lo+job.KeyGroup((i+1)*total/k-seen))
			parts[i] = append(parts[i], job.Range{Lo: lo, Hi: hi})
			seen += int(hi - lo)
			lo = hi
		}
	}
	return parts
}

// mergeTick starts the merge a parallel recovery owes, once no rescale
// and no recovery is in flight and the job is not draining.
func (c *core) mergeTick() {
	m := c.eds.merge
	if m == nil || c.eds.cur != nil || c.eds.restart != nil || len(c.recovering) > 0 || c.draining || c.drainPending != "" {
		return
	}
	c.eds.merge = nil
	old, _, err := c.assignment(m.op)
	if err != nil || old.N() <= m.to {
		return // scaled in meanwhile
	}
	if _, err := c.startRescale(m.op, m.to, "merge after the parallel recovery"); err != nil {
		c.emit(events.Error, "", "", nil, "merge after the parallel recovery of %s: %v", m.op, err)
	}
}
