package slices

import (
	"cmp"
	"fmt"
	stdslices "slices"

	"spate/job"
	"spate/wire"
)

// BackupSlice is one upstream instance's backup toward one downstream
// operator, cut to the contiguous key-group range Range, as far as its
// positions go: Positions holds a sequence number per (producer, key
// group) of Range — the position re-sending starts after (a moved slice's
// captured input positions) or the trim watermark, whichever the caller
// keeps. Split and Merge move positions with their key groups unchanged:
// numbers belong to key groups, not to instances.
//
// Positions are sorted by (KG, P), at most one per (producer, key group),
// all inside Range (NewBackupSlice sorts them; Validate checks). A
// BackupSlice is a value: Split, Merge and Recut never modify their
// arguments and never share their Positions with them.
type BackupSlice struct {
	Upstream  job.InstanceID  `json:"upstream"`
	Range     job.Range       `json:"range"`
	Positions []wire.Position `json:"positions"`
}

// NewBackupSlice returns a valid slice with a sorted copy of positions.
func NewBackupSlice(up job.InstanceID, r job.Range, positions []wire.Position) (BackupSlice, error) {
	b := BackupSlice{Upstream: up, Range: r, Positions: stdslices.Clone(positions)}
	stdslices.SortFunc(b.Positions, comparePos)
	if err := b.Validate(); err != nil {
		return BackupSlice{}, err
	}
	return b, nil
}

func comparePos(x, y wire.Position) int {
	if c := cmp.Compare(x.KG, y.KG); c != 0 {
		return c
	}
	return cmp.Compare(x.P, y.P)
}

// Validate checks the range (non-empty), that every position is inside it,
// and that positions are sorted with no (producer, key group) twice.
func (b BackupSlice) Validate() error {
	if b.Range.Lo >= b.Range.Hi {
		return fmt.Errorf("%w: backup slice %v: range %v is empty", ErrInvalid, b.Upstream, b.Range)
	}
	for i, p := range b.Positions {
		if !b.Range.Contains(p.KG) {
			return fmt.Errorf("%w: backup slice %v%v: position %d (%v %v) is outside the range", ErrInvalid, b.Upstream, b.Range, i, p.P, p.KG)
		}
		if i > 0 && comparePos(b.Positions[i-1], p) >= 0 {
			return fmt.Errorf("%w: backup slice %v%v: position %d (%v %v) is out of order or repeated", ErrInvalid, b.Upstream, b.Range, i, p.P, p.KG)
		}
	}
	return nil
}

// Position returns the sequence number of (p, kg), if the slice has one.
func (b BackupSlice) Position(p job.Producer, kg job.KeyGroup) (uint64, bool) {
	i, ok := stdslices.BinarySearchFunc(b.Positions, wire.Position{P: p, KG: kg}, comparePos)
	if !ok {
		return 0, false
	}
	return b.Positions[i].Seq, true
}

// String is "source#0→[0,32) (12 positions)".
func (b BackupSlice) String() string {
	return fmt.Sprintf("%v→%v (%d positions)", b.Upstream, b.Range, len(b.Positions))
}

// Split cuts b at key group at, Lo < at < Hi, into [Lo,at) and [at,Hi),
// each with the positions of its key groups.
func (b BackupSlice) Split(at job.KeyGroup) (lo, hi BackupSlice, err error) {
	if err := b.Validate(); err != nil {
		return BackupSlice{}, BackupSlice{}, err
	}
	if at <= b.Range.Lo || at >= b.Range.Hi {
		return BackupSlice{}, BackupSlice{}, fmt.Errorf("%w: split %v%v at %v: not strictly inside", ErrMerge, b.Upstream, b.Range, at)
	}
	i, _ := stdslices.BinarySearchFunc(b.Positions, at, func(p wire.Position, kg job.KeyGroup) int { return cmp.Compare(p.KG, kg) })
	lo = BackupSlice{Upstream: b.Upstream, Range: job.Range{Lo: b.Range.Lo, Hi: at}, Positions: stdslices.Clone(b.Positions[:i])}
	hi = BackupSlice{Upstream: b.Upstream, Range: job.Range{Lo: at, Hi: b.Range.Hi}, Positions: stdslices.Clone(b.Positions[i:])}
	return lo, hi, nil
}

