package coord

import (
	"maps"
	"time"

	"spate/wire"
)

// Read grants (PROTOCOL.md, "The drain"): a source reads each partition
// only as far as the coordinator has granted, so that the coordinator
// knows how far a generation it cannot reach may have read. A generation
// the coordinator loses is counted as having read to its grant: the
// drain's positions then cover whatever its records made anywhere.

// grantAhead is how far past a partition's farthest reported position
// its sources may read, in time of its input at the rate measured: the
// grants reach them with the heartbeats' answers, so a source waits only
// when the coordinator has been out of reach for most of it.
const grantAhead = 2 * time.Second

// grantFloor is the smallest grant ahead, in records.
const grantFloor = 1024

// unpacedRate stands for a partition's rate before one is measured when
// the sources are not paced (records per second).
const unpacedRate = 1 << 19

type grantState struct {
	granted map[int]uint64  // per partition, the farthest ever granted
	rate    map[int]float64 // per partition, records per second, measured
	lastPos map[int]uint64
	lastAt  time.Time
}

// partitions lists the source partitions of the plan.
func (c *Coordinator) partitions() []int {
	var out []int
	if c.plan == nil {
		return nil
	}
	for _, p := range c.plan.Instances {
		out = append(out, p.Partitions...)
	}
	return out
}

// grantAheadOf is how many records past its farthest position partition
// part's sources may read.
func (c *Coordinator) grantAheadOf(part int, parts int) uint64 {
	r := c.grants.rate[part]
	if r == 0 {
		r = unpacedRate
		if c.cfg.Paced() && parts > 0 {
			r = c.cfg.Rate / float64(parts) * max(c.cfg.Speedup, 1)
		}
	}
	return max(grantFloor, uint64(r*grantAhead.Seconds()))
}

// grant measures the partitions' rates and raises the grants that fall
// short of their farthest positions by more than half of the grant
// ahead, and sends the grants to every live node if any changed (every
// one: a node hosts the sources restored on it later).
func (c *Coordinator) grant() {
	if c.plan == nil || !c.plan.Grants {
		return
	}
	g := &c.grants
	if g.granted == nil {
		g.granted, g.rate, g.lastPos = map[int]uint64{}, map[int]float64{}, map[int]uint64{}
	}
	now := c.opt.Now()
	parts := c.partitions()
	if dt := now.Sub(g.lastAt).Seconds(); !g.lastAt.IsZero() && dt >= 0.5 {
		for _, part := range parts {
			if pos := c.srcHigh[part]; pos >= g.lastPos[part] {
				g.rate[part] = float64(pos-g.lastPos[part]) / dt
			}
		}
	}
	if g.lastAt.IsZero() || now.Sub(g.lastAt) >= 500*time.Millisecond {
		for _, part := range parts {
			g.lastPos[part] = c.srcHigh[part]
		}
		g.lastAt = now
	}
	changed := false
	for _, part := range parts {
		ahead := c.grantAheadOf(part, len(parts))
		if want := c.srcHigh[part] + ahead; want > g.granted[part]+ahead/2 || g.granted[part] == 0 {
			g.granted[part], changed = max(g.granted[part], want), true
		}
	}
	if !changed {
		return
	}
	m := wire.Control{Kind: wire.CtlGrant, Until: maps.Clone(g.granted)}
	for _, name := range c.order {
		if ns := c.nodes[name]; ns.live() {
			_ = ns.send(m)
		}
	}
}

// sendGrants sends the grants to one node (one that joined the running
// job).
func (c *Coordinator) sendGrants(ns *nodeState) {
	if c.plan != nil && c.plan.Grants && len(c.grants.granted) > 0 {
		_ = ns.send(wire.Control{Kind: wire.CtlGrant, Until: maps.Clone(c.grants.granted)})
	}
}

// grantedRead counts a lost source generation as having read to its
// grant: it may have, out of the coordinator's reach, and its records
// may have been applied downstream. The drain's positions (srcHigh) then
// reach at least that far.
func (c *Coordinator) grantedRead(p *wire.Placement) {
	if c.plan == nil || !c.plan.Grants || c.done[p.ID] != nil || c.endedAt[p.ID] != nil {
		return // a drained generation stopped where it said
	}
	for _, part := range p.Partitions {
		if g := c.grants.granted[part]; g > c.srcHigh[part] {
			if c.srcHigh == nil {
				c.srcHigh = map[int]uint64{}
			}
			c.srcHigh[part] = g
		}
	}
}
