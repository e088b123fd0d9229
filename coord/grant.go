package coord

import (
	"maps"
	"time"

	"spate/wire"
)

// Read grants and the drain's positions (PROTOCOL.md, "The drain"): a
// source reads each partition only as far as the coordinator has
// granted, so that the coordinator knows how far any generation may have
// read, one it cannot reach included. When the drain starts, grants stop
// growing and each partition's end is fixed at its highest grant (or the
// farthest position reported, if that is higher): every generation of its
// source, the running one and any restored later, reads exactly to there
// and ends there. The end of a stream, which fires every open window, is
// then the same in every generation, whoever saw it and was lost since.

// grantAhead is how far past a partition's farthest reported position
// its sources may read, in time of its input at the rate measured: the
// grants reach them with the heartbeats' answers, so a source waits only
// when the coordinator has been out of reach for most of it.
const grantAhead = time.Second

// grantFloor is the smallest grant ahead, in records.
const grantFloor = 1024

// traceGrantFloor is the smallest grant ahead of a paced trace's
// partition (a rate or record trace: its rate is the file's, often under
// a record a second, not --rate's). The drain ends each partition at its
// grant, so this is also about the most a slow trace reads past where it
// was when the drain began; a source at its grant waits at most a
// heartbeat's round for the next, and the measured rate then sets the
// lead.
const traceGrantFloor = 4

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
func (c *core) partitions() []int {
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
func (c *core) grantAheadOf(part int, parts int) uint64 {
	r := c.grants.rate[part]
	if c.cfg.Paced() && !c.cfg.generated() {
		// A trace's rate is the file's: --rate says nothing of it, and
		// a lead of --rate's second had the drain read thousands of
		// records (a whole slow trace) past the duration's end.
		return max(traceGrantFloor, uint64(r*grantAhead.Seconds()))
	}
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
func (c *core) grant() {
	if c.plan == nil || !c.plan.Grants || c.draining {
		return // the drain has fixed where every source ends
	}
	g := &c.grants
	if g.granted == nil {
		g.granted, g.rate, g.lastPos = map[int]uint64{}, map[int]float64{}, map[int]uint64{}
	}
	now := c.now
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
			c.send(ns, m)
		}
	}
}

// sendGrants sends the grants to one node (one that joined the running
// job).
func (c *core) sendGrants(ns *nodeState) {
	if c.plan != nil && c.plan.Grants && len(c.grants.granted) > 0 {
		c.send(ns, wire.Control{Kind: wire.CtlGrant, Until: maps.Clone(c.grants.granted)})
	}
}

// fixDrainPositions fixes, as the drain starts, where each partition's
// sources end: at its highest grant, past anything a generation may have
// read, or at the farthest position reported if that is higher (a run
// without grants).
func (c *core) fixDrainPositions() {
	c.drainAt = maps.Clone(c.srcHigh)
	if c.drainAt == nil {
		c.drainAt = map[int]uint64{}
	}
	for part, g := range c.grants.granted {
		c.drainAt[part] = max(c.drainAt[part], g)
	}
}
