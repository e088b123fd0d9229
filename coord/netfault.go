package coord

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"spate/chaos"
	"spate/control"
	"spate/events"
	"spate/job"
	"spate/netfault"
	"spate/wire"
)

// Network and store faults. The coordinator keeps every active fault with
// what each process must apply for it; on any change it merges them and
// sends each node its complete set (CtlFaults), applying the faults of its
// own links in its own layer. Faults of a coordinator↔node link live only
// on the coordinator's side, so the order that lifts them always gets
// through: when faults are added the nodes hear first, when they are
// lifted the coordinator clears its side first.

// netFault is what one fault asks of each process.
type netFault struct {
	links   map[string]map[string]netfault.LinkFault // process (node or netfault.Coord) → peer → fault
	store   map[string]wire.StoreFault               // node → store fault
	cut     []string                                 // nodes cut off by a partition
	resets  bool                                     // the links carry a reset: send it once
	corrupt map[string][]string                      // node → instances whose latest checkpoint to damage, once
	damage  map[string][]wire.Damage                 // node → checkpoint files to damage, once
}

func (f *netFault) addLink(proc, peer string, lf netfault.LinkFault) {
	if f.links == nil {
		f.links = map[string]map[string]netfault.LinkFault{}
	}
	if f.links[proc] == nil {
		f.links[proc] = map[string]netfault.LinkFault{}
	}
	f.links[proc][peer] = mergeLink(f.links[proc][peer], lf)
}

// mergeLink combines two faults on one link: the worse of each.
func mergeLink(a, b netfault.LinkFault) netfault.LinkFault {
	a.BlockSend = a.BlockSend || b.BlockSend
	a.BlockRecv = a.BlockRecv || b.BlockRecv
	a.Stall = a.Stall || b.Stall
	a.Reset = a.Reset || b.Reset
	a.Latency = max(a.Latency, b.Latency)
	a.Jitter = max(a.Jitter, b.Jitter)
	if a.Bandwidth == 0 || (b.Bandwidth > 0 && b.Bandwidth < a.Bandwidth) {
		a.Bandwidth = b.Bandwidth
	}
	return a
}

// alive is the names of the nodes that are neither dead nor exited.
func (c *core) aliveNodes() []string {
	var out []string
	for _, n := range c.nodeInfos() {
		if n.Alive {
			out = append(out, n.ID)
		}
	}
	return out
}

// partition cuts the cluster: `partition majority`, `partition n2`
// (isolate it), shape=one|majority|bridge, groups=n1,n2|n3,n4, oneway=true.
func (c *core) partition(a control.Action, dur time.Duration) (control.Result, error) {
	shape, groups, oneway := a.Args["shape"], [][]string(nil), a.Args["oneway"] == "true"
	if g := a.Args["groups"]; g != "" {
		for _, part := range strings.Split(g, "|") {
			groups = append(groups, strings.Split(part, ","))
		}
		shape = "groups"
	}
	switch a.Target {
	case "", "one", "majority", "bridge":
		if a.Target != "" {
			if shape != "" && shape != a.Target {
				return control.Result{}, fmt.Errorf("partition: target %q and shape %q disagree", a.Target, shape)
			}
			shape = a.Target
		}
	default: // isolate the nodes the target names
		if shape != "" && shape != "one" {
			return control.Result{}, fmt.Errorf("partition %s: a target isolates its nodes; shape %q does not apply", a.Target, shape)
		}
		cut, err := c.resolve(a.Target)
		if err != nil {
			return control.Result{}, fmt.Errorf("partition: %w", err)
		}
		var rest []string
		for _, n := range c.aliveNodes() {
			if !slices.Contains(cut, n) {
				rest = append(rest, n)
			}
		}
		shape, groups = "groups", [][]string{rest, cut}
	}
	if shape == "" {
		shape = "majority"
	}
	cuts, err := chaos.PartitionPlan(shape, groups, oneway, c.aliveNodes(), c.rng)
	if err != nil {
		return control.Result{}, err
	}
	nf := &netFault{}
	for proc := range cuts.Procs {
		for peer, lf := range cuts.LinkFaults(proc) {
			nf.addLink(proc, peer, lf)
		}
	}
	for _, g := range cuts.Groups[1:] {
		nf.cut = append(nf.cut, g...)
	}
	sort.Slice(nf.cut, func(i, j int) bool { return nodeLess(nf.cut[i], nf.cut[j]) })
	f := c.startNetFault(a, nf.cut, dur, nf)
	c.emit(events.Partition, "", "", events.PartitionFields{ID: f.id, Groups: cuts.Groups, Bridge: cuts.Bridge, OneWay: cuts.OneWay},
		"partition %d: %s", f.id, cuts)
	return control.Result{Text: fmt.Sprintf("partition %s", cuts), Nodes: nf.cut}, nil
}

