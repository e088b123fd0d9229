package tuner

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

func TestYoungDaly(t *testing.T) {
	cost := 5 * time.Minute
	for _, tc := range []struct {
		name        string
		mtbf        time.Duration
		young, daly float64 // minutes
	}{
		{"24h", 24 * time.Hour, 120, 116.7},
		{"6h", 6 * time.Hour, 60, 56.7},
		{"15m", 15 * time.Minute, 12.247, 9.14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if y := Young(cost, tc.mtbf).Minutes(); !near(y, tc.young, 5e-4) {
				t.Errorf("Young(5m, %v) = %.4g min, want %.4g", tc.mtbf, y, tc.young)
			}
			if d := Daly(cost, tc.mtbf).Minutes(); math.Abs(d-tc.daly) > 0.05 {
				t.Errorf("Daly(5m, %v) = %.4g min, want %.4g", tc.mtbf, d, tc.daly)
			}
		})
	}
	t.Run("C>=2M gives M", func(t *testing.T) {
		for _, m := range []time.Duration{150 * time.Second, 2 * time.Minute, time.Minute} {
			if d := Daly(cost, m); d != m {
				t.Errorf("Daly(5m, %v) = %v, want %v", m, d, m)
			}
		}
	})
	t.Run("not positive", func(t *testing.T) {
		for _, c := range [][2]time.Duration{{0, time.Hour}, {time.Second, 0}, {-time.Second, time.Hour}} {
			if Young(c[0], c[1]) != 0 || Daly(c[0], c[1]) != 0 {
				t.Errorf("Young/Daly(%v, %v) not 0", c[0], c[1])
			}
		}
	})
}

// Daly's estimate approximates the minimiser of his complete model, whose
// wall time per unit of work is proportional to (e^((τ+δ)/M) − 1)/τ. Check
// the implementation against a numerical minimisation of that model.
func TestDalyNearExactOptimum(t *testing.T) {
	for _, tc := range []struct {
		c, m float64 // minutes
		tol  float64
	}{{5, 1440, 1e-5}, {5, 360, 1e-4}, {5, 60, 1e-3}, {5, 15, 5e-3}} {
		f := func(tau float64) float64 { return math.Expm1((tau+tc.c)/tc.m) / tau }
		lo, hi := 1e-6, tc.m*10
		for range 200 { // golden section on a unimodal function
			a, b := lo+(hi-lo)*0.382, lo+(hi-lo)*0.618
			if f(a) < f(b) {
				hi = b
			} else {
				lo = a
			}
		}
		exact := (lo + hi) / 2
		got := dalySec(tc.c, tc.m)
		if !near(got, exact, tc.tol) {
			t.Errorf("C=%vm M=%vm: Daly %.4g, exact optimum of Daly's model %.4g", tc.c, tc.m, got, exact)
		}
	}
}

func baseParams() Params {
	return Params{
		Rate:        500,
		Capacity:    1000,
		Cost:        CostModel{Base: 100 * time.Millisecond},
		FailureRate: 1.0 / 3600,
		Detect:      time.Second,
		Restart:     time.Second,
		Load:        500 * time.Millisecond,
	}
}

