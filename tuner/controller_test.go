package tuner

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"spate/job"
)

const inst = job.InstanceID("count#0")

func testConfig() Config {
	c := DefaultConfig()
	c.PriorMTBF = time.Hour
	c.Cost = CostModel{Base: 100 * time.Millisecond}
	return c
}

// drive feeds a constant rate to one instance for d and returns the last
// decision.
func drive(t *testing.T, c *Controller, from, d time.Duration, rate float64) (Decision, time.Duration) {
	t.Helper()
	var last Decision
	step := c.Config().Every
	now := from
	for now < from+d {
		now += step
		if err := c.ObserveLoad(inst, now, rate*step.Seconds(), step); err != nil {
			t.Fatal(err)
		}
		for _, dec := range c.Tick(now, nil) {
			last = dec
		}
	}
	return last, now
}

func newCtl(t *testing.T, cfg Config) *Controller {
	t.Helper()
	c, err := NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ObserveCapacity(inst, 0, 1000); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestControllerFollowsLoad(t *testing.T) {
	c := newCtl(t, testConfig())
	high, now := drive(t, c, 0, time.Hour, 800)
	low, _ := drive(t, c, now, time.Hour, 50)
	if !(low.Interval > high.Interval) {
		t.Fatalf("interval at low load %v not above that at high load %v", low.Interval, high.Interval)
	}
	// The optimum scales as 1/sqrt(ρ): 4x for 16x less load, at the same
	// failure rate (none observed; the prior and exposure differ a little).
	ratio := low.Optimum.Seconds() / high.Optimum.Seconds()
	fr := math.Sqrt(high.Inputs.FailureRate / low.Inputs.FailureRate)
	if !near(ratio, 4*fr, 0.02) {
		t.Errorf("optimum ratio %.3f, want %.3f", ratio, 4*fr)
	}
	if low.Why != Kept && low.Why != Moved {
		t.Errorf("why %v", low.Why)
	}
	if r := low.Reason(); r == "" || strings.Contains(r, "\n") {
		t.Errorf("reason %q", r)
	}
}

func TestControllerHysteresis(t *testing.T) {
	cfg := testConfig()
	cfg.PriorWeight = 1e6 // a failure rate that does not drift
	c := newCtl(t, cfg)
	_, now := drive(t, c, 0, time.Hour, 400)
	before := c.Interval(inst)
	// ±10% of load moves the optimum by about ±5%: inside the 25% band.
	r := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		now += c.Config().Every
		rate := 400 * (0.9 + 0.2*r.Float64())
		if err := c.ObserveLoad(inst, now, rate*30, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		for _, d := range c.Tick(now, nil) {
			if d.Changed {
				t.Fatalf("interval changed on a small wiggle: %s", d.Reason())
			}
		}
	}
	if c.Interval(inst) != before {
		t.Errorf("interval moved from %v to %v", before, c.Interval(inst))
	}
}

func TestControllerBounds(t *testing.T) {
	t.Run("no input goes to max", func(t *testing.T) {
		c := newCtl(t, testConfig())
		d, _ := drive(t, c, 0, 5*time.Minute, 0)
		if d.Interval != c.Config().Max || d.Why != NoInput {
			t.Errorf("%v %v: %s", d.Interval, d.Why, d.Reason())
		}
	})
	t.Run("max backup caps", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxBackup = 6000 // tuples: 10 s at 600/s
		c := newCtl(t, cfg)
		d, _ := drive(t, c, 0, 10*time.Minute, 600)
		if d.Interval != 10*time.Second || d.Why != Bounded {
			t.Errorf("%v %v: %s", d.Interval, d.Why, d.Reason())
		}
	})
	t.Run("min", func(t *testing.T) {
		cfg := testConfig()
		cfg.Min, cfg.Initial = time.Minute, time.Minute
		cfg.PriorMTBF = time.Minute
		c := newCtl(t, cfg)
		d, _ := drive(t, c, 0, 5*time.Minute, 900)
		if d.Interval != time.Minute {
			t.Errorf("%v: %s", d.Interval, d.Reason())
		}
	})
	t.Run("unknown capacity", func(t *testing.T) {
		c, _ := NewController(testConfig())
		_ = c.ObserveLoad(inst, time.Second, 10, time.Second)
		ds := c.Tick(31*time.Second, nil)
		if len(ds) != 1 || ds[0].Why != Unknown || ds[0].Changed {
			t.Errorf("%+v", ds)
		}
	})
}

