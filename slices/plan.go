package slices

import (
	"cmp"
	"fmt"
	"math"
	stdslices "slices"
	"strings"

	"spate/internal/human"
	"spate/job"
)

// Move hands the key groups of Range from instance From to instance To of
// the plan's operator.
//
// Carrying it out (see the package comment for the order): From captures
// the state of Range and its input positions per (producer, key group) in
// a per-slice checkpoint and makes it durable; To loads it; every upstream
// re-routes Range to To and re-sends, from its backup, everything after
// those positions; each upstream's backup slices toward the operator are
// split and merged (Recut) to follow To; From drops Range.
type Move struct {
	Range job.Range `json:"range"`
	From  int       `json:"from"`
	To    int       `json:"to"`
}

func (m Move) String() string { return fmt.Sprintf("%v %d→%d", m.Range, m.From, m.To) }

// Plan takes an operator from Old to New by Moves.
type Plan struct {
	Old, New Assignment
	// Moves are the maximal runs of key groups whose owner changes, sorted
	// by Range.Lo: disjoint, each owned wholly by From in Old and by To in
	// New. Applying them to Old (Apply) gives New.
	Moves []Move
	// OldMaxLoad and MaxLoad are the largest instance load of Old and New
	// under the load the plan was made with.
	OldMaxLoad, MaxLoad float64
}

// Moved is the number of key groups the plan moves.
func (p Plan) Moved() int {
	n := 0
	for _, m := range p.Moves {
		n += int(m.Range.Hi - m.Range.Lo)
	}
	return n
}

// String is "count 2→4: 64 key groups in 2 moves ([32,64) 0→2, [96,128) 1→3); max load 64 → 32",
// the loads as human.Count prints them (62.2k, never 6.216e+04).
func (p Plan) String() string {
	ms := make([]string, len(p.Moves))
	for i, m := range p.Moves {
		ms[i] = m.String()
	}
	return fmt.Sprintf("%s %d→%d: %s in %s (%s); max load %s → %s",
		p.New.Op, p.Old.N(), p.New.N(), human.Plural(p.Moved(), "key group"), human.Plural(len(p.Moves), "move"), strings.Join(ms, ", "),
		human.Count(p.OldMaxLoad), human.Count(p.MaxLoad))
}

// Rebalance is Rescale at the same parallelism: it moves key groups only
// if that lowers the largest instance load. The caller decides whether the
// gain (OldMaxLoad against MaxLoad) is worth the moves.
func Rebalance(old Assignment, load []float64) (Plan, error) {
	return Rescale(old, old.N(), load)
}

// Rescale plans the operator of old onto n instances, balanced by load,
// the measured load of every key group (length old.Groups; nil means
// uniform). The new assignment gives every instance one contiguous range.
// Among all such assignments it
//
//  1. minimises the largest instance load (the bottleneck);
//  2. among those, maximises the smallest instance load, so that no
//     instance is left nearly idle (without it, 13→14 instances on uniform
//     load would give the new instance a single key group: that also has
//     the least largest load and moves the fewest key groups);
//  3. among those, minimises the number of key groups moved (instances
//     that keep their index keep as much of their old range as possible);
//  4. among those, minimises the sum of squared instance loads;
//  5. among those, takes the first in a fixed order (see placeSegments).
//
// Steps 3-5 search the assignments that keep the surviving instances in
// the order of their old key groups along [0,G) and put the new ones
// anywhere between them (the order is that of the mean of each one's old
// key groups). Another order can move fewer key groups, mostly when ranges
// are a few key groups wide: on random plans over G <= 9 about 2% of plans
// move a few key groups more than the best labelling (see
// TestPropertyRescaleOptimal). On scale-out (n > old.N()) the new instances get indices old.N()..n-1 in key
// group order, and the existing owners give up slices to them; on
// scale-in the instances with the highest indices (n..old.N()-1) go away
// and their key groups go to their neighbours.
//
// Rescale is deterministic: the same arguments give the same plan. It takes
// O(n·G²) steps for the load bounds and O(G·L·n²/4) for the search, L the
// widest range within the bounds: under a millisecond for G = 128 and
// n = 16 on a measured load, 10 ms on an all-zero one (nothing prunes),
// 0.1 s for 64 → 128; too slow for G in the tens of thousands.
func Rescale(old Assignment, n int, load []float64) (Plan, error) {
	ownerOld, err := old.owners()
	if err != nil {
		return Plan{}, err
	}
	G := old.Groups
	if n < 1 || n > G {
		return Plan{}, fmt.Errorf("%w: rescale %s: parallelism %d out of range 1..%d", ErrInvalid, old.Op, n, G)
	}
	if load == nil {
		load = make([]float64, G)
		for g := range load {
			load[g] = 1
		}
	}
	if len(load) != G {
		return Plan{}, fmt.Errorf("%w: rescale %s: load has %d entries, want %d (one per key group)", ErrInvalid, old.Op, len(load), G)
	}
	for g, l := range load {
		if l < 0 || math.IsNaN(l) || math.IsInf(l, 0) {
			return Plan{}, fmt.Errorf("%w: rescale %s: load[%d] = %v, want a finite value >= 0", ErrInvalid, old.Op, g, l)
		}
	}

	// Sums in another order differ by a few ulps: hence the margins.
	hi := minMaxLoad(load, n) * (1 + 1e-9)
	lo := maxMinLoad(load, n, hi) * (1 - 1e-9)

	// The survivors, in the order of their key groups along [0,G).
	m := old.N()
	s := min(m, n)
	t := n - s
	mean := make([]float64, s)
	count := make([]int, s)
	for g, o := range ownerOld {
		if o < s {
			mean[o] += float64(g)
			count[o]++
		}
	}
	seq := make([]int, s)
	for i := range seq {
		seq[i] = i
		mean[i] /= float64(count[i])
	}
	stdslices.SortStableFunc(seq, func(x, y int) int { return cmp.Compare(mean[x], mean[y]) })
	// kept[j][g]: key groups in [0,g) owned by survivor seq[j].
	kept := make([][]int, s)
	for j, i := range seq {
		kept[j] = make([]int, G+1)
		for g, o := range ownerOld {
			kept[j][g+1] = kept[j][g]
			if o == i {
				kept[j][g+1]++
			}
		}
	}

	owner, ok := placeSegments(load, lo, hi, kept, seq, t, m)
	if !ok {
		return Plan{}, fmt.Errorf("%w: rescale %s: no assignment with loads in [%v, %v] (a bug)", ErrInvalid, old.Op, lo, hi)
	}
	p := Plan{Old: old, New: fromOwners(old.Op, owner, n), Moves: diff(ownerOld, owner)}
	p.OldMaxLoad = stdslices.Max(old.Loads(load))
	p.MaxLoad = stdslices.Max(p.New.Loads(load))
	return p, nil
}

