package slices

import (
	"errors"
	"math"
	"strings"
	"testing"

	"spate/job"
)

func uniform(g int) []float64 {
	l := make([]float64, g)
	for i := range l {
		l[i] = 1
	}
	return l
}

func mustInitial(t *testing.T, g, n int) Assignment {
	t.Helper()
	a, err := Initial("count", g, n)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func sizes(a Assignment) []int {
	out := make([]int, a.N())
	for i, rs := range a.Ranges {
		for _, r := range rs {
			out[i] += int(r.Hi - r.Lo)
		}
	}
	return out
}

// within reports whether instance i's new key groups are all ones it had.
func within(old, new Assignment, i int) bool {
	for _, r := range new.Ranges[i] {
		for g := r.Lo; g < r.Hi; g++ {
			if old.Owner(g) != i {
				return false
			}
		}
	}
	return true
}

func TestRescaleBalancing(t *testing.T) {
	hot := func(g int, at int, v float64) []float64 {
		l := uniform(g)
		l[at] = v
		return l
	}
	ramp := make([]float64, 128)
	for g := range ramp {
		ramp[g] = float64(g + 1)
	}
	cases := []struct {
		name  string
		old   Assignment
		n     int
		load  []float64
		check func(t *testing.T, p Plan)
	}{
		{name: "2→4 on uniform load moves exactly half", old: mustInitial(t, 128, 2), n: 4, load: uniform(128), check: func(t *testing.T, p Plan) {
			if p.Moved() != 64 || len(p.Moves) != 2 {
				t.Errorf("moved %d key groups in %d moves, want 64 in 2", p.Moved(), len(p.Moves))
			}
			for i, s := range sizes(p.New) {
				if s != 32 {
					t.Errorf("instance %d owns %d key groups, want 32", i, s)
				}
			}
			for i := range 2 {
				if !within(p.Old, p.New, i) {
					t.Errorf("instance %d took key groups it did not own: %v", i, p.New)
				}
			}
			for _, m := range p.Moves {
				if m.From >= 2 || m.To < 2 {
					t.Errorf("move %v is not from an old owner to a new one", m)
				}
			}
			if got, want := p.New.String(), "count 0:[0,32) 1:[64,96) 2:[32,64) 3:[96,128)"; got != want {
				t.Errorf("new = %s, want %s", got, want)
			}
		}},
		{name: "nil load is uniform", old: mustInitial(t, 128, 2), n: 4, load: nil, check: func(t *testing.T, p Plan) {
			if p.Moved() != 64 {
				t.Errorf("moved %d", p.Moved())
			}
		}},
		{name: "a hot key group ends alone", old: mustInitial(t, 128, 4), n: 4, load: hot(128, 40, 1000), check: func(t *testing.T, p Plan) {
			o := p.New.Owner(40)
			if got := p.New.Ranges[o]; len(got) != 1 || got[0] != r(40, 41) {
				t.Errorf("the hot key group's owner %d owns %v, want only [40,41)", o, got)
			}
			if p.MaxLoad != 1000 {
				t.Errorf("max load %v, want 1000", p.MaxLoad)
			}
		}},
		{name: "a warm key group ends alone-ish", old: mustInitial(t, 128, 4), n: 4, load: hot(128, 40, 40), check: func(t *testing.T, p Plan) {
			o := p.New.Owner(40)
			if n := sizes(p.New)[o]; n > 10 {
				t.Errorf("the warm key group's owner holds %d key groups: %v", n, p.New)
			}
			if want := minMaxLoad(hot(128, 40, 40), 4); p.MaxLoad != want {
				t.Errorf("max load %v, want the optimum %v", p.MaxLoad, want)
			}
		}},
		{name: "uniform load on a balanced assignment moves nothing", old: mustInitial(t, 128, 5), n: 5, load: uniform(128), check: func(t *testing.T, p Plan) {
			if len(p.Moves) != 0 || !p.New.Equal(p.Old) {
				t.Errorf("moves %v, new %v", p.Moves, p.New)
			}
		}},
		{name: "rebalance under a ramp lowers the max load to the optimum", old: mustInitial(t, 128, 4), n: 4, load: ramp, check: func(t *testing.T, p Plan) {
			if want := minMaxLoad(ramp, 4); p.MaxLoad != want || p.MaxLoad >= p.OldMaxLoad {
				t.Errorf("max load %v → %v, want → %v", p.OldMaxLoad, p.MaxLoad, want)
			}
			for i := 1; i < 4; i++ { // heavier key groups on the right: narrower ranges
				if sizes(p.New)[i] > sizes(p.New)[i-1] {
					t.Errorf("sizes %v not decreasing", sizes(p.New))
				}
			}
		}},
		{name: "4→3 scale-in: the removed instance's slice goes to its neighbour", old: mustInitial(t, 128, 4), n: 3, load: uniform(128), check: func(t *testing.T, p Plan) {
			for _, m := range p.Moves {
				if m.From == 3 && m.To != 2 {
					t.Errorf("move %v: instance 3's key groups go to %d, not its neighbour 2", m, m.To)
				}
			}
			if p.MaxLoad != 43 {
				t.Errorf("max load %v, want 43", p.MaxLoad)
			}
		}},
		{name: "scale-in keeps the old order along the key groups", old: mustAssign(t, 128, r(64, 96), r(0, 32), r(96, 128), r(32, 64)), n: 3, load: uniform(128), check: func(t *testing.T, p Plan) {
			// Instance 3 ([32,64)) sits between 1 and 0: its neighbours take it.
			for _, m := range p.Moves {
				if m.From == 3 && m.To != 1 && m.To != 0 {
					t.Errorf("move %v: not to a neighbour", m)
				}
			}
			if p.Moved() > 64 {
				t.Errorf("moved %d key groups", p.Moved())
			}
		}},
		{name: "1→16 on uniform load: equal ranges", old: mustInitial(t, 128, 1), n: 16, load: uniform(128), check: func(t *testing.T, p Plan) {
			for i, s := range sizes(p.New) {
				if s != 8 {
					t.Errorf("instance %d owns %d", i, s)
				}
			}
			if p.Moved() != 120 {
				t.Errorf("moved %d, want 120", p.Moved())
			}
		}},
		{name: "16→1 gathers everything", old: mustInitial(t, 128, 16), n: 1, load: uniform(128), check: func(t *testing.T, p Plan) {
			if p.Moved() != 120 || p.New.String() != "count 0:[0,128)" {
				t.Errorf("moved %d, new %v", p.Moved(), p.New)
			}
		}},
		{name: "all-zero load keeps ranges where they are", old: mustInitial(t, 128, 4), n: 4, load: make([]float64, 128), check: func(t *testing.T, p Plan) {
			if len(p.Moves) != 0 {
				t.Errorf("moves %v", p.Moves)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Rescale(c.old, c.n, c.load)
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, c.old, c.n, c.load, p)
			c.check(t, p)
		})
	}
}

func mustAssign(t *testing.T, g int, rs ...job.Range) Assignment {
	t.Helper()
	ranges := make([][]job.Range, len(rs))
	for i, r := range rs {
		ranges[i] = []job.Range{r}
	}
	a, err := NewAssignment("count", g, ranges)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// On uniform load every instance gets at most ceil(G/n) key groups (the
// optimum), and at least floor(G/n).
func TestRescaleUniformNearEqual(t *testing.T) {
	for m := 1; m <= 16; m++ {
		for n := 1; n <= 16; n++ {
			p, err := Rescale(mustInitial(t, 128, m), n, uniform(128))
			if err != nil {
				t.Fatal(err)
			}
			s := sizes(p.New)
			lo, hi := s[0], s[0]
			for _, x := range s {
				lo, hi = min(lo, x), max(hi, x)
			}
			if want := (128 + n - 1) / n; hi != want {
				t.Errorf("%d→%d: largest range %d, want %d", m, n, hi, want)
			}
			if hi-lo > 1 {
				t.Errorf("%d→%d: sizes %v spread more than 1", m, n, s)
			}
		}
	}
}

func TestRescaleErrors(t *testing.T) {
	good := mustInitial(t, 8, 2)
	nan := uniform(8)
	nan[3] = math.NaN()
	neg := uniform(8)
	neg[5] = -1
	cases := []struct {
		name string
		old  Assignment
		n    int
		load []float64
		err  string
	}{
		{name: "n zero", old: good, n: 0, load: uniform(8), err: "parallelism 0 out of range 1..8"},
		{name: "n above G", old: good, n: 9, load: uniform(8), err: "parallelism 9 out of range 1..8"},
		{name: "load too short", old: good, n: 2, load: uniform(7), err: "load has 7 entries, want 8"},
		{name: "load NaN", old: good, n: 2, load: nan, err: "load[3] = NaN"},
		{name: "load negative", old: good, n: 2, load: neg, err: "load[5] = -1"},
		{name: "old invalid", old: Assignment{Op: "count", Groups: 8, Ranges: [][]job.Range{{r(0, 7)}}}, n: 2, load: uniform(8), err: "kg7 owned by no instance"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rescale(c.old, c.n, c.load)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want ErrInvalid with %q", err, c.err)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	old := mustInitial(t, 8, 2) // 0:[0,4) 1:[4,8)
	cases := []struct {
		name  string
		n     int
		moves []Move
		is    error
		err   string
	}{
		{name: "not owned by from", n: 2, moves: []Move{{Range: r(3, 5), From: 0, To: 1}}, is: ErrNotOwned, err: "kg4 is owned by 1"},
		{name: "moved twice", n: 3, moves: []Move{{Range: r(0, 2), From: 0, To: 2}, {Range: r(1, 3), From: 0, To: 1}}, is: ErrNotOwned, err: "kg1 moved twice"},
		{name: "to out of range", n: 2, moves: []Move{{Range: r(0, 2), From: 0, To: 2}}, is: ErrInvalid, err: "to out of range"},
		{name: "to equals from", n: 2, moves: []Move{{Range: r(0, 2), From: 0, To: 0}}, is: ErrInvalid, err: "equal to from"},
		{name: "empty range", n: 2, moves: []Move{{Range: r(2, 2), From: 0, To: 1}}, is: ErrInvalid, err: "range empty"},
		{name: "left with a removed instance", n: 1, moves: []Move{{Range: r(4, 6), From: 1, To: 0}}, is: ErrInvalid, err: "kg6 stays with instance 1"},
		{name: "new instance gets nothing", n: 3, moves: nil, is: ErrInvalid, err: "instance 2 owns no key group"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Apply(old, c.n, c.moves)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want %v with %q", err, c.is, c.err)
			}
		})
	}
}

func TestPlanString(t *testing.T) {
	p, err := Rescale(mustInitial(t, 128, 2), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "count 2→4: 64 key groups in 2 moves ([32,64) 0→2, [96,128) 1→3); max load 64 → 32"
	if got := p.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
