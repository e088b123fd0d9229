package chaos

// Fault targets and partition plans: pure resolution, no I/O.
//
// ResolveTarget turns a scenario's or a command's target into node names:
//
//	n2          that node, alive or not (so "restart n2" can name a dead one)
//	one         one random alive node
//	minority    max(1, floor((n-1)/2)) random alive nodes, n = all nodes
//	majority    floor(n/2)+1 random alive nodes
//	all         every node, alive or not
//	count/1     the node hosting that operator instance
//	count       a random node hosting an instance of that operator
//	            (an alive one if there is one)
//
// Keywords win over node, instance and operator names. The random choices
// are deterministic given the rng's state: nodes are sorted by ID before
// drawing, so the order of the input does not matter. Results are sorted
// by ID. A target that names nothing, or asks for more alive nodes than
// there are, is a one-line error.
//
// PartitionPlan turns a partition shape into Cuts: which process must
// block which peer, in which direction. Shapes:
//
//	one         one random node cut off from everyone else
//	majority    a random majority (floor(n/2)+1 nodes) and the minority
//	            (at least 3 nodes)
//	bridge      Jepsen's bridge: two halves that cannot reach each other
//	            and one bridge node that reaches both (at least 3 nodes)
//	groups      explicit groups (the groups argument); shape "" is the same
//
// The coordinator is the process named Coord. It stays in the first group
// (the majority, the rest for "one", the first half for "bridge") unless
// explicit groups name it. Nodes that explicit groups leave out join the
// first group too. With oneway, traffic from an earlier group to a later
// one is blocked and the other way flows (shapes one, majority, groups;
// for "one" the isolated node can still send to the rest).
//
// Where a cut is applied: a blocked direction between two nodes is applied
// at both ends (the sender blocks its send, the receiver its receive), so
// that a respawned node does not escape the cut. A blocked direction
// between the coordinator and a node is applied in the coordinator's layer
// only, never in the node's: the coordinator's orders travel over that
// link, and a node holding them could never be told to heal. The driver
// therefore applies a plan by sending the nodes their cuts first (while
// their links still flow) and then applying the coordinator's own, and
// heals in the reverse order: the coordinator clears its layer first.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"spate/netfault"
	"strings"
)

// Coord is the coordinator's name in partition plans and link faults.
const Coord = netfault.Coord

// NodeInfo is what target resolution needs to know of a node.
type NodeInfo struct {
	ID        string
	Alive     bool
	Instances []string // instance IDs hosted, e.g. "count/1"
}

// ResolveTarget returns the nodes a target names, sorted. See the comment
// at the top of this file for the target syntax.
func ResolveTarget(target string, nodes []NodeInfo, rng *rand.Rand) ([]string, error) {
	if target == "" {
		return nil, errors.New("chaos: target: empty")
	}
	target = strings.Replace(target, "#", "/", 1) // count#1, as the cluster names it, is count/1
	sorted, err := sortNodes(nodes)
	if err != nil {
		return nil, err
	}
	var alive []string
	for _, n := range sorted {
		if n.Alive {
			alive = append(alive, n.ID)
		}
	}
	n := len(sorted)
	switch target {
	case "all":
		if n == 0 {
			return nil, errors.New("chaos: target all: no nodes")
		}
		ids := make([]string, n)
		for i, nd := range sorted {
			ids[i] = nd.ID
		}
		return ids, nil
	case "one":
		return pickAlive(target, alive, 1, rng)
	case "minority":
		return pickAlive(target, alive, max(1, (n-1)/2), rng)
	case "majority":
		return pickAlive(target, alive, n/2+1, rng)
	}
	for _, nd := range sorted {
		if nd.ID == target {
			return []string{nd.ID}, nil
		}
	}
	if strings.Contains(target, "/") {
		for _, nd := range sorted {
			if slices.Contains(nd.Instances, target) {
				return []string{nd.ID}, nil
			}
		}
		return nil, fmt.Errorf("chaos: target %q: no node hosts that instance", target)
	}
	var hosts, aliveHosts []string
	for _, nd := range sorted {
		for _, inst := range nd.Instances {
			if op, _, ok := strings.Cut(inst, "/"); ok && op == target {
				hosts = append(hosts, nd.ID)
				if nd.Alive {
					aliveHosts = append(aliveHosts, nd.ID)
				}
				break
			}
		}
	}
	if len(aliveHosts) > 0 {
		hosts = aliveHosts
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("chaos: target %q names no node, instance or operator (nodes: %s)", target, strings.Join(nodeIDs(sorted), " "))
	}
	if rng == nil {
		return nil, fmt.Errorf("chaos: target %q: no random source", target)
	}
	return []string{hosts[rng.IntN(len(hosts))]}, nil
}

