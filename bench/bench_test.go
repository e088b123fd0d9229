package bench

import (
	"math"
	"slices"
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
		// A high lag before the kill (1.5 s: normal is up to 1875 ms) and
		// the output stalled from the kill on: its lag stays under the bar
		// until 3375 ms, but the output only passes the kill at 3600.
		{"a stalled output is not back however low its lag", lag(
			[2]int64{2000, 1500}, [2]int64{3100, 1600}, [2]int64{3300, 1800},
			[2]int64{3600, 300}, [2]int64{4000, 300}, [2]int64{4600, 300}), 0.6, true},
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
		{Time: at(1200), Kind: events.RecoveryLoaded},   // one instance's state whole
		{Time: at(1350), Kind: events.RecoveryLoaded},   // the last one
		{Time: at(1400), Kind: events.RecoveryDone},
		{Time: at(1600), Kind: events.RecoveryDone}, // caught up
		{Time: at(3000), Kind: events.NodeLost},     // another recovery
		{Time: at(3500), Kind: events.RecoveryDone},
	} {
		r.observe(e)
	}
	got := phases(r)
	if want := (Phases{Detected: 30, Restored: 150, Loaded: 350, CaughtUp: 600}); got != want {
		t.Fatalf("phases = %+v, want %+v", got, want)
	}
	if got := phases(&run{}); got != (Phases{-1, -1, -1, -1}) {
		t.Fatalf("phases of a run without a kill = %+v", got)
	}
	m := medianPhases([]Phases{{10, 100, -1, -1}, {20, 300, -1, -1}, {30, 200, -1, -1}})
	if m != (Phases{20, 200, -1, -1}) || m.String() != "detected 20ms, restored 200ms, caught up -" {
		t.Fatalf("medianPhases = %+v (%v)", m, m)
	}
	if s := (Phases{20, 200, 350, 600}).String(); s != "detected 20ms, restored 200ms, state whole 350ms, caught up 600ms" {
		t.Fatalf("phases with the state built: %q", s)
	}
}

// TestUntouchedInstances: a recovery that restarts two instances of four
// leaves the others' rates to say whether they kept running; one that
// rolls the whole job back restarts all of them.
func TestUntouchedInstances(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	metrics := func(ms int, inst string, rate float64) events.Event {
		return events.Event{Time: at(ms), Kind: events.Metrics, Instance: inst, Fields: events.MetricsFields{InRate: rate, Backpressure: "OK"}}
	}
	placed := []events.Event{
		{Time: at(0), Kind: events.InstancePlaced, Instance: "source#0"},
		{Time: at(0), Kind: events.InstancePlaced, Instance: "count#0"},
		{Time: at(0), Kind: events.InstancePlaced, Instance: "count#1"},
		{Time: at(0), Kind: events.InstancePlaced, Instance: "sink#0"},
	}
	steady := []events.Event{
		metrics(2500, "count#1", 100), metrics(3500, "count#1", 100), metrics(4500, "count#1", 120), // before the kill: median 100
		metrics(2500, "source#0", 200), metrics(3500, "source#0", 200),
	}
	local := &run{info: &coord.RunInfo{JobStart: &start}, killAtMs: 5000}
	for _, e := range slices.Concat(placed, steady, []events.Event{
		{Time: at(5020), Kind: events.RecoveryPlaced, Instance: "count#0"},
		{Time: at(5020), Kind: events.RecoveryPlaced, Instance: "sink#0"},
		metrics(5500, "count#1", 80),   // during the recovery
		metrics(5500, "count#0", 0),    // restarted: not counted
		metrics(6500, "source#0", 190), // covers the end of the recovery
		metrics(8000, "count#1", 10),   // long after: not counted
	}) {
		local.observe(e)
	}
	u := untouched(local, 0.6)
	if want := (Untouched{Restarted: 2, Instances: 4, MinRate: 0.8}); u != want {
		t.Fatalf("local recovery: %+v, want %+v", u, want)
	}
	global := &run{info: &coord.RunInfo{JobStart: &start}, killAtMs: 5000}
	for _, e := range slices.Concat(placed, steady, []events.Event{
		{Time: at(5020), Kind: events.RecoveryPlaced}, // the whole job
		metrics(5500, "count#1", 0),
	}) {
		global.observe(e)
	}
	if u := untouched(global, 0.6); u != (Untouched{Restarted: 4, Instances: 4, MinRate: -1}) || u.String() != "restarted 4 of 4 instances" {
		t.Fatalf("global rollback: %+v (%v)", u, u)
	}
	m := medianUntouched([]Untouched{{2, 8, 0.9}, {2, 8, -1}, {2, 8, 1.1}})
	if m != (Untouched{2, 8, 1}) {
		t.Fatalf("medianUntouched = %+v", m)
	}
}

