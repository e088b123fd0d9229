package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"spate/coord"
	"spate/events"
	"spate/job"
	"spate/tuner"
)

// `spate bench tuner`: the live validation of the interval tuner
// (tuner/MODEL.md, "Live validation"). The NASA per-second trace,
// compressed in time, runs on a real cluster whose count instances' nodes
// are SIGKILLed at the same moments under four interval policies: auto
// (the online controller), young (a fixed interval from Young's formula on
// the checkpoint cost and MTBF measured in the same round's auto run),
// fixed-1s and fixed-10s. Every run is verified. The useful fraction of a
// run is the model's efficiency measured: useful processing time over
// useful plus wasted (checkpoint cost, replay, downtime) time, summed over
// instances, from the coordinator's tuner_summary.

// nasaTrace is where the NASA per-second trace is looked for, in order.
var nasaTrace = []string{
	"../shared/traces/load/nasa_http_1995_per_second.tbz2",
	"/work/shared/traces/load/nasa_http_1995_per_second.tbz2",
	"traces/load/nasa_http_1995_per_second.tbz2",
}

// TunerResult is the result of `spate bench tuner`.
type TunerResult struct {
	Meta
	// Rounds holds every round's raw values per policy: useful_POLICY,
	// predicted_POLICY, predicted_poisson_POLICY, mean_interval_s_POLICY,
	// and young_interval_s.
	Rounds          map[string][]float64 `json:"rounds"`
	UsefulFraction  map[string]float64   `json:"useful_fraction"`
	Predicted       map[string]float64   `json:"predicted"`
	PredictionError float64              `json:"prediction_error"` // max over policies of |predicted − measured| (medians), a fraction
	// The same with the replay of Poisson failures at each instance's
	// rate from a clean start (Params.ReplayOver), instead of the
	// benchmark's kill law: the model's assumption, not the experiment's.
	PredictedPoisson       map[string]float64 `json:"predicted_poisson"`
	PredictionErrorPoisson float64            `json:"prediction_error_poisson"`
	MeanIntervalS          map[string]float64 `json:"mean_interval_s"`  // the interval in force, time and instance average (medians)
	YoungIntervalS         float64            `json:"young_interval_s"` // median over rounds
	Source                 string             `json:"source"`
	Verified               bool               `json:"verified"`
}

// policies of the benchmark, in the order each round runs them (auto
// first: young takes its parameters from it).
var tunerPolicies = []string{"auto", "young", "fixed-1s", "fixed-10s"}

// Split is a run's time, summed over instances, in seconds.
type Split struct {
	Useful, Checkpoint, Replay, Downtime float64
}

// Fraction is useful / (useful + waste); 0 if there was no work.
func (s Split) Fraction() float64 {
	tot := s.Useful + s.Checkpoint + s.Replay + s.Downtime
	if !(tot > 0) {
		return 0
	}
	return s.Useful / tot
}

// capacity is an instance's measured processing rate (records per second
// of busy time); 0 if unknown.
func capacity(a coord.TunerAccount) float64 {
	if a.BusyS <= 0 || a.Processed == 0 {
		return 0
	}
	return float64(a.Processed) / a.BusyS
}

// Measured splits the run's time as MODEL.md's live validation defines:
// per instance, replay is the records re-processed after failures over the
// instance's capacity, useful is the rest of its processing time, the
// checkpoint cost is its capture stalls plus encoding, and downtime runs
// from the lost node's last heartbeat to the restore.
func Measured(accts []coord.TunerAccount) Split {
	var s Split
	for _, a := range accts {
		replay := 0.0
		if mu := capacity(a); mu > 0 {
			replay = math.Min(float64(a.Replayed)/mu, a.BusyS)
		}
		s.Useful += a.BusyS - replay
		s.Replay += replay
		s.Checkpoint += a.CheckpointS
		s.Downtime += a.DowntimeS
	}
	return s
}