// minMaxLoad returns the smallest possible largest load of n contiguous,
// non-empty segments covering load.
func minMaxLoad(load []float64, n int) float64 {
	G := len(load)
	// f[b]: the best with k segments covering [0,b); prev: with k-1.
	f := make([]float64, G+1)
	prev := make([]float64, G+1)
	sum := 0.0
	for b := 1; b <= G; b++ {
		sum += load[b-1]
		f[b] = sum
	}
	for k := 2; k <= n; k++ {
		f, prev = prev, f
		for b := range f {
			f[b] = math.Inf(1)
		}
		for b := k; b <= G; b++ {
			seg := 0.0
			for a := b - 1; a >= k-1; a-- {
				seg += load[a]
				if seg >= f[b] {
					break // the last segment only grows from here
				}
				f[b] = min(f[b], max(prev[a], seg))
			}
		}
	}
	return f[G]
}

// maxMinLoad returns the largest possible smallest load of n contiguous,
// non-empty segments covering load, each of load at most limit (which
// minMaxLoad makes possible).
func maxMinLoad(load []float64, n int, limit float64) float64 {
	G := len(load)
	// f[b]: the best with k segments covering [0,b), -Inf if impossible.
	f := make([]float64, G+1)
	prev := make([]float64, G+1)
	sum := 0.0
	f[0] = math.Inf(-1)
	for b := 1; b <= G; b++ {
		sum += load[b-1]
		f[b] = math.Inf(-1)
		if sum <= limit {
			f[b] = sum
		}
	}
	for k := 2; k <= n; k++ {
		f, prev = prev, f
		for b := range f {
			f[b] = math.Inf(-1)
		}
		for b := k; b <= G; b++ {
			seg := 0.0
			for a := b - 1; a >= k-1; a-- {
				seg += load[a]
				if seg > limit {
					break
				}
				f[b] = max(f[b], min(prev[a], seg))
			}
		}
	}
	return f[G]
}

// cost orders partial plans: fewer key groups moved, then a smaller sum
// of squared loads.
type cost struct {
	moved int
	sq    float64
}

func (c cost) less(d cost) bool { return c.moved < d.moved || c.moved == d.moved && c.sq < d.sq }

