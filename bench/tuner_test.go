package bench

import (
	"math"
	"testing"
	"time"

	"spate/coord"
	"spate/job"
	"spate/tuner"
)

func TestMeasuredSplitsTime(t *testing.T) {
	// 10,000 records in 2s of processing: 5,000/s. 1,000 of them were
	// replays: 0.2s. Checkpoints cost 0.3s, downtime 0.5s.
	a := coord.TunerAccount{Processed: 10_000, Replayed: 1_000, BusyS: 2, CheckpointS: 0.3, DowntimeS: 0.5}
	s := Measured([]coord.TunerAccount{a})
	want := Split{Useful: 1.8, Checkpoint: 0.3, Replay: 0.2, Downtime: 0.5}
	if !near(s.Useful, want.Useful) || !near(s.Replay, want.Replay) || s.Checkpoint != want.Checkpoint || s.Downtime != want.Downtime {
		t.Fatalf("Measured = %+v, want %+v", s, want)
	}
	if f := s.Fraction(); !near(f, 1.8/2.8) {
		t.Errorf("Fraction = %v, want %v", f, 1.8/2.8)
	}
	if f := (Split{}).Fraction(); f != 0 {
		t.Errorf("empty Fraction = %v, want 0", f)
	}
	// No processing measured: nothing converts records to time.
	if s := Measured([]coord.TunerAccount{{Replayed: 5}}); s.Replay != 0 || s.Useful != 0 {
		t.Errorf("no capacity: %+v", s)
	}
}

func TestPredictedMatchesTheModelOnAConsistentRun(t *testing.T) {
	// One instance for 100s at 1,000/s with capacity 10,000/s (ρ = 0.1),
	// a 1s interval (100 checkpoints of 10ms, persist 0), failures: 2 in
	// 100s, each 0.25s down. The model's replay for two failures from a
	// clean start is about 2·ρ·T/2 = 0.1s (ReplayOver: 0.1011s), 1,011
	// records at 10,000/s.
	rp := tuner.Params{Rate: 1000, Capacity: 10_000, FailureRate: 0.02, Restart: 250 * time.Millisecond}.ReplayOver(time.Second, 2)
	if math.Abs(rp-0.1) > 0.002 {
		t.Fatalf("model replay %v, want about 0.1s", rp)
	}
	rec := uint64(math.Round(rp * 10_000))
	a := coord.TunerAccount{Processed: 100_000 + rec, Replayed: rec, BusyS: 10 + rp, CheckpointS: 1, Checkpoints: 100,
		DowntimeS: 0.5, Failures: 2, ExposureS: 100, MeanIntervalS: 1, PlannedCkpts: 100}
	p, m := Predicted([]coord.TunerAccount{a}, PoissonReplay), Measured([]coord.TunerAccount{a})
	if !near(p.Checkpoint, 1) || !near(p.Downtime, 0.5) || math.Abs(p.Replay-rp) > 1e-5 || math.Abs(p.Useful-10) > 1e-4 { // records are whole: μ is off by 1e-6
		t.Fatalf("Predicted = %+v, replay want %v", p, rp)
	}
	if e := PredictionError(map[string]float64{"x": p.Fraction()}, map[string]float64{"x": m.Fraction()}); e > 1e-5 {
		t.Errorf("prediction error %v on a run that follows the model", e)
	}
	if e := PredictionError(map[string]float64{"a": 0.9, "b": 0.5}, map[string]float64{"a": 0.88, "b": 0.6, "c": 1}); !near(e, 0.1) {
		t.Errorf("PredictionError = %v, want 0.1 (the largest, over shared policies)", e)
	}
}

func TestYoungFromTheAutoRun(t *testing.T) {
	accts := []coord.TunerAccount{
		{CheckpointS: 0.2, Checkpoints: 20, ExposureS: 50, Failures: 1},
		{CheckpointS: 0.2, Checkpoints: 20, ExposureS: 50, Failures: 1},
	}
	iv, c, m := youngFrom(accts)
	if c != 10*time.Millisecond || m != 50*time.Second {
		t.Fatalf("cost %v, MTBF %v; want 10ms, 50s", c, m)
	}
	if want := time.Second; iv != want { // sqrt(2 · 0.01 · 50)
		t.Errorf("Young = %v, want %v", iv, want)
	}
	if iv, _, _ := youngFrom(accts[:0]); iv != 0 {
		t.Errorf("no measurements: %v, want 0", iv)
	}
}

