package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"spate/events"
)

func TestCI95(t *testing.T) {
	// Mean 1, sd 0.1 over 5 rounds: half-width 2.776 * 0.1 / sqrt(5).
	xs := []float64{0.9, 1.1, 0.9, 1.1, 1.0}
	c := ci95(xs, 0.05)
	half := 2.776 * 0.1 / math.Sqrt(5)
	if math.Abs(c.Mean-1) > 1e-9 || math.Abs(c.Lo-(1-half)) > 1e-6 || math.Abs(c.Hi-(1+half)) > 1e-6 {
		t.Fatalf("ci95 = %+v, want 1 ± %.4f", c, half)
	}
	// 2 * t(n-1) * 0.1 / sqrt(n) < 0.05 first at n = 64 (t(63) ≈ 1.998).
	if c.Need != 64 {
		t.Errorf("rounds needed = %d, want 64", c.Need)
	}
	if one := ci95([]float64{0.9}, 0.05); one.Rounds != 1 || !math.IsInf(one.Width, 1) || one.Need != 0 {
		t.Errorf("one round: %+v", one)
	}
	if same := ci95([]float64{0.9, 0.9, 0.9}, 0.05); same.Width != 0 || same.Need != 2 {
		t.Errorf("no spread: %+v", same)
	}
	b, err := json.Marshal(ci95([]float64{0.9}, 0.05))
	if err != nil || !strings.Contains(string(b), `"width":null`) {
		t.Errorf("JSON of one round's interval: %s, %v", b, err)
	}
}

