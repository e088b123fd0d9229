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
	in.handle(inMsg{from: 0, gen: gen, stream: old, kind: msgWatermark, wm: 900})
	if in.wms[0] != 500 {
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
