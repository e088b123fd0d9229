package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x7a29)) }

func cluster(n int, dead ...string) []NodeInfo {
	var nodes []NodeInfo
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("n%d", i)
		nodes = append(nodes, NodeInfo{
			ID:        id,
			Alive:     !slices.Contains(dead, id),
			Instances: []string{fmt.Sprintf("count/%d", i-1), fmt.Sprintf("source/%d", i-1)},
		})
	}
	return nodes
}

func nodeNames(n int) []string {
	var ids []string
	for i := 1; i <= n; i++ {
		ids = append(ids, fmt.Sprintf("n%d", i))
	}
	return ids
}

func TestResolveTarget(t *testing.T) {
	five := cluster(5, "n4")
	cases := []struct {
		name, target string
		nodes        []NodeInfo
		want         []string // exact, or nil for a check by size
		size         int
		err          string
	}{
		{name: "node", target: "n2", nodes: five, want: []string{"n2"}},
		{name: "dead node by name", target: "n4", nodes: five, want: []string{"n4"}},
		{name: "all", target: "all", nodes: five, want: []string{"n1", "n2", "n3", "n4", "n5"}},
		{name: "one", target: "one", nodes: five, size: 1},
		{name: "minority of 5", target: "minority", nodes: five, size: 2},
		{name: "majority of 5", target: "majority", nodes: five, size: 3},
		{name: "minority of 2", target: "minority", nodes: cluster(2), size: 1},
		{name: "majority of 4", target: "majority", nodes: cluster(4), size: 3},
		{name: "instance", target: "count/2", nodes: five, want: []string{"n3"}},
		{name: "operator", target: "count", nodes: five, size: 1},
		{name: "natural order", target: "all", nodes: cluster(11), want: nodeNames(11)},
		{name: "empty", target: "", nodes: five, err: "empty"},
		{name: "unknown", target: "n9", nodes: five, err: `"n9" names no node, instance or operator`},
		{name: "unknown instance", target: "count/9", nodes: five, err: `"count/9": no node hosts`},
		{name: "no alive node", target: "one", nodes: cluster(2, "n1", "n2"), err: "needs 1 alive nodes, 0 alive"},
		{name: "majority with too few alive", target: "majority", nodes: cluster(3, "n1", "n2"), err: "needs 2 alive"},
		{name: "no nodes", target: "all", nodes: nil, err: "no nodes"},
		{name: "duplicate id", target: "n1", nodes: []NodeInfo{{ID: "n1"}, {ID: "n1"}}, err: `"n1" appears twice`},
		{name: "empty id", target: "n1", nodes: []NodeInfo{{ID: ""}}, err: "empty id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveTarget(tc.target, tc.nodes, seeded(1))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("got %v, %v; want a one-line error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.want == nil && len(got) != tc.size {
				t.Fatalf("got %v, want %d nodes", got, tc.size)
			}
		})
	}
}

// TestResolveTargetProperties: random targets pick distinct alive nodes,
// the operator target a host of the operator, deterministically by seed
// and whatever the input's order.
func TestResolveTargetProperties(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for seed := range uint64(30) {
			nodes := cluster(n)
			if n > 2 {
				nodes[seed%uint64(n)].Alive = false
			}
			alive := map[string]bool{}
			for _, nd := range nodes {
				alive[nd.ID] = nd.Alive
			}
			shuffled := slices.Clone(nodes)
			seeded(seed+100).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for _, target := range []string{"one", "minority", "majority", "count"} {
				got, err := ResolveTarget(target, nodes, seeded(seed))
				if err != nil {
					// Only a majority may lack alive nodes.
					if target == "majority" && strings.Contains(err.Error(), "alive") {
						continue
					}
					t.Fatalf("n=%d seed=%d %s: %v", n, seed, target, err)
				}
				again, err := ResolveTarget(target, shuffled, seeded(seed))
				if err != nil || !slices.Equal(got, again) {
					t.Fatalf("n=%d seed=%d %s: %v, then %v (%v) with the input reordered", n, seed, target, got, again, err)
				}
				seen := map[string]bool{}
				for _, id := range got {
					if !alive[id] || seen[id] {
						t.Fatalf("n=%d seed=%d %s: %v has a dead or repeated node", n, seed, target, got)
					}
					seen[id] = true
				}
				want := map[string]int{"one": 1, "minority": max(1, (n-1)/2), "majority": n/2 + 1, "count": 1}[target]
				if len(got) != want {
					t.Fatalf("n=%d seed=%d %s: %v, want %d nodes", n, seed, target, got, want)
				}
			}
		}
	}
}

func TestResolveTargetSpreadsChoices(t *testing.T) {
	seen := map[string]bool{}
	rng := seeded(9)
	for range 200 {
		got, err := ResolveTarget("one", cluster(5), rng)
		if err != nil {
			t.Fatal(err)
		}
		seen[got[0]] = true
	}
	if len(seen) != 5 {
		t.Fatalf("one picked only %v in 200 draws", seen)
	}
}

