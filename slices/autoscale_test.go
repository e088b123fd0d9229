package slices

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func policy(min, max int) Policy {
	p := DefaultPolicy()
	p.Min, p.Max = min, max
	return p
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name   string
		obs    Observation
		pol    Policy
		last   time.Time // zero: never changed
		to     int
		reason string // exact if it starts with "=", else a substring
	}{
		{name: "load step up scales out", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 70e3, InputRate: 180e3}, pol: policy(1, 16),
			to: 4, reason: "=input 180k/s > 2 × 70k/s true rate at 70% target: 2 → 4"},
		{name: "load step down scales in", obs: Observation{Op: "count", Parallelism: 8, TrueRate: 70e3, InputRate: 60e3}, pol: policy(1, 16),
			to: 2, reason: "=input 60k/s < 8 × 70k/s true rate at 70% target: 8 → 2"},
		{name: "scale-in never below min", obs: Observation{Op: "count", Parallelism: 8, TrueRate: 70e3, InputRate: 1e3}, pol: policy(3, 16),
			to: 3, reason: "8 → 3 (min 3)"},
		{name: "at min with little load holds", obs: Observation{Op: "count", Parallelism: 3, TrueRate: 70e3, InputRate: 1e3}, pol: policy(3, 16),
			to: 3, reason: "at min 3: hold 3"},
		{name: "scale-out never above max", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 10e3, InputRate: 1e6}, pol: policy(1, 8),
			to: 8, reason: "2 → 8 (max 8; needs 142.9)"},
		{name: "at max with too much load holds", obs: Observation{Op: "count", Parallelism: 8, TrueRate: 10e3, InputRate: 1e6}, pol: policy(1, 8),
			to: 8, reason: "above 77% but at max 8: hold 8"},
		{name: "below min is raised whatever the load", obs: Observation{Op: "count", Parallelism: 1, TrueRate: 70e3, InputRate: 0}, pol: policy(2, 8), last: t0,
			to: 2, reason: "=parallelism 1 outside bounds 2..8: 1 → 2"},
		{name: "above max is lowered", obs: Observation{Op: "count", Parallelism: 12, TrueRate: 70e3, InputRate: 1e6}, pol: policy(2, 8),
			to: 8, reason: "outside bounds 2..8: 12 → 8"},
		{name: "within the band holds", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 70e3, InputRate: 100e3}, pol: policy(1, 16),
			to: 2, reason: "=input 100k/s is 71% of 2 × 70k/s true rate, within 63%..77%: hold 2"},
		{name: "just below the band but still needs them", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 70e3, InputRate: 80e3}, pol: policy(1, 16),
			to: 2, reason: "below 63% but needs 1.63 instances: hold 2"},
		{name: "a growing backlog is drained", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 70e3, InputRate: 90e3, Backlog: 3e6, BacklogRate: 5e3}, pol: policy(1, 16),
			to: 4, reason: "=input 90k/s + backlog 3M growing by 5k/s, drained in 30s = 190k/s > 2 × 70k/s true rate at 70% target: 2 → 4"},
		{name: "a shrinking backlog is not", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 70e3, InputRate: 90e3, Backlog: 3e6, BacklogRate: -5e3}, pol: policy(1, 16),
			to: 2, reason: "within"},
		{name: "no scale-in while the backlog grows", obs: Observation{Op: "count", Parallelism: 8, TrueRate: 70e3, InputRate: 10e3, Backlog: 3e3, BacklogRate: 1}, pol: policy(1, 16),
			to: 8, reason: "but the backlog grows: hold 8"},
		{name: "cool-down holds a scale-out", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 70e3, InputRate: 180e3}, pol: policy(1, 16), last: t0.Add(-10 * time.Second),
			to: 2, reason: "=cool-down, 20s of 30s left: hold 2 (would be 4: input 180k/s > 2 × 70k/s true rate at 70% target: 2 → 4)"},
		{name: "after the cool-down it acts", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 70e3, InputRate: 180e3}, pol: policy(1, 16), last: t0.Add(-30 * time.Second),
			to: 4, reason: "2 → 4"},
		{name: "no true rate yet holds", obs: Observation{Op: "count", Parallelism: 2, InputRate: 180e3}, pol: policy(1, 16),
			to: 2, reason: "true rate not measured yet: hold 2"},
		{name: "an exact fit does not round up", obs: Observation{Op: "count", Parallelism: 2, TrueRate: 100, InputRate: 210}, pol: policy(1, 16),
			to: 3, reason: "2 → 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(c.obs, c.pol, c.last, t0)
			if err != nil {
				t.Fatal(err)
			}
			if d.From != c.obs.Parallelism || d.To != c.to || d.Changed() != (c.to != c.obs.Parallelism) {
				t.Errorf("%d → %d (changed %v), want → %d: %s", d.From, d.To, d.Changed(), c.to, d.Reason)
			}
			if want, ok := strings.CutPrefix(c.reason, "="); ok && d.Reason != want {
				t.Errorf("reason %q\n want %q", d.Reason, want)
			} else if !ok && !strings.Contains(d.Reason, c.reason) {
				t.Errorf("reason %q lacks %q", d.Reason, c.reason)
			}
			if d.Op != "count" || d.At != t0 || d.Inputs != c.obs || d.Policy != c.pol {
				t.Errorf("decision does not carry its inputs: %+v", d)
			}
		})
	}
}

