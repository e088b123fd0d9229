package node

import (
	"testing"

	"spate/job"
)

// TestAWatermarkOfAReplacedConnectionIsNotTaken: an input reconnects (a
// rescale's commit re-routes key groups to us and replays them on the new
// connection) while watermarks it sent on the old one are still queued
// here. Taken, such a watermark let a receiver's windows of the moved key
// groups fire before the replay's records arrived behind it: seed 1936 of
// the whole-product nemesis (a scale-in of count 3→1 whose receiver had a
// backlog after a stall), 493 lost and 2,928 wrong.
func TestAWatermarkOfAReplacedConnectionIsNotTaken(t *testing.T) {
	f := newChain(t, 100, nil)
	in := f.instance(t)
	gen := in.inputGen[0]
	_, old := in.acceptInput(0, gen, nil)
	in.handle(inMsg{from: 0, gen: gen, stream: old, kind: msgWatermark, wm: 500})
	if in.wms[0] != 500 {
		t.Fatalf("the watermark of the input's connection: %d, want 500", in.wms[0])
	}
	_, cur := in.acceptInput(0, gen, nil)
	if cur <= old {
		t.Fatalf("a reconnect numbered its connection %d after %d", cur, old)
	}
	if in.wms[0] != job.NoWatermark {
		t.Fatalf("the replaced connection's watermark is still the input's: %d", in.wms[0])
	}
	in.handle(inMsg{from: 0, gen: gen, stream: old, kind: msgWatermark, wm: 900})
	if in.wms[0] != job.NoWatermark {
		t.Fatalf("a watermark queued from the replaced connection was taken: %d", in.wms[0])
	}
	in.handle(inMsg{from: 0, gen: gen, stream: cur, kind: msgWatermark, wm: 700})
	if in.wms[0] != 700 {
		t.Fatalf("the new connection's watermark: %d, want 700", in.wms[0])
	}
	if in.wm > 700 || in.wm == job.MaxWatermark {
		t.Fatalf("the instance's watermark passed its inputs': %d", in.wm)
	}
}

// TestAReceiverTakesNoEndOfInputFromAReplacedConnection: a source that
// has read its input to the end sends the final watermark but not its end
// (the end waits for the drain). A held receiver of a live rescale kept
// that watermark through the unhold, as if the input had ended, and fired
// every window before the replays on the new connections had brought the
// moved key groups' records: seed 816 of the whole-product nemesis (an
// auto-scaler's count 1→2 over a trace that ended), about 140 lost and
// 350 wrong, one run in three.
func TestAReceiverTakesNoEndOfInputFromAReplacedConnection(t *testing.T) {
	f := newChain(t, 100, nil)
	in := f.instance(t)
	in.rs.hold = true
	var gens [2]uint64
	for i := range 2 {
		gens[i] = in.inputGen[i]
		_, old := in.acceptInput(i, gens[i], nil)
		in.handle(inMsg{from: i, gen: gens[i], stream: old, kind: msgWatermark, wm: job.MaxWatermark})
	}
	before := in.wm
	var cur [2]uint64
	for i := range 2 {
		_, cur[i] = in.acceptInput(i, gens[i], nil) // the commit re-routes the moved range to us
	}
	in.unhold()
	if in.wm != before {
		t.Fatalf("unheld, the watermark moved to %d on what the replaced connections said (it was %d)", in.wm, before)
	}
	in.handle(inMsg{from: 0, gen: gens[0], stream: cur[0], kind: msgWatermark, wm: job.MaxWatermark})
	if in.wm != before {
		t.Fatalf("one input's new connection moved the watermark to %d; the other has said nothing on its new one", in.wm)
	}
	in.handle(inMsg{from: 1, gen: gens[1], stream: cur[1], kind: msgWatermark, wm: job.MaxWatermark})
	if in.wm != job.MaxWatermark {
		t.Fatalf("both new connections at the end, the watermark is %d", in.wm)
	}
}
