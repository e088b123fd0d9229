package coord

import (
	"fmt"

	"spate/job"
	"spate/wire"
)

// The coordinator's invariants (coord/PROTOCOL.md, "Invariants"), checked
// after every step of the event loop with --check-invariants and in the
// simulation. Each holds of the coordinator's own state between two
// steps; checkInvariants reads it and changes nothing.

// restoredFrom is what the current generation of a sink was restored
// from: the checkpoint (nil: none) and that generation.
type restoredFrom struct {
	gen uint64
	cp  *wire.Checkpoint
}

// checkInvariants returns the first invariant the state breaks, or nil.
func (c *core) checkInvariants() error {
	if c.plan == nil {
		return nil
	}
	// I1: every key group of a keyed operator has exactly one owner, in
	// every phase of a rescale (a move's commit takes it from the old
	// owner and gives it to the new one in the same step).
	for _, op := range c.spec.Ops {
		if op.Kind == job.KindSource {
			continue
		}
		owners := make([]int, c.spec.Groups)
		for _, p := range c.plan.Instances {
			if p.Op != op.Name {
				continue
			}
			for _, r := range p.Ranges {
				for g := r.Lo; g < r.Hi; g++ {
					owners[g]++
				}
			}
		}
		for g, n := range owners {
			if n != 1 {
				return fmt.Errorf("I1: key group %d of %s has %d owners", g, op.Name, n)
			}
		}
	}
	// I2: a sink's older files count for no more than the checkpoint its
	// current generation was restored from had committed: the file that
	// checkpoint was taken with up to its length, the later ones for
	// nothing.
	for id, rf := range c.sinkRestores {
		p := c.placeOf[id]
		if p == nil || p.Gen != rf.gen {
			continue // restored again since; checked when that restore reports
		}
		for g := uint64(1); g < rf.gen; g++ {
			f := SinkFileName(p.Op, p.Index, g)
			limit, ok := c.outputs.Limits[f]
			switch {
			case !ok && (rf.cp == nil || g >= rf.cp.Gen):
				return fmt.Errorf("I2: %s of %s (generation %d) is not bounded", f, id, rf.gen)
			case rf.cp == nil && ok && limit != 0, rf.cp != nil && g > rf.cp.Gen && limit != 0:
				return fmt.Errorf("I2: %s counts %d bytes, but %s generation %d was restored from before it", f, limit, id, rf.gen)
			case rf.cp != nil && g == rf.cp.Gen && rf.cp.SinkFile == f && limit != rf.cp.SinkLen:
				return fmt.Errorf("I2: %s counts %d bytes, but checkpoint %d of %s had committed %d", f, limit, rf.cp.ID, id, rf.cp.SinkLen)
			}
		}
	}
	// I3: no restorable chain names a file the manifest has let go of
	// (collected files are deleted once the manifest is durable).
	for id := range c.manifest.Instances {
		chains, _ := c.manifest.restorable(id)
		for _, ch := range chains {
			for _, f := range ch {
				if !c.manifest.files[id][f] {
					return fmt.Errorf("I3: a restorable chain of %s names %s, which was collected", id, f)
				}
			}
		}
	}
	// I4: checkpoint ids are never given out twice: the manifest's
	// checkpoints of an instance have distinct ids, below its next id.
	for id, list := range c.manifest.Instances {
		seen := map[uint64]bool{}
		for _, cp := range list {
			if seen[cp.ID] || cp.ID >= c.manifest.nextID(id) {
				return fmt.Errorf("I4: checkpoint %d of %s is listed twice or past the next id %d", cp.ID, id, c.manifest.nextID(id))
			}
			seen[cp.ID] = true
		}
	}
	// I5: a done instance is done in its current generation on its node
	// (instanceDone fences the others).
	for id, d := range c.done {
		if p := c.placeOf[id]; p != nil && d.Gen != 0 && d.Gen != p.Gen && c.global.rolling == nil {
			return fmt.Errorf("I5: %s is counted done by generation %d, but its generation is %d", id, d.Gen, p.Gen)
		}
	}
	// I6: once the drain has fixed where each partition ends, no grant
	// reaches past it (every generation's reads are inside the end).
	if c.draining {
		for part, g := range c.grants.granted {
			if g > c.drainAt[part] {
				return fmt.Errorf("I6: partition %d is granted to %d, past the drain's end %d", part, g, c.drainAt[part])
			}
		}
	}
	return nil
}
