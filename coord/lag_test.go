package coord

import (
	"testing"
	"time"

	"spate/job"
	"spate/wire"
)

// TestLagGrowsWhileASinkIsNotReporting: a sink that stops reporting (its
// node lost, or the whole job rolled back) keeps its last watermark, so
// the output lag grows through the outage instead of going unsampled; a
// sink that reports no watermark yet counts the same way.
func TestLagGrowsWhileASinkIsNotReporting(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := start
	origin := int64(5000)
	sink0, sink1, src := job.InstanceID("sink#0"), job.InstanceID("sink#1"), job.InstanceID("source#0")
	c := &core{
		cfg:     Config{Rate: 1000, Speedup: 1},
		started: true,
		info:    RunInfo{JobStart: &start},
		placeOf: map[job.InstanceID]*wire.Placement{sink0: {Op: "sink"}, sink1: {Op: "sink"}, src: {Op: "source"}},
		nodes: map[string]*nodeState{
			"n1": {stats: map[job.InstanceID]wire.InstanceStats{src: {Origin: &origin, StartMs: start.UnixMilli()}, sink0: {Watermark: 5900}}},
			"n2": {stats: map[job.InstanceID]wire.InstanceStats{sink1: {Watermark: 5950}}},
		},
	}
	step := func(ms int) int64 {
		t.Helper()
		now = now.Add(time.Duration(ms) * time.Millisecond)
		n := len(c.info.Lag)
		c.now = now
		c.sampleLag()
		if len(c.info.Lag) != n+1 {
			t.Fatalf("no lag sample at %v", now.Sub(start))
		}
		return c.info.Lag[n][1]
	}
	if lag := step(1000); lag != 100 { // 1000 ms in, the slower sink at 900 ms of event time
		t.Fatalf("lag %d, want 100", lag)
	}
	// n1 is lost, with the source and sink#0: both keep what they last said.
	c.nodes["n1"].stats = nil
	if lag := step(200); lag != 300 {
		t.Fatalf("lag with n1 lost %d, want 300", lag)
	}
	// sink#0 is back but not watermarked yet; then it reports, behind.
	c.nodes["n1"].stats = map[job.InstanceID]wire.InstanceStats{sink0: {Watermark: job.NoWatermark}}
	if lag := step(200); lag != 500 {
		t.Fatalf("lag with sink#0 not watermarked %d, want 500", lag)
	}
	c.nodes["n1"].stats = map[job.InstanceID]wire.InstanceStats{sink0: {Watermark: 6350}}
	c.nodes["n2"].stats = map[job.InstanceID]wire.InstanceStats{sink1: {Watermark: 6450}}
	if lag := step(100); lag != 150 {
		t.Fatalf("lag with sink#0 back %d, want 150", lag)
	}
}

// TestLagCountsFromTheSourcesClock: the lag is measured against the
// sources' pacing clock, not the job's start: a source that read its
// first record 80 ms after the start (building the generator's key table,
// say) does not add 80 ms to every sample; of two sources the earlier
// clock counts.
func TestLagCountsFromTheSourcesClock(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := start.Add(time.Second)
	origin, later := int64(5000), int64(5010)
	sink, src0, src1 := job.InstanceID("sink#0"), job.InstanceID("source#0"), job.InstanceID("source#1")
	c := &core{
		cfg:     Config{Rate: 1000, Speedup: 1},
		started: true,
		info:    RunInfo{JobStart: &start},
		placeOf: map[job.InstanceID]*wire.Placement{sink: {Op: "sink"}, src0: {Op: "source"}, src1: {Op: "source"}},
		nodes: map[string]*nodeState{"n1": {stats: map[job.InstanceID]wire.InstanceStats{
			src0: {Origin: &origin, StartMs: start.Add(80 * time.Millisecond).UnixMilli()},
			src1: {Origin: &later, StartMs: start.Add(95 * time.Millisecond).UnixMilli()},
			sink: {Watermark: 5850},
		}}},
	}
	c.now = now
	c.sampleLag()
	// 1000 ms after the start is 920 ms of source#0's clock: event time
	// 5920 is due, the sink is at 5850.
	if len(c.info.Lag) != 1 || c.info.Lag[0] != [2]int64{1000, 70} {
		t.Fatalf("lag samples %v, want [[1000 70]]", c.info.Lag)
	}
}
