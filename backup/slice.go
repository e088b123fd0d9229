package backup

import (
	"cmp"
	"fmt"
	"slices"

	"spate/job"
)

// Extract moves everything held for the key groups in r (records, spilled
// ones read back into memory, and watermarks) out of b into a new buffer
// with b's Config, and returns it. b no longer owns those key groups; its
// next Mark records that they left. The new buffer's first Mark is a full
// one: it starts its own chain. Extracting a range b holds nothing of gives
// an empty buffer.
//
// If a spill file of a moving key group cannot be read back, Extract
// returns an error wrapping ErrSpill and nothing changes.
func (b *Buffer) Extract(r job.Range) (*Buffer, error) {
	if r.Lo > r.Hi {
		return nil, fmt.Errorf("%w: %v", ErrRange, r)
	}
	var logs []*kgLog
	for kg := int(r.Lo); kg < int(r.Hi) && kg < len(b.logs); kg++ {
		if lg := b.logs[kg]; lg != nil {
			logs = append(logs, lg)
		}
	}
	if err := b.unspill(logs); err != nil {
		return nil, err
	}
	nb := newBuffer(b.cfg)
	nb.serial = b.serial
	for _, lg := range logs {
		b.takeLog(lg.kg)
		b.dropped(lg.kg)
		moveLog(lg, b, nb)
	}
	nb.sortSealed()

	b.mu.Lock()
	var keep, moved []job.Range
	for _, s := range b.slices {
		lo, hi := max(s.Lo, r.Lo), min(s.Hi, r.Hi)
		if lo >= hi {
			keep = append(keep, s)
			continue
		}
		moved = append(moved, job.Range{Lo: lo, Hi: hi})
		if s.Lo < lo {
			keep = append(keep, job.Range{Lo: s.Lo, Hi: lo})
		}
		if hi < s.Hi {
			keep = append(keep, job.Range{Lo: hi, Hi: s.Hi})
		}
	}
	b.slices = keep
	b.mu.Unlock()
	nb.slices = moved
	b.stuck.Store(false)
	return nb, nil
}

// Absorb moves everything o holds into b. o must hold nothing for a key
// group b holds (else ErrOverlap naming it, and nothing changes); it is
// left empty but usable, its next Mark recording that its key groups left.
// In b the absorbed key groups are new to the chain: b's next Mark carries
// them whole. o's slice declarations join b's. Spilled records of o are
// read back into memory first (an error wraps ErrSpill, and nothing
// changes); b spills them again once they are marked.
func (b *Buffer) Absorb(o *Buffer) error {
	if o == b {
		return fmt.Errorf("%w: a buffer cannot absorb itself", ErrOverlap)
	}
	var logs []*kgLog
	for kg, lg := range o.logs {
		if lg == nil {
			continue
		}
		if b.log(job.KeyGroup(kg)) != nil {
			return fmt.Errorf("%w: %v is in both buffers", ErrOverlap, job.KeyGroup(kg))
		}
		logs = append(logs, lg)
	}
	if err := o.unspill(logs); err != nil {
		return err
	}
	first := len(b.sealed)
	for _, lg := range logs {
		o.takeLog(lg.kg)
		o.dropped(lg.kg)
		moveLog(lg, o, b)
	}
	slices.SortFunc(b.sealed[first:], func(x, y *chunk) int { return cmp.Compare(x.serial, y.serial) })
	b.serial = max(b.serial, o.serial)

	o.mu.Lock()
	add := o.slices
	o.slices = nil
	o.mu.Unlock()
	if len(add) > 0 {
		b.mu.Lock()
		b.slices = append(b.slices, add...)
		slices.SortFunc(b.slices, func(x, y job.Range) int { return cmp.Compare(x.Lo, y.Lo) })
		b.mu.Unlock()
	}
	o.stuck.Store(false)
	return nil
}

// moveLog hands lg (already out of from's table) to to, as new to to's
// chain.
func moveLog(lg *kgLog, from, to *Buffer) {
	for _, c := range lg.chunks {
		if c.data == nil {
			continue
		}
		from.mem -= int64(cap(c.data))
		to.mem += int64(cap(c.data))
		if c.sealed && to.cfg.SpillDir != "" {
			to.sealed = append(to.sealed, c)
		}
	}
	lg.reset = true
	lg.dirty = true
	lg.markSerial, lg.markOff = 0, 0
	to.putLog(lg)
}

// dropped notes that key group kg left the buffer, for the next Mark.
func (b *Buffer) dropped(kg job.KeyGroup) {
	if b.needFull {
		return // the next Mark replaces everything anyway
	}
	if b.drops == nil {
		b.drops = make(map[job.KeyGroup]struct{})
	}
	b.drops[kg] = struct{}{}
}

func (b *Buffer) sortSealed() {
	slices.SortFunc(b.sealed[b.qhead:], func(x, y *chunk) int { return cmp.Compare(x.serial, y.serial) })
}

// SetSlices declares how the buffer's key groups are cut into slices (one
// per downstream instance, say), for the per-slice breakdown of Stats.
// Ranges must be non-empty and disjoint; nil clears the declaration.
// Extract and Absorb carry declarations along (cut at the extracted range).
func (b *Buffer) SetSlices(rs []job.Range) error {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y job.Range) int { return cmp.Compare(x.Lo, y.Lo) })
	for i, r := range rs {
		if r.Lo >= r.Hi {
			return fmt.Errorf("%w: slice %v is empty", ErrRange, r)
		}
		if i > 0 && rs[i-1].Hi > r.Lo {
			return fmt.Errorf("%w: slices %v and %v overlap", ErrOverlap, rs[i-1], r)
		}
	}
	b.mu.Lock()
	b.slices = rs
	b.mu.Unlock()
	return nil
}

// Slices returns the declared slices (see SetSlices) in key-group order,
// or, if none were declared, the maximal contiguous ranges of the key
// groups the buffer owns.
func (b *Buffer) Slices() []job.Range {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.slices) > 0 {
		return slices.Clone(b.slices)
	}
	var out []job.Range
	for kg, lg := range b.logs {
		if lg == nil {
			continue
		}
		if n := len(out); n > 0 && int(out[n-1].Hi) == kg {
			out[n-1].Hi++
		} else {
			out = append(out, job.Range{Lo: job.KeyGroup(kg), Hi: job.KeyGroup(kg + 1)})
		}
	}
	return out
}