// sortNodes returns the nodes sorted by ID, or an error for an empty or
// repeated ID.
func sortNodes(nodes []NodeInfo) ([]NodeInfo, error) {
	sorted := slices.Clone(nodes)
	sort.SliceStable(sorted, func(i, j int) bool { return nodeLess(sorted[i].ID, sorted[j].ID) })
	for i, nd := range sorted {
		if nd.ID == "" {
			return nil, errors.New("chaos: nodes: a node has an empty id")
		}
		if i > 0 && sorted[i-1].ID == nd.ID {
			return nil, fmt.Errorf("chaos: nodes: node %q appears twice", nd.ID)
		}
	}
	return sorted, nil
}

func nodeIDs(nodes []NodeInfo) []string {
	ids := make([]string, len(nodes))
	for i, nd := range nodes {
		ids[i] = nd.ID
	}
	return ids
}

// nodeLess orders node names naturally (n2 before n10): by the name
// without its trailing number, then by that number, then as strings. It is
// a total order, so sorting does not depend on the input's order.
func nodeLess(a, b string) bool {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	if pa != pb {
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

// splitNum splits "n12" into ("n", 12); a name without a trailing number
// gives -1.
func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) || len(s)-i > 9 {
		return s, -1
	}
	n := 0
	for _, ch := range s[i:] {
		n = n*10 + int(ch-'0')
	}
	return s[:i], n
}

func sortIDs(ids []string) {
	sort.SliceStable(ids, func(i, j int) bool { return nodeLess(ids[i], ids[j]) })
}

// pickAlive draws k distinct alive nodes.
func pickAlive(target string, alive []string, k int, rng *rand.Rand) ([]string, error) {
	if len(alive) < k {
		return nil, fmt.Errorf("chaos: target %s: needs %d alive nodes, %d alive", target, k, len(alive))
	}
	if rng == nil {
		return nil, fmt.Errorf("chaos: target %s: no random source", target)
	}
	pool := slices.Clone(alive)
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	out := pool[:k]
	sortIDs(out)
	return out, nil
}

// Cut is what one process must block: the peers it must not send to, and
// the peers whose traffic it must not receive. Both sorted.
type Cut struct {
	BlockSend []string
	BlockRecv []string
}

// Cuts is a partition plan.
type Cuts struct {
	// Groups are the sides of the partition, each sorted. The first
	// holds Coord unless explicit groups put it elsewhere. For "bridge",
	// the bridge node is in no group.
	Groups [][]string
	Bridge string // the bridge node of shape "bridge", else ""
	OneWay bool
	// Procs holds the cut of every process (Coord included) that must
	// block something.
	Procs map[string]Cut
}

// LinkFaults returns the faults process proc must set in its Layer, by
// peer, to apply the plan.
func (c Cuts) LinkFaults(proc string) map[string]netfault.LinkFault {
	out := map[string]netfault.LinkFault{}
	cut := c.Procs[proc]
	for _, p := range cut.BlockSend {
		f := out[p]
		f.BlockSend = true
		out[p] = f
	}
	for _, p := range cut.BlockRecv {
		f := out[p]
		f.BlockRecv = true
		out[p] = f
	}
	return out
}

// Blocks reports whether traffic from process from to process to is cut,
// at either end.
func (c Cuts) Blocks(from, to string) bool {
	return slices.Contains(c.Procs[from].BlockSend, to) || slices.Contains(c.Procs[to].BlockRecv, from)
}

// String describes the plan in one line, e.g. "coord n1 n2 | n3 (one-way)".
func (c Cuts) String() string {
	var parts []string
	for _, g := range c.Groups {
		parts = append(parts, strings.Join(g, " "))
	}
	s := strings.Join(parts, " | ")
	if c.Bridge != "" {
		s += " (bridge " + c.Bridge + ")"
	}
	if c.OneWay {
		s += " (one-way)"
	}
	return s
}

