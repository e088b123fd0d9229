package node

import (
	"time"

	"spate/wire"
)

// setInterval applies a CtlInterval: the instance's checkpoint interval
// from now on. It runs on the control goroutine and hands the change to
// the instance's goroutine, which owns its checkpointer.
func (n *Node) setInterval(iv wire.Interval) {
	if iv.Ms <= 0 {
		return
	}
	if in := n.instance(iv.Instance); in != nil {
		d := time.Duration(iv.Ms) * time.Millisecond
		in.do(func() { in.ck.setInterval(in.plan, d) })
	}
}

// setInterval changes the interval; the next checkpoint is due d after
// the previous one (or after the start, before the first), so a shorter
// interval takes effect at once and a longer one postpones a due one.
func (c *checkpointer) setInterval(d *wire.Deploy, iv time.Duration) {
	if !c.next.IsZero() {
		c.next = c.next.Add(iv - c.interval(d))
	}
	c.override = iv
}

// busy counts processing time for the heartbeat (wire.InstanceStats.BusyUs)
// and publishes the loop's counts of records, after a message or a
// source's round.
func (in *instance) busy(since time.Time) {
	in.busyNs.Add(int64(time.Since(since)))
	in.publishCounts()
}

// publishCounts makes the loop's counts of records in and out what the
// heartbeats and reports read. It runs on the loop's goroutine.
func (in *instance) publishCounts() {
	in.nIn.Store(in.inN)
	in.nOut.Store(in.outN)
}