func TestKillTimesAreSpreadAndSeeded(t *testing.T) {
	dur := 20 * time.Second
	a, b := killTimes(dur, 3, 1, true), killTimes(dur, 3, 1, true)
	for k := range a {
		lo := dur/10 + dur*8/10/3*time.Duration(k)
		if a[k] != b[k] || a[k] < lo || a[k] >= lo+dur*8/10/3 {
			t.Fatalf("kill times %v (again %v): kill %d outside its slot from %v", a, b, k, lo)
		}
	}
}

// The Poisson schedule: seeded, sorted, inside the middle 80%, at least
// minKillGap apart, and not one per slot: over seeds, some pairs of kills
// fall in the same third of the run.
func TestKillTimesPoisson(t *testing.T) {
	dur := 20 * time.Second
	sameThird := 0
	for seed := uint64(1); seed <= 50; seed++ {
		a, b := killTimes(dur, 3, seed, false), killTimes(dur, 3, seed, false)
		for k := range a {
			if a[k] != b[k] || a[k] < dur/10 || a[k] > dur*9/10 || (k > 0 && a[k]-a[k-1] < minKillGap) {
				t.Fatalf("seed %d: kill times %v (again %v)", seed, a, b)
			}
		}
		third := func(d time.Duration) time.Duration { return (d - dur/10) * 3 / (dur * 8 / 10) }
		if third(a[0]) == third(a[1]) || third(a[1]) == third(a[2]) {
			sameThird++
		}
	}
	if sameThird == 0 {
		t.Error("50 seeds and never two kills in one third of the run: that is the slot schedule")
	}
}

// KillLaw averages the model's mechanism over the kill law: with T far
// above the run, no checkpoint ever completes, and each kill replays
// everything since the start (the downtimes before it included), whatever
// the draw: ρ·(t1 + t2 + t3).
func TestKillLawReplay(t *testing.T) {
	p := tuner.Params{Rate: 1, Capacity: 4, Restart: 100 * time.Millisecond} // ρ = 0.25
	dur := 20 * time.Second
	a := coord.TunerAccount{Instance: "count#0", Failures: 3}
	got := KillLaw{Dur: dur, Draws: 50}.Replay(p, time.Hour, a)
	var want float64
	for d := range 50 {
		at := killTimes(dur, 3, uint64(1_000_000+d), false)
		want += 0.25 * (at[0].Seconds() + at[1].Seconds() + at[2].Seconds()) / 50
	}
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("KillLaw.Replay = %v, want %v", got, want)
	}
	// A short interval: about k·ρ·T/2, far below.
	if short := (KillLaw{Dur: dur, Draws: 200}).Replay(p, 200*time.Millisecond, a); math.Abs(short-3*0.25*0.1) > 0.01 {
		t.Errorf("short interval: %v, want about %v", short, 3*0.25*0.1)
	}
	if (KillLaw{Dur: dur, Draws: 10}).Replay(p, time.Second, coord.TunerAccount{}) != 0 {
		t.Error("no failures: want 0")
	}
	// The instance's node taken by kills 0 and 2 of a 3-kill slot
	// schedule, under a load that is all after 10 s (twice the mean): the
	// first kill (in [2, 7.3]) replays nothing, the last (in [12.7, 18],
	// no checkpoint since the start) 2ρ·(t3 − 10).
	l := KillLaw{Dur: dur, Slots: true, Kills: 3, Draws: 40, Hits: map[job.InstanceID][]int{"count#0": {0, 2}},
		Arrived: func(a, b float64) float64 { return 2 * (max(b, 10) - max(a, 10)) }}
	want = 0
	for d := range 40 {
		at := killTimes(dur, 3, uint64(1_000_000+d), true)
		want += 2 * 0.25 * (at[2].Seconds() - 10) / 40
	}
	if got := l.Replay(p, time.Hour, coord.TunerAccount{Instance: "count#0", Failures: 2}); math.Abs(got-want) > 1e-9 {
		t.Errorf("KillLaw.Replay with hits and a load = %v, want %v", got, want)
	}
}

// Arrived interpolates the sources' counts and holds the mean rate past
// the last one.
func TestArrived(t *testing.T) {
	arrived := Arrived([]float64{1, 2, 4}, []float64{100, 100, 400}) // mean 100/s
	for _, c := range []struct{ a, b, want float64 }{
		{0, 1, 1}, {0.5, 1, 0.5}, {1, 2, 0}, {2, 3, 1.5}, {0, 4, 4}, {4, 6, 2}, {-1, 0, 0},
	} {
		if got := arrived(c.a, c.b); !near(got, c.want) {
			t.Errorf("arrived(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if Arrived(nil, nil) != nil || Arrived([]float64{1}, []float64{0}) != nil {
		t.Error("no load measured: want nil (steady)")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
