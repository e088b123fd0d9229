package tuner

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// constScenario is one instance under a constant load with Poisson
// failures: the setting the closed forms of MODEL.md are derived for.
func constScenario(t *testing.T, seconds int, failures string) Scenario {
	t.Helper()
	load := make([]float64, seconds)
	for i := range load {
		load[i] = 100
	}
	f, err := OpenFailures(failures)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PriorMTBF = f.MTBF()
	cfg.Cost = CostModel{Base: 100 * time.Millisecond}
	return Scenario{
		Load: load, Instances: 1, Keys: 1000, Zipf: 0, Capacity: 200,
		Base: 100 * time.Millisecond, Detect: time.Second, Restart: time.Second,
		LoadBase: 200 * time.Millisecond, Persist: 500 * time.Millisecond,
		Failures: f, Seed: 1, Min: time.Second, Max: 6 * time.Hour, Online: cfg,
	}
}

func mustSim(t *testing.T, sc Scenario) *Sim {
	t.Helper()
	s, err := NewSim(sc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustRun(t *testing.T, s *Sim, policy string) *Result {
	t.Helper()
	r, err := s.Run(policy)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The simulator agrees with the model's expected waste where the model's
// assumptions hold (constant load, Poisson failures, constant cost). The
// tolerance grows with T/MTBF: the model leaves out failures during a
// recovery or a checkpoint's persist (lost work in the simulator).
func TestSimMatchesModel(t *testing.T) {
	sc := constScenario(t, 2_000_000, "poisson:1h")
	sim := mustSim(t, sc)
	p := Params{Rate: 100, Capacity: 200, Cost: CostModel{Base: sc.Base}, FailureRate: 1.0 / 3600,
		Detect: sc.Detect, Restart: sc.Restart, Load: sc.LoadBase, Persist: sc.Persist}
	for _, iv := range []time.Duration{10 * time.Second, 60 * time.Second, 5 * time.Minute} {
		r := mustRun(t, sim, "fixed-"+iv.String())
		w := p.Waste(iv)
		h := float64(len(sc.Load))
		second := 2 * iv.Seconds() / 3600 // relative size of the second-order terms
		for _, c := range []struct {
			name       string
			sim, model float64
			tol        float64
		}{
			{"checkpoint", r.Checkpoint / h, w.Checkpoint, 0.01 + second},
			{"replay", r.Replay / h, w.Replay, 0.05 + second},
			{"downtime", r.Downtime / h, w.Downtime, 0.07},
			{"total", r.Waste() / h, w.Total(), 0.03 + second},
		} {
			if !near(c.sim, c.model, c.tol) {
				t.Errorf("%v %s: simulated %.4g per s, model %.4g", iv, c.name, c.sim, c.model)
			}
		}
		if e := p.Efficiency(iv); !near(r.Efficiency(), e, 0.001+second/10) {
			t.Errorf("%v: simulated efficiency %.5f, model %.5f", iv, r.Efficiency(), e)
		}
	}
}

// Where T is not small against the MTBF, failures that strike a restored
// instance before its first durable checkpoint carry its replay over to
// the next recovery. The second-order replay term (ReplayPerFailure)
// follows the simulator there; the first-order term f·ρ·(T/2 + P) falls
// short by a quarter at fT = 0.3.
func TestSimMatchesSecondOrderReplay(t *testing.T) {
	sc := constScenario(t, 2_000_000, "poisson:10m")
	sim := mustSim(t, sc)
	f := 1.0 / 600
	p := Params{Rate: 100, Capacity: 200, Cost: CostModel{Base: sc.Base}, FailureRate: f,
		Detect: sc.Detect, Restart: sc.Restart, Load: seconds(sim.stateL[0]), Persist: sc.Persist}
	for _, iv := range []time.Duration{time.Minute, 3 * time.Minute} {
		r := mustRun(t, sim, "fixed-"+iv.String())
		h := float64(len(sc.Load))
		first := f * p.Util() * (iv.Seconds()/2 + sc.Persist.Seconds())
		second := p.Waste(iv).Replay
		if !near(r.Replay/h, second, 0.06) {
			t.Errorf("%v: simulated replay %.4g per s, second-order model %.4g", iv, r.Replay/h, second)
		}
		if iv == 3*time.Minute && near(r.Replay/h, first, 0.2) {
			t.Errorf("%v: the first-order term %.4g is within 20%% of the simulated %.4g: this test no longer tells them apart", iv, first, r.Replay/h)
		}
	}
}

func TestSimStaticIntervals(t *testing.T) {
	sc := constScenario(t, 10_000, "poisson:1h")
	sim := mustSim(t, sc)
	mtbf := time.Hour
	young, _ := sim.StaticIntervals(PolicyYoung)
	daly, _ := sim.StaticIntervals(PolicyDaly)
	doci, _ := sim.StaticIntervals(PolicyDOCI)
	if !near(young[0], Young(sc.Base, mtbf).Seconds(), 1e-9) {
		t.Errorf("young %v", young)
	}
	if !near(daly[0], Daly(sc.Base, mtbf).Seconds(), 1e-9) {
		t.Errorf("daly %v", daly)
	}
	p := Params{Rate: 100, Capacity: 200, Cost: CostModel{Base: sc.Base}, FailureRate: 1.0 / 3600, Persist: sc.Persist,
		Detect: sc.Detect, Restart: sc.Restart, Load: seconds(sim.stateL[0])}
	if !near(doci[0], p.Optimal(time.Second, 6*time.Hour).Seconds(), 1e-6) {
		t.Errorf("doci %v, want %v", doci, p.Optimal(time.Second, 6*time.Hour))
	}
	if _, err := sim.StaticIntervals("fixed-x"); err == nil {
		t.Error("no error for fixed-x")
	}
	if _, err := sim.Run("bogus"); err == nil {
		t.Error("no error for an unknown policy")
	}
}

func TestSimNoFailures(t *testing.T) {
	sc := constScenario(t, 3600, "poisson:1000000d")
	sc.Zipf = 1.1
	sc.Instances = 4
	sc.PerKey = 1e-5
	sim := mustSim(t, sc)
	r := mustRun(t, sim, "fixed-10s")
	if r.Failures != 0 || r.Replay != 0 || r.Downtime != 0 || r.Lost != 0 {
		t.Errorf("waste without failures: %+v", r)
	}
	if r.Checkpoints != 4*359 { // at 10 s, 20 s, ..., 3590 s
		t.Errorf("%d checkpoints, want 1436", r.Checkpoints)
	}
	// Every record processed once: useful time is the load over the capacity.
	if want := 100.0 * 3600 / (200.0 / 4); !near(r.Useful+r.Backlog/50, want, 1e-9) {
		t.Errorf("useful %v + backlog, want %v", r.Useful, want)
	}
	if !near(slicesSum(sim.Shares()), 1, 1e-12) {
		t.Errorf("shares %v", sim.Shares())
	}
}

func slicesSum(s []float64) float64 {
	var x float64
	for _, v := range s {
		x += v
	}
	return x
}

// every is a Dist that always returns the same time: failures on a clock.
type every float64

func (e every) Mean() float64             { return float64(e) }
func (e every) Sample(*rand.Rand) float64 { return float64(e) }
func (e every) String() string            { return "every " + fmtSec(float64(e)) }

func TestSimFailureDuringRecovery(t *testing.T) {
	sc := constScenario(t, 1000, "poisson:1h")
	sc.Failures = &Failures{Spec: "every:2", TBF: every(2)} // recovery takes 2.2 s + replay
	sim := mustSim(t, sc)
	r := mustRun(t, sim, "fixed-10s")
	if r.Lost < 990 || r.Failures != 500 {
		t.Errorf("lost %v failures %d: want recoveries cut short", r.Lost, r.Failures)
	}
	if r.Efficiency() > 0.5 {
		t.Errorf("efficiency %v with a failure every 3 s", r.Efficiency())
	}
}

func TestSimDeterministic(t *testing.T) {
	sc := constScenario(t, 50_000, "weibull:0.5,20m")
	sc.Instances, sc.Zipf, sc.CostNoise, sc.PerKey = 3, 1.1, 0.3, 1e-5
	for i := range sc.Load {
		sc.Load[i] = float64(50 + 40*((i/3600)%2)) // hourly steps
	}
	a := mustRun(t, mustSim(t, sc), PolicyOnline)
	b := mustRun(t, mustSim(t, sc), PolicyOnline)
	if a.Efficiency() != b.Efficiency() || a.Checkpoints != b.Checkpoints || !slices.Equal(a.Timeline[2], b.Timeline[2]) {
		t.Error("same seed, different results")
	}
	sc.Seed = 2
	c := mustRun(t, mustSim(t, sc), PolicyOnline)
	if c.Efficiency() == a.Efficiency() {
		t.Error("another seed gave the same result")
	}
	if a.Changes == 0 || len(a.Timeline[0]) != 50_000/30 {
		t.Errorf("changes %d timeline %d", a.Changes, len(a.Timeline[0]))
	}
}

func TestNewSimErrors(t *testing.T) {
	for name, mod := range map[string]func(*Scenario){
		"no load":    func(s *Scenario) { s.Load = nil },
		"instances":  func(s *Scenario) { s.Instances = 0 },
		"keys":       func(s *Scenario) { s.Keys = 0 },
		"zipf":       func(s *Scenario) { s.Zipf = -1 },
		"capacity":   func(s *Scenario) { s.Capacity = 0 },
		"noise":      func(s *Scenario) { s.CostNoise = -1 },
		"failures":   func(s *Scenario) { s.Failures = nil },
		"bounds":     func(s *Scenario) { s.Max = s.Min / 2 },
		"negative":   func(s *Scenario) { s.Load[3] = -1 },
		"base":       func(s *Scenario) { s.Base = -1 },
		"load base":  func(s *Scenario) { s.LoadBase = -1 },
		"load p/key": func(s *Scenario) { s.LoadPerKey = -1 },
		"online cfg": func(s *Scenario) { s.Online.Every = 0 },
	} {
		sc := constScenario(t, 10, "poisson:1h")
		mod(&sc)
		if _, err := NewSim(sc); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestKeyLayout(t *testing.T) {
	kl := newKeyLayout(10000, 1.1, 8)
	var keys int
	for i := range 8 {
		keys += kl.keys[i]
		// The dirty curve: n for small n, the instance's keys for huge n.
		if d := kl.dirty[i].at(0.5); !near(d, 0.5, 1e-9) {
			t.Errorf("instance %d: dirty(0.5) = %v", i, d)
		}
		if d := kl.dirty[i].at(1e15); !near(d, float64(kl.keys[i]), 1e-6) {
			t.Errorf("instance %d: dirty(huge) = %v, want %d", i, d, kl.keys[i])
		}
		prev := 0.0
		for n := 1.0; n < 1e8; n *= 1.3 {
			d := kl.dirty[i].at(n)
			if d < prev || d > n*(1+1e-9) {
				t.Fatalf("instance %d: dirty(%v) = %v after %v", i, n, d, prev)
			}
			prev = d
		}
	}
	if keys != 10000 {
		t.Errorf("%d keys in all", keys)
	}
	// Balanced by load: no instance carries more than the hottest key
	// group plus a fair share.
	if mx := slices.Max(kl.share); mx > 0.25 {
		t.Errorf("shares %v", kl.share)
	}
	// Uniform keys: the curve is Σ 1 − (1 − 1/K)^n.
	u := newKeyLayout(1000, 0, 1)
	for _, n := range []float64{1, 10, 777, 5000} {
		want := CostModel{StateKeys: 1000}.Dirty(n) // close to the exponential form
		if !near(u.dirty[0].at(n), want, 0.01) {
			t.Errorf("uniform dirty(%v) = %v, want about %v", n, u.dirty[0].at(n), want)
		}
	}
}

func TestReadLoad(t *testing.T) {
	t.Run("rate", func(t *testing.T) {
		p := writeTemp(t, "counts.txt", "1 2 3\n0 5\n0\n", false)
		l, err := ReadLoad("rate:"+p, LoadOptions{Scale: 2})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.Counts, []float64{2, 4, 6, 0, 10}) || l.Records != 11 {
			t.Errorf("counts %v records %d", l.Counts, l.Records)
		}
	})
	t.Run("trace", func(t *testing.T) {
		p := writeTemp(t, "t.csv", "time,key\n100,a\n100.5,b\n103,c\n", false)
		l, err := ReadLoad("trace:"+p+"?time=time&key=key", LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.Counts, []float64{2, 0, 0, 1}) {
			t.Errorf("counts %v", l.Counts)
		}
	})
	t.Run("generator", func(t *testing.T) {
		l, err := ReadLoad("gen:constant", LoadOptions{Rate: 20, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Counts) != 60 || !near(l.Mean(), 20, 0.01) {
			t.Errorf("%d seconds, mean %v", len(l.Counts), l.Mean())
		}
	})
	for name, c := range map[string]struct {
		spec string
		opt  LoadOptions
	}{
		"scale":    {"gen:constant", LoadOptions{Scale: -1}},
		"duration": {"gen:constant", LoadOptions{Duration: -1}},
		"spec":     {"nope:x", LoadOptions{}},
		"missing":  {"rate:/nonexistent", LoadOptions{}},
	} {
		if _, err := ReadLoad(c.spec, c.opt); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	p := writeTemp(t, "empty.txt", "0 0\n", false)
	if _, err := ReadLoad("rate:"+p, LoadOptions{}); err == nil {
		t.Error("no error for a trace without records")
	}
}

func TestNoiseTable(t *testing.T) {
	n := noiseTable(0.3)
	if !near(slicesSum(n)/noiseSize, 1, 1e-12) || !slices.IsSorted(n) {
		t.Error("noise table not mean 1 or not sorted")
	}
	if noiseTable(0) != nil {
		t.Error("noise table without noise")
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
