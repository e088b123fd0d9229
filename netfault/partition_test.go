package netfault_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	"spate/chaos"
	"spate/netfault"
)

// TestPartitionPlanOverYamux applies plans to a small full mesh (the
// coordinator and three nodes, one Layer each) and checks that exactly the
// planned directions stop, and that heal, coordinator first, brings
// everything through.
func TestPartitionPlanOverYamux(t *testing.T) {
	procs := []string{netfault.Coord, "n1", "n2", "n3"}
	for _, tc := range []struct {
		shape  string
		groups [][]string
		oneway bool
	}{
		{shape: "one"},
		{shape: "majority", oneway: true},
		{shape: "bridge"},
		{groups: [][]string{{"n1"}, {"n2", netfault.Coord}}},
	} {
		name := fmt.Sprintf("%s/%v/oneway=%v", tc.shape, tc.groups, tc.oneway)
		t.Run(name, func(t *testing.T) {
			layers := map[string]*netfault.Layer{}
			for _, p := range procs {
				layers[p] = netfault.NewTestLayer(t, netfault.RealClock{}, 0)
			}
			// out[a][b] is a's end of a stream to b; in[b][a] is b's end.
			out := map[string]map[string]net.Conn{}
			in := map[string]map[string]*netfault.Collector{}
			for _, p := range procs {
				out[p], in[p] = map[string]net.Conn{}, map[string]*netfault.Collector{}
			}
			for i, a := range procs {
				for _, b := range procs[i+1:] {
					lk := netfault.NewLink(t, layers[a], a, layers[b], b)
					ab, ba := lk.StreamPair(t)
					out[a][b], in[b][a] = ab, netfault.Collect(ba)
					out[b][a], in[a][b] = ba, netfault.Collect(ab)
				}
			}
			cuts, err := chaos.PartitionPlan(tc.shape, tc.groups, tc.oneway, procs[1:], rand.New(rand.NewPCG(3, 4)))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range procs {
				for peer, f := range cuts.LinkFaults(p) {
					netfault.MustSet(t, layers[p], peer, f)
				}
			}
			for _, a := range procs {
				for _, b := range procs {
					if a != b {
						if _, err := out[a][b].Write([]byte(a + ">" + b + ";")); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			for _, a := range procs {
				for _, b := range procs {
					if a == b || cuts.Blocks(a, b) {
						continue
					}
					want := a + ">" + b + ";"
					if got := in[b][a].WaitLen(t, len(want)); string(got) != want {
						t.Fatalf("%s got %q from %s", b, got, a)
					}
				}
			}
			for _, a := range procs {
				for _, b := range procs {
					if a != b && cuts.Blocks(a, b) {
						if got := in[b][a].Bytes(); len(got) != 0 {
							t.Fatalf("plan %s: %s got %q from %s across the cut", cuts, b, got, a)
						}
					}
				}
			}
			layers[netfault.Coord].ClearAll()
			for _, p := range procs[1:] {
				layers[p].ClearAll()
			}
			for _, a := range procs {
				for _, b := range procs {
					if a != b {
						want := a + ">" + b + ";"
						if got := in[b][a].WaitLen(t, len(want)); string(got) != want {
							t.Fatalf("after heal %s got %q from %s", b, got, a)
						}
					}
				}
			}
		})
	}
}