// A load step up scales out once; the cool-down holds it; once the rates
// settle at the new parallelism nothing changes. A step down scales in,
// once, never below min.
func TestDecideLoadSteps(t *testing.T) {
	pol := policy(2, 16)
	const trueRate = 50e3
	par := 2
	var last time.Time
	changes := 0
	now := t0
	run := func(input float64, ticks int) {
		for range ticks {
			now = now.Add(5 * time.Second)
			d, err := Decide(Observation{Op: "count", Parallelism: par, TrueRate: trueRate, InputRate: input}, pol, last, now)
			if err != nil {
				t.Fatal(err)
			}
			if d.Changed() {
				changes++
				par, last = d.To, now
				t.Logf("%v: %s", now.Sub(t0), d.Reason)
			}
			if par < pol.Min || par > pol.Max {
				t.Fatalf("parallelism %d outside bounds", par)
			}
		}
	}
	step := func(what string, input float64, ticks, wantPar, wantChanges int) {
		t.Helper()
		run(input, ticks)
		if par != wantPar || changes != wantChanges {
			t.Fatalf("%s: parallelism %d after %d changes, want %d after %d", what, par, changes, wantPar, wantChanges)
		}
	}
	step("steady load (60% of 2 × 50k/s)", 60e3, 20, 2, 0)
	step("step up (needs 8.6)", 300e3, 1, 9, 1)
	step("more load within the cool-down", 450e3, 5, 9, 1)
	step("settled at the new parallelism (67%)", 300e3, 20, 9, 1)
	step("step down (needs 0.57, min 2)", 20e3, 20, 2, 2)
}

// Noise within the hysteresis band never changes the parallelism.
func TestDecideNoiseWithinHysteresis(t *testing.T) {
	pol := policy(1, 16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		par := 1 + rng.IntN(16)
		trueRate := 1e3 + rng.Float64()*1e5
		// Utilisation within ±9% of the 70% target (the band is ±10%).
		util := pol.TargetUtil * (1 + (rng.Float64()*2-1)*0.09)
		obs := Observation{Op: "count", Parallelism: par, TrueRate: trueRate * (1 + (rng.Float64()*2-1)*0.001), InputRate: util * float64(par) * trueRate}
		d, err := Decide(obs, pol, time.Time{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if d.Changed() {
			t.Fatalf("case %d: %s", i, d.Reason)
		}
	}
}

func TestDecideErrors(t *testing.T) {
	good := Observation{Op: "count", Parallelism: 2, TrueRate: 1, InputRate: 1}
	cases := []struct {
		name string
		obs  Observation
		pol  func(*Policy)
		err  string
	}{
		{name: "min zero", obs: good, pol: func(p *Policy) { p.Min = 0 }, err: "policy: min 0"},
		{name: "max below min", obs: good, pol: func(p *Policy) { p.Min, p.Max = 4, 3 }, err: "policy: max 3 below min 4"},
		{name: "target utilisation", obs: good, pol: func(p *Policy) { p.TargetUtil = 1.5 }, err: "target utilisation 1.5"},
		{name: "hysteresis", obs: good, pol: func(p *Policy) { p.Hysteresis = -0.1 }, err: "hysteresis -0.1"},
		{name: "cool-down", obs: good, pol: func(p *Policy) { p.CoolDown = -time.Second }, err: "cool-down -1s"},
		{name: "drain time", obs: good, pol: func(p *Policy) { p.DrainTime = 0 }, err: "drain time 0s"},
		{name: "no op", obs: Observation{Parallelism: 1}, err: "observation: op is empty"},
		{name: "parallelism", obs: Observation{Op: "count"}, err: "parallelism 0"},
		{name: "true rate", obs: Observation{Op: "count", Parallelism: 1, TrueRate: -1}, err: "true rate -1"},
		{name: "input rate", obs: Observation{Op: "count", Parallelism: 1, InputRate: -1}, err: "input rate -1"},
		{name: "backlog", obs: Observation{Op: "count", Parallelism: 1, Backlog: -1}, err: "backlog -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pol := DefaultPolicy()
			if c.pol != nil {
				c.pol(&pol)
			}
			_, err := Decide(c.obs, pol, time.Time{}, t0)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want ErrInvalid with %q", err, c.err)
			}
		})
	}
}

func TestRate(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 950: "950", 999.6: "1k", 180e3: "180k", 1234: "1.23k", 3e6: "3M", 2.5e9: "2.5G", 0.5: "0.5"} {
		if got := rate(v); got != want {
			t.Errorf("rate(%v) = %q, want %q", v, got, want)
		}
	}
}
