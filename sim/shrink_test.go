package sim

import (
	"context"
	"flag"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// steps is a schedule of named kills, one a second from 1s: the names
// are the targets, so that a fake predicate can find them.
func steps(names ...string) []Step {
	var out []Step
	for i, n := range names {
		out = append(out, Step{At: time.Duration(i+1) * time.Second, Action: act("kill", n)})
	}
	return out
}

func targets(s []Step) []string {
	var out []string
	for _, st := range s {
		out = append(out, st.Action.Target)
	}
	return out
}

// aBeforeB fails iff the steps hold A and, strictly later, B.
func aBeforeB(s []Step) bool {
	a := slices.IndexFunc(s, func(st Step) bool { return st.Action.Target == "A" })
	b := slices.IndexFunc(s, func(st Step) bool { return st.Action.Target == "B" })
	return a >= 0 && b > a && s[a].At < s[b].At
}

func TestShrinkKeepsTheTwoStepsThatFailTogether(t *testing.T) {
	for _, tc := range [][]string{
		{"A", "B"},
		{"x1", "A", "x2", "x3", "B", "x4"},
		{"A", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "B"},
		{"x1", "x2", "x3", "x4", "x5", "A", "B", "x6", "x7"},
		{"B", "x1", "A", "x2", "B"}, // only the second B counts
	} {
		calls := 0
		got, n := ShrinkSteps(steps(tc...), 20*time.Second, func(s []Step) bool { calls++; return aBeforeB(s) })
		if !reflect.DeepEqual(targets(got), []string{"A", "B"}) || !aBeforeB(got) {
			t.Errorf("%v: shrunk to %v", tc, got)
		}
		if n != calls {
			t.Errorf("%v: says %d runs, made %d", tc, n, calls)
		}
		// Delta debugging: about 2k log n removals, and three moves a step.
		if limit := 4*len(tc) + 8; n > limit {
			t.Errorf("%v: %d runs, want at most %d", tc, n, limit)
		}
		// Both moved later: A toward B, B toward the end.
		if a := time.Duration(slices.Index(tc, "A")+1) * time.Second; got[0].At <= a || got[1].At <= time.Duration(len(tc))*time.Second {
			t.Errorf("%v: not moved later: %v", tc, got)
		}
	}
}

func TestShrinkStepsMovesLaterOnlyWhileItFails(t *testing.T) {
	// fails while the kill comes before 5s: moved halfway to the end (10s)
	// it passes, so it stays where it was.
	s := []Step{{At: 2 * time.Second, Action: act("kill", "A")}}
	got, _ := ShrinkSteps(s, 10*time.Second, func(s []Step) bool { return len(s) == 1 && s[0].At < 5*time.Second })
	if len(got) != 1 || got[0].At != 2*time.Second {
		t.Fatalf("got %v: want the kill left at 2s (6s passes)", got)
	}
	// fails while before 9s: 2s → 6s → 8s, then 9s passes.
	got, _ = ShrinkSteps(s, 10*time.Second, func(s []Step) bool { return len(s) == 1 && s[0].At < 9*time.Second })
	if len(got) != 1 || got[0].At != 8*time.Second {
		t.Fatalf("got %v: want the kill moved to 8s", got)
	}
}

func TestShrinkToNothingWhenEverythingFails(t *testing.T) {
	got, n := ShrinkSteps(steps("a", "b", "c", "d"), 10*time.Second, func([]Step) bool { return true })
	if len(got) != 0 || got == nil || n != 1 {
		t.Fatalf("got %v in %d runs: want an empty (not nil: Run would draw the seed's) schedule in 1", got, n)
	}
}

func TestShrinkShortensTheDuration(t *testing.T) {
	f := ScheduleFile{Seed: 1, Duration: 8 * time.Second, Steps: steps("x", "A", "y")}
	// fails iff A is there and the run is at least 5.5s long
	fails := func(g ScheduleFile) bool {
		return slices.Contains(targets(g.Steps), "A") && g.Duration >= 5500*time.Millisecond
	}
	calls := 0
	got, n := Shrink(f, func(g ScheduleFile) bool { calls++; return fails(g) })
	if !reflect.DeepEqual(targets(got.Steps), []string{"A"}) || got.Duration < 5500*time.Millisecond || got.Duration > 5750*time.Millisecond {
		t.Fatalf("got %+v: want A alone in a run of 5.5s to 5.75s", got)
	}
	if !fails(got) || n != calls {
		t.Fatalf("the result does not fail, or %d runs said for %d", n, calls)
	}
	// Only a step's own time bounds the duration from below.
	f = ScheduleFile{Seed: 1, Duration: 8 * time.Second, Steps: []Step{{At: 6 * time.Second, Action: act("kill", "A")}}}
	got, _ = Shrink(f, func(g ScheduleFile) bool { return len(g.Steps) == 1 })
	if got.Duration != 6200*time.Millisecond || got.Steps[0].At <= 6*time.Second || got.Steps[0].At > got.Duration {
		t.Fatalf("got %+v: want the run cut to 6.2s, the kill moved later within it", got)
	}
	// Nothing is tried twice.
	seen := map[string]bool{}
	Shrink(ScheduleFile{Seed: 1, Duration: 8 * time.Second, Steps: steps("a", "A", "b", "B", "c")}, func(g ScheduleFile) bool {
		k := g.Format()
		if seen[k] {
			t.Fatalf("tried twice:\n%s", k)
		}
		seen[k] = true
		return aBeforeB(g.Steps)
	})
}

// ShrinkRuns counts a schedule failing if one of tries runs fails as the
// start did, and reports the failure it keeps.
func TestShrinkRunsTriesEachScheduleUpToKTimes(t *testing.T) {
	start := ScheduleFile{Seed: 3, Duration: 4 * time.Second, Steps: steps("x", "A", "y")}
	runs := map[string]int{}
	run := func(g ScheduleFile) Result {
		k := g.Format()
		runs[k]++
		r := Result{Seed: 3}
		switch {
		case !slices.Contains(targets(g.Steps), "A"):
		case len(g.Steps) == 1 && runs[k] < 3: // A alone fails in its third run only
		case len(g.Steps) == 0:
		default:
			r.Lost = len(g.Steps)
		}
		if len(g.Steps) == 2 {
			r.Err = "the run did not finish" // another failure: not the one kept
		}
		return r
	}
	s := ShrinkRuns(context.Background(), start, 3, run, nil)
	if !s.Failed || !reflect.DeepEqual(targets(s.File.Steps), []string{"A"}) || s.Kept.Lost != 1 {
		t.Fatalf("got %+v: want A alone, kept with 1 lost", s)
	}
	total := 0
	for _, n := range runs {
		total += n
	}
	if s.Runs != total || s.Tried != len(runs) {
		t.Fatalf("says %d runs of %d schedules, made %d of %d", s.Runs, s.Tried, total, len(runs))
	}
	// With one try, A alone passes: the shortest is the start.
	runs = map[string]int{}
	s = ShrinkRuns(context.Background(), start, 1, run, nil)
	if len(s.File.Steps) != 3 {
		t.Fatalf("with 1 try: %v, want the start's three steps", targets(s.File.Steps))
	}
	// A start that passes has nothing to shrink.
	s = ShrinkRuns(context.Background(), ScheduleFile{Seed: 1, Steps: steps("x")}, 2, run, nil)
	if s.Failed || s.Runs != 2 {
		t.Fatalf("a passing start: %+v", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s = ShrinkRuns(ctx, start, 1, run, nil); s.Runs != 0 || s.Failed {
		t.Fatalf("an ended context: %+v", s)
	}
}

// A kill under --ft none loses the killed node's state, and the narrow
// configuration checks it (only the whole product's none seeds are
// Unchecked): the schedule fails, and shrinking it leaves the kill alone,
// the faults none survives (latency, a slow store, a bandwidth limit, a
// heal) removed.
func TestShrinkLeavesTheKillThatLosesState(t *testing.T) {
	long(t, "about 20 simulated runs")
	cfg := DefaultConfig()
	cfg.FT = "none"
	start := ScheduleFile{Seed: 1, Duration: 5 * time.Second, Steps: []Step{
		{At: ms(1000), Action: act("link", "n2", "latency", "20ms", "jitter", "5ms", "for", "500ms")},
		{At: ms(1500), Action: act("store", "count/1", "slow", "50ms", "for", "1s")},
		{At: ms(2500), Action: act("kill", "count/0")},
		{At: ms(3000), Action: act("link", "rollup/0", "bandwidth", "4MB/s", "for", "1s")},
		{At: ms(3500), Action: act("heal", "")},
	}}
	start.Steps[2].Action.Args, start.Steps[4].Action.Args = nil, nil
	root := simRoot(t)
	run := func(g ScheduleFile) Result {
		c := cfg
		c.Duration, c.Schedule = g.Duration, append([]Step{}, g.Steps...)
		runtime.GC()
		runtime.GC()
		done := make(chan struct{})
		defer close(done)
		go watchdog(g.Seed, done)
		var r Result
		synctest.Test(t, func(t *testing.T) { r = Run(context.Background(), g.Seed, c, Dir(root, g.Seed)) })
		return r
	}
	s := ShrinkRuns(context.Background(), start, 1, run, func(tried int, g ScheduleFile, failed bool, r Result) {
		t.Logf("schedule %d: %v, %v: %s", tried, targets(g.Steps), g.Duration, r.Verdict())
	})
	if !s.Failed {
		t.Fatal("the kill under --ft none did not fail: nothing to shrink")
	}
	if len(s.File.Steps) != 1 || s.File.Steps[0].Action.String() != "kill count/0" || s.File.Steps[0].At < ms(2500) {
		t.Fatalf("shrunk to %v: want the kill of count/0 alone, at 2.5s or later", s.File.Steps)
	}
	if !s.Kept.Failed() || s.Kept.Lost == 0 || s.File.Duration > start.Duration {
		t.Fatalf("kept %s, duration %v: want a run that lost windows, no longer than the start's", s.Kept.Verdict(), s.File.Duration)
	}
	t.Logf("%d runs, %d schedules: %v in %v; %s", s.Runs, s.Tried, s.File.Steps, s.File.Duration, s.Kept.Verdict())
}

// --shrink prints the shortest failing schedule as a file --schedule
// reads, with the runs it took and the failure it keeps.
func TestShrinkPrintsAScheduleFile(t *testing.T) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	sf := newScheduleFlags(fs)
	if err := fs.Parse([]string{"--shrink", "--tries", "2"}); err != nil {
		t.Fatal(err)
	}
	start := ScheduleOf(135, wide(nil))
	victim := start.Steps[len(start.Steps)-1]
	run := func(g ScheduleFile) Result {
		r := Result{Seed: 135, Windows: 100}
		if slices.ContainsFunc(g.Steps, func(s Step) bool { return s.Action.String() == victim.Action.String() }) {
			r.Lost, r.Steps = 7, []string{"the answers"}
		}
		return r
	}
	var out, errb strings.Builder
	code := sf.shrinkMain(context.Background(), start, DefaultConfig(), run, &out, &errb, func(s string) int { out.WriteString(s); return 0 })
	f, err := ParseSchedule("stdout", []byte(out.String()))
	if code != 1 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out.String())
	}
	if len(f.Steps) != 1 || f.Steps[0].Action.String() != victim.Action.String() || !reflect.DeepEqual(f.Axes, start.Axes) || f.Seed != 135 {
		t.Fatalf("printed\n%s\nwant %v alone, with seed 135's axes", out.String(), victim)
	}
	for _, want := range []string{"# spate sim --shrink: seed 135, ", "runs (", "each run up to 2 times", "the failure it keeps: seed 135: FAIL", "7 lost, 0 duplicated, 0 wrong"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if !strings.Contains(errb.String(), "shrink: schedule 1: ") {
		t.Errorf("no progress on stderr: %q", errb.String())
	}
}
