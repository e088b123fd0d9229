package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"spate/coord"
	"spate/events"
	"spate/job"
	"spate/state"
	"spate/stores"
)

func TestParseShapes(t *testing.T) {
	type shape struct {
		nodes, count, rollup int
	}
	cases := []struct {
		name, nodes, par string
		want             []shape
		err              string
	}{
		{"the defaults", "4", "", []shape{{4, 2, 2}}, ""},
		{"nodes first, then count", "4,6", "2,4", []shape{{4, 2, 2}, {4, 4, 2}, {6, 2, 2}, {6, 4, 2}}, ""},
		{"OP=N applies to every shape", "4", "2,4,rollup=4", []shape{{4, 2, 4}, {4, 4, 4}}, ""},
		{"count=N as before shapes", "4", "count=4,rollup=4", []shape{{4, 4, 4}}, ""},
		{"repeats are one shape", "4,4", "2,2", []shape{{4, 2, 2}}, ""},
		{"count twice", "4", "2,count=4", nil, "given both"},
		{"one node leaves no survivor", "1", "", nil, "at least 2"},
		{"not a number", "4,x", "", nil, `"x"`},
		{"a bad count", "4", "0", nil, `"0"`},
		{"a bad pair", "4", "rollup=", nil, "rollup="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseShapes(tc.nodes, tc.par)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gs []shape
			for _, s := range got {
				gs = append(gs, shape{s.nodes, s.par["count"], s.par["rollup"]})
			}
			if !reflect.DeepEqual(gs, tc.want) {
				t.Fatalf("shapes = %v, want %v", gs, tc.want)
			}
		})
	}
	sh, _ := parseShapes("6", "4,rollup=4")
	if s, tag := sh[0].String(), sh[0].tag(); s != "6 nodes, count 4, rollup 4" || tag != "n6-c4" {
		t.Fatalf("name %q, tag %q", s, tag)
	}
}

// countLine is a count result as the sink writes it.
func countLine(key string, window int64) []byte {
	r := job.Result{Op: "count", Key: key, Window: window, Count: 1, Sum: 1, Total: 1}
	return r.AppendJSON(nil)
}

// keyIn returns a key of key group g among 128, the i-th one found.
func keyIn(g, i int) string {
	for k := 0; ; k++ {
		key := fmt.Sprintf("k%06d", k)
		if int(job.GroupOf([]byte(key), 128)) == g {
			if i == 0 {
				return key
			}
			i--
		}
	}
}

// TestOutputLogCountsNewResultsOnly: a result written again (a restored
// sink's, a rolled-back job's) is not new; rollup results and lines that
// are not results are not count's output.
func TestOutputLogCountsNewResultsOnly(t *testing.T) {
	l := newOutputLog(128)
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	// Key group 5's keys in firing order: by hash within a window.
	a, b := keyIn(5, 0), keyIn(5, 1)
	if job.Hash([]byte(a)) > job.Hash([]byte(b)) {
		a, b = b, a
	}
	in := func(ms int, line []byte) bool { return l.add(t0.Add(time.Duration(ms)*time.Millisecond), line) }
	for _, c := range []struct {
		ms   int
		line []byte
		ok   bool
	}{
		{100, countLine(a, 0), true},
		{100, countLine(b, 0), true},
		{200, countLine(a, 1000), true},
		{300, countLine(a, 0), true},    // written again: not new
		{300, countLine(b, 0), true},    // again
		{300, countLine(a, 1000), true}, // again
		{300, countLine(b, 1000), true}, // new
		{300, []byte(`{"op":"rollup","key":"g1","window":0,"count":3,"sum":9,"top":[{"key":"k1","count":3}]}`), true},
		{300, []byte(`{"op":"count","key":"k\u00e9","window":2000,"count":1,"sum":1}`), true}, // escaped: through encoding/json
		{300, []byte(`not json`), false},
	} {
		if got := in(c.ms, c.line); got != c.ok {
			t.Errorf("add(%s) = %v, want %v", c.line, got, c.ok)
		}
	}
	k := l.kgs[5]
	want := []int{2, 1, 1}
	if len(k.arrivals) != 3 {
		t.Fatalf("arrivals %+v, want 3", k.arrivals)
	}
	for i, a := range k.arrivals {
		if a.n != want[i] {
			t.Errorf("arrival %d: %d new results, want %d", i, a.n, want[i])
		}
	}
	if len(k.windows) != 2 || k.windows[0].start != 0 || !k.windows[0].last.Equal(t0.Add(100*time.Millisecond)) ||
		k.windows[1].start != 1000 || !k.windows[1].last.Equal(t0.Add(300*time.Millisecond)) {
		t.Errorf("windows %+v", k.windows)
	}
	esc := l.kgs[job.GroupOf([]byte("k\u00e9"), 128)]
	if len(esc.arrivals) != 1 || esc.windows[0].start != 2000 {
		t.Errorf("the escaped key's group: %+v", esc)
	}
}

