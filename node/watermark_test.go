package node

import (
	"testing"
	"time"

	"spate/job"
	"spate/wire"
)

// A keyed instance's watermark moves with every input watermark; it goes
// downstream at most once a flush period, and a move held back goes at
// the next tick, the latest value only.
func TestAWatermarkGoesDownstreamAtMostOnceAFlushPeriod(t *testing.T) {
	down := &instance{in: make(chan inMsg, 8)}
	l := &link{local: down, lastWM: job.NoWatermark}
	in := &instance{plan: &wire.Deploy{FlushMs: 5}, ports: []*port{{links: []*link{l}}}}
	sent := func() []int64 {
		var wms []int64
		for len(down.in) > 0 {
			m := <-down.in
			if m.kind != msgWatermark {
				t.Fatalf("a %v message went downstream, want only watermarks", m.kind)
			}
			wms = append(wms, m.wm)
		}
		return wms
	}
	t0 := time.Unix(100, 0)
	in.wm = 10
	in.forwardWatermark(t0)
	in.wm = 20
	in.forwardWatermark(t0.Add(time.Millisecond))
	in.wm = 30
	in.forwardWatermark(t0.Add(2 * time.Millisecond))
	if got := sent(); len(got) != 1 || got[0] != 10 {
		t.Fatalf("within one flush period sent %v, want [10]", got)
	}
	in.flushWatermark(t0.Add(3 * time.Millisecond))
	if got := sent(); len(got) != 1 || got[0] != 30 {
		t.Fatalf("the tick sent %v, want the latest held move [30]", got)
	}
	in.flushWatermark(t0.Add(4 * time.Millisecond))
	in.wm = 40
	in.forwardWatermark(t0.Add(9 * time.Millisecond)) // a period after the tick's send
	if got := sent(); len(got) != 1 || got[0] != 40 {
		t.Fatalf("after the tick sent %v, want [40] and nothing twice", got)
	}
	in.wm = job.MaxWatermark
	in.wmDue = true
	in.flushWatermark(t0.Add(20 * time.Millisecond))
	if got := sent(); len(got) != 0 {
		t.Fatalf("the tick sent the final watermark %v: it goes with the end of the outputs", got)
	}
}