// checkPlan checks the properties every plan has.
func checkPlan(t *testing.T, what string, c Cuts, nodes []string) {
	t.Helper()
	procs := append([]string{Coord}, nodes...)
	group := map[string]int{}
	for i, g := range c.Groups {
		if len(g) == 0 {
			t.Fatalf("%s: %s: group %d is empty", what, c, i+1)
		}
		for _, p := range g {
			if _, dup := group[p]; dup {
				t.Fatalf("%s: %s: %s in two groups", what, c, p)
			}
			group[p] = i
		}
	}
	for _, p := range procs {
		_, in := group[p]
		if in == (p == c.Bridge) {
			t.Fatalf("%s: %s: %s is in %v groups", what, c, p, in)
		}
	}
	for p, cut := range c.Procs {
		if slices.Contains(cut.BlockSend, p) || slices.Contains(cut.BlockRecv, p) {
			t.Fatalf("%s: %s: %s blocks itself", what, c, p)
		}
		if p != Coord && (slices.Contains(cut.BlockSend, Coord) || slices.Contains(cut.BlockRecv, Coord)) {
			t.Fatalf("%s: %s: node %s blocks the coordinator: its cut must be at the coordinator", what, c, p)
		}
	}
	for _, a := range procs {
		for _, b := range procs {
			blocked := c.Blocks(a, b)
			if a == b || a == c.Bridge || b == c.Bridge {
				if blocked {
					t.Fatalf("%s: %s: %s -> %s blocked", what, c, a, b)
				}
				continue
			}
			ga, gb := group[a], group[b]
			want := ga != gb && (!c.OneWay || ga < gb)
			if blocked != want {
				t.Fatalf("%s: %s: %s -> %s blocked=%v, want %v", what, c, a, b, blocked, want)
			}
			// Between nodes, both ends apply the cut.
			if a != Coord && b != Coord && blocked {
				if !slices.Contains(c.Procs[a].BlockSend, b) || !slices.Contains(c.Procs[b].BlockRecv, a) {
					t.Fatalf("%s: %s: %s -> %s cut at one end only", what, c, a, b)
				}
			}
		}
	}
	// Applying the plan through LinkFaults gives the same cuts.
	for _, p := range procs {
		for peer, f := range c.LinkFaults(p) {
			if f.BlockSend != slices.Contains(c.Procs[p].BlockSend, peer) || f.BlockRecv != slices.Contains(c.Procs[p].BlockRecv, peer) || f.Stall || f.Latency != 0 {
				t.Fatalf("%s: %s: LinkFaults(%s)[%s] = %v", what, c, p, peer, f)
			}
		}
	}
}

