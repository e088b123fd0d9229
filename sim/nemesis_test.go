package sim

import (
	"bytes"
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
)

func wide(only map[string]string) Config {
	cfg := DefaultConfig()
	cfg.Wide, cfg.Only = true, only
	return cfg
}

func TestTheWidePlanIsAPureFunctionOfTheSeed(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		a, b := Plan(seed, wide(nil)), Plan(seed, wide(nil))
		if !reflect.DeepEqual(a, b) || len(a) == 0 {
			t.Fatalf("seed %d: plans differ or are empty:\n%v\n%v", seed, a, b)
		}
		if x, y := Resolve(seed, wide(nil)), Resolve(seed, Resolve(seed, wide(nil))); !reflect.DeepEqual(x, y) {
			t.Fatalf("seed %d: Resolve is not idempotent: %+v, %+v", seed, x, y)
		}
	}
}

// Pinning an axis leaves the seed's other axes, and, but for ft (which
// chooses the table), its schedule as the seed drew them.
func TestPinningAnAxisMovesNothingElse(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		free := drawAxes(seed, nil)
		for _, ax := range axes {
			for _, v := range ax.values {
				got := drawAxes(seed, map[string]string{ax.name: v})
				want := Axes{}
				for k, x := range free {
					want[k] = x
				}
				want[ax.name] = v
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d, %s=%s: %v, want %v", seed, ax.name, v, got, want)
				}
			}
		}
		ft := free["ft"]
		a := Plan(seed, wide(map[string]string{"ft": ft, "store": "mem", "source": "gen"}))
		b := Plan(seed, wide(map[string]string{"ft": ft, "store": "coord", "source": "trace"}))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: the store and source axes moved the schedule:\n%v\n%v", seed, a, b)
		}
	}
}

func TestEveryAxisValueIsDrawn(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(1); seed <= 300; seed++ {
		for k, v := range drawAxes(seed, nil) {
			seen[k+"="+v]++
		}
	}
	for _, ax := range axes {
		for _, v := range ax.values {
			if seen[ax.name+"="+v] == 0 {
				t.Errorf("%s=%s: never drawn in 300 seeds", ax.name, v)
			}
		}
	}
}

// kindOf names a step's fault finely enough to tell every fault of the
// DSL apart.
func kindOf(a Step) string {
	x := a.Action
	switch x.Verb {
	case "partition":
		switch {
		case x.Args["groups"] != "":
			return "partition groups"
		case x.Args["oneway"] == "true":
			return "partition one-way"
		case x.Args["shape"] != "":
			return "partition " + x.Args["shape"]
		}
		return "isolate"
	case "link":
		for _, k := range []string{"latency", "bandwidth", "stall", "reset"} {
			if x.Args[k] != "" {
				return "link " + k
			}
		}
	case "store":
		for _, k := range []string{"slow", "fail", "corrupt"} {
			if x.Args[k] != "" {
				return "store " + k
			}
		}
	case "pause", "crash":
		return x.Verb + " " + x.Target
	}
	return x.Verb
}

func TestTheWideNemesisDrawsEveryFaultOfTheDSL(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(1); seed <= 2000; seed++ {
		for _, s := range Plan(seed, wide(nil)) {
			seen[kindOf(s)]++
		}
	}
	for _, k := range []string{"kill", "restart", "isolate", "partition one", "partition majority", "partition bridge",
		"partition one-way", "partition groups", "link latency", "link bandwidth", "link stall", "link reset",
		"store slow", "store fail", "store corrupt", "scale", "heal", "pause coord", "crash coord", "drain"} {
		if seen[k] == 0 {
			t.Errorf("%s: never drawn in 2000 seeds (drawn: %v)", k, seen)
		}
	}
}

// An --ft none seed is checked for what none promises: either every
// fault of its schedule is one none survives, or the verdict says it was
// not checked. Both kinds occur.
func TestNoneSeedsDrawWhatNoneSurvivesOrAreNotChecked(t *testing.T) {
	benign, destructive := 0, 0
	for seed := uint64(1); seed <= 400; seed++ {
		cfg := wide(map[string]string{"ft": "none"})
		steps := Plan(seed, cfg)
		for _, s := range steps {
			if k := kindOf(s); k == "crash coord" {
				t.Fatalf("seed %d: a crash of the coordinator under --ft none, which cannot resume: %v", seed, s)
			}
		}
		if LosesState(steps, cfg.Timeout) {
			destructive++
		} else {
			benign++
		}
	}
	if benign < 100 || destructive < 100 {
		t.Fatalf("400 none seeds: %d checked 0/0/0, %d checked only to finish; want both often", benign, destructive)
	}
	r := Result{Seed: 3, Axes: Axes{"ft": "none"}, Unchecked: true, Lost: 10}
	if r.Failed() || !strings.Contains(r.Verdict(), "not checked for exactly-once") {
		t.Fatalf("an unchecked none seed with losses: failed %v, verdict %q", r.Failed(), r.Verdict())
	}
	if r.Err = "the drain did not end"; !r.Failed() {
		t.Fatal("an unchecked none seed that did not finish passed")
	}
}

