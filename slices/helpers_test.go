package slices

import "testing"

// checkPlan checks every invariant of a plan from old to n instances under
// load: the new assignment is valid, one contiguous range per instance;
// every move is owned by From before and by To after; the moves are
// exactly the changed key groups; Apply gives New.
func checkPlan(t *testing.T, old Assignment, n int, load []float64, p Plan) {
	t.Helper()
	if err := p.New.Validate(); err != nil {
		t.Fatalf("new assignment invalid: %v", err)
	}
	if p.New.N() != n || p.New.Groups != old.Groups || p.New.Op != old.Op {
		t.Fatalf("new assignment %v: want %d instances of %s over %d groups", p.New, n, old.Op, old.Groups)
	}
	if !p.Old.Equal(old) {
		t.Fatalf("plan's Old %v differs from %v", p.Old, old)
	}
	for i, rs := range p.New.Ranges {
		if len(rs) != 1 {
			t.Errorf("instance %d owns %v: not one contiguous range", i, rs)
		}
	}
	// An independent ownership count.
	count := make([]int, old.Groups)
	for _, rs := range p.New.Ranges {
		for _, r := range rs {
			for g := r.Lo; g < r.Hi; g++ {
				count[g]++
			}
		}
	}
	for g, c := range count {
		if c != 1 {
			t.Fatalf("kg%d owned %d times in %v", g, c, p.New)
		}
	}
	before, after := old.Owners(), p.New.Owners()
	applied := append([]int(nil), before...)
	covered := make([]bool, old.Groups)
	for k, m := range p.Moves {
		if m.Range.Lo >= m.Range.Hi || m.From == m.To {
			t.Fatalf("move %d %v: empty or to itself", k, m)
		}
		if k > 0 && p.Moves[k-1].Range.Hi > m.Range.Lo {
			t.Fatalf("moves %v and %v overlap or are out of order", p.Moves[k-1], m)
		}
		for g := m.Range.Lo; g < m.Range.Hi; g++ {
			if before[g] != m.From {
				t.Fatalf("move %v: %v was owned by %d", m, g, before[g])
			}
			if after[g] != m.To {
				t.Fatalf("move %v: %v is now owned by %d", m, g, after[g])
			}
			applied[g] = m.To
			covered[g] = true
		}
	}
	for g := range before {
		if before[g] != after[g] && !covered[g] {
			t.Fatalf("kg%d changed owner %d→%d without a move", g, before[g], after[g])
		}
		if applied[g] != after[g] {
			t.Fatalf("kg%d: the moves give %d, the plan %d", g, applied[g], after[g])
		}
	}
	got, err := Apply(old, n, p.Moves)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !got.Equal(p.New) {
		t.Fatalf("Apply gives %v, plan %v", got, p.New)
	}
	if load != nil {
		mx := 0.0
		for _, l := range p.New.Loads(load) {
			mx = max(mx, l)
		}
		if mx != p.MaxLoad {
			t.Fatalf("MaxLoad %v, instances' largest %v", p.MaxLoad, mx)
		}
	}
}