func TestPartitionPlanProperties(t *testing.T) {
	for n := 1; n <= 9; n++ {
		nodes := nodeNames(n)
		for seed := range uint64(40) {
			for _, tc := range []struct {
				shape  string
				oneway bool
				min    int
			}{
				{"one", false, 1}, {"one", true, 1},
				{"majority", false, 3}, {"majority", true, 3},
				{"bridge", false, 3},
			} {
				what := fmt.Sprintf("n=%d seed=%d %s oneway=%v", n, seed, tc.shape, tc.oneway)
				c, err := PartitionPlan(tc.shape, nil, tc.oneway, nodes, seeded(seed))
				if n < tc.min {
					if err == nil {
						t.Fatalf("%s: no error for too few nodes", what)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				checkPlan(t, what, c, nodes)
				if len(c.Groups) != 2 || !slices.Contains(c.Groups[0], Coord) {
					t.Fatalf("%s: %s: want two groups, the coordinator in the first", what, c)
				}
				switch tc.shape {
				case "one":
					if len(c.Groups[1]) != 1 {
						t.Fatalf("%s: %s: isolates %d nodes", what, c, len(c.Groups[1]))
					}
				case "majority":
					if got, want := len(c.Groups[0])-1, n/2+1; got != want {
						t.Fatalf("%s: %s: majority of %d nodes, want %d", what, c, got, want)
					}
					if got, want := len(c.Groups[1]), n-(n/2+1); got != want {
						t.Fatalf("%s: %s: minority of %d nodes, want %d", what, c, got, want)
					}
				case "bridge":
					if c.Bridge == "" || !slices.Contains(nodes, c.Bridge) {
						t.Fatalf("%s: %s: bridge %q", what, c, c.Bridge)
					}
					if d := len(c.Groups[0]) - 1 - len(c.Groups[1]); d < -1 || d > 1 {
						t.Fatalf("%s: %s: halves of unequal size", what, c)
					}
				}
				reversed := slices.Clone(nodes)
				slices.Reverse(reversed)
				again, err := PartitionPlan(tc.shape, nil, tc.oneway, reversed, seeded(seed))
				if err != nil || again.String() != c.String() {
					t.Fatalf("%s: %s, then %s with the nodes reversed", what, c, again)
				}
			}
		}
	}
}

func TestPartitionPlanSpreadsChoices(t *testing.T) {
	isolated := map[string]bool{}
	rng := seeded(5)
	for range 200 {
		c, err := PartitionPlan("one", nil, false, nodeNames(5), rng)
		if err != nil {
			t.Fatal(err)
		}
		isolated[c.Groups[1][0]] = true
	}
	if len(isolated) != 5 {
		t.Fatalf("one isolated only %v in 200 draws", isolated)
	}
}

func TestPartitionPlanGroups(t *testing.T) {
	nodes := nodeNames(5)
	cases := []struct {
		name   string
		groups [][]string
		oneway bool
		want   string // Cuts.String
		err    string
	}{
		{name: "two groups", groups: [][]string{{"n1", "n2"}, {"n3"}}, want: "coord n1 n2 n4 n5 | n3"},
		{name: "coordinator isolated", groups: [][]string{{"n1", "n2", "n3"}, {Coord}}, want: "n1 n2 n3 n4 n5 | coord"},
		{name: "three groups one-way", groups: [][]string{{"n1"}, {"n2"}, {"n3", "n4", "n5"}}, oneway: true, want: "coord n1 | n2 | n3 n4 n5 (one-way)"},
		{name: "one group", groups: [][]string{{"n1"}}, err: "at least 2 groups"},
		{name: "empty group", groups: [][]string{{"n1"}, {}}, err: "group 2 is empty"},
		{name: "unknown node", groups: [][]string{{"n1"}, {"n7"}}, err: `group 2: unknown node "n7"`},
		{name: "node twice", groups: [][]string{{"n1"}, {"n2", "n1"}}, err: `node "n1" is in groups 1 and 2`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := PartitionPlan("groups", tc.groups, tc.oneway, nodes, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want an error with %q", c, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.String() != tc.want {
				t.Fatalf("got %s, want %s", c, tc.want)
			}
			checkPlan(t, tc.name, c, nodes)
		})
	}
}

func TestPartitionPlanBadInput(t *testing.T) {
	cases := []struct {
		name   string
		shape  string
		groups [][]string
		oneway bool
		nodes  []string
		rng    *rand.Rand
		err    string
	}{
		{"unknown shape", "ring", nil, false, nodeNames(3), seeded(1), `unknown shape "ring"`},
		{"bridge one-way", "bridge", nil, true, nodeNames(5), seeded(1), "one-way applies"},
		{"groups with a shape", "one", [][]string{{"n1"}, {"n2"}}, false, nodeNames(3), seeded(1), "takes no groups"},
		{"no random source", "one", nil, false, nodeNames(3), nil, "no random source"},
		{"duplicate node", "one", nil, false, []string{"n1", "n1"}, seeded(1), `"n1" appears twice`},
		{"node named coord", "one", nil, false, []string{"coord", "n1"}, seeded(1), "coordinator's"},
		{"empty node", "one", nil, false, []string{""}, seeded(1), "empty name"},
		{"majority of two", "majority", nil, false, nodeNames(2), seeded(1), "needs 3 nodes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := PartitionPlan(tc.shape, tc.groups, tc.oneway, tc.nodes, tc.rng)
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, %v; want a one-line error with %q", c, err, tc.err)
			}
		})
	}
}

func FuzzResolveTarget(f *testing.F) {
	for _, s := range []string{"n1", "one", "minority", "majority", "all", "count/1", "count", "", "/", "n", "x/y/z"} {
		f.Add(s, uint64(1), uint8(5), uint8(1))
	}
	f.Fuzz(func(t *testing.T, target string, seed uint64, n, dead uint8) {
		nodes := cluster(int(n % 12))
		for i := range nodes {
			nodes[i].Alive = dead&(1<<(i%8)) == 0
		}
		got, err := ResolveTarget(target, nodes, seeded(seed))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatalf("%q resolved to nothing without an error", target)
		}
	})
}

func FuzzPartitionPlan(f *testing.F) {
	f.Add("one", "n1,n2|n3", false, uint64(1), uint8(4))
	f.Add("groups", "n1|coord", true, uint64(2), uint8(3))
	f.Add("bridge", "", false, uint64(3), uint8(5))
	f.Add("", "n1,n1|n2", false, uint64(4), uint8(2))
	f.Add("\n", "0", false, uint64(5), uint8(0)) // a shape with a newline, once a two-line error
	f.Fuzz(func(t *testing.T, shape, spec string, oneway bool, seed uint64, n uint8) {
		var groups [][]string
		if spec != "" {
			for _, g := range strings.Split(spec, "|") {
				groups = append(groups, strings.Split(g, ","))
			}
		}
		nodes := nodeNames(int(n % 12))
		c, err := PartitionPlan(shape, groups, oneway, nodes, seeded(seed))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		checkPlan(t, fmt.Sprintf("%q %q", shape, spec), c, nodes)
	})
}