// link degrades the links of the target nodes: latency=50ms jitter=10ms
// bandwidth=1MB/s stall=true reset=true, optionally only toward peer=NAME.
// The faults act on what the target sends to its peers and on what the
// coordinator sends to it; a reset closes node↔node connections only
// (the nodes redial), a stall of the coordinator's link is a partition.
func (c *core) link(a control.Action, dur time.Duration) (control.Result, error) {
	targets, err := c.resolve(a.Target)
	if err != nil {
		return control.Result{}, fmt.Errorf("link: %w", err)
	}
	var lf netfault.LinkFault
	for k, v := range a.Args {
		var err error
		switch k {
		case "for", "peer":
		case "latency":
			lf.Latency, err = time.ParseDuration(v)
		case "jitter":
			lf.Jitter, err = time.ParseDuration(v)
		case "bandwidth":
			var bw float64
			if bw, err = chaos.ParseBandwidth(v); err == nil {
				lf.Bandwidth = int64(bw)
			}
		case "stall":
			lf.Stall, err = strconv.ParseBool(v)
		case "reset":
			lf.Reset, err = strconv.ParseBool(v)
		default:
			err = errors.New("not an argument of link (latency, jitter, bandwidth, stall, reset, peer, for)")
		}
		if err != nil {
			return control.Result{}, fmt.Errorf("link: %s=%s: %v", k, v, err)
		}
	}
	if err := lf.Validate(); err != nil {
		return control.Result{}, fmt.Errorf("link: %w", err)
	}
	if lf.IsZero() {
		return control.Result{}, errors.New("link: no fault given (latency, jitter, bandwidth, stall or reset)")
	}
	nf := &netFault{resets: lf.Reset}
	peers := c.aliveNodes()
	if p := a.Args["peer"]; p != "" {
		if _, ok := c.nodes[p]; !ok && p != netfault.Coord {
			return control.Result{}, fmt.Errorf("link: peer %q is not a node of this cluster", p)
		}
		peers = []string{p}
	}
	toCoord := lf
	toCoord.Reset = false
	for _, t := range targets {
		for _, p := range peers {
			switch p {
			case t:
			case netfault.Coord:
				nf.addLink(netfault.Coord, t, toCoord)
			default:
				nf.addLink(t, p, lf)
			}
		}
		if a.Args["peer"] == "" && !toCoord.IsZero() {
			nf.addLink(netfault.Coord, t, toCoord)
		}
	}
	c.startNetFault(a, targets, dur, nf)
	return control.Result{Text: fmt.Sprintf("link %s on %s", lf, strings.Join(targets, ",")), Nodes: targets}, nil
}

// storeFault slows or fails the checkpoint writes of the target nodes
// (slow=200ms, fail=true), or damages a checkpoint file of each instance
// they host (an action): corrupt=true the newest file, file=newest|base|
// fallback the newest file, the base of the latest restorable
// checkpoint's chain, or the fallback checkpoint's own file; with file=
// and an instance as the target, of that instance alone.
func (c *core) storeFault(a control.Action, dur time.Duration) (control.Result, error) {
	targets, err := c.resolve(a.Target)
	if err != nil {
		return control.Result{}, fmt.Errorf("store: %w", err)
	}
	var sf wire.StoreFault
	corrupt, file := false, ""
	for k, v := range a.Args {
		var err error
		switch k {
		case "for":
		case "slow":
			var d time.Duration
			if d, err = time.ParseDuration(v); err == nil && d < 0 {
				err = errors.New("negative")
			}
			sf.SlowMs = d.Milliseconds()
		case "fail":
			sf.Fail, err = strconv.ParseBool(v)
		case "corrupt":
			corrupt, err = strconv.ParseBool(v)
		case "file":
			file = v
			if !slices.Contains(chaos.DamageFiles, v) {
				err = fmt.Errorf("not a file of a chain (%s)", strings.Join(chaos.DamageFiles, ", "))
			}
		default:
			err = errors.New("not an argument of store (slow, fail, corrupt, file, for)")
		}
		if err != nil {
			return control.Result{}, fmt.Errorf("store: %s=%s: %v", k, v, err)
		}
	}
	if file != "" && !corrupt {
		if _, given := a.Args["corrupt"]; given {
			return control.Result{}, errors.New("store: file= damages a file; corrupt=false contradicts it")
		}
		corrupt = true
	}
	if sf == (wire.StoreFault{}) && !corrupt {
		return control.Result{}, errors.New("store: no fault given (slow, fail, corrupt or file)")
	}
	nf := &netFault{store: map[string]wire.StoreFault{}}
	only := job.InstanceID(strings.Replace(a.Target, "/", "#", 1))
	if c.placeOf[only] == nil || file == "" {
		only = ""
	}
	var what []string
	for _, t := range targets {
		if sf != (wire.StoreFault{}) {
			nf.store[t] = sf
		}
		if !corrupt {
			continue
		}
		for _, in := range c.hostedBy(t) {
			if only == "" || only == job.InstanceID(in) {
				name, err := c.damageFile(job.InstanceID(in), file)
				if err != nil && only != "" {
					return control.Result{}, fmt.Errorf("store: file=%s: %v", file, err)
				} else if err != nil {
					continue // another instance of the node: it has no such file yet
				}
				if nf.damage == nil {
					nf.damage = map[string][]wire.Damage{}
				}
				nf.damage[t] = append(nf.damage[t], wire.Damage{Instance: job.InstanceID(in), File: name, Nth: c.faultSeq})
				if file != "" {
					what = append(what, in+" "+cmp.Or(name, "newest"))
				}
			}
		}
	}
	f := c.startNetFault(a, targets, dur, nf)
	if sf == (wire.StoreFault{}) { // corrupting alone is over at once
		c.endFault(f)
	}
	text := fmt.Sprintf("store fault on %s", strings.Join(targets, ","))
	if len(what) > 0 {
		text += ": damaged " + strings.Join(what, ", ")
	}
	return control.Result{Text: text, Nodes: targets}, nil
}