// PartitionPlan computes the cuts of a partition shape over nodes (node
// names, without Coord). See the comment at the top of this file.
func PartitionPlan(shape string, groups [][]string, oneway bool, nodes []string, rng *rand.Rand) (Cuts, error) {
	ids := slices.Clone(nodes)
	sortIDs(ids)
	for i, id := range ids {
		switch {
		case id == "":
			return Cuts{}, errors.New("chaos: partition: a node has an empty name")
		case id == Coord:
			return Cuts{}, fmt.Errorf("chaos: partition: node name %q is the coordinator's", id)
		case i > 0 && ids[i-1] == id:
			return Cuts{}, fmt.Errorf("chaos: partition: node %q appears twice", id)
		}
	}
	if shape != "" && shape != "groups" && len(groups) > 0 {
		return Cuts{}, fmt.Errorf("chaos: partition: shape %q takes no groups", shape)
	}
	shuffled := func() ([]string, error) {
		if rng == nil {
			return nil, fmt.Errorf("chaos: partition %s: no random source", shape)
		}
		p := slices.Clone(ids)
		rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		return p, nil
	}
	var sides [][]string
	bridge := ""
	switch shape {
	case "one":
		if len(ids) < 1 {
			return Cuts{}, errors.New("chaos: partition one: no nodes")
		}
		p, err := shuffled()
		if err != nil {
			return Cuts{}, err
		}
		sides = [][]string{append([]string{Coord}, p[1:]...), {p[0]}}
	case "majority":
		if len(ids) < 3 {
			// Below 3 nodes the minority would be empty.
			return Cuts{}, fmt.Errorf("chaos: partition majority: needs 3 nodes, have %d", len(ids))
		}
		p, err := shuffled()
		if err != nil {
			return Cuts{}, err
		}
		k := len(p)/2 + 1
		sides = [][]string{append([]string{Coord}, p[:k]...), p[k:]}
	case "bridge":
		if oneway {
			return Cuts{}, errors.New("chaos: partition bridge: one-way applies to shapes one, majority and groups")
		}
		if len(ids) < 3 {
			return Cuts{}, fmt.Errorf("chaos: partition bridge: needs 3 nodes, have %d", len(ids))
		}
		p, err := shuffled()
		if err != nil {
			return Cuts{}, err
		}
		h := (len(p) - 1) / 2
		bridge = p[h]
		sides = [][]string{append([]string{Coord}, p[:h]...), p[h+1:]}
	case "", "groups":
		var err error
		if sides, err = explicitGroups(groups, ids); err != nil {
			return Cuts{}, err
		}
	default:
		return Cuts{}, fmt.Errorf("chaos: partition: unknown shape %q (want one, majority, bridge or groups)", shape)
	}
	for _, s := range sides {
		sortIDs(s)
	}
	cuts := Cuts{Groups: sides, Bridge: bridge, OneWay: oneway, Procs: map[string]Cut{}}
	for i, a := range sides {
		for j, b := range sides {
			if i == j || (oneway && i > j) {
				continue
			}
			for _, from := range a {
				for _, to := range b {
					cuts.block(from, to)
				}
			}
		}
	}
	for p, cut := range cuts.Procs {
		sortIDs(cut.BlockSend)
		sortIDs(cut.BlockRecv)
		cuts.Procs[p] = cut
	}
	return cuts, nil
}

// block records that traffic from one process to another is cut, at both
// ends for two nodes and at the coordinator's end only when it is one of
// them.
func (c *Cuts) block(from, to string) {
	if from != Coord && to != Coord || from == Coord {
		cut := c.Procs[from]
		cut.BlockSend = append(cut.BlockSend, to)
		c.Procs[from] = cut
	}
	if from != Coord && to != Coord || to == Coord {
		cut := c.Procs[to]
		cut.BlockRecv = append(cut.BlockRecv, from)
		c.Procs[to] = cut
	}
}

// explicitGroups validates explicit groups and returns the sides, Coord
// and unlisted nodes in the first unless a group names Coord.
func explicitGroups(groups [][]string, ids []string) ([][]string, error) {
	if len(groups) < 2 {
		return nil, fmt.Errorf("chaos: partition groups: need at least 2 groups, have %d", len(groups))
	}
	known := map[string]bool{Coord: true}
	for _, id := range ids {
		known[id] = true
	}
	seen := map[string]int{}
	sides := make([][]string, len(groups))
	for i, g := range groups {
		if len(g) == 0 {
			return nil, fmt.Errorf("chaos: partition groups: group %d is empty", i+1)
		}
		for _, m := range g {
			if !known[m] {
				return nil, fmt.Errorf("chaos: partition groups: group %d: unknown node %q", i+1, m)
			}
			if j, ok := seen[m]; ok {
				return nil, fmt.Errorf("chaos: partition groups: node %q is in groups %d and %d", m, j+1, i+1)
			}
			seen[m] = i
			sides[i] = append(sides[i], m)
		}
	}
	if _, ok := seen[Coord]; !ok {
		sides[0] = append(sides[0], Coord)
	}
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			sides[0] = append(sides[0], id)
		}
	}
	return sides, nil
}