func TestOnlyNamesABadAxisOrValue(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"fx=global", `--only: "fx" is not an axis`},
		{"ft=sometimes", `--only: ft="sometimes" is not one of spate, global, none`},
		{"ft", `--only: "ft" is not axis=value`},
		{"store=dir,store=mem", "--only: store given twice"},
	} {
		var out, errb bytes.Buffer
		code := Main([]string{"--only", tc.arg}, &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code != 2 || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("--only %s: exit %d, %q; want 2 and one line with %q", tc.arg, code, msg, tc.want)
		}
	}
	got, err := ParseOnly("ft=global,rescale=restart")
	if err != nil || !reflect.DeepEqual(got, map[string]string{"ft": "global", "rescale": "restart"}) {
		t.Fatalf("ParseOnly: %v, %v", got, err)
	}
	for seed := uint64(1); seed <= 50; seed++ {
		if c := Resolve(seed, wide(got)); c.FT != "global" || c.Rescale != "restart" {
			t.Fatalf("seed %d: pinned ft=global rescale=restart, resolved %s %s", seed, c.FT, c.Rescale)
		}
	}
}

func TestTheSummaryCountsSeedsPerAxisValue(t *testing.T) {
	rs := []Result{
		{Seed: 1, Axes: drawAxes(1, map[string]string{"ft": "global", "store": "coord"})},
		{Seed: 2, Axes: drawAxes(2, map[string]string{"ft": "global", "store": "dir"}), Lost: 3},
		{Seed: 3, Axes: drawAxes(3, map[string]string{"ft": "none", "store": "dir"})},
	}
	c := countAxes(rs)
	if *c["ft"]["global"] != (AxisCount{2, 1}) || *c["ft"]["none"] != (AxisCount{1, 0}) || *c["ft"]["spate"] != (AxisCount{}) {
		t.Errorf("ft: %+v %+v %+v", *c["ft"]["spate"], *c["ft"]["global"], *c["ft"]["none"])
	}
	if *c["store"]["dir"] != (AxisCount{2, 1}) || *c["store"]["coord"] != (AxisCount{1, 0}) {
		t.Errorf("store: %+v %+v", *c["store"]["dir"], *c["store"]["coord"])
	}
	lines := axisLines(c)
	if len(lines) != len(axes) || lines[0] != "  ft: spate 0 (0 failed), global 2 (1 failed), none 1 (0 failed)" {
		t.Errorf("lines: %q", lines)
	}
}

// TestTheProductsOtherConfigurations runs a kill, a partition of every
// shape, link faults and store faults in the configurations the random
// draw reaches seldom together: the coordinator's store with a trace
// source and the auto-scaler; the run directory under --ft global; a
// benign --ft none run, checked 0/0/0.
func TestTheProductsOtherConfigurations(t *testing.T) {
	long(t, "simulated runs")
	faults := []Step{
		{At: ms(1500), Action: act("link", "count/0", "latency", "40ms", "jitter", "10ms", "for", "1s")},
		{At: ms(2500), Action: act("partition", "", "groups", "n1,n3|n2,n4", "oneway", "true", "for", "600ms")},
		{At: ms(3200), Action: act("kill", "count/1")},
		{At: ms(4000), Action: act("partition", "", "shape", "bridge", "for", "1500ms")},
		{At: ms(5200), Action: act("store", "rollup/0", "slow", "150ms", "for", "1s")},
		{At: ms(6000), Action: act("heal", "")},
	}
	// A link reset under --ft global loses what was in flight (the
	// sender keeps no backup to replay on the reconnect, and no rollback
	// follows): open, reported with issue 41; the spate case draws it.
	reset := append([]Step{{At: ms(5600), Action: act("link", "sink/0", "reset", "true", "for", "200ms")}}, faults...)
	benign := []Step{
		{At: ms(1500), Action: act("link", "count/0", "latency", "40ms", "jitter", "10ms", "for", "1s")},
		{At: ms(3000), Action: act("link", "rollup/1", "bandwidth", "512KiB/s", "for", "2s")},
		{At: ms(4500), Action: act("store", "count/1", "slow", "200ms", "for", "1s")},
		{At: ms(6000), Action: act("link", "source/0", "stall", "true", "for", "300ms")},
	}
	for _, tc := range []struct {
		name  string
		only  map[string]string
		steps []Step
	}{
		{"store coord, trace, autoscale", map[string]string{"ft": "spate", "store": "coord", "source": "trace", "autoscale": "on", "rescale": "live"}, reset},
		{"store dir, ft global", map[string]string{"ft": "global", "store": "dir", "source": "gen", "autoscale": "off"}, faults},
		{"ft none, benign", map[string]string{"ft": "none", "store": "mem", "source": "gen", "autoscale": "off"}, benign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := simRoot(t)
			for seed := uint64(1); seed <= 2; seed++ {
				runtime.GC()
				runtime.GC()
				synctest.Test(t, func(t *testing.T) {
					cfg := wide(tc.only)
					cfg.Schedule = append(append([]Step(nil), tc.steps...), Step{At: cfg.Duration, Action: act("drain", "")})
					r := Run(context.Background(), seed, cfg, Dir(root, seed))
					if r.Failed() || r.Unchecked || r.Windows == 0 {
						t.Errorf("seed %d: %s (unchecked %v; steps: %q)", seed, r.Verdict(), r.Unchecked, r.Steps)
					}
				})
			}
		})
	}
}