// Merge joins two adjacent slices of the same upstream (in either order)
// into one. Slices of different upstreams, with a gap between them, or
// overlapping, give an error wrapping ErrMerge.
func Merge(a, b BackupSlice) (BackupSlice, error) {
	if err := a.Validate(); err != nil {
		return BackupSlice{}, err
	}
	if err := b.Validate(); err != nil {
		return BackupSlice{}, err
	}
	if a.Upstream != b.Upstream {
		return BackupSlice{}, fmt.Errorf("%w: merge %v%v and %v%v: different upstreams", ErrMerge, a.Upstream, a.Range, b.Upstream, b.Range)
	}
	if b.Range.Lo < a.Range.Lo {
		a, b = b, a
	}
	switch {
	case a.Range.Hi > b.Range.Lo:
		return BackupSlice{}, fmt.Errorf("%w: merge %v: %v and %v overlap", ErrMerge, a.Upstream, a.Range, b.Range)
	case a.Range.Hi < b.Range.Lo:
		return BackupSlice{}, fmt.Errorf("%w: merge %v: %v and %v are not adjacent", ErrMerge, a.Upstream, a.Range, b.Range)
	}
	ps := make([]wire.Position, 0, len(a.Positions)+len(b.Positions))
	ps = append(append(ps, a.Positions...), b.Positions...)
	return BackupSlice{Upstream: a.Upstream, Range: job.Range{Lo: a.Range.Lo, Hi: b.Range.Hi}, Positions: ps}, nil
}

// Recut re-cuts one upstream's backup slices to the ranges cuts (say the
// new assignment's Cuts, so that each slice follows one new owner), by
// Split and Merge only: the result has one slice per cut, in the order of
// cuts, and every (producer, key group) keeps its position. The slices
// must be of one upstream and disjoint, the cuts non-empty and disjoint,
// and both must cover the same key groups (else an error naming the first
// key group covered by one side only).
func Recut(bs []BackupSlice, cuts []job.Range) ([]BackupSlice, error) {
	if len(bs) == 0 {
		if len(cuts) > 0 {
			return nil, fmt.Errorf("%w: recut: cut %v covers key groups no slice has", ErrMerge, cuts[0])
		}
		return nil, nil
	}
	sorted := stdslices.Clone(bs)
	stdslices.SortFunc(sorted, func(x, y BackupSlice) int { return cmp.Compare(x.Range.Lo, y.Range.Lo) })
	for i, b := range sorted {
		if err := b.Validate(); err != nil {
			return nil, err
		}
		if b.Upstream != sorted[0].Upstream {
			return nil, fmt.Errorf("%w: recut: slices of %v and %v", ErrMerge, sorted[0].Upstream, b.Upstream)
		}
		if i > 0 && sorted[i-1].Range.Hi > b.Range.Lo {
			return nil, fmt.Errorf("%w: recut %v: slices %v and %v overlap", ErrMerge, b.Upstream, sorted[i-1].Range, b.Range)
		}
	}
	order := make([]int, len(cuts))
	for i := range order {
		order[i] = i
	}
	stdslices.SortFunc(order, func(x, y int) int { return cmp.Compare(cuts[x].Lo, cuts[y].Lo) })
	for n, i := range order {
		if c := cuts[i]; c.Lo >= c.Hi {
			return nil, fmt.Errorf("%w: recut: cut %d %v is empty", ErrInvalid, i, c)
		}
		if n > 0 && cuts[order[n-1]].Hi > cuts[i].Lo {
			return nil, fmt.Errorf("%w: recut: cuts %v and %v overlap", ErrInvalid, cuts[order[n-1]], cuts[i])
		}
	}

	out := make([]BackupSlice, len(cuts))
	rest := sorted // what is left to hand out, in key-group order
	for _, i := range order {
		c := cuts[i]
		var acc *BackupSlice
		for c.Lo < c.Hi {
			if len(rest) == 0 || rest[0].Range.Lo > c.Lo {
				return nil, fmt.Errorf("%w: recut %v: %v is in cut %v but in no slice", ErrMerge, sorted[0].Upstream, c.Lo, cuts[i])
			}
			piece := rest[0]
			if piece.Range.Hi <= c.Lo || piece.Range.Lo < c.Lo {
				return nil, fmt.Errorf("%w: recut %v: %v is in slice %v but in no cut", ErrMerge, piece.Upstream, piece.Range.Lo, piece.Range)
			}
			if piece.Range.Hi > c.Hi { // keep the part past the cut for the next one
				lo, hi, err := piece.Split(c.Hi)
				if err != nil {
					return nil, err
				}
				piece, rest[0] = lo, hi
			} else {
				rest = rest[1:]
			}
			if acc == nil {
				acc = &piece
			} else {
				m, err := Merge(*acc, piece)
				if err != nil {
					return nil, err
				}
				acc = &m
			}
			c.Lo = piece.Range.Hi
		}
		out[i] = *acc
		out[i].Positions = stdslices.Clone(out[i].Positions) // never share with bs
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%w: recut %v: %v is in slice %v but in no cut", ErrMerge, rest[0].Upstream, rest[0].Range.Lo, rest[0].Range)
	}
	return out, nil
}