// TestSinkTailReadsWhatTheFilesGained: lines split across polls are
// taken once whole; files that are not a sink's are left alone.
func TestSinkTailReadsWhatTheFilesGained(t *testing.T) {
	run := t.TempDir()
	out := filepath.Join(run, "output")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	tl := newSinkTail(run, 128)
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tl.poll(t0) // nothing yet
	key := keyIn(7, 0)
	line := countLine(key, 0)
	f, err := os.Create(filepath.Join(out, "sink-0-g1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(filepath.Join(out, "MANIFEST.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Write(line[:10])
	tl.poll(t0.Add(20 * time.Millisecond))
	f.Write(append(line[10:], '\n'))
	f.Write(countLine(keyIn(7, 1), 0)[:5])
	tl.poll(t0.Add(40 * time.Millisecond))
	k := tl.log.kgs[7]
	if len(k.arrivals) != 1 || k.arrivals[0].n != 1 || !k.arrivals[0].at.Equal(t0.Add(40*time.Millisecond)) {
		t.Fatalf("arrivals %+v, want one result at 40ms", k.arrivals)
	}
}

// TestSinkTailReadsTheSegmentsOfASinkInAStore: a sink writing through
// a store (--store coord) keeps its output as segments in the run
// directory; the tail reads each once, in order, a line split over two
// of them whole.
func TestSinkTailReadsTheSegmentsOfASinkInAStore(t *testing.T) {
	run := t.TempDir()
	st, err := state.NewDirStore(filepath.Join(run, "output"))
	if err != nil {
		t.Fatal(err)
	}
	tl := newSinkTail(run, 128)
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	lg := stores.NewLog(st, "sink-0-g1.jsonl")
	line := countLine(keyIn(7, 0), 0)
	lg.Write(line[:10])
	if err := lg.Sync(); err != nil {
		t.Fatal(err)
	}
	tl.poll(t0.Add(20 * time.Millisecond))
	lg.Write(append(line[10:], '\n'))
	if err := lg.Sync(); err != nil {
		t.Fatal(err)
	}
	tl.poll(t0.Add(40 * time.Millisecond))
	tl.poll(t0.Add(60 * time.Millisecond)) // nothing new
	k := tl.log.kgs[7]
	if len(k.arrivals) != 1 || k.arrivals[0].n != 1 || !k.arrivals[0].at.Equal(t0.Add(40*time.Millisecond)) {
		t.Fatalf("arrivals %+v, want one result at 40ms", k.arrivals)
	}
}

// stepLog is a log of key groups that each write n results every window
// (1000 ms), at due + delay(g, window) ms after the job's start.
func stepLog(groups, n, windows int, delay func(g, w int) int) (*outputLog, time.Time) {
	l := newOutputLog(groups)
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for g := range groups {
		k := &l.kgs[g]
		for w := range windows {
			at := start.Add(time.Duration((w+1)*1000+delay(g, w)) * time.Millisecond)
			k.arrivals = append(k.arrivals, arrival{at: at, n: n})
			k.windows = append(k.windows, windowSeen{start: int64(w * 1000), last: at})
		}
	}
	return l, start
}

func TestUntouchedOutput(t *testing.T) {
	touched := []bool{true, false, false, false}
	// The kill at 8500 ms; windows written 100 ms after their end.
	t.Run("a recovery the untouched key groups do not notice", func(t *testing.T) {
		l, start := stepLog(4, 10, 20, func(g, w int) int { return 100 })
		u := untouchedOutput(l, start, 8500, 1000, 1000, 2000, touched)
		want := UntouchedOutput{KeyGroups: 3, Of: 4, SpanS: 1, Rate: 1, MinRate: 1, LateMs: 0, NormalLateMs: 0}
		if u != want {
			t.Fatalf("%+v, want %+v", u, want)
		}
	})
	t.Run("a stall of every key group", func(t *testing.T) {
		// The window due at 9100 comes at 9400: still within the span
		// (8500 to 9500), so the rate holds, but it was 300 ms late.
		stall := func(g, w int) int {
			if w == 8 {
				return 400
			}
			return 100
		}
		l, start := stepLog(4, 10, 20, stall)
		u := untouchedOutput(l, start, 8500, 1000, 1000, 2000, touched)
		if u.Rate != 1 || u.LateMs != 300 || u.NormalLateMs != 0 {
			t.Fatalf("1 s span: %+v; want rate 1 (it came within the span), late 300 ms", u)
		}
		stall = func(g, w int) int {
			if w == 8 {
				return 1200 // past the span
			}
			return 100
		}
		l, start = stepLog(4, 10, 20, stall)
		u = untouchedOutput(l, start, 8500, 1000, 1000, 2000, touched)
		if u.Rate != 0 || u.MinRate != 0 || u.LateMs != 1100 {
			t.Fatalf("a window past the span: %+v, want rate 0, late 1100 ms", u)
		}
	})
	t.Run("windows earlier than usual are on time", func(t *testing.T) {
		early := func(g, w int) int {
			if w >= 7 {
				return 60
			}
			return 100
		}
		l, start := stepLog(4, 10, 20, early)
		if u := untouchedOutput(l, start, 8500, 1000, 1000, 2000, touched); u.LateMs != 0 || u.NormalLateMs != 0 {
			t.Fatalf("%+v, want late 0 and normal 0 (not the unknown -1)", u)
		}
	})
	t.Run("one key group slower", func(t *testing.T) {
		l, start := stepLog(4, 10, 20, func(g, w int) int { return 100 })
		l.kgs[2].arrivals[8].n = 5 // half its results in the window due in the span
		u := untouchedOutput(l, start, 8500, 1000, 1000, 2000, touched)
		if math.Abs(u.Rate-25.0/30) > 1e-9 || u.MinRate != 0.5 {
			t.Fatalf("%+v, want rate 25/30, lowest 0.5", u)
		}
	})
	t.Run("nothing to measure", func(t *testing.T) {
		u := untouchedOutput(nil, time.Time{}, 8500, 1000, 1000, 2000, touched)
		if u.Rate != -1 || u.LateMs != -1 || u.KeyGroups != 3 || !strings.Contains(u.String(), "not measured") {
			t.Fatalf("no log: %+v (%v)", u, u)
		}
		l, start := stepLog(4, 10, 20, func(g, w int) int { return 100 })
		if u := untouchedOutput(l, start, 2500, 1000, 1000, 2000, touched); u.Rate != -1 {
			t.Fatalf("a kill within a window of the warm-up: %+v", u)
		}
	})
}

func TestSpanOf(t *testing.T) {
	for _, c := range []struct {
		rec  float64
		want int64
	}{{0.05, 1000}, {0.99, 1000}, {1.0, 1000}, {1.01, 2000}, {30, 11000}} {
		if got := spanOf(c.rec, 8500, 20000, 1000); got != c.want {
			t.Errorf("spanOf(%v) = %d, want %d", c.rec, got, c.want)
		}
	}
}

// recoveryEvents are a run's events around a kill at 5000 ms of node n3,
// which hosts count#0 and sink#0 of a job of four instances.
func recoveryEvents(at func(int) time.Time, global bool) []events.Event {
	evs := []events.Event{
		{Time: at(0), Kind: events.InstancePlaced, Instance: "source#0", Node: "n1", Fields: events.InstancePlacedFields{Op: "source", Partitions: []int{0}}},
		{Time: at(0), Kind: events.InstancePlaced, Instance: "count#0", Node: "n3", Fields: events.InstancePlacedFields{Op: "count", Ranges: []job.Range{{Lo: 0, Hi: 2}}}},
		{Time: at(0), Kind: events.InstancePlaced, Instance: "count#1", Node: "n4", Fields: events.InstancePlacedFields{Op: "count", Ranges: []job.Range{{Lo: 2, Hi: 4}}}},
		{Time: at(0), Kind: events.InstancePlaced, Instance: "sink#0", Node: "n3", Fields: events.InstancePlacedFields{Op: "sink", Ranges: []job.Range{{Lo: 0, Hi: 1}}}},
	}
	if global {
		return append(evs,
			events.Event{Time: at(3000), Kind: events.Checkpoint, Fields: events.CheckpointFields{ID: 3, Global: true, TookMs: 200}},
			events.Event{Time: at(4000), Kind: events.Checkpoint, Fields: events.CheckpointFields{ID: 4, Global: true, TookMs: 300}},
			events.Event{Time: at(5030), Kind: events.NodeLost, Node: "n3", Fields: events.NodeLostFields{Instances: []job.InstanceID{"sink#0", "count#0"}}},
			events.Event{Time: at(5031), Kind: events.RecoveryPlaced, Node: "n3", Fields: events.RecoveryPlacedFields{Checkpoint: 4, Records: 900}},
			events.Event{Time: at(5200), Kind: events.RecoveryRestored, Fields: events.RecoveryRestoredFields{Checkpoint: 4}},
		)
	}
	return append(evs,
		events.Event{Time: at(4500), Kind: events.Checkpoint, Instance: "count#0", Fields: events.CheckpointFields{ID: 7, TotalUs: 100_000}},
		events.Event{Time: at(4600), Kind: events.Checkpoint, Instance: "sink#0", Fields: events.CheckpointFields{ID: 6}},
		events.Event{Time: at(4800), Kind: events.Checkpoint, Instance: "sink#0", Fields: events.CheckpointFields{ID: 7}},
		// count#0's checkpoint 8, durable as its node died: its
		// completion is seen after the kill, and it is restored.
		events.Event{Time: at(5010), Kind: events.Checkpoint, Instance: "count#0", Fields: events.CheckpointFields{ID: 8, TotalUs: 50_000}},
		events.Event{Time: at(5030), Kind: events.NodeLost, Node: "n3", Fields: events.NodeLostFields{Instances: []job.InstanceID{"count#0", "sink#0"}}},
		events.Event{Time: at(5031), Kind: events.RecoveryPlaced, Instance: "count#0", Node: "n4", Fields: events.RecoveryPlacedFields{Chain: []string{"f", "d1", "d2"}, Gen: 2}},
		events.Event{Time: at(5031), Kind: events.RecoveryPlaced, Instance: "sink#0", Node: "n1", Fields: events.RecoveryPlacedFields{Chain: []string{"f"}, Gen: 2}},
		events.Event{Time: at(5100), Kind: events.RecoveryRestored, Instance: "count#0", Fields: events.RecoveryRestoredFields{Checkpoint: 8, Gen: 2}},
		events.Event{Time: at(5120), Kind: events.RecoveryRestored, Instance: "sink#0", Fields: events.RecoveryRestoredFields{Checkpoint: 6, Gen: 2, Fellback: true}},
		events.Event{Time: at(9000), Kind: events.NodeLost, Node: "n2"}, // taken for lost later
	)
}

func TestRecoveryActsSaysWhatEachConfigurationDid(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	newRun := func(global bool) *run {
		r := &run{info: &coord.RunInfo{JobStart: &start}, killAtMs: 5000, verified: true}
		for _, e := range recoveryEvents(at, global) {
			r.observe(e)
		}
		return r
	}
	t.Run("spate", func(t *testing.T) {
		r := newRun(false)
		lost, restarted, restored, losses, n := recoveryActs(r)
		if !reflect.DeepEqual(lost, []string{"count#0", "sink#0"}) || !reflect.DeepEqual(restarted, lost) || losses != 2 || n != 4 {
			t.Fatalf("lost %v, restarted %v, losses %d, instances %d", lost, restarted, losses, n)
		}
		want := []Restored{
			{Instance: "count#0", Node: "n4", Checkpoint: 8, Files: 3, AgeS: 0.04, Latest: true},
			{Instance: "sink#0", Node: "n1", Checkpoint: 6, Files: 1, AgeS: 0.4, Latest: false, Fellback: true},
		}
		if len(restored) != 2 {
			t.Fatalf("restored %+v", restored)
		}
		for i := range want {
			got := restored[i]
			if math.Abs(got.AgeS-want[i].AgeS) > 1e-9 {
				t.Errorf("%s: age %v, want %v", got.Instance, got.AgeS, want[i].AgeS)
			}
			got.AgeS = want[i].AgeS
			if got != want[i] {
				t.Errorf("restored %+v, want %+v", got, want[i])
			}
		}
		touched := touchedGroups(r, lost, 4)
		if !reflect.DeepEqual(touched, []bool{true, true, false, false}) {
			t.Errorf("touched %v", touched)
		}
		rr := RecoveryRun{Round: 2, FT: "spate", Recovered: true, Verified: true, Lost: lost, Restarted: restarted, Instances: n, Restored: restored, Losses: losses}
		u := rr.unlike()
		for _, w := range []string{"round 2 spate", "2 nodes lost", "sink#0 6", "fallback"} {
			if !strings.Contains(u, w) {
				t.Errorf("unlike %q: no %q", u, w)
			}
		}
		if s := rr.restartedText(); s != "count#0, sink#0 (2 of 4)" {
			t.Errorf("restarted %q", s)
		}
	})
	t.Run("global", func(t *testing.T) {
		r := newRun(true)
		lost, restarted, restored, losses, n := recoveryActs(r)
		if len(lost) != 2 || len(restarted) != 4 || losses != 1 || n != 4 {
			t.Fatalf("lost %v, restarted %v, losses %d", lost, restarted, losses)
		}
		if len(restored) != 1 || restored[0].Instance != "" || restored[0].Checkpoint != 4 || !restored[0].Latest || math.Abs(restored[0].AgeS-1.3) > 1e-9 {
			t.Fatalf("restored %+v, want global checkpoint 4, 1.3 s old (triggered at 3700 ms)", restored)
		}
		rr := RecoveryRun{FT: "global", Recovered: true, Verified: true, Restarted: restarted, Instances: n, Restored: restored, Losses: losses}
		if u := rr.unlike(); u != "" {
			t.Errorf("unlike %q, want like for like", u)
		}
		if s := rr.restartedText() + "; " + rr.restoredText(); s != "all 4 instances; global checkpoint 4 (1.30s old)" {
			t.Errorf("text %q", s)
		}
	})
	if _, re, rs, _, _ := recoveryActs(&run{}); re != nil || rs != nil {
		t.Fatal("a run without a kill restored something")
	}
}

// TestSummariseRatiosByRound: the ratio of the medians, each round's
// ratio (a round missing one side has none), and the runs not like for
// like.
func TestSummariseRatiosByRound(t *testing.T) {
	shr := RecoveryShape{Runs: []RecoveryRun{
		{Round: 1, FT: "spate", RecoveryS: 0.5, Recovered: true, Verified: true, Losses: 1},
		{Round: 1, FT: "global", RecoveryS: 1.0, Recovered: true, Verified: true, Losses: 1},
		{Round: 2, FT: "global", RecoveryS: 1.5, Recovered: true, Verified: true, Losses: 1},
		{Round: 2, FT: "spate", RecoveryS: 0.5, Recovered: true, Verified: true, Losses: 1},
		{Round: 3, FT: "spate", RecoveryS: 0.6, Recovered: false, Verified: true, Losses: 1},
	}}
	summarise(&shr, []string{"spate", "global"}, 3)
	if shr.RecoveryS["spate"] != 0.5 || shr.RecoveryS["global"] != 1.25 || shr.Ratio != 2.5 {
		t.Fatalf("medians %v, ratio %v", shr.RecoveryS, shr.Ratio)
	}
	if shr.RatioRounds[0] != 2 || shr.RatioRounds[1] != 3 || !math.IsNaN(shr.RatioRounds[2]) {
		t.Fatalf("ratio rounds %v", shr.RatioRounds)
	}
	if shr.RatioCI.Rounds != 2 || math.Abs(shr.RatioCI.Mean-2.5) > 1e-9 {
		t.Fatalf("interval %+v", shr.RatioCI)
	}
	if len(shr.Unlike) != 1 || !strings.Contains(shr.Unlike[0], "round 3 spate: never back") {
		t.Fatalf("unlike %v", shr.Unlike)
	}
	if b, err := shr.RatioRounds.MarshalJSON(); err != nil || string(b) != "[2,3,null]" {
		t.Fatalf("ratio rounds JSON %s %v", b, err)
	}
}

// TestRecoveryPageHasEveryShape: the --html page has each shape's
// panels, with the runs of each configuration.
func TestRecoveryPageHasEveryShape(t *testing.T) {
	res := Recovery{Shapes: []RecoveryShape{
		{Name: "4 nodes, count 2", Runs: []RecoveryRun{{FT: "spate", RecoveryS: 0.4, Output: UntouchedOutput{Rate: 0.98}}, {FT: "global", RecoveryS: 0.8, Output: UntouchedOutput{Rate: -1}}}},
		{Name: "6 nodes, count 4", Runs: []RecoveryRun{{FT: "spate", RecoveryS: 0.3}, {FT: "global", RecoveryS: 0.9}}},
	}}
	ps := recoveryPanels(res, []string{"spate", "global"})
	if len(ps) != 6 || !strings.HasPrefix(ps[3].Title, "6 nodes, count 4") {
		t.Fatalf("%d panels, the fourth %q", len(ps), ps[3].Title)
	}
	if out := ps[2]; len(out.Values[0]) != 1 || len(out.Values[1]) != 0 {
		t.Fatalf("untouched output panel %+v: an unmeasured run is left out", out.Values)
	}
	page := filepath.Join(t.TempDir(), "rec.html")
	if err := writeHTML(page, "spate bench recovery", Meta{}, ps); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(page)
	if !strings.Contains(string(b), "6 nodes, count 4: records replayed") {
		t.Fatal("the page lacks the second shape's panel")
	}
}

// TestTargetsNeedTheInterval: a ratio of medians carried by one slow
// round does not meet a target; the rounds' interval must as well.
func TestTargetsNeedTheInterval(t *testing.T) {
	shape := func(ratio float64, rounds ...float64) RecoveryShape {
		return RecoveryShape{Name: "4 nodes, count 4", Nodes: 4, Parallelism: map[string]int{"count": 4}, Ratio: ratio,
			RatioCI: ci95(rounds, ratioWidth), RatioGeo: geoCI95(rounds), Output: map[string]UntouchedOutput{"spate": {Rate: 0.95, MinRate: 0.9}}}
	}
	for _, c := range []struct {
		sh   RecoveryShape
		want string
	}{
		{shape(4.9, 1.9, 0.9, 2.0, 1.1, 12.7), "global/spate >= 3: not shown (the ratio of the medians is, the rounds' intervals are not; no number of rounds would show the geometric mean's: it is 2.17)"},
		{shape(3.35, 5.94, 10.86, 8.84, 0.80, 2.96, 2.09, 2.77, 1.73, 4.82, 2.14), "at this spread about 335 rounds would show"},
		{shape(3.5, 3.4, 3.6, 3.5, 3.5), "global/spate >= 3: met"},
		{shape(3.5, 3.5), "global/spate >= 3: not shown (the ratio of the medians is, the rounds' intervals are not) (3.50"},
		{shape(2.0, 2.0, 2.1), "global/spate >= 3: NOT met"},
	} {
		var b strings.Builder
		printTargets(&b, Recovery{Shapes: []RecoveryShape{c.sh}})
		if !strings.Contains(b.String(), c.want) || !strings.Contains(b.String(), "output during a spate recovery >= 90% of before: met") {
			t.Errorf("ratio %v %v: %q, want %q", c.sh.Ratio, c.sh.RatioCI, b.String(), c.want)
		}
	}
}