// TestALiveRescaleAcrossTheEndOfAFiniteSource: a trace source ends (6 s
// of job time) while a live rescale of count is in flight. When a source
// ended its streams at the end of its input, the instances ended theirs
// with the moving range captured by the old owner and loaded by the new
// one after both had ended: its windows from the capture on were lost or
// wrong (seeds 255 and 327 of the wide nemesis). A source now holds the
// end of its input until the drain, which the coordinator starts once
// every source is at its end and which waits for the rescale.
func TestALiveRescaleAcrossTheEndOfAFiniteSource(t *testing.T) {
	long(t, "simulated runs")
	only := map[string]string{"ft": "spate", "rescale": "live", "store": "dir", "source": "trace", "autoscale": "off", "recover": "single"}
	shapes := []shape{{name: "seed 255's schedule", steps: []Step{
		{At: ms(1902), Action: act("partition", "", "shape", "bridge", "for", "751ms")},
		{At: ms(3603), Action: act("store", "source/1", "fail", "true", "for", "772ms")},
		{At: ms(5456), Action: act("partition", "", "shape", "majority", "for", "561ms")},
		{At: ms(5609), Action: act("scale", "count", "n", "1")},
		{At: ms(5888), Action: act("store", "sink/0", "fail", "true", "for", "629ms")},
	}}}
	runShapes(t, wide(only), shapes)
}

// knownFailingWide are seeds of the whole-product nemesis (TestSeeds'
// -wide runs) that find bugs not fixed yet, with the class of each.
// TestSeeds skips them unless -sim.known.
var knownFailingWide = map[uint64]string{}

// wideRegressions are seeds of the whole-product nemesis that found a bug,
// each run by TestSeeds under it whatever -sim.seeds says.
var wideRegressions = []uint64{
	50,   // a restart rescale of rollup, then a coordinator crash: 62 lost (the restart's phase in the durable record)
	413,  // a restart rescale of rollup 2→1 among kills and restarts: 866 lost (the restart's moved key groups as moved slices)
	584,  // a restart rescale of count 2→1, a partition past the timeout, a coordinator crash: 2,387 lost, 1,055 wrong
	134,  // the auto-scaler under --ft global: invariant I4 (it now asks scale's rules)
	338,  // the same
	442,  // the same
	533,  // the same
	660,  // the same
	250,  // the auto-scaler under --ft global: 321 lost
	255,  // a live rescale across the end of a finite source: 353 lost, 154 wrong (the end held for the drain)
	327,  // the same, then a restart: 61 lost, 134 wrong, or the drain waited for ever
	1794, // --ft none: a drained count's end of stream held by a partition, its node killed: the sink waited for ever
	1936, // a scale-in of count 3→1 whose receiver had a backlog: a watermark queued from a replaced connection passed the replay (493 lost, 2,928 wrong)
	523,  // the same class, by the auto-scaler among kills under --recover parallel
	941,  // the same over a trace
	1666, // the same with --store coord over a trace
	1910, // a restart rescale after a parallel recovery: a stream accepted by the generation the restart replaced, the drain waited for ever
	33,   // a restart rescale of rollup as the trace ended: the drain waited for the restart's catch-up, which needed the drain
	205,  // the same, among partitions and lost nodes
	816,  // the auto-scaler's count 1→2 after a trace ended: the sources' final watermark, said on the replaced connections, outlived the unhold (about 140 lost, 350 wrong)
}

// TestALinkResetUnderGlobal: one link reset on sink/0's node under --ft
// global. The nodes redial and the links reconnect with the resume
// handshake, but under global only a source replays to the positions its
// downstream gives back: a keyed sender keeps no backup, so what count
// and rollup had sent on the closed connections was lost, and no global
// rollback followed, since no node was lost (5 of 8 runs lost or got
// wrong results). A keyed sender now reports the gap (CtlGap) and the
// coordinator rolls the whole job back.
func TestALinkResetUnderGlobal(t *testing.T) {
	long(t, "simulated runs")
	only := map[string]string{"ft": "global", "store": "mem", "source": "gen", "autoscale": "off", "recover": "single", "rescale": "live"}
	runShapes(t, wide(only), []shape{{name: "a reset of sink/0's links", steps: []Step{
		{At: ms(5600), Action: act("link", "sink/0", "reset", "true", "for", "200ms")},
	}}})
}