// TestSettleKillBoundsTheDeathByTheDetection: a poller starved of CPU sees
// the killed node dead late; the loss detected in between is the bound.
func TestSettleKillBoundsTheDeathByTheDetection(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		lost []int
		want int64
	}{
		{[]int{900, 1010, 1020}, 1010}, // the first loss after the signal, before the death seen
		{[]int{900}, 1025},             // an earlier loss is another one
		{[]int{1030}, 1025},            // detected after the death seen: that stands
		{nil, 1025},
	} {
		r := &run{info: &coord.RunInfo{JobStart: &start}}
		r.setKill(1000, 25*time.Millisecond, nil)
		for _, ms := range c.lost {
			r.observe(events.Event{Time: at(ms), Kind: events.NodeLost})
		}
		r.settleKill()
		if r.killAtMs != c.want || r.killTook != time.Duration(c.want-1000)*time.Millisecond {
			t.Errorf("losses at %v: died at %d ms after %v, want %d ms", c.lost, r.killAtMs, r.killTook, c.want)
		}
	}
}

func TestAlignedKillIsTimedByTheVictimsCheckpoint(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	from := t0.Add(8 * time.Second)
	ck := func(at time.Duration, inst string, f events.CheckpointFields) events.Event {
		return events.Event{Kind: events.Checkpoint, Time: t0.Add(at), Instance: inst, Fields: f}
	}
	cases := []struct {
		name string
		e    events.Event
		want time.Duration // after t0; 0: not the one
	}{
		{"before --kill", ck(7900*time.Millisecond, "count#0", events.CheckpointFields{TotalUs: 40_000}), 0},
		{"another instance", ck(8100*time.Millisecond, "count#1", events.CheckpointFields{TotalUs: 40_000}), 0},
		{"not a checkpoint", events.Event{Kind: events.Replay, Time: t0.Add(9 * time.Second), Instance: "count#0"}, 0},
		// captured at 8.06 s: the kill is 1.25 s after the capture
		{"the victim's, from its capture", ck(8100*time.Millisecond, "count#0", events.CheckpointFields{TotalUs: 40_000}), 9310 * time.Millisecond},
		// triggered at 8.2 s, complete 650 ms later
		{"a global one, from its trigger", ck(8850*time.Millisecond, "", events.CheckpointFields{Global: true, TookMs: 650}), 9450 * time.Millisecond},
	}
	for _, c := range cases {
		got, ok := alignedKill(c.e, "count#0", from, 1250*time.Millisecond)
		if ok != (c.want > 0) || ok && !got.Equal(t0.Add(c.want)) {
			t.Errorf("%s: got %v %v, want %v", c.name, got.Sub(t0), ok, c.want)
		}
	}
}

func TestReplayedBetweenLeavesOutTheMergeBack(t *testing.T) {
	start := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	at := func(ms int64, f events.Payload) events.Event {
		return events.Event{Time: start.Add(time.Duration(ms) * time.Millisecond), Fields: f}
	}
	r := &run{info: &coord.RunInfo{JobStart: &start}, evs: []events.Event{
		at(500, events.ReplayFields{Records: 1}),               // before the kill
		at(10_040, events.RecoveryPlacedFields{Records: 1000}), // a rollback's
		at(10_300, events.ReplayFields{Records: 200}),
		at(10_700, events.ReplayFields{Records: 30}),  // the last moment of the recovery
		at(12_100, events.ReplayFields{Records: 400}), // the merge back
	}}
	if got := replayedBetween(r, 10_000, 10_700); got != 1230 {
		t.Errorf("during the recovery: %d, want 1230", got)
	}
	if got := replayedAfter(r, 10_701); got != 400 {
		t.Errorf("after it: %d, want 400", got)
	}
}

// TestBusyBeforeSumsTheNodes: the nodes' CPU before the kill is each
// node's mean over the 3 s before it, summed over the nodes; instances'
// metrics, samples outside the window and a run without a kill do not
// count.
func TestBusyBeforeSumsTheNodes(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	node := func(ms int, name string, cpu float64) events.Event {
		return events.Event{Time: at(ms), Kind: events.Metrics, Node: name, Fields: events.MetricsFields{CPU: cpu}}
	}
	r := &run{info: &coord.RunInfo{JobStart: &start}, killAtMs: 10_000}
	for _, e := range []events.Event{
		node(6_500, "n1", 400), // before the window
		node(7_500, "n1", 50),
		node(8_500, "n1", 70),
		node(9_500, "n1", 60),
		node(8_500, "n2", 30),
		node(9_500, "n2", 40),
		{Time: at(9_500), Kind: events.Metrics, Node: "n2", Instance: "count#1", Fields: events.MetricsFields{InRate: 1e6}},
		node(10_500, "n2", 200), // after the kill
	} {
		r.observe(e)
	}
	if got, want := busyBefore(r), 0.60+0.35; math.Abs(got-want) > 1e-9 {
		t.Fatalf("busyBefore = %v, want %v (n1 0.60 and n2 0.35 of a core)", got, want)
	}
	if got := busyBefore(&run{}); got != -1 {
		t.Fatalf("busyBefore of a run without a kill = %v, want -1", got)
	}
	if got := busyText(-1, 2); got != "" {
		t.Fatalf("busyText(-1) = %q, want nothing", got)
	}
}
