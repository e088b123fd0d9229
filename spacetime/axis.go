package spacetime

import (
	"math"
	"time"
)

// Axis maps the time of a Loss's window onto [0, W]: one Part, or two
// with a break between them when the restored checkpoint lies so far
// before the fault that the recovery would be squeezed.
type Axis struct {
	W     float64
	Parts []Part
}

// Part is the stretch of time From..To drawn from X0 to X1.
type Part struct {
	From, To time.Time
	X0, X1   float64
}

// Share bounds of the part before a break: the checkpoints restored get
// at least the first and at most the second of the width, whatever their
// time would give them, so that neither part is squeezed.
const (
	minShare = 0.15
	maxShare = 0.35
)

// Axis is l's time axis over w units, with gap units for a break.
func (l Loss) Axis(w, gap float64) Axis {
	whole := Axis{W: w, Parts: []Part{{From: l.Start, To: l.End, X0: 0, X1: w}}}
	cks := l.restoredAt()
	if len(cks) == 0 || !l.End.After(l.Start) || w <= gap {
		return whole
	}
	lo, hi := cks[0], cks[0]
	for _, t := range cks {
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	// The part around the checkpoints, with the margin Start left before
	// them on both sides; the part of the recovery, from a little before
	// the fault.
	m := max(lo.Sub(l.Start), time.Millisecond)
	first := Part{From: l.Start, To: hi.Add(m)}
	rec := l.End.Sub(l.Killed)
	second := Part{From: l.Killed.Add(-max(rec/8, time.Millisecond)), To: l.End}
	if second.From.Sub(first.To) <= second.To.Sub(second.From) {
		return whole // the gap is no longer than the recovery: no break
	}
	d1, d2 := first.To.Sub(first.From).Seconds(), second.To.Sub(second.From).Seconds()
	share := math.Min(math.Max(d1/(d1+d2), minShare), maxShare)
	avail := w - gap
	first.X0, first.X1 = 0, avail*share
	second.X0, second.X1 = first.X1+gap, w
	return Axis{W: w, Parts: []Part{first, second}}
}

// X is where time t falls on the axis; false if t is in a break or
// outside the window (x is then the nearest edge).
func (a Axis) X(t time.Time) (float64, bool) {
	for i, p := range a.Parts {
		if t.Before(p.From) {
			if i == 0 {
				return p.X0, false
			}
			return (a.Parts[i-1].X1 + p.X0) / 2, false
		}
		if !t.After(p.To) {
			d := p.To.Sub(p.From)
			if d <= 0 {
				return p.X0, true
			}
			return p.X0 + (p.X1-p.X0)*float64(t.Sub(p.From))/float64(d), true
		}
	}
	if n := len(a.Parts); n > 0 {
		return a.Parts[n-1].X1, false
	}
	return 0, false
}

// Broken says whether the axis has a break.
func (a Axis) Broken() bool { return len(a.Parts) > 1 }

// Skipped is the time the break leaves out (zero if none).
func (a Axis) Skipped() time.Duration {
	var d time.Duration
	for i := 1; i < len(a.Parts); i++ {
		d += a.Parts[i].From.Sub(a.Parts[i-1].To)
	}
	return d
}