func TestTQuantile(t *testing.T) {
	for _, tc := range []struct {
		df   int
		want float64
	}{{1, 12.706}, {4, 2.776}, {30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {100000, 1.960}} {
		if got := tQuantile975(tc.df); math.Abs(got-tc.want) > 0.002 {
			t.Errorf("t(0.975, %d) = %.4f, want %.3f", tc.df, got, tc.want)
		}
	}
}

func TestValuesWriteNullForARoundNotRun(t *testing.T) {
	b, err := json.Marshal(map[string]Values{"rps_spate@eq": {1.5, math.NaN(), 2}})
	if err != nil || string(b) != `{"rps_spate@eq":[1.5,null,2]}` {
		t.Fatalf("%s, %v", b, err)
	}
}

// evRun is a run whose job started at 0 and whose drain started at end
// (seconds), with the given events at their seconds.
func evRun(end float64, evs ...events.Event) *run {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := &run{}
	r.observe(events.Event{Kind: events.InstancePlaced, Instance: "a#0", Time: at(-1)})
	r.observe(events.Event{Kind: events.InstancePlaced, Instance: "a#1", Time: at(-1)})
	r.observe(events.Event{Kind: events.JobStarted, Time: at(0)})
	for _, e := range evs {
		e.Time = at(e.Time.Sub(time.Time{}).Seconds())
		r.observe(e)
	}
	r.observe(events.Event{Kind: events.DrainStarted, Time: at(end)})
	return r
}

func at(s float64) time.Time { return time.Time{}.Add(time.Duration(s * float64(time.Second))) }

func TestCheckpointStats(t *testing.T) {
	spate := func(inst string, s, totalMs float64) events.Event {
		return events.Event{Kind: events.Checkpoint, Instance: inst, Time: at(s), Fields: events.CheckpointFields{TotalUs: int64(totalMs * 1000)}}
	}
	global := func(s, tookMs float64) events.Event {
		return events.Event{Kind: events.Checkpoint, Time: at(s), Fields: events.CheckpointFields{Global: true, TookMs: int64(tookMs)}}
	}
	cases := []struct {
		name string
		r    *run
		want CheckpointStats
	}{
		{"spate, every second from 1 s: 9 in a 10 s run is a rate of 1, not 0.9",
			evRun(10, spate("a#0", 1, 100), spate("a#1", 1.5, 100), spate("a#0", 2, 100), spate("a#1", 2.5, 100),
				spate("a#0", 3, 100), spate("a#1", 3.5, 100), spate("a#0", 4, 300), spate("a#1", 4.5, 300)),
			// a#0: 1,2,3,4 then nothing until 10: (10-1)/4 = 2.25 s; a#1 likewise (10-1.5)/4 = 2.125 s
			CheckpointStats{PerSec: (1/2.25 + 1/2.125) / 2, MeanMs: 150}},
		{"spate, one instance checkpoints every half second, the other never",
			evRun(2, spate("a#0", 0.5, 10), spate("a#0", 1, 10), spate("a#0", 1.5, 10), spate("a#0", 2, 10)),
			CheckpointStats{PerSec: 1, MeanMs: 10}},
		{"global, declined once: no checkpoint for the 10 s until it is abandoned",
			evRun(14, global(0.2, 200), global(1.2, 200),
				events.Event{Kind: "checkpoint_declined", Instance: "a#0", Time: at(2.5), Fields: events.CheckpointDeclinedFields{ID: 3}},
				events.Event{Kind: "checkpoint_declined", Instance: "a#1", Time: at(2.6), Fields: events.CheckpointDeclinedFields{ID: 3}},
				events.Event{Kind: events.Error, Time: at(12.1), Text: "global checkpoint 3 abandoned: not every instance reported in time", Fields: events.ErrorFields{ID: 3}},
				global(13.3, 300)),
			// spacing (13.3-0.2)/2 = 6.55 s
			CheckpointStats{PerSec: 1 / 6.55, Declined: 1, MeanMs: 700.0 / 3}},
		{"none: no checkpoints", evRun(10), CheckpointStats{}},
		{"compactions: their time a second",
			evRun(4, spate("a#0", 1, 10), spate("a#1", 1, 10), spate("a#0", 2, 10), spate("a#1", 2, 10),
				events.Event{Kind: events.CheckpointCompacted, Instance: "a#0", Time: at(2.5), Fields: events.CheckpointCompactedFields{Ms: 60}},
				events.Event{Kind: events.CheckpointCompacted, Instance: "a#1", Time: at(3), Fields: events.CheckpointCompactedFields{Ms: 20}}),
			CheckpointStats{PerSec: 1 / 1.5, MeanMs: 10, CompactMsPerS: 20}}, // (4-1)/2 s from the first to the end
		{"what completes during the drain does not count",
			evRun(2, spate("a#0", 1, 10), spate("a#1", 1, 10), spate("a#0", 2.5, 10)),
			CheckpointStats{PerSec: 1, MeanMs: 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := checkpointStats(tc.r)
			if math.Abs(got.PerSec-tc.want.PerSec) > 1e-9 || got.Declined != tc.want.Declined || math.Abs(got.MeanMs-tc.want.MeanMs) > 1e-9 ||
				math.Abs(got.CompactMsPerS-tc.want.CompactMsPerS) > 1e-9 {
				t.Fatalf("checkpointStats = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEqualRateConfig(t *testing.T) {
	run := func(perSec float64) ohRun { return ohRun{ckpt: CheckpointStats{PerSec: perSec}} }
	cases := []struct {
		name       string
		sp, gl     float64
		want       string
		interval   string
		wantNeeded bool
	}{
		{"global slower: spate at global's interval", 1, 0.25, "spate@eq", "4s", true},
		{"spate slower: global at spate's interval", 0.5, 1, "global@eq", "2s", true},
		{"within 10 %: like for like already", 1, 0.92, "", "", false},
		{"global completed none: no interval to take", 1, 0, "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := equalRateConfig(run(tc.sp), run(tc.gl), time.Second)
			if ok != tc.wantNeeded || c.Name != tc.want || c.Interval != tc.interval {
				t.Fatalf("equalRateConfig = %+v, %v; want %q at %q, %v", c, ok, tc.want, tc.interval, tc.wantNeeded)
			}
		})
	}
}

func TestRotateStartsEachRoundElsewhere(t *testing.T) {
	cs := []OverheadConfig{{Name: "none"}, {Name: "spate"}, {Name: "global"}}
	names := func(cs []OverheadConfig) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.Name)
		}
		return strings.Join(s, ",")
	}
	for round, want := range []string{"none,spate,global", "spate,global,none", "global,none,spate", "none,spate,global"} {
		if got := names(rotate(cs, round)); got != want {
			t.Errorf("round %d: %s, want %s", round, got, want)
		}
	}
}

func TestOverheadConfigs(t *testing.T) {
	if _, err := overheadConfigs("none,spate,bogus", "", time.Second); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("unknown configuration: %v", err)
	}
	if _, err := overheadConfigs("spate,spate", "", time.Second); err == nil {
		t.Error("a configuration twice is accepted")
	}
	if _, err := overheadConfigs("spate", t.TempDir(), time.Second); err == nil || !strings.Contains(err.Error(), "--baseline") {
		t.Errorf("a directory as --baseline: %v", err)
	}
}

// TestOverheadReportRefusesUnequalRates: a spate/global ratio where
// global checkpointed four times less often is printed with its warning
// and points at the ratio at equal rates; the rounds needed are said.
func TestOverheadReportRefusesUnequalRates(t *testing.T) {
	res := Overhead{WidthTarget: 0.05, Configs: []OverheadConfig{
		{Name: "none", FT: "none"}, {Name: "spate", FT: "spate", Interval: "1s"}, {Name: "global", FT: "global", Interval: "1s"}}}
	r := func(rps, cpu, perSec float64) ohRun {
		return ohRun{rps: rps, cpu: cpu, ckpt: CheckpointStats{PerSec: perSec}, interval: time.Second}
	}
	tput := map[string][]ohRun{
		"none":     {r(100, 1, 0), r(110, 0.95, 0), r(90, 1.05, 0)},
		"spate":    {r(96, 1.04, 1), r(104, 0.99, 1), r(87, 1.09, 0.98)},
		"global":   {r(99, 1.01, 0.25), r(108, 0.96, 0.26), r(89, 1.06, 0.24)},
		"spate@eq": {r(99, 1.01, 0.25), {}, r(89, 1.06, 0.24)},
	}
	eq := &OverheadConfig{Name: "spate@eq", FT: "spate", Interval: "4s", Of: "spate", At: "global"}
	res.Configs = append(res.Configs, *eq)
	res.fill(tput, nil, 3, eq)
	if got := res.RatioRounds["spate/none"]; len(got) != 3 || math.Abs(got[0]-0.96) > 1e-9 {
		t.Fatalf("spate/none rounds %v", got)
	}
	if got := res.RatioRounds["spate@eq/global"]; len(got) != 2 {
		t.Fatalf("the equal-rate ratio is not over the two rounds it ran in: %v", got)
	}
	if cmp := res.LikeForLike["spate/global"]; cmp.Like || cmp.Equal != "spate@eq/global" {
		t.Fatalf("spate/global judged %+v", cmp)
	}
	if cmp := res.LikeForLike["spate@eq/global"]; !cmp.Like {
		t.Fatalf("spate@eq/global judged %+v", cmp)
	}
	if b, err := json.Marshal(res); err != nil || !bytes.Contains(b, []byte(`"rps_spate@eq":[99,null,89]`)) {
		t.Fatalf("JSON: %v\n%s", err, b)
	}
	var out strings.Builder
	res.print(&out, 1000, time.Second, time.Second, 3, 1000, eq)
	for _, want := range []string{
		"NOT like for like: spate completed 1.00 checkpoints/s per instance, global 0.25; at equal rates see spate@eq/global",
		"global completed 0.25 checkpoints/s per instance, not the 1.00 of --interval 1s",
		"needs about",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report does not say %q:\n%s", want, out.String())
		}
	}
}