func TestControllerFailureRate(t *testing.T) {
	cfg := testConfig()
	cfg.PriorMTBF, cfg.PriorWeight = 10*time.Hour, 2
	c := newCtl(t, cfg)
	if f := c.FailureRate(0); !near(f, 1.0/36000, 1e-12) {
		t.Errorf("prior rate %v", f)
	}
	for i := range 4 {
		if err := c.ObserveFailure(inst, time.Duration(i)*time.Hour, Recovery{Detect: 2 * time.Second, Restart: time.Second, Load: 3 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.ObserveCapacity("count#1", 0, 1000) // a second instance from 0
	// (2 + 4) / (2·36000 + 2·40000)
	if f := c.FailureRate(40000 * time.Second); !near(f, 6.0/152000, 1e-12) {
		t.Errorf("posterior rate %v", f)
	}
	p, ok := c.Estimate(inst, time.Hour)
	if !ok || p.Detect != 2*time.Second || p.Load != 3*time.Second {
		t.Errorf("recovery estimate %+v", p)
	}
	c.Forget("count#1", 40000*time.Second)
	if f := c.FailureRate(40000 * time.Second); !near(f, 6.0/152000, 1e-12) {
		t.Errorf("after Forget: rate %v", f)
	}
	if c.Interval("count#1") != 0 {
		t.Error("forgotten instance still has an interval")
	}
}

func TestControllerCostFit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	t.Run("slope with spread", func(t *testing.T) {
		c := newCtl(t, testConfig())
		for i := range 200 {
			d := 1000 + 9000*r.Float64()
			cost := 0.05 + 1e-5*d // 50 ms + 10 µs/key
			_ = c.ObserveCheckpoint(inst, time.Duration(i)*time.Second, Checkpoint{Tuples: 2 * d, Dirty: d, Cost: seconds(cost * (1 + 0.02*r.NormFloat64()))})
		}
		p, _ := c.Estimate(inst, 0)
		if !near(p.Cost.Base.Seconds(), 0.05, 0.2) || !near(p.Cost.PerKey, 1e-5, 0.1) {
			t.Errorf("fit %v + %v/key", p.Cost.Base, p.Cost.PerKey)
		}
	})
	t.Run("noise without spread is a constant", func(t *testing.T) {
		c := newCtl(t, testConfig())
		for i := range 200 {
			d := 1000 + r.Float64()
			_ = c.ObserveCheckpoint(inst, time.Duration(i)*time.Second, Checkpoint{Tuples: 5000, Dirty: d, Cost: seconds(0.1 * (1 + 0.2*r.NormFloat64()))})
		}
		p, _ := c.Estimate(inst, 0)
		if p.Cost.PerKey != 0 || !near(p.Cost.Base.Seconds(), 0.1, 0.1) {
			t.Errorf("fit %v + %v/key", p.Cost.Base, p.Cost.PerKey)
		}
	})
	t.Run("state size", func(t *testing.T) {
		c := newCtl(t, testConfig())
		cm := CostModel{StateKeys: 3000}
		for i, n := range []float64{500, 2000, 8000, 30000} {
			_ = c.ObserveCheckpoint(inst, time.Duration(i)*time.Second, Checkpoint{Tuples: n, Dirty: cm.Dirty(n), Cost: 100 * time.Millisecond})
		}
		p, _ := c.Estimate(inst, 0)
		if !near(p.Cost.StateKeys, 3000, 1e-6) {
			t.Errorf("state keys %v, want 3000", p.Cost.StateKeys)
		}
	})
}

func TestStateKeysFrom(t *testing.T) {
	for _, s := range []float64{1, 10, 1e3, 1e6} {
		for _, n := range []float64{1, 100, 1e5} {
			d := CostModel{StateKeys: s}.Dirty(n)
			if d >= n*(1-1e-12) {
				continue
			}
			if got := stateKeysFrom(n, d); !near(got, s, 1e-6) {
				t.Errorf("S=%v n=%v: got %v", s, n, got)
			}
		}
	}
	if !math.IsInf(stateKeysFrom(10, 10), 1) {
		t.Error("no repeats is not an unbounded state")
	}
}

func TestControllerEvery(t *testing.T) {
	c := newCtl(t, testConfig()) // first seen at 0
	_ = c.ObserveLoad(inst, time.Second, 100, time.Second)
	if n := len(c.Tick(time.Second, nil)); n != 0 {
		t.Fatalf("%d decisions on 1 s of measurements, want none before Every", n)
	}
	if n := len(c.Tick(30*time.Second, nil)); n != 1 {
		t.Fatalf("%d decisions after Every of measurements", n)
	}
	if n := len(c.Tick(50*time.Second, nil)); n != 0 {
		t.Errorf("%d decisions before Every", n)
	}
	if n := len(c.Tick(61*time.Second, nil)); n != 1 {
		t.Errorf("%d decisions after Every", n)
	}
	if n := len(c.Tick(10*time.Second, nil)); n != 0 { // time going back is ignored
		t.Errorf("%d decisions with time going back", n)
	}
	// A failure is news: the next Tick decides at once.
	if err := c.ObserveFailure(inst, 65*time.Second, Recovery{}); err != nil {
		t.Fatal(err)
	}
	ds := c.Tick(66*time.Second, nil)
	if len(ds) != 1 || ds[0].Own != 1 {
		t.Fatalf("after a failure: %d decisions (%+v), want 1 counting it", len(ds), ds)
	}
	if n := len(c.Tick(70*time.Second, nil)); n != 0 {
		t.Errorf("%d decisions before Every after the failure's", n)
	}
}

// The interval is never below the measured persist time: captures wait
// for the previous checkpoint to be durable.
func TestControllerLowerBoundIsThePersistTime(t *testing.T) {
	cfg := testConfig()
	cfg.Min, cfg.Initial = 100*time.Millisecond, 100*time.Millisecond
	cfg.PriorMTBF, cfg.PriorWeight = 10*time.Second, 1e6 // an optimum far below a second, whatever the exposure
	cfg.Cost = CostModel{Base: time.Millisecond}
	c := newCtl(t, cfg)
	_ = c.ObserveCheckpoint(inst, 0, Checkpoint{Cost: time.Millisecond, Persist: 700 * time.Millisecond})
	d, _ := drive(t, c, 0, 5*time.Minute, 900)
	if d.Interval != 700*time.Millisecond || d.Lower != 700*time.Millisecond || d.Why != Bounded || d.Optimum >= 700*time.Millisecond {
		t.Errorf("%v (lower %v, optimum %v, %v): %s", d.Interval, d.Lower, d.Optimum, d.Why, d.Reason())
	}
}

func TestControllerDeterministic(t *testing.T) {
	run := func() []Decision {
		c := newCtl(t, testConfig())
		var out []Decision
		r := rand.New(rand.NewPCG(9, 9))
		for i := 1; i <= 500; i++ {
			now := time.Duration(i) * 30 * time.Second
			_ = c.ObserveLoad(inst, now, 30*500*(1+math.Sin(float64(i)/50)), 30*time.Second)
			if r.Float64() < 0.02 {
				_ = c.ObserveFailure(inst, now, Recovery{Detect: time.Second})
			}
			_ = c.ObserveCheckpoint(inst, now, Checkpoint{Tuples: 1000, Dirty: 500, Cost: seconds(0.1 + 0.01*r.Float64())})
			out = c.Tick(now, out)
		}
		return out
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatal("different decision counts")
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("decision %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}

func TestControllerErrors(t *testing.T) {
	c := newCtl(t, testConfig())
	for name, err := range map[string]error{
		"negative tuples": c.ObserveLoad(inst, 0, -1, time.Second),
		"zero span":       c.ObserveLoad(inst, 0, 1, 0),
		"NaN tuples":      c.ObserveLoad(inst, 0, math.NaN(), time.Second),
		"before origin":   c.ObserveLoad(inst, -time.Second, 1, time.Second),
		"zero capacity":   c.ObserveCapacity(inst, 0, 0),
		"inf capacity":    c.ObserveCapacity(inst, 0, math.Inf(1)),
		"negative cost":   c.ObserveCheckpoint(inst, 0, Checkpoint{Cost: -1}),
		"NaN dirty":       c.ObserveCheckpoint(inst, 0, Checkpoint{Dirty: math.NaN()}),
		"negative detect": c.ObserveFailure(inst, 0, Recovery{Detect: -1}),
	} {
		if !errors.Is(err, ErrParams) {
			t.Errorf("%s: %v, want ErrParams", name, err)
		}
	}
	for name, mod := range map[string]func(*Config){
		"min":        func(c *Config) { c.Min = 0 },
		"max":        func(c *Config) { c.Max = time.Millisecond },
		"initial":    func(c *Config) { c.Initial = 0 },
		"every":      func(c *Config) { c.Every = 0 },
		"half-life":  func(c *Config) { c.HalfLife = 0 },
		"hysteresis": func(c *Config) { c.Hysteresis = math.NaN() },
		"memory":     func(c *Config) { c.CostMemory = 0 },
		"prior":      func(c *Config) { c.PriorMTBF = 0 },
		"weight":     func(c *Config) { c.PriorWeight = 0 },
		"backup":     func(c *Config) { c.MaxBackup = -1 },
		"detect":     func(c *Config) { c.Detect = -1 },
	} {
		cfg := DefaultConfig()
		mod(&cfg)
		if _, err := NewController(cfg); !errors.Is(err, ErrParams) {
			t.Errorf("config %s: %v, want ErrParams", name, err)
		}
	}
}

func TestWhyString(t *testing.T) {
	for w, want := range map[Why]string{Kept: "kept", Moved: "moved", Bounded: "bounded", NoInput: "no input", Unknown: "unknown", Why(9): "Why(9)"} {
		if got := w.String(); got != want {
			t.Errorf("%d: %q", w, got)
		}
	}
}

// TestControllerInstanceRate: failures that fall on one instance raise its
// own rate above the pooled one and shorten its interval; failures spread
// as evenly as Poisson counts would leave every instance the pooled rate.
func TestControllerInstanceRate(t *testing.T) {
	ids := []job.InstanceID{"count#0", "count#1", "rollup#0", "rollup#1"}
	setup := func(cfg Config) *Controller {
		c, err := NewController(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if err := c.ObserveCapacity(id, 0, 1000); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	cfg := testConfig()
	cfg.PriorMTBF, cfg.PriorWeight = time.Hour, 1
	now := 10 * time.Hour

	t.Run("spread evenly: pooled", func(t *testing.T) {
		c := setup(cfg)
		for i, id := range ids {
			for j := range 3 {
				_ = c.ObserveFailure(id, time.Duration(i+4*j)*time.Hour/2, Recovery{})
			}
		}
		// 12 failures in 40 h: (1 + 12) / (3600 + 4·36000)
		f := c.FailureRate(now)
		if !near(f, 13.0/147600, 1e-12) {
			t.Fatalf("pooled rate %v", f)
		}
		if w := c.InstanceWeight(now); !math.IsInf(w, 1) {
			t.Errorf("weight %v with equal counts, want +Inf", w)
		}
		for _, id := range ids {
			if g := c.InstanceRate(id, now); g != f {
				t.Errorf("%s: rate %v, want the pooled %v", id, g, f)
			}
		}
	})

	t.Run("on one instance", func(t *testing.T) {
		c := setup(cfg)
		for j := range 8 {
			_ = c.ObserveFailure("count#0", time.Duration(j)*time.Hour, Recovery{})
		}
		f := c.FailureRate(now) // (1 + 8) / (3600 + 4·36000)
		if !near(f, 9.0/147600, 1e-12) {
			t.Fatalf("pooled rate %v", f)
		}
		// r = 8/144000; Σx(k/x − r)² = 36000·((8/36000 − r)² + 3r²) = 8·8/36000·3/4 ...
		// computed directly here from the definition:
		r := 8.0 / 144000
		ss := 36000 * (math.Pow(8.0/36000-r, 2) + 3*r*r)
		tau2 := (ss - 3*r) / (144000 - 4*36000.0*36000/144000)
		w := f * f / tau2
		if got := c.InstanceWeight(now); !near(got, w, 1e-9) {
			t.Fatalf("weight %v, want %v", got, w)
		}
		own := (w + 8) / (w/f + 36000)
		other := w / (w/f + 36000)
		if g := c.InstanceRate("count#0", now); !near(g, own, 1e-9) || !(g > 2*f) {
			t.Errorf("count#0 rate %v, want %v (above twice the pooled %v)", g, own, f)
		}
		if g := c.InstanceRate("rollup#1", now); !near(g, other, 1e-9) || !(g < f) {
			t.Errorf("rollup#1 rate %v, want %v (below the pooled %v)", g, other, f)
		}
		// The decisions use them: count#0's interval is the shortest.
		for _, id := range ids {
			_ = c.ObserveLoad(id, now, 100*30, 30*time.Second)
		}
		byID := map[job.InstanceID]Decision{}
		for _, d := range c.Tick(now, nil) {
			byID[d.Instance] = d
		}
		d0, d1 := byID["count#0"], byID["count#1"]
		if !near(d0.Inputs.FailureRate, own, 1e-9) || d0.Own != 8 || d1.Own != 0 {
			t.Fatalf("decision inputs: %s / %s", d0.Reason(), d1.Reason())
		}
		if !(d0.Optimum < d1.Optimum) {
			t.Errorf("count#0 optimum %v not below count#1's %v", d0.Optimum, d1.Optimum)
		}
		if !strings.Contains(d0.Reason(), "8 failures in 10h of its own") {
			t.Errorf("reason %q does not say the instance's own failures", d0.Reason())
		}
	})

	t.Run("fixed weight", func(t *testing.T) {
		fc := cfg
		fc.InstanceWeight = 2
		c := setup(fc)
		_ = c.ObserveFailure("count#1", time.Hour, Recovery{})
		f := c.FailureRate(now)
		if g := c.InstanceRate("count#1", now); !near(g, 3/(2/f+36000), 1e-12) {
			t.Errorf("rate %v", g)
		}
		fc.InstanceWeight = math.Inf(1)
		c = setup(fc)
		_ = c.ObserveFailure("count#1", time.Hour, Recovery{})
		if g := c.InstanceRate("count#1", now); g != c.FailureRate(now) {
			t.Errorf("pooled: rate %v, want %v", g, c.FailureRate(now))
		}
		fc.InstanceWeight = -1
		if _, err := NewController(fc); err == nil {
			t.Error("negative instance weight accepted")
		}
	})
}

// TestControllerCapacityIsARatioOfSums: capacity from ObserveBusy is the
// tuples over the busy time, each span weighted by its busy time, not the
// mean of the spans' own rates.
func TestControllerCapacityIsARatioOfSums(t *testing.T) {
	cfg := testConfig()
	cfg.HalfLife = 1000 * time.Hour // no forgetting over the test: plain sums
	c, err := NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A quiet second: 100 tuples in 1 ms (100,000/s); a busy one: 10,000
	// tuples in 500 ms (20,000/s). Together 10,100 tuples in 501 ms.
	if err := c.ObserveBusy(inst, time.Second, 100, time.Millisecond, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.ObserveBusy(inst, 2*time.Second, 10_000, 500*time.Millisecond, time.Second); err != nil {
		t.Fatal(err)
	}
	p, _ := c.Estimate(inst, 2*time.Second)
	if want := 10_100 / 0.501; !near(p.Capacity, want, 1e-3) {
		t.Errorf("capacity %.0f/s, want %.0f/s (the mean of the two rates would be 60,000/s)", p.Capacity, want)
	}
	// A span with no work leaves the capacity as it was.
	if err := c.ObserveBusy(inst, 3*time.Second, 0, 0, time.Second); err != nil {
		t.Fatal(err)
	}
	if q, _ := c.Estimate(inst, 3*time.Second); !near(q.Capacity, p.Capacity, 1e-3) {
		t.Errorf("capacity after an idle second %.0f, want %.0f", q.Capacity, p.Capacity)
	}
	if err := c.ObserveBusy(inst, 4*time.Second, 1, -time.Second, time.Second); err == nil {
		t.Error("negative busy time accepted")
	}
}

// The smoothed rate is a mean in time from the first observation on: the
// first value weighs its span, not the whole past.
func TestEWMAWeighsTheFirstValueByItsSpan(t *testing.T) {
	var e ewma
	e.add(1000, 1, 30) // a slow first second
	for range 19 {
		e.add(7000, 1, 30)
	}
	// Weights 2^(−k/30) for ages k = 0..19: the first has 2^(−19/30).
	var num, den float64
	for k := range 20 {
		w := math.Pow(2, -float64(k)/30)
		x := 7000.0
		if k == 19 {
			x = 1000
		}
		num += w * x
		den += w
	}
	if !near(e.v, num/den, 1e-12) || e.v < 6600 {
		t.Errorf("mean %.1f, want %.1f", e.v, num/den)
	}
}

// An instance's own upper bound holds its decisions below the config's,
// whatever the model prefers.
func TestSetMaxBoundsOneInstance(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Min, cfg.Max, cfg.Initial, cfg.Every = 100*time.Millisecond, 30*time.Second, time.Second, time.Second
	c, err := NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetMax("sink#0", 0, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 20; s++ {
		at := time.Duration(s) * time.Second
		for _, id := range []job.InstanceID{"count#0", "sink#0"} {
			// a light load, no failures: the model's optimum is long
			_ = c.ObserveLoad(id, at, 100, time.Second)
			_ = c.ObserveBusy(id, at, 100, time.Millisecond, time.Second)
		}
	}
	got := map[job.InstanceID]time.Duration{}
	for _, d := range c.Tick(21*time.Second, nil) {
		got[d.Instance] = d.Interval
	}
	if got["sink#0"] != 5*time.Second || got["count#0"] <= 5*time.Second {
		t.Fatalf("intervals %v: want sink#0 at its own bound of 5s, count#0 above it", got)
	}
}