func TestOptimalClosedForms(t *testing.T) {
	t.Run("saturated constant cost is Young", func(t *testing.T) {
		p := baseParams()
		p.Rate = p.Capacity
		want := Young(p.Cost.Base, time.Hour)
		if got := p.FirstOrder(time.Millisecond, 24*time.Hour); !near(got.Seconds(), want.Seconds(), 1e-9) {
			t.Errorf("Optimal = %v, want Young %v", got, want)
		}
	})
	t.Run("load-aware: Young over sqrt(rho)", func(t *testing.T) {
		for _, rho := range []float64{0.04, 0.25, 0.5, 1, 2} {
			p := baseParams()
			p.Rate = rho * p.Capacity
			want := Young(p.Cost.Base, time.Hour).Seconds() / math.Sqrt(min(rho, 1))
			if got := p.FirstOrder(time.Millisecond, 24*time.Hour).Seconds(); !near(got, want, 1e-9) {
				t.Errorf("rho %v: Optimal = %.6g s, want %.6g", rho, got, want)
			}
		}
	})
	t.Run("unbounded state: only the base cost matters", func(t *testing.T) {
		p := baseParams()
		q := p
		q.Cost.PerKey = 1e-3
		if a, b := p.FirstOrder(time.Millisecond, 24*time.Hour), q.FirstOrder(time.Millisecond, 24*time.Hour); a != b {
			t.Errorf("Optimal with linear per-key cost %v != without %v", b, a)
		}
	})
	t.Run("saturating state: between the bounds", func(t *testing.T) {
		p := baseParams()
		p.Cost.PerKey, p.Cost.StateKeys = 1e-4, 5000
		f, rho := p.FailureRate, p.Util()
		lower := math.Sqrt(2 * p.Cost.Base.Seconds() / (f * rho))
		upper := math.Sqrt(2 * (p.Cost.Base.Seconds() + p.Cost.PerKey*p.Cost.StateKeys) / (f * rho))
		got := p.FirstOrder(time.Millisecond, 24*time.Hour).Seconds()
		if got <= lower || got >= upper {
			t.Errorf("Optimal %.4g s not strictly within (%.4g, %.4g)", got, lower, upper)
		}
	})
	t.Run("no failures or no input: hi", func(t *testing.T) {
		p := baseParams()
		p.FailureRate = 0
		if got := p.FirstOrder(time.Second, time.Hour); got != time.Hour {
			t.Errorf("no failures: %v", got)
		}
		p = baseParams()
		p.Rate = 0
		if got := p.FirstOrder(time.Second, time.Hour); got != time.Hour {
			t.Errorf("no input: %v", got)
		}
	})
	t.Run("bounds", func(t *testing.T) {
		p := baseParams()
		if got := p.FirstOrder(time.Hour, 2*time.Hour); got != time.Hour {
			t.Errorf("clamped low: %v", got)
		}
		if got := p.FirstOrder(time.Millisecond, time.Second); got != time.Second {
			t.Errorf("clamped high: %v", got)
		}
		if got := p.FirstOrder(time.Hour, time.Second); got != time.Second {
			t.Errorf("lo > hi: %v", got)
		}
	})
}

// Optimal maximises Efficiency: no interval on a fine grid does better
// (by more than the refinement Optimal skips when it is negligible).
func TestOptimalMaximisesEfficiency(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Params)
	}{
		{"base", func(*Params) {}},
		{"saturating", func(p *Params) { p.Cost.PerKey, p.Cost.StateKeys = 2e-5, 2000 }},
		{"saturating, no base", func(p *Params) { p.Cost.Base, p.Cost.PerKey, p.Cost.StateKeys = 0, 2e-5, 2000 }},
		{"persist", func(p *Params) { p.Persist = 30 * time.Second; p.Cost.PerKey, p.Cost.StateKeys = 1e-5, 1e5 }},
		{"low load", func(p *Params) { p.Rate = 3 }},
		{"overload", func(p *Params) { p.Rate = 5000 }},
		{"frequent failures", func(p *Params) { p.FailureRate = 1.0 / 120 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := baseParams()
			tc.mod(&p)
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			opt := p.Optimal(time.Millisecond, 100*time.Hour)
			best := p.Efficiency(opt)
			// Optimal skips the second-order refinement when it would
			// lower the waste by less than 3e-5 of itself (model.go).
			slack := 3e-5 * (1 - best)
			for ts := 1e-3; ts < 3.6e5; ts *= 1.01 {
				if e := p.Efficiency(seconds(ts)); e > best*(1+1e-9)+slack {
					t.Fatalf("efficiency %.9f at %.4gs beats the optimum %v's %.9f", e, ts, opt, best)
				}
			}
		})
	}
}