// TestGeometricInterval: the interval of the geometric mean is that of
// the logarithms' mean taken back by exp; a ratio and its inverse cancel;
// the rounds to clear a target grow as the geometric mean nears it and
// there are none when it is under it.
func TestGeometricInterval(t *testing.T) {
	g := geoCI95([]float64{2, 0.5, math.NaN(), 0})
	if g.Rounds != 2 || math.Abs(float64(g.Mean)-1) > 1e-12 {
		t.Fatalf("geoCI95(2, 0.5) = %+v, want mean 1 of 2 rounds (NaN and 0 left out)", g)
	}
	half := 12.706 * math.Log(4) / math.Sqrt2 / math.Sqrt2
	if math.Abs(math.Log(float64(g.Hi))-half) > 1e-9 || math.Abs(math.Log(float64(g.Lo))+half) > 1e-9 {
		t.Fatalf("interval [%v, %v], want exp(±%v)", g.Lo, g.Hi, half)
	}
	if n := g.roundsToClear(1); n != -1 {
		t.Fatalf("a geometric mean at the target cleared it in %d rounds", n)
	}
	near, far := geoCI95([]float64{3.1, 3.6, 2.8, 3.3}), geoCI95([]float64{4.1, 4.6, 3.8, 4.3})
	nn, nf := near.roundsToClear(3), far.roundsToClear(3)
	if nf != 0 || nn <= near.Rounds {
		t.Fatalf("rounds to clear 3: %d near it (%v), %d far above it (%v)", nn, near, nf, far)
	}
	b, err := json.Marshal(geoCI95([]float64{2}))
	if err != nil || !strings.Contains(string(b), `"lo":null`) {
		t.Fatalf("one round's JSON %s %v", b, err)
	}
}