// Predicted is the model's split for the same run: tuner.Params.Waste
// evaluated per instance on its measured parameters (input rate, capacity,
// mean checkpoint cost and persist time, its failure rate and mean
// downtime per failure) at the intervals the policy set (the checkpoints
// they ask for, and their time average for the replay). The failure rate
// is the instance's own: the benchmark kills count's nodes, so failures
// fall on the busiest instances, not evenly. The replay is replay(p, T,
// a), the model's for the instance's failures from the run's clean start:
// PoissonReplay or a KillLaw's Replay.
func Predicted(accts []coord.TunerAccount, replay func(p tuner.Params, iv time.Duration, a coord.TunerAccount) float64) Split {
	var s Split
	for _, a := range accts {
		mu := capacity(a)
		if mu <= 0 || a.ExposureS <= 0 {
			continue
		}
		m := Measured([]coord.TunerAccount{a})
		p := tuner.Params{Rate: float64(a.Processed-min(a.Replayed, a.Processed)) / a.ExposureS, Capacity: mu,
			FailureRate: float64(a.Failures) / a.ExposureS}
		if a.Failures > 0 {
			p.Restart = seconds(a.DowntimeS / float64(a.Failures))
		}
		if a.Checkpoints > 0 {
			p.Cost.Base = seconds(a.CheckpointS / float64(a.Checkpoints))
			p.Persist = seconds(a.PersistS / float64(a.Checkpoints))
		}
		iv := seconds(a.MeanIntervalS)
		w := p.Waste(iv)
		s.Useful += m.Useful
		s.Checkpoint += p.Cost.Base.Seconds()*a.PlannedCkpts + w.Lost*a.ExposureS
		s.Replay += replay(p, iv, a)
		s.Downtime += w.Downtime * a.ExposureS
	}
	return s
}

// PoissonReplay is the model's replay for the account's failures as
// Poisson failures from a clean start (Params.ReplayOver): at the
// instance's rate, with no end.
func PoissonReplay(p tuner.Params, iv time.Duration, a coord.TunerAccount) float64 {
	return p.ReplayOver(iv, a.Failures)
}

// KillLaw is the benchmark's law of kill times for a run, from which the
// prediction draws: Kills kills at times drawn as killTimes draws them
// (Slots: its slot schedule), over Draws seeds none of which is a round's.
// It predicts; it never sees the kill times of the run it is compared
// with. What it takes from the run is what is fixed before the kill times
// are drawn: which of the kills took each instance's node (Hits, indices
// into the schedule: the victims are named in advance), and the load
// (Arrived, as Params.ReplayUnder takes it; nil for a steady one). An
// instance that Hits does not name takes its failures as the first of a
// schedule of that many kills.
type KillLaw struct {
	Dur     time.Duration
	Slots   bool
	Kills   int
	Draws   int
	Hits    map[job.InstanceID][]int
	Arrived func(a, b float64) float64
}

// Replay is the model's replay mechanism (Params.ReplayUnder) for the
// account's failures, averaged over the law's draws.
func (l KillLaw) Replay(p tuner.Params, iv time.Duration, a coord.TunerAccount) float64 {
	hits, n := l.Hits[a.Instance], l.Kills
	if len(hits) != a.Failures || slices.ContainsFunc(hits, func(i int) bool { return i < 0 || i >= n }) {
		hits, n = nil, a.Failures
		for i := range n {
			hits = append(hits, i)
		}
	}
	if len(hits) == 0 || l.Draws <= 0 {
		return 0
	}
	var sum float64
	at := make([]float64, len(hits))
	for d := range l.Draws {
		times := killTimes(l.Dur, n, uint64(1_000_000+d), l.Slots)
		for i, k := range hits {
			at[i] = times[k].Seconds()
		}
		sum += p.ReplayUnder(iv, at, l.Arrived)
	}
	return sum / float64(l.Draws)
}

// PredictionError is the largest |predicted − measured| over the policies
// both maps hold.
func PredictionError(pred, meas map[string]float64) float64 {
	e := 0.0
	for k, m := range meas {
		if p, ok := pred[k]; ok {
			e = math.Max(e, math.Abs(p-m))
		}
	}
	return e
}