func TestWasteTerms(t *testing.T) {
	p := baseParams()
	p.Persist = 2 * time.Second
	w := p.Waste(60 * time.Second)
	f, rho := 1.0/3600, 0.5
	g := func(x float64) float64 { return 3600 - x/(math.Exp(x/3600)-1) }
	want := Waste{
		Checkpoint: 0.1 / 60,
		Lost:       f * 2 / 60 * 0.1,
		Replay:     f * rho * (2 + g(60) + math.Expm1(f*62)*(2.5+g(62))),
		Downtime:   f * 2.5,
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"checkpoint", w.Checkpoint, want.Checkpoint}, {"lost", w.Lost, want.Lost}, {"replay", w.Replay, want.Replay}, {"downtime", w.Downtime, want.Downtime}} {
		if !near(c.got, c.want, 1e-12) {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if e := p.Efficiency(60 * time.Second); !near(e, rho/(rho+want.Total()), 1e-12) {
		t.Errorf("efficiency %g", e)
	}
	if p.Efficiency(0) != 0 || (Params{Capacity: 1}).Efficiency(time.Second) != 0 {
		t.Error("efficiency with no interval or no input is not 0")
	}
}

func TestCostModelDirty(t *testing.T) {
	c := CostModel{Base: time.Second, PerKey: 0.5, StateKeys: 100}
	if d := c.Dirty(1e9); !near(d, 100, 1e-9) {
		t.Errorf("Dirty(huge) = %v, want the state size", d)
	}
	if d := c.Dirty(1e-6); !near(d, 1e-6, 1e-6) {
		t.Errorf("Dirty(tiny) = %v, want n", d)
	}
	if s := c.Seconds(0); s != 1 {
		t.Errorf("Seconds(0) = %v", s)
	}
	u := CostModel{PerKey: 1}
	if d := u.Dirty(42); d != 42 {
		t.Errorf("unbounded Dirty(42) = %v", d)
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Params)
	}{
		{"negative rate", func(p *Params) { p.Rate = -1 }},
		{"NaN rate", func(p *Params) { p.Rate = math.NaN() }},
		{"zero capacity", func(p *Params) { p.Capacity = 0 }},
		{"inf failure rate", func(p *Params) { p.FailureRate = math.Inf(1) }},
		{"negative per key", func(p *Params) { p.Cost.PerKey = -1 }},
		{"NaN state", func(p *Params) { p.Cost.StateKeys = math.NaN() }},
		{"negative detect", func(p *Params) { p.Detect = -time.Second }},
		{"negative base", func(p *Params) { p.Cost.Base = -time.Second }},
	} {
		p := baseParams()
		tc.mod(&p)
		if err := p.Validate(); !errors.Is(err, ErrParams) {
			t.Errorf("%s: Validate = %v, want ErrParams", tc.name, err)
		}
	}
	if err := baseParams().Validate(); err != nil {
		t.Error(err)
	}
}

// The second-order replay: it tends to the first-order ρ·(T/2 + P) as
// fT → 0, exceeds it otherwise, and a run of n failures from a clean start
// (ReplayOver) replays less than n in the long run, approaching it.
func TestReplaySecondOrder(t *testing.T) {
	p := baseParams() // ρ = 0.5, D + R + L = 2.5 s
	p.Persist = 2 * time.Second
	rho := p.Util()
	for _, tc := range []struct {
		f, tol float64
	}{{1e-9, 1e-6}, {1.0 / 3600, 0.03}} {
		p.FailureRate = tc.f
		got, first := p.ReplayPerFailure(time.Minute), rho*(30+2)
		if !near(got, first, tc.tol) || got < first {
			t.Errorf("f %g: replay %.6g, first order %.6g", tc.f, got, first)
		}
	}
	// fT = 1: by hand, g(x) = 1/f − x/(e^(fx) − 1).
	p.FailureRate = 1.0 / 60
	g := func(x float64) float64 { return 60 - x/(math.Exp(x/60)-1) }
	want := rho * (2 + g(60) + (math.Exp(62.0/60)-1)*(2.5+g(62)))
	if got := p.ReplayPerFailure(time.Minute); !near(got, want, 1e-12) {
		t.Errorf("replay at fT = 1: %.9g, want %.9g", got, want)
	}
	// One failure from a clean start: no carry-over.
	q := 1 - math.Exp(-62.0/60)
	one := (1-q)*rho*(2+g(60)) + q*rho*g(62)
	if got := p.ReplayOver(time.Minute, 1); !near(got, one, 1e-12) {
		t.Errorf("ReplayOver(1) = %.9g, want %.9g", got, one)
	}
	per := p.ReplayPerFailure(time.Minute)
	prev := 0.0
	for _, n := range []int{1, 2, 3, 10, 100, 1000} {
		got := p.ReplayOver(time.Minute, n)
		if !(got < float64(n)*per) || !(got > prev) {
			t.Errorf("ReplayOver(%d) = %.6g: want more than %.6g and less than %.6g", n, got, prev, float64(n)*per)
		}
		prev = got
	}
	if got := p.ReplayOver(time.Minute, 1000) / 1000; !near(got, per, 0.01) {
		t.Errorf("ReplayOver(1000)/1000 = %.6g, want about %.6g", got, per)
	}
	if p.ReplayOver(time.Minute, 0) != 0 {
		t.Error("ReplayOver(0) != 0")
	}
}

