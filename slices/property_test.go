package slices

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"spate/job"
	"spate/wire"
)

// seeds is how many random sequences each property test runs; fewer with
// -short. A failure names its seed: rerun it with that seed alone to debug.
func seeds() int {
	if testing.Short() {
		return 20
	}
	return 100
}

func newRand(seed int) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0x5eed)) }

// randomLoad draws a per-key-group load of one of several shapes: uniform,
// random, small integers (many ties), Zipf-like, one hot key group, sparse,
// all zero.
func randomLoad(rng *rand.Rand, g int) (string, []float64) {
	l := make([]float64, g)
	switch k := rng.IntN(7); k {
	case 0:
		for i := range l {
			l[i] = 1
		}
		return "uniform", l
	case 1:
		for i := range l {
			l[i] = rng.Float64() * 1000
		}
		return "random", l
	case 2:
		for i := range l {
			l[i] = float64(rng.IntN(4))
		}
		return "small integers", l
	case 3:
		for i := range l {
			l[i] = 1e5 / math.Pow(float64(i+1), 1.2)
		}
		rng.Shuffle(g, func(i, j int) { l[i], l[j] = l[j], l[i] })
		return "zipf", l
	case 4:
		for i := range l {
			l[i] = 1
		}
		l[rng.IntN(g)] = float64(1 + rng.IntN(3*g))
		return "hot", l
	case 5:
		for range 1 + rng.IntN(4) {
			l[rng.IntN(g)] = rng.Float64() * 10
		}
		return "sparse", l
	default:
		return "zero", l
	}
}

// Across any random sequence of Rescale and Rebalance, with random loads
// and parallelism in [1,16], no key group is lost or owned twice, every
// move's range was owned by From before and by To after, the moves applied
// to the old assignment give the new one (checkPlan), and the same
// arguments give the same plan.
func TestPropertyRescaleSequences(t *testing.T) {
	for seed := range seeds() {
		rng := newRand(seed)
		g := job.DefaultGroups
		if seed%4 == 3 {
			g = 1 + rng.IntN(40) // small G: n close to G, single key groups
		}
		maxN := min(16, g)
		a, err := Initial("count", g, 1+rng.IntN(maxN))
		if err != nil {
			t.Fatal(err)
		}
		for step := range 12 {
			shape, load := randomLoad(rng, g)
			n := a.N()
			if rng.IntN(3) > 0 {
				n = 1 + rng.IntN(maxN)
			}
			where := fmt.Sprintf("seed %d step %d: %d→%d on %s load of %d key groups", seed, step, a.N(), n, shape, g)
			p, err := Rescale(a, n, load)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			t.Run("", func(t *testing.T) {
				checkPlan(t, a, n, load, p)
				again, err := Rescale(a, n, append([]float64(nil), load...))
				if err != nil || !again.New.Equal(p.New) || fmt.Sprint(again.Moves) != fmt.Sprint(p.Moves) {
					t.Fatalf("not deterministic: %v then %v (%v)", p, again, err)
				}
			})
			if t.Failed() {
				t.Fatalf("%s: from %v: plan %v", where, a, p)
			}
			a = p.New
		}
	}
}