// MeanInterval is the interval in force averaged over instances and time.
func MeanInterval(accts []coord.TunerAccount) float64 {
	var num, den float64
	for _, a := range accts {
		num += a.MeanIntervalS * a.ExposureS
		den += a.ExposureS
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// youngFrom is Young's interval on the auto run's measurements: the mean
// checkpoint cost over every instance's checkpoints and the MTBF of one
// instance (instance exposure over failures).
func youngFrom(accts []coord.TunerAccount) (time.Duration, time.Duration, time.Duration) {
	var cost, exposure float64
	var n, fails int
	for _, a := range accts {
		cost += a.CheckpointS
		n += a.Checkpoints
		exposure += a.ExposureS
		fails += a.Failures
	}
	if n == 0 || fails == 0 {
		return 0, 0, 0
	}
	c, m := seconds(cost/float64(n)), seconds(exposure/float64(fails))
	return max(tuner.Young(c, m), 10*time.Millisecond), c, m
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func tunerMain(args []string, stdout, stderr io.Writer) (rc int) {
	fs := flag.NewFlagSet("bench tuner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	rounds := fs.Int("rounds", 3, "rounds; each runs every policy")
	dur := fs.Duration("duration", 20*time.Second, "run time of each run")
	kills := fs.Int("kills", 3, "node kills per run, evenly spread (must leave a node alive)")
	nodes := fs.Int("nodes", 5, "worker nodes")
	speedup := fs.Float64("speedup", 20000, "trace time compression")
	source := fs.String("source", "", "input (default: the NASA per-second trace, else gen:diurnal)")
	schedule := fs.String("schedule", "slots", "kill times: slots (one at a random point of each of equal slots) or poisson (uniform points at least 1s apart: a Poisson process with that many kills)")
	s := newSession("tuner", fs, stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *rounds < 1 || *dur <= 0 || *nodes < 2 || *kills < 1 || *kills >= *nodes || *speedup <= 0 {
		fmt.Fprintln(stderr, "spate bench tuner: want --rounds >= 1, --duration > 0, --speedup > 0 and 1 <= --kills < --nodes")
		return 2
	}
	if *schedule != "poisson" && *schedule != "slots" {
		fmt.Fprintf(stderr, "spate bench tuner: --schedule %q: want poisson or slots\n", *schedule)
		return 2
	}
	src := *source
	note := ""
	if src == "" {
		src = "gen:diurnal"
		note = "the NASA per-second trace was not found (" + nasaTrace[0] + "): gen:diurnal instead"
		for _, p := range nasaTrace {
			if _, err := os.Stat(p); err == nil {
				src, note = "rate:"+p, ""
				break
			}
		}
	}
	if note != "" {
		fmt.Fprintln(stderr, "spate bench tuner:", note)
	}
	if err := s.start(repeat(*rounds*len(tunerPolicies), runWeight(*dur))); err != nil {
		fmt.Fprintln(stderr, "spate bench:", err)
		return 2
	}
	defer func() { s.end(rc) }()
	root := s.root

	var victims []string
	for k := 1; k <= *kills; k++ {
		victims = append(victims, fmt.Sprintf("count#%d", (k-1)%2))
	}
	// The failure prior auto starts from, and what young is told: the kill
	// schedule's MTBF per instance, if each kill takes 1/nodes of the instances.
	prior := seconds(float64(*nodes) * dur.Seconds() / float64(*kills))
	meas := map[string][]float64{}
	pred := map[string][]float64{}
	predP := map[string][]float64{}
	ivs := map[string][]float64{}
	var youngs []float64
	res := TunerResult{UsefulFraction: map[string]float64{}, Predicted: map[string]float64{}, PredictedPoisson: map[string]float64{},
		MeanIntervalS: map[string]float64{}, Source: src, Verified: true}
	var at []time.Duration
	for i := range *rounds {
		var young time.Duration
		at = killTimes(*dur, *kills, uint64(i+1), *schedule == "slots")
		for _, pol := range tunerPolicies {
			cfg := coord.DefaultConfig()
			cfg.Nodes, cfg.Local, cfg.Headless, cfg.Duration = *nodes, *nodes, true, *dur
			cfg.Source, cfg.Speedup = src, *speedup
			cfg.Timeout = 5 * time.Second // a kill closes the session at once; a loaded machine must not look dead
			cfg.Data = filepath.Join(root, fmt.Sprintf("tuner-%s-%d", pol, i))
			switch pol {
			case "auto":
				cfg.Interval, cfg.Failures = "auto", "poisson:"+prior.String()
			case "young":
				if young <= 0 {
					young = time.Second // the auto run saw no checkpoint or no failure
				}
				cfg.Interval = young.String()
			default:
				cfg.Interval = pol[len("fixed-"):]
			}
			if err := cfg.Validate(); err != nil {
				fmt.Fprintln(stderr, "spate bench tuner:", err)
				return 2
			}
			s.step("round %d of %d: --interval %s, %d kills in %v", i+1, *rounds, cfg.Interval, *kills, *dur)
			r, l, err := killRun(s.ctx, cfg, at, victims)
			if s.interrupted() {
				return exitInterrupted
			}
			if err != nil {
				fmt.Fprintln(stderr, "spate bench tuner:", err)
				return 1
			}
			res.Verified = res.Verified && r.verified
			accts := l.accts
			law := KillLaw{Dur: *dur, Slots: *schedule == "slots", Kills: *kills, Draws: 400, Hits: l.hits, Arrived: l.arrived}
			m, p := Measured(accts), Predicted(accts, law.Replay)
			pp := Predicted(accts, PoissonReplay)
			meas[pol] = append(meas[pol], m.Fraction())
			pred[pol] = append(pred[pol], p.Fraction())
			predP[pol] = append(predP[pol], pp.Fraction())
			ivs[pol] = append(ivs[pol], MeanInterval(accts))
			if pol == "auto" {
				var c, mtbf time.Duration
				young, c, mtbf = youngFrom(accts)
				youngs = append(youngs, young.Seconds())
				if !*asJSON {
					fmt.Fprintf(stdout, "round %d: young's parameters from the auto run: checkpoint cost %v, MTBF %v per instance -> %v\n",
						i+1, c.Round(10*time.Microsecond), mtbf.Round(10*time.Millisecond), young.Round(time.Millisecond))
				}
			}
			if !*asJSON {
				ok := "verified 0/0/0"
				if !r.verified {
					ok = "VERIFY FAILED"
				}
				fmt.Fprintf(stdout, "round %d %-9s useful %.3f%% (predicted %.3f%%, Poisson %.3f%%)  waste: checkpoint %.3fs, replay %.3fs (predicted %.3fs), downtime %.3fs; mean interval %.2fs; %s\n",
					i+1, pol, 100*m.Fraction(), 100*p.Fraction(), 100*pp.Fraction(), m.Checkpoint, m.Replay, p.Replay, m.Downtime, MeanInterval(accts), ok)
			}
		}
	}
	for _, pol := range tunerPolicies {
		res.UsefulFraction[pol], res.Predicted[pol], res.MeanIntervalS[pol] = median(meas[pol]), median(pred[pol]), median(ivs[pol])
		res.PredictedPoisson[pol] = median(predP[pol])
	}
	res.PredictionErrorPoisson = PredictionError(res.PredictedPoisson, res.UsefulFraction)
	res.YoungIntervalS = median(youngs)
	res.PredictionError = PredictionError(res.Predicted, res.UsefulFraction)
	s.prog.finish(s.name)
	res.Meta, res.Rounds = s.meta, map[string][]float64{"young_interval_s": youngs}
	pu := panel{Title: "useful fraction, %", Format: func(v float64) string { return fmt.Sprintf("%.2f%%", v) }}
	pi := panel{Title: "mean checkpoint interval, s", Format: func(v float64) string { return fmt.Sprintf("%.2fs", v) }}
	for _, pol := range tunerPolicies {
		res.Rounds["useful_"+pol], res.Rounds["predicted_"+pol] = meas[pol], pred[pol]
		res.Rounds["predicted_poisson_"+pol], res.Rounds["mean_interval_s_"+pol] = predP[pol], ivs[pol]
		pct := make([]float64, len(meas[pol]))
		for k, v := range meas[pol] {
			pct[k] = 100 * v
		}
		pu.add(pol, pct)
		pi.add(pol, ivs[pol])
	}
	if *s.html != "" {
		if err := writeHTML(*s.html, "spate bench tuner", s.meta, []panel{pu, pi}); err != nil {
			fmt.Fprintln(stderr, "spate bench tuner:", err)
			return 2
		}
	}
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(res)
	} else {
		fmt.Fprintf(stdout, "tuner (%d nodes, %s at speedup %g, %v runs, kills at %v of count's nodes, %d rounds, medians):\n", *nodes, src, *speedup, *dur, at, *rounds)
		best := ""
		for _, pol := range tunerPolicies {
			if pol != "auto" && (best == "" || res.UsefulFraction[pol] > res.UsefulFraction[best]) {
				best = pol
			}
			fmt.Fprintf(stdout, "  %-9s useful fraction %.3f%%  predicted %.3f%% (Poisson %.3f%%)  mean interval %.2fs\n", pol, 100*res.UsefulFraction[pol], 100*res.Predicted[pol], 100*res.PredictedPoisson[pol], res.MeanIntervalS[pol])
		}
		fmt.Fprintf(stdout, "  auto - best other (%s): %+.3f points; prediction error (max over policies) %.3f points (with Poisson failures instead of the kill law: %.3f)\n",
			best, 100*(res.UsefulFraction["auto"]-res.UsefulFraction[best]), 100*res.PredictionError, 100*res.PredictionErrorPoisson)
		if res.Verified {
			fmt.Fprintln(stdout, "  every run verified: 0 missing, 0 duplicated, 0 wrong")
		}
	}
	if !res.Verified {
		fmt.Fprintln(stdout, "  WARNING: a run failed verification")
		return 1
	}
	return 0
}

// killTimes places kills in the middle 80% of a run of length dur, seeded,
// the same for every policy of a round. With slots, kill k falls at a
// random point of the k-th of kills equal slots: nearly periodic. Without,
// the kills are a Poisson process conditioned on their number: uniform
// points, sorted, at least minKillGap apart (a kill must not find its
// victim still being recovered: the benchmark would then skip it in some
// policies and not in others). Random either way, so that kills do not
// fall in phase with the checkpoint timers (they all start with the job).
func killTimes(dur time.Duration, kills int, seed uint64, slots bool) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x7e11))
	span := dur * 8 / 10
	var at []time.Duration
	if slots {
		slot := span / time.Duration(kills)
		for k := range kills {
			at = append(at, dur/10+slot*time.Duration(k)+time.Duration(rng.Float64()*float64(slot)))
		}
		return at
	}
	gap := min(minKillGap, span/time.Duration(2*kills))
	for {
		at = at[:0]
		for range kills {
			at = append(at, dur/10+time.Duration(rng.Float64()*float64(span)))
		}
		slices.Sort(at)
		ok := true
		for k := 1; k < len(at); k++ {
			ok = ok && at[k]-at[k-1] >= gap
		}
		if ok {
			return at
		}
	}
}

// minKillGap is the least time between two kills of the Poisson schedule.
const minKillGap = time.Second

// killRun runs cfg, SIGKILLs the node hosting victims[k] at[k] after the
// job started (following the instance when a recovery moves it), verifies
// the run and returns the instances' accounts from its tuner_summary.
func killRun(ctx context.Context, cfg coord.Config, at []time.Duration, victims []string) (*run, runLog, error) {
	r := &run{}
	var mu sync.Mutex
	pids := map[string]int{}
	hosts := map[string]string{}
	dead := map[string]bool{}
	ckpt := map[string]bool{}
	ckc := make(chan struct{}, 1)
	done := make(chan struct{})
	defer close(done)
	// A source restored with no checkpoint restarts its pacing clock and
	// ends the run short of where its first generation got, which verify
	// reports as wrong (a bug of spate's, not of the tuner): a node hosting
	// a source is killed only once that source has a complete checkpoint.
	safe := func(node string) bool {
		for inst, h := range hosts {
			if h == node && strings.HasPrefix(inst, "source#") && !ckpt[inst] {
				return false
			}
		}
		return true
	}
	obs := func(e events.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case events.NodeSpawned:
			if f, ok := e.Fields.(events.NodeSpawnedFields); ok {
				pids[e.Node] = f.PID
			}
		case events.InstancePlaced, events.RecoveryPlaced:
			if e.Instance != "" {
				hosts[e.Instance] = e.Node
			}
		case events.Checkpoint:
			if !ckpt[e.Instance] {
				ckpt[e.Instance] = true
				select {
				case ckc <- struct{}{}:
				default:
				}
			}
		case events.JobStarted:
			start := time.Now()
			go func() {
				for k, d := range at {
					time.Sleep(time.Until(start.Add(d))) // the benchmark's schedule, not a synchronisation
					mu.Lock()
					for !safe(hosts[victims[k]]) {
						mu.Unlock()
						select {
						case <-ckc:
						case <-done:
							return
						}
						mu.Lock()
					}
					node := hosts[victims[k]]
					if pid := pids[node]; pid > 0 && !dead[node] {
						dead[node] = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
					mu.Unlock()
				}
			}()
		}
	}
	dir, err := coord.Up(ctx, cfg, coord.Options{Observe: obs})
	if err != nil {
		return nil, runLog{}, err
	}
	rep, err := coord.VerifyRun(dir)
	r.verified = err == nil && rep.OK()
	if !r.verified {
		fmt.Fprintf(os.Stderr, "spate bench: %s did not verify: %v %v\n", dir, rep.String(), err)
	}
	l, err := readRunLog(dir)
	return r, l, err
}

// runLog is what the prediction takes from a run's events: the
// tuner_summary's accounts, the kills that took each instance's node (the
// node_lost events in order: each is one kill) and the load (the records
// the sources had read at each throughput event, from the job's start).
type runLog struct {
	accts   []coord.TunerAccount
	hits    map[job.InstanceID][]int
	arrived func(a, b float64) float64
}

func readRunLog(dir string) (runLog, error) {
	var l runLog
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return l, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	var start time.Time
	var at, in []float64
	l.hits = map[job.InstanceID][]int{}
	kill := 0
	for n := 1; sc.Scan(); n++ {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return l, fmt.Errorf("%s:%d: %v", filepath.Join(dir, "events.jsonl"), n, err)
		}
		switch e.Kind {
		case events.JobStarted:
			start = e.Time
		case events.Throughput:
			if f, ok := e.Fields.(events.ThroughputFields); ok && !start.IsZero() {
				at, in = append(at, e.Time.Sub(start).Seconds()), append(in, float64(f.In))
			}
		case events.NodeLost:
			f, _ := e.Fields.(events.NodeLostFields)
			for _, id := range f.Instances {
				l.hits[id] = append(l.hits[id], kill)
			}
			kill++
		case events.TunerSummary:
			f, _ := e.Fields.(events.TunerSummaryFields)
			for _, a := range f.Instances {
				l.accts = append(l.accts, coord.TunerAccount(a))
			}
			l.arrived = Arrived(at, in)
			return l, nil
		}
	}
	if err := sc.Err(); err != nil {
		return l, err
	}
	return l, fmt.Errorf("%s: no tuner_summary event", dir)
}

// Arrived is a measured load as Params.ReplayUnder takes it: given the
// records read by times at (seconds from the start, ascending), the
// records that arrive from a to b in seconds of the mean rate, the count
// interpolated linearly from 0 at the start and held at the mean rate
// past the last point. Nil (a steady load) with no point or no records.
func Arrived(at, in []float64) func(a, b float64) float64 {
	n := len(at)
	if n == 0 || len(in) != n || !(in[n-1] > 0) || !(at[n-1] > 0) {
		return nil
	}
	mean := in[n-1] / at[n-1]
	cum := func(t float64) float64 {
		if t >= at[n-1] {
			return in[n-1] + (t-at[n-1])*mean
		}
		i := sort.SearchFloat64s(at, t)
		t0, c0 := 0.0, 0.0
		if i > 0 {
			t0, c0 = at[i-1], in[i-1]
		}
		if t <= t0 || at[i] <= t0 {
			return c0
		}
		return c0 + (in[i]-c0)*(t-t0)/(at[i]-t0)
	}
	return func(a, b float64) float64 { return (cum(b) - cum(a)) / mean }
}
