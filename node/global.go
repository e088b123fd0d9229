package node

import (
	"context"
	"encoding/binary"

	"spate/events"
	"spate/wire"
)

// The --ft global baseline: Flink's aligned checkpoints. Sources inject a
// barrier on every output stream; an instance that has the barrier on one
// input holds that input's messages until the barrier has come on every
// input, then snapshots its whole state synchronously, forwards the barrier
// and goes on. The alignment buffer is bounded: when it is full the
// checkpoint is declined (an event says so) rather than stalling the job
// under backpressure (FLINK-4975).

// alignLimit bounds the bytes an instance holds back while aligning.
const alignLimit = 64 << 20

// aligner is a keyed instance's barrier alignment; the instance goroutine
// owns it.
type aligner struct {
	id        uint64 // the checkpoint being aligned; 0: none
	got       []bool
	held      []inMsg
	heldBytes int
	declined  uint64 // the last checkpoint declined
}

// msgBarrier is an inMsg kind: barrier m.wm (the checkpoint id) from input m.from.
const msgBarrier msgKind = 100

// holds reports whether m must wait for the alignment in progress, and
// keeps it if so.
func (in *instance) holds(m inMsg) bool {
	al := &in.align
	if al.id == 0 || m.kind == msgBarrier || !al.got[m.from] {
		return false
	}
	al.held = append(al.held, m)
	al.heldBytes += len(m.payload)
	if al.heldBytes > alignLimit {
		in.n.event(events.CheckpointDeclined, in.id, events.CheckpointDeclinedFields{ID: al.id, HeldBytes: al.heldBytes},
			"checkpoint %d declined: the alignment buffer passed %d MiB under backpressure (FLINK-4975); inputs released", al.id, alignLimit>>20)
		al.declined = al.id
		in.release()
	}
	return true
}

// onBarrier handles barrier id from input from.
func (in *instance) onBarrier(from int, id uint64) {
	al := &in.align
	if id <= al.declined || (al.id != 0 && id < al.id) {
		return
	}
	if al.id != id {
		if al.id != 0 {
			in.release() // a newer barrier overtook: give up the older alignment
		}
		al.id, al.got = id, make([]bool, len(in.inputs))
	}
	al.got[from] = true
	in.checkAligned()
}

// checkAligned completes the alignment in progress once every input has
// given its barrier or ended: an input that ends gives no barrier any more
// (a source that stopped for the drain before the checkpoint's trigger
// reached it), and its end must count as soon as it comes, or the inputs
// held for the alignment, their ends among them, would stay held for ever.
func (in *instance) checkAligned() {
	al := &in.align
	if al.id == 0 {
		return
	}
	for i, g := range al.got {
		if !g && !in.ended[i] {
			return
		}
	}
	in.snapshotAndForward(al.id)
	in.release()
}

// snapshotAndForward is an instance's part of global checkpoint id once
// its inputs are aligned: a full snapshot, written before anything goes
// on, then the barrier on every output stream.
func (in *instance) snapshotAndForward(id uint64) {
	pc := in.capture(id, true)
	if err := in.persist(pc); err != nil {
		in.persisted(pc, err) // releases pc too
	} else {
		pc.release()
	}
	in.forwardBarrier(id)
}

// release ends the alignment and processes what it held, in order.
func (in *instance) release() {
	held := in.align.held
	in.align = aligner{declined: in.align.declined}
	for _, m := range held {
		if in.handle(m) && !in.finished {
			in.finish()
		}
	}
}

// forwardBarrier sends barrier id on every output stream, after the records
// that precede it.
func (in *instance) forwardBarrier(id uint64) {
	for _, pt := range in.ports {
		for _, l := range pt.links {
			in.flushLink(l)
			if l.err != nil {
				continue
			}
			if l.local != nil {
				l.local.deliver(context.Background(), inMsg{from: l.fromIdx, gen: in.place.Gen, stream: l.stream, kind: msgBarrier, wm: int64(id)})
				continue
			}
			if err := l.w.WriteFrame(wire.TBarrier, binary.AppendUvarint(nil, id)); err != nil {
				in.linkFailed(l, err)
				continue
			}
			if err := l.w.Flush(); err != nil {
				in.linkFailed(l, err)
			}
		}
	}
}

// sourceBarrier is a source's part of global checkpoint id: snapshot its
// positions, then put the barrier on every output stream.
func (in *instance) sourceBarrier(id uint64) {
	in.flushAll()
	in.snapshotAndForward(id)
}

// decodeBarrier parses a barrier frame's payload.
func decodeBarrier(p []byte) (uint64, bool) {
	id, n := binary.Uvarint(p)
	return id, n > 0 && n == len(p) && id > 0
}