// On small instances the plan is checked against brute force over every
// contiguous partition and every labelling of its segments: it has the
// least largest load and then the largest smallest load of all, and the
// fewest key groups moved of the labellings that keep the survivors in
// their old order (Rescale's search space). How often another labelling
// would move fewer is logged: that is the price of keeping the order.
func TestPropertyRescaleOptimal(t *testing.T) {
	plans, worse, extra := 0, 0, 0
	for seed := range 3 * seeds() {
		rng := newRand(seed)
		g := 1 + rng.IntN(9)
		a, err := Initial("count", g, 1+rng.IntN(min(4, g)))
		if err != nil {
			t.Fatal(err)
		}
		for step := range 6 {
			shape, load := randomLoad(rng, g)
			n := 1 + rng.IntN(min(4, g))
			p, err := Rescale(a, n, load)
			if err != nil {
				t.Fatal(err)
			}
			wantMax, wantMin, wantMoved := bruteForce(a, n, load, true)
			_, _, anyMoved := bruteForce(a, n, load, false)
			plans++
			if anyMoved < wantMoved {
				worse++
				extra += wantMoved - anyMoved
			}
			loads := p.New.Loads(load)
			gotMin := math.Inf(1)
			for _, l := range loads {
				gotMin = min(gotMin, l)
			}
			if !near(p.MaxLoad, wantMax) || !near(gotMin, wantMin) || p.Moved() != wantMoved {
				t.Fatalf("seed %d step %d: %v → %d on %s load %v: plan %v (loads %v, %d moved), brute force: max %v, min %v, %d moved",
					seed, step, a, n, shape, load, p.New, loads, p.Moved(), wantMax, wantMin, wantMoved)
			}
			a = p.New
		}
	}
	t.Logf("%d plans; %d would move fewer key groups (%d in all) with survivors out of their old order", plans, worse, extra)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// bruteForce returns the lexicographic optimum (least largest load,
// largest smallest load, fewest moved) over all contiguous partitions of
// [0,G) into n segments and all ways to give them to instances 0..n-1
// (ordered: only those that keep the surviving instances in the order of
// the mean of their old key groups).
func bruteForce(old Assignment, n int, load []float64, ordered bool) (bestMax, bestMin float64, bestMoved int) {
	g := old.Groups
	before := old.Owners()
	perm := make([]int, n)
	s := min(n, old.N())
	mean := make([]float64, s)
	for i := range s {
		c := 0
		for x, o := range before {
			if o == i {
				mean[i] += float64(x)
				c++
			}
		}
		mean[i] /= float64(c)
	}
	inOrder := func() bool {
		last := -1
		for _, i := range perm {
			if i >= s {
				continue
			}
			if last >= 0 && (mean[i] < mean[last] || mean[i] == mean[last] && i < last) {
				return false
			}
			last = i
		}
		return true
	}
	bestMax, bestMin, bestMoved = math.Inf(1), math.Inf(-1), math.MaxInt
	cuts := make([]int, n+1)
	cuts[n] = g
	var visit func(k int)
	var label func(k int, used int)
	sums := make([]float64, n)
	label = func(k int, used int) {
		if k == n {
			if ordered && !inOrder() {
				return
			}
			moved := 0
			for s := range n {
				for x := cuts[s]; x < cuts[s+1]; x++ {
					if before[x] != perm[s] {
						moved++
					}
				}
			}
			mx, mn := math.Inf(-1), math.Inf(1)
			for _, v := range sums {
				mx, mn = max(mx, v), min(mn, v)
			}
			switch {
			case mx < bestMax && !near(mx, bestMax):
			case !near(mx, bestMax):
				return
			case mn > bestMin && !near(mn, bestMin):
			case !near(mn, bestMin):
				return
			case moved < bestMoved:
			default:
				return
			}
			bestMax, bestMin, bestMoved = mx, mn, moved
			return
		}
		for i := range n {
			if used&(1<<i) == 0 {
				perm[k] = i
				label(k+1, used|1<<i)
			}
		}
	}
	visit = func(k int) { // choose cuts[k] for k in 1..n-1
		if k == n {
			for s := range n {
				sums[s] = 0
				for x := cuts[s]; x < cuts[s+1]; x++ {
					sums[s] += load[x]
				}
			}
			label(0, 0)
			return
		}
		for c := cuts[k-1] + 1; c <= g-(n-k); c++ {
			cuts[k] = c
			visit(k + 1)
		}
	}
	visit(1)
	return bestMax, bestMin, bestMoved
}

// randomBackup returns slices of one upstream covering [0,g), cut at
// random, with random positions, and the positions as a map.
func randomBackup(rng *rand.Rand, g int) ([]BackupSlice, map[wire.Position]bool) {
	all := map[wire.Position]bool{}
	var out []BackupSlice
	for lo := 0; lo < g; {
		hi := min(g, lo+1+rng.IntN(20))
		var ps []wire.Position
		for kg := lo; kg < hi; kg++ {
			for p := range 4 {
				if rng.IntN(2) == 0 {
					pos := wire.Position{P: job.MakeProducer(1, p), KG: job.KeyGroup(kg), Seq: rng.Uint64N(1 << 40)}
					ps = append(ps, pos)
					all[pos] = true
				}
			}
		}
		b, err := NewBackupSlice("source#0", r(lo, hi), ps)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
		lo = hi
	}
	return out, all
}

// checkBackup checks that bs partition [0,g) in order and hold exactly the
// positions want.
func checkBackup(t *testing.T, bs []BackupSlice, g int, want map[wire.Position]bool) {
	t.Helper()
	at := 0
	got := 0
	for _, b := range bs {
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		if int(b.Range.Lo) != at {
			t.Fatalf("slice %v starts at %d, want %d", b, b.Range.Lo, at)
		}
		at = int(b.Range.Hi)
		for _, p := range b.Positions {
			if !want[p] {
				t.Fatalf("slice %v: position %+v is new or changed", b, p)
			}
			got++
		}
	}
	if at != g {
		t.Fatalf("slices end at %d, want %d", at, g)
	}
	if got != len(want) {
		t.Fatalf("%d positions, want %d", got, len(want))
	}
}

// Random sequences of splits, merges and recuts of backup slices keep every
// (producer, key group)'s position, and the slices keep covering [0,G)
// once each.
func TestPropertyBackupSplitMerge(t *testing.T) {
	for seed := range seeds() {
		rng := newRand(seed)
		g := 1 + rng.IntN(job.DefaultGroups)
		bs, want := randomBackup(rng, g)
		for step := range 60 {
			switch op := rng.IntN(5); {
			case op <= 1: // split
				i := rng.IntN(len(bs))
				b := bs[i]
				if b.Range.Hi-b.Range.Lo < 2 {
					continue
				}
				at := b.Range.Lo + 1 + job.KeyGroup(rng.IntN(int(b.Range.Hi-b.Range.Lo-1)))
				lo, hi, err := b.Split(at)
				if err != nil {
					t.Fatalf("seed %d step %d: split %v at %d: %v", seed, step, b, at, err)
				}
				bs = append(bs[:i], append([]BackupSlice{lo, hi}, bs[i+1:]...)...)
			case op <= 3: // merge neighbours, in either order
				if len(bs) < 2 {
					continue
				}
				i := rng.IntN(len(bs) - 1)
				x, y := bs[i], bs[i+1]
				if rng.IntN(2) == 0 {
					x, y = y, x
				}
				m, err := Merge(x, y)
				if err != nil {
					t.Fatalf("seed %d step %d: merge %v and %v: %v", seed, step, x, y, err)
				}
				bs = append(bs[:i], append([]BackupSlice{m}, bs[i+2:]...)...)
			default: // recut to a random partition
				n := 1 + rng.IntN(min(16, g))
				cuts := job.SplitRanges(g, n)
				var err error
				if bs, err = Recut(bs, cuts); err != nil {
					t.Fatalf("seed %d step %d: recut to %v: %v", seed, step, cuts, err)
				}
			}
			t.Run("", func(t *testing.T) { checkBackup(t, bs, g, want) })
			if t.Failed() {
				t.Fatalf("seed %d step %d: slices %v", seed, step, bs)
			}
		}
	}
}

// The two halves together: an upstream's backup slices cut by the old
// assignment, recut to the new one after every plan, keep every position,
// and each slice lies within one new owner's range.
func TestPropertyBackupFollowsPlans(t *testing.T) {
	for seed := range seeds() {
		rng := newRand(seed)
		g := job.DefaultGroups
		a, err := Initial("count", g, 1+rng.IntN(16))
		if err != nil {
			t.Fatal(err)
		}
		whole, want := randomBackup(rng, g)
		bs, err := Recut(whole, a.Cuts())
		if err != nil {
			t.Fatal(err)
		}
		for step := range 8 {
			_, load := randomLoad(rng, g)
			p, err := Rescale(a, 1+rng.IntN(16), load)
			if err != nil {
				t.Fatal(err)
			}
			if bs, err = Recut(bs, p.New.Cuts()); err != nil {
				t.Fatalf("seed %d step %d: recut to %v: %v", seed, step, p.New, err)
			}
			t.Run("", func(t *testing.T) { checkBackup(t, bs, g, want) })
			for _, b := range bs {
				o := p.New.Owner(b.Range.Lo)
				if p.New.Owner(b.Range.Hi-1) != o || len(p.New.Ranges[o]) != 1 || p.New.Ranges[o][0] != b.Range {
					t.Fatalf("seed %d step %d: slice %v is not one owner's range in %v", seed, step, b, p.New)
				}
			}
			if t.Failed() {
				t.FailNow()
			}
			a = p.New
		}
	}
}