// With frequent failures Optimal is below the first-order root, and
// without them it is that root.
func TestOptimalBelowFirstOrder(t *testing.T) {
	p := baseParams()
	if a, b := p.Optimal(time.Millisecond, 24*time.Hour), p.FirstOrder(time.Millisecond, 24*time.Hour); a > b || !near(a.Seconds(), b.Seconds(), 0.01) {
		t.Errorf("MTBF 1h: Optimal %v, first order %v", a, b)
	}
	p.FailureRate = 1.0 / 20
	p.Cost.Base = 10 * time.Millisecond
	a, b := p.Optimal(time.Millisecond, time.Hour), p.FirstOrder(time.Millisecond, time.Hour)
	if !(a < b) || !(p.Efficiency(a) > p.Efficiency(b)) {
		t.Errorf("MTBF 20s: Optimal %v (efficiency %.6f) not below the first-order %v (%.6f)", a, p.Efficiency(a), b, p.Efficiency(b))
	}
	p.FailureRate = 1e-9
	if a, b := p.Optimal(time.Millisecond, 1e6*time.Hour), p.FirstOrder(time.Millisecond, 1e6*time.Hour); a != b {
		t.Errorf("rare failures: Optimal %v != first order %v", a, b)
	}
}

// ReplayAt follows the failures it is given; over Poisson draws its mean
// is ReplayOver.
func TestReplayAt(t *testing.T) {
	p := Params{Rate: 1, Capacity: 4, Persist: 100 * time.Millisecond, Restart: 400 * time.Millisecond} // ρ = 0.25, down 0.4 s
	// T = 2 s. A failure at 5.3 s: captures at 2 and 4 (durable 2.1, 4.1):
	// replay 0.25·1.3. Restored at 5.7; a failure at 6.5, before its first
	// capture (7.7): everything since 4, 0.25·2.5. Restored at 6.9; a failure
	// at 9.0: capture 8.9 not yet durable, so again since 4: 0.25·5.
	got := p.ReplayAt(2*time.Second, []float64{5.3, 6.5, 9.0})
	if want := 0.25 * (1.3 + 2.5 + 5); !near(got, want, 1e-12) {
		t.Errorf("ReplayAt = %v, want %v", got, want)
	}
	if p.ReplayAt(2*time.Second, nil) != 0 || p.ReplayAt(0, []float64{1}) != 0 {
		t.Error("no failures or no interval: want 0")
	}
	// A load twice the mean after 5 s and none before: the same bases, with
	// the arrivals counted: 0.25·(0.6 + 3 + 8).
	arrived := func(a, b float64) float64 { return 2 * (max(b, 5) - max(a, 5)) }
	if got, want := p.ReplayUnder(2*time.Second, []float64{5.3, 6.5, 9.0}, arrived), 0.25*(0.6+3+8); !near(got, want, 1e-12) {
		t.Errorf("ReplayUnder = %v, want %v", got, want)
	}
	// Poisson failures: the mean of ReplayAt over draws is ReplayOver.
	p.FailureRate = 1.0 / 5
	r := rand.New(rand.NewPCG(5, 5))
	const draws = 20000
	var sum float64
	at := make([]float64, 3)
	for range draws {
		start := 0.0
		for i := range at {
			at[i] = start + r.ExpFloat64()/p.FailureRate // a generation's life runs from its restore
			start = at[i] + p.downSec()
		}
		sum += p.ReplayAt(2*time.Second, at)
	}
	if got, want := sum/draws, p.ReplayOver(2*time.Second, 3); !near(got, want, 0.03) {
		t.Errorf("mean ReplayAt over Poisson draws %.4f, ReplayOver %.4f", got, want)
	}
}
