package bench

import (
	"testing"
	"time"

	"spate/coord"
	"spate/events"
)

func TestMedianAndPercentile(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Fatalf("median odd = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Fatalf("median even = %v", m)
	}
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i)
	}
	if p := percentile(xs, 0.99); p != 100 {
		t.Fatalf("p99 = %v", p)
	}
	if p := percentile(nil, 0.99); p != 0 {
		t.Fatalf("p99 of nothing = %v", p)
	}
}

func TestRecoveryTime(t *testing.T) {
	lag := func(samples ...[2]int64) *coord.RunInfo { return &coord.RunInfo{Lag: samples} }
	// Normal samples every 100 ms after the kill, but none from 3010 to
	// 3700 (more than the 600 ms gap allowed): the second of normal
	// output starts at 3700.
	gappy := lag([2]int64{2000, 100}, [2]int64{3010, 100})
	for ms := int64(3700); ms <= 4800; ms += 100 {
		gappy.Lag = append(gappy.Lag, [2]int64{ms, 100})
	}
	cases := []struct {
		name string
		ri   *coord.RunInfo
		want float64
		ok   bool
	}{
		{"back to normal 0.3s after the kill and stays", lag(
			[2]int64{2000, 100}, [2]int64{2500, 110}, [2]int64{3000, 1500}, [2]int64{3300, 120},
			[2]int64{3800, 100}, [2]int64{4300, 100}), 0.3, true},
		{"a relapse restarts the count", lag(
			[2]int64{2000, 100}, [2]int64{3000, 1500}, [2]int64{3200, 100}, [2]int64{3600, 2000},
			[2]int64{3900, 100}, [2]int64{4400, 100}, [2]int64{4900, 100}), 0.9, true},
		{"never back", lag([2]int64{2000, 100}, [2]int64{3000, 1500}, [2]int64{4000, 2500}), 0, false},
		{"a stretch without samples is not normal", gappy, 0.7, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := recoveryTime(tc.ri, 3000, time.Second, 600*time.Millisecond)
			if ok != tc.ok || (ok && (got < tc.want-1e-9 || got > tc.want+1e-9)) {
				t.Fatalf("recoveryTime = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestLagP99SkipsWarmUp(t *testing.T) {
	ri := &coord.RunInfo{Lag: [][2]int64{{500, 9000}, {2500, 100}, {3000, 200}}}
	if p := lagP99(ri, 2*time.Second); p != 200 {
		t.Fatalf("p99 after warm-up = %v, want 200", p)
	}
}

func TestPhasesOfARecovery(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	r := &run{info: &coord.RunInfo{JobStart: &start}, killAtMs: 1000}
	for _, e := range []events.Event{
		{Time: at(400), Kind: events.NodeLost},          // before the kill: not this recovery
		{Time: at(500), Kind: events.RecoveryRestored},  // ditto
		{Time: at(1030), Kind: events.NodeLost},         // detected
		{Time: at(1100), Kind: events.RecoveryRestored}, // one lost instance
		{Time: at(1150), Kind: events.RecoveryRestored}, // the last one
		{Time: at(1400), Kind: events.RecoveryDone},
		{Time: at(1600), Kind: events.RecoveryDone}, // caught up
		{Time: at(3000), Kind: events.NodeLost},     // another recovery
		{Time: at(3500), Kind: events.RecoveryDone},
	} {
		r.observe(e)
	}
	got := phases(r)
	if want := (Phases{Detected: 30, Restored: 150, CaughtUp: 600}); got != want {
		t.Fatalf("phases = %+v, want %+v", got, want)
	}
	if got := phases(&run{}); got != (Phases{-1, -1, -1}) {
		t.Fatalf("phases of a run without a kill = %+v", got)
	}
	m := medianPhases([]Phases{{10, 100, -1}, {20, 300, -1}, {30, 200, -1}})
	if m != (Phases{20, 200, -1}) || m.String() != "detected 20ms, restored 200ms, caught up -" {
		t.Fatalf("medianPhases = %+v (%v)", m, m)
	}
}