// placeSegments cuts [0,G) into s+t contiguous segments, each of load in
// [lo,hi], gives them to the survivors seq (in that order) and to t new
// instances (numbered m, m+1, ... left to right), minimising cost. Among
// plans of equal cost it takes the first, reading segments left to right,
// preferring a survivor to a new instance, then a shorter segment. It
// returns the new owner of every key group.
func placeSegments(load []float64, lo, hi float64, kept [][]int, seq []int, t, m int) ([]int, bool) {
	G, s := len(load), len(seq)
	idx := func(g, j, k int) int { return (g*(s+1)+j)*(t+1) + k }
	// togo[idx(g,j,k)]: the least cost of covering [g,G) once j survivors
	// and k new instances have their segments left of g; ok: possible at all.
	size := (G + 1) * (s + 1) * (t + 1)
	togo := make([]cost, size)
	ok := make([]bool, size)
	ok[idx(G, s, t)] = true
	// options calls fn with every way to place the next segment from state
	// (g,j,k), in the order of preference, with the cost it adds.
	options := func(g, j, k int, fn func(b, nj, nk int, c cost) bool) {
		left := s - j + t - k
		sum := 0.0
		for b := g + 1; b <= G-(left-1); b++ {
			sum += load[b-1]
			if sum > hi {
				return
			}
			if sum < lo {
				continue
			}
			width := b - g
			if j < s && !fn(b, j+1, k, cost{width - (kept[j][b] - kept[j][g]), sum * sum}) {
				return
			}
			if k < t && !fn(b, j, k+1, cost{width, sum * sum}) {
				return
			}
		}
	}
	for g := G - 1; g >= 0; g-- {
		for j := 0; j <= s; j++ {
			for k := 0; k <= t; k++ {
				if left := s - j + t - k; left == 0 || left > G-g {
					continue
				}
				here := idx(g, j, k)
				options(g, j, k, func(b, nj, nk int, c cost) bool {
					next := idx(b, nj, nk)
					if !ok[next] {
						return true
					}
					c = cost{c.moved + togo[next].moved, c.sq + togo[next].sq}
					if !ok[here] || c.less(togo[here]) {
						togo[here], ok[here] = c, true
					}
					return true
				})
			}
		}
	}
	if !ok[idx(0, 0, 0)] {
		return nil, false
	}
	// Walk forward, taking the first option that achieves the optimum (the
	// same sums as above, so equality is exact).
	owner := make([]int, G)
	next := m
	for g, j, k := 0, 0, 0; g < G; {
		here := idx(g, j, k)
		found := false
		options(g, j, k, func(b, nj, nk int, c cost) bool {
			to := idx(b, nj, nk)
			if !ok[to] || (cost{c.moved + togo[to].moved, c.sq + togo[to].sq}) != togo[here] {
				return true
			}
			who := next
			if nj > j {
				who = seq[j]
			} else {
				next++
			}
			for x := g; x < b; x++ {
				owner[x] = who
			}
			g, j, k, found = b, nj, nk, true
			return false
		})
		if !found {
			return nil, false // unreachable: togo says there is a way
		}
	}
	return owner, true
}

// diff returns the moves from owner a to owner b: maximal runs of key
// groups with the same (from, to), from != to.
func diff(a, b []int) []Move {
	var out []Move
	for g := range a {
		if a[g] == b[g] {
			continue
		}
		if n := len(out); n > 0 && int(out[n-1].Range.Hi) == g && out[n-1].From == a[g] && out[n-1].To == b[g] {
			out[n-1].Range.Hi++
			continue
		}
		out = append(out, Move{Range: job.Range{Lo: job.KeyGroup(g), Hi: job.KeyGroup(g + 1)}, From: a[g], To: b[g]})
	}
	return out
}

// Apply carries out moves on old, giving an assignment of n instances.
// Every move must be of a non-empty range wholly owned by From in old, to
// an instance To in [0,n), To != From, and must not overlap another move
// (else ErrNotOwned or ErrInvalid naming the move); the result must be a
// valid assignment (instances n and above give everything away, every
// instance below n owns something).
func Apply(old Assignment, n int, moves []Move) (Assignment, error) {
	owner, err := old.owners()
	if err != nil {
		return Assignment{}, err
	}
	if n < 1 || n > old.Groups {
		return Assignment{}, fmt.Errorf("%w: apply %s: parallelism %d out of range 1..%d", ErrInvalid, old.Op, n, old.Groups)
	}
	moved := make([]bool, old.Groups)
	for i, mv := range moves {
		r := mv.Range
		switch {
		case r.Lo >= r.Hi || int(r.Hi) > old.Groups:
			return Assignment{}, fmt.Errorf("%w: apply %s: move %d (%v): range empty or past %d", ErrInvalid, old.Op, i, mv, old.Groups)
		case mv.To < 0 || mv.To >= n || mv.To == mv.From:
			return Assignment{}, fmt.Errorf("%w: apply %s: move %d (%v): to out of range 0..%d or equal to from", ErrInvalid, old.Op, i, mv, n-1)
		}
		for g := r.Lo; g < r.Hi; g++ {
			if moved[g] {
				return Assignment{}, fmt.Errorf("%w: apply %s: move %d (%v): %v moved twice", ErrNotOwned, old.Op, i, mv, g)
			}
			if owner[g] != mv.From {
				return Assignment{}, fmt.Errorf("%w: apply %s: move %d (%v): %v is owned by %d", ErrNotOwned, old.Op, i, mv, g, owner[g])
			}
			moved[g] = true
			owner[g] = mv.To
		}
	}
	for g, o := range owner {
		if o >= n {
			return Assignment{}, fmt.Errorf("%w: apply %s: %v stays with instance %d, beyond parallelism %d", ErrInvalid, old.Op, job.KeyGroup(g), o, n)
		}
	}
	a := fromOwners(old.Op, owner, n)
	if err := a.Validate(); err != nil {
		return Assignment{}, err
	}
	return a, nil
}