// damageFile is the checkpoint file of id that `store file=which`
// damages ("": the newest file the node has, which it finds itself):
// base, the first file of the latest restorable checkpoint's chain;
// fallback, the fallback checkpoint's own file (its chain's last).
func (c *core) damageFile(id job.InstanceID, which string) (string, error) {
	if which == "" || which == "newest" {
		return "", nil
	}
	chains, _ := c.manifest.restorable(id)
	switch {
	case which == "base" && len(chains) > 0:
		return chains[0][0], nil
	case which == "fallback" && len(chains) > 1:
		return chains[1][len(chains[1])-1], nil
	}
	return "", fmt.Errorf("%s has no %s checkpoint yet", id, map[string]string{"base": "complete", "fallback": "fallback"}[which])
}

// hostedBy is the running instances on node name.
func (c *core) hostedBy(name string) []string {
	var out []string
	if c.plan != nil {
		for _, p := range c.plan.Instances {
			if p.Node == name && c.done[p.ID] == nil && !c.lost[p.ID] {
				out = append(out, string(p.ID))
			}
		}
	}
	return out
}

// startNetFault records a network or store fault and applies it.
func (c *core) startNetFault(a control.Action, nodes []string, dur time.Duration, nf *netFault) *fault {
	f := c.startFault(a, nodes, dur)
	f.net = nf
	c.pushFaults(true, nf)
	// Resets and corruptions are actions: they happened; what stays is
	// the rest of the fault.
	for _, peers := range nf.links {
		for p, lf := range peers {
			lf.Reset = false
			peers[p] = lf
		}
	}
	nf.corrupt, nf.damage = nil, nil
	return f
}

// pushFaults applies the merged active faults everywhere. Adding: nodes
// first; lifting: the coordinator's side first. once carries the one-shot
// actions (resets, corruptions) of a fault being started.
func (c *core) pushFaults(adding bool, once *netFault) {
	links := map[string]map[string]netfault.LinkFault{}
	stores := map[string]wire.StoreFault{}
	for _, id := range c.faultIDs() {
		nf := c.faults[id].net
		if nf == nil {
			continue
		}
		for proc, peers := range nf.links {
			if links[proc] == nil {
				links[proc] = map[string]netfault.LinkFault{}
			}
			for p, lf := range peers {
				links[proc][p] = mergeLink(links[proc][p], lf)
			}
		}
		for n, sf := range nf.store {
			cur := stores[n]
			cur.SlowMs = max(cur.SlowMs, sf.SlowMs)
			cur.Fail = cur.Fail || sf.Fail
			stores[n] = cur
		}
	}
	coordSide := func() { c.do(linkFaultsOp{links[netfault.Coord]}) }
	if !adding {
		coordSide()
	}
	for _, name := range c.allNodes() {
		ns := c.nodes[name]
		if !ns.live() {
			continue
		}
		m := &wire.Faults{Links: links[name], Store: stores[name]}
		if once != nil {
			for _, in := range once.corrupt[name] {
				m.Corrupt = append(m.Corrupt, job.InstanceID(in))
			}
			m.Damage = once.damage[name]
		}
		c.send(ns, wire.Control{Kind: wire.CtlFaults, Faults: m})
	}
	if adding {
		coordSide()
	}
}
