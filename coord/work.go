package coord

import (
	"path/filepath"
	"time"

	"spate/events"
)

// replyOp answers a control request once the work its action decided has
// been carried out (a kill's reply comes after the signal). It is the
// driver's: the core never sees a channel.
type replyOp struct {
	to  chan ctlReply
	rep ctlReply
}

func (replyOp) opName() string { return "reply" }

// carry carries out what the core decided: it publishes the events, hands
// the operations to the executor, after them the driver's own (extra),
// and stands the loop still itself for a pause of the coordinator.
func (c *Coordinator) carry(extra ...op) {
	w := c.take()
	for _, e := range w.events {
		c.bus.Publish(e)
	}
	var stall time.Duration
	ops := make([]op, 0, len(w.ops)+len(extra))
	for _, o := range append(w.ops, extra...) {
		if s, ok := o.(stallOp); ok {
			stall = s.d
			continue
		}
		if m, ok := o.(writeManifestOp); ok {
			// Straight to the writer, not behind the executor's queue:
			// the work after a durableOp waits for this very write. One
			// at a time (the core waits for manifestWritten), so this
			// never blocks.
			c.mwc <- m.w
			continue
		}
		ops = append(ops, o)
	}
	if len(ops) > 0 {
		c.execc <- ops
	}
	if stall > 0 {
		time.Sleep(stall) // the pause itself: nothing else of the loop runs
		_ = c.step(c.opt.Now(), stalledIn{})
		c.carry()
	}
}

// runExecutor carries out the core's operations in the order it decided
// them, off the event loop: nothing here waits for the loop, and the loop
// waits for none of it (a slow store, a spawn, a full queue).
func (c *Coordinator) runExecutor(done chan<- struct{}) {
	defer close(done)
	for ops := range c.execc {
		for _, o := range ops {
			if c.crashed.Load() {
				break // a crash: what was not done is never done
			}
			c.carryOut(o)
		}
	}
}

func (c *Coordinator) carryOut(o op) {
	switch o := o.(type) {
	case sendOp:
		if l := c.link(o.to); l != nil {
			_ = l.queue(o.b) // a node that reads nothing is judged by its heartbeats
		}
	case closeOp:
		if l := c.link(o.node); l != nil && l.sess != nil {
			l.sess.Close()
		}
	case spawnOp:
		if err := c.spawn(o.name, o.replaces); err != nil {
			c.publish(events.Error, o.name, "", nil, "%v", err)
			go func() { c.exitc <- o.name }() // never started: exited at once
		}
	case signalOp:
		l := c.link(o.node)
		if l == nil || l.proc == nil {
			c.publish(events.Error, o.node, "", nil, "signal %v to %s: not a local process", o.sig, o.node)
		} else if err := l.proc.Signal(o.sig); err != nil {
			c.publish(events.Error, o.node, "", nil, "signal %v to %s: %v", o.sig, o.node, err)
		}
	case deleteOp:
		_ = c.store.Delete(o.file) // a file left behind wastes room, nothing more
	case durableOp:
		c.awaitDurable(o.v)
	case writeManifestOp:
		c.mwc <- o.w // one at a time: the core waits for manifestWritten
	case writeOutputsOp:
		if err := c.outStore.Put(outputManifestName, o.data); err != nil { // atomic and durable, whole: output.go
			c.publish(events.Error, "", "", nil, "write output manifest: %v", err)
		}
	case writeRunInfoOp:
		if err := WriteFileAtomic(filepath.Join(c.dir, "run.json"), o.data, 0o644); err != nil {
			c.publish(events.Error, "", "", nil, "write run.json: %v", err)
		}
	case compactOp:
		store := c.store
		go func() {
			t0 := time.Now()
			r := compaction{cp: o.cp, files: len(o.files)}
			r.file, r.bytes, r.err = compactChain(store, o.cp, o.files)
			r.took = time.Since(t0)
			c.compactc <- r
		}()
	case timerOp:
		time.AfterFunc(o.d, func() {
			select {
			case c.liftc <- o.id:
			case <-c.loopDone:
			}
		})
	case linkFaultsOp:
		c.layer.ClearAll()
		for p, lf := range o.links {
			_ = c.layer.Set(p, lf)
		}
	case replyOp:
		o.to <- o.rep
	}
}
