package sim

import (
	"context"
	"flag"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"

	"spate/internal/breaks"
)

var huntBreak = flag.String("sim.break", "", "TestHuntABrokenVariant: the variant (spate sim --break list) whose first failing seed to look for, from -sim.from over -sim.seeds seeds (default 200)")

// runOne runs seed of the whole-product nemesis with brk on, in a bubble
// of its own on the virtual clock, as TestSeeds runs a seed.
func runOne(t *testing.T, seed uint64, brk breaks.Set) Result {
	t.Helper()
	root := simRoot(t)
	runtime.GC() // nothing of one bubble left for the next (TestSeeds)
	runtime.GC()
	done := make(chan struct{})
	defer close(done)
	go watchdog(seed, done)
	var r Result
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Wide, cfg.Break = true, brk
		r = Run(context.Background(), seed, cfg, Dir(root, seed))
	})
	return r
}

// TestEachBrokenVariantIsCaught runs, for each variant, a seed found to
// fail with it (the first of seeds 1-200 that did, under spate sim
// --break NAME), and the same seed without it, which passes: the variant
// is what the oracle or the run's own checks catch, not the seed.
func TestEachBrokenVariantIsCaught(t *testing.T) {
	long(t, "two simulated runs per variant")
	for _, tc := range []struct {
		b    breaks.Break
		seed uint64
	}{
		{breaks.TrimNewest, 8},
		{breaks.AcceptFenced, 12},
		{breaks.EarlyCommit, 2},
		{breaks.ReplayLate, 7},
		{breaks.StaleSlice, 7},
	} {
		t.Run(tc.b.String(), func(t *testing.T) {
			if tc.seed == 0 {
				t.Skip("no seed found that fails with it")
			}
			broken := runOne(t, tc.seed, breaks.Of(tc.b))
			if !broken.Failed() {
				t.Errorf("with --break %s: %s", tc.b, broken.Verdict())
			} else {
				t.Log(broken.Verdict())
			}
			if whole := runOne(t, tc.seed, 0); whole.Failed() {
				for _, s := range whole.Steps {
					t.Log(s)
				}
				t.Errorf("without it: %s", whole.Verdict())
			}
		})
	}
}

// TestHuntABrokenVariant looks for the first seed that fails with
// -sim.break NAME on and says how many seeds it took: how quickly the
// nemesis and the oracle catch that mechanism broken.
func TestHuntABrokenVariant(t *testing.T) {
	if *huntBreak == "" {
		t.Skip("-sim.break NAME names the variant to hunt")
	}
	brk, err := breaks.Parse(*huntBreak)
	if err != nil {
		t.Fatal(err)
	}
	n := *seeds
	if n == 0 {
		n = 200
	}
	for seed := *from; seed < *from+uint64(n); seed++ {
		r := runOne(t, seed, brk)
		if r.Failed() {
			for _, s := range r.Steps {
				t.Log(s)
			}
			t.Logf("first failing seed after %d seeds: %s", seed-*from+1, r.Verdict())
			return
		}
		t.Logf("%s", r.Verdict())
	}
	t.Errorf("--break %s: no failing seed in %d seeds from %d", brk, n, *from)
}

// spate sim --break list describes the variants; an unknown name is one
// line naming the flag, exit 2, and runs nothing.
func TestSimBreakFlag(t *testing.T) {
	var out, errs strings.Builder
	if code := Main([]string{"--break", "list"}, &out, &errs); code != 0 {
		t.Fatalf("--break list: exit %d: %s", code, errs.String())
	}
	for _, in := range breaks.List() {
		if !strings.Contains(out.String(), in.Name) {
			t.Errorf("--break list lacks %s", in.Name)
		}
	}
	out.Reset()
	if code := Main([]string{"--break", "trim-oldest", "--seeds", "1"}, &out, &errs); code != 2 || out.Len() > 0 ||
		strings.Count(errs.String(), "\n") != 1 || !strings.Contains(errs.String(), "--break") {
		t.Errorf("--break trim-oldest: exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
}
