package tuner

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The default load and failure sources of `spate tuner sim` (MODEL.md,
// "The default scenario", says why).
const (
	DefaultSimLoad     = "gen:diurnal?day=24h"
	DefaultSimFailures = "weibull:0.5,1h"
)

// SimReport is what `spate tuner sim --json` prints. Fractions, not
// percentages; waste terms are fractions of the total (useful + wasted)
// time; Gain[p] is doci-online's efficiency over p's, minus 1.
type SimReport struct {
	Efficiency  map[string]float64            `json:"efficiency"`
	Waste       map[string]map[string]float64 `json:"waste"`
	Gain        map[string]float64            `json:"gain"`
	GainPoints  map[string]float64            `json:"gain_points"`
	Interval    map[string]IntervalSummary    `json:"interval"`
	Failures    int                           `json:"failures"`
	Seconds     int                           `json:"seconds"`
	MeanRate    float64                       `json:"mean_rate"`
	Capacity    float64                       `json:"capacity"`
	Utilisation float64                       `json:"utilisation"`
	Calibration *CalibrationReport            `json:"calibration,omitempty"`
}

// CalibrationReport is what --calibrate took from a run: each calibrated
// flag with its value (seconds, seconds per key, or records/s) and the
// samples it rests on, the measured values that explicit flags overrode,
// and the calibratable flags the run did not measure (left at their
// defaults or flags).
type CalibrationReport struct {
	File       string                    `json:"file"`
	Events     int                       `json:"events"`
	Calibrated map[string]CalibratedFlag `json:"calibrated"`
	Overridden []string                  `json:"overridden,omitempty"`
	Unmeasured []string                  `json:"unmeasured,omitempty"`
}

// CalibratedFlag is one simulator flag set from a run.
type CalibratedFlag struct {
	Value   float64 `json:"value"`
	Samples int     `json:"samples"`
	From    string  `json:"from"`
}

// IntervalSummary is the range of a policy's intervals over instances and,
// for doci-online, over time (time-weighted median), in seconds.
type IntervalSummary struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// SimMain implements `spate tuner sim`. It returns the exit code: 0 ok,
// 2 bad input or could not run.
func SimMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tuner sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: spate tuner sim [--load SOURCE] [--failures SOURCE] [--seed N] [--json] [--plot FILE.svg] [flags]")
		fs.PrintDefaults()
	}
	def := DefaultConfig()
	load := fs.String("load", DefaultSimLoad, "load source: gen:NAME, rate:PATH or trace:PATH?time=COL&key=COL (per-second counts are simulated)")
	failures := fs.String("failures", DefaultSimFailures, "failure source of each instance: poisson:MTBF, weibull:SHAPE,SCALE, lanl:PATH or fta:PATH")
	seed := fs.Int64("seed", 1, "seed of failures, cost noise and generated load")
	asJSON := fs.Bool("json", false, "print JSON")
	plot := fs.String("plot", "", "write an SVG plot to this file")
	scale := fs.Float64("scale", 1, "multiply the load's per-second counts by this")
	rate := fs.Float64("rate", 10, "mean records/s of a generator load (before --scale)")
	duration := fs.Duration("duration", 0, "simulate this much of the load (0: all of a trace, 7 days of a generator)")
	capacity := fs.Float64("capacity", 0, "records/s the job can process, all instances (0: mean load / --util)")
	util := fs.Float64("util", 0.5, "mean utilisation that sets the capacity when --capacity is 0")
	instances := fs.Int("instances", 8, "keyed operator instances, one per node, each with its own failures")
	keys := fs.Int("keys", 10000, "distinct keys of the state")
	zipf := fs.Float64("zipf", 1.1, "key skew (as rate: traces synthesise keys)")
	base := fs.Duration("ckpt-base", 100*time.Millisecond, "fixed processing cost of a checkpoint")
	perKey := fs.Duration("ckpt-per-key", 2*time.Microsecond, "processing cost per dirty key of a checkpoint")
	noise := fs.Float64("cost-noise", 0.2, "σ of the lognormal noise on each checkpoint's cost")
	persist := fs.Duration("persist", 500*time.Millisecond, "from a checkpoint's capture to its being durable")
	detect := fs.Duration("detect", time.Second, "failure detection time")
	restart := fs.Duration("restart", time.Second, "time to place and start a failed instance again")
	loadBase := fs.Duration("load-base", 200*time.Millisecond, "fixed time to load a checkpoint")
	loadPerKey := fs.Duration("load-per-key", 5*time.Microsecond, "checkpoint load time per key of the instance's state")
	minI := fs.Duration("min", time.Second, "smallest interval of the model policies")
	maxI := fs.Duration("max", 6*time.Hour, "largest interval of the model policies")
	every := fs.Duration("every", def.Every, "doci-online: decision period")
	halfLife := fs.Duration("half-life", def.HalfLife, "doci-online: half-life of the input-rate average")
	hyst := fs.Float64("hysteresis", def.Hysteresis, "doci-online: relative change of the optimum needed to move the interval")
	priorMTBF := fs.Duration("prior-mtbf", 0, "doci-online: prior MTBF of an instance (0: the failure source's mean)")
	priorW := fs.Float64("prior-weight", def.PriorWeight, "doci-online: weight of the prior, in failures")
	calibrate := fs.String("calibrate", "", "run directory whose events.jsonl sets the checkpoint cost (base and per key), persist, capacity, detect, restart and load times; flags given explicitly win over it")
	policies := fs.String("policies", strings.Join(DefaultPolicies, ","), "policies to compare, comma separated (fixed-DURATION, young, daly, doci, doci-online)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "spate tuner sim:", oneLine(err.Error()))
		return 2
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	pols := strings.Split(*policies, ",")
	for i := range pols {
		pols[i] = strings.TrimSpace(pols[i])
	}
	if !slices.Contains(pols, PolicyOnline) {
		return fail(fmt.Errorf("--policies must include %s (gains are relative to it)", PolicyOnline))
	}
	if !(*scale > 0) || !(*rate > 0) {
		return fail(fmt.Errorf("--scale %v and --rate %v: want numbers > 0", *scale, *rate))
	}
	if !(*util > 0 && *util <= 10) {
		return fail(fmt.Errorf("--util %v: want a number in (0, 10]", *util))
	}
	if *perKey < 0 || *loadPerKey < 0 {
		return fail(fmt.Errorf("--ckpt-per-key and --load-per-key must be >= 0"))
	}
	var calRep *CalibrationReport
	if *calibrate != "" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		cal, err := readCalibration(*calibrate)
		if err != nil {
			return fail(err)
		}
		calRep = applyCalibration(cal, set, *instances, calFlags{
			base: base, perKey: perKey, persist: persist, capacity: capacity,
			detect: detect, restart: restart, loadBase: loadBase, loadPerKey: loadPerKey,
		})
		calRep.File = filepath.Join(*calibrate, "events.jsonl")
	}
	start := time.Now()
	dur := *duration
	ld, err := ReadLoad(*load, LoadOptions{Seed: *seed, Rate: *rate, Duration: dur, Scale: *scale})
	if err != nil {
		return fail(err)
	}
	fl, err := OpenFailures(*failures)
	if err != nil {
		return fail(err)
	}
	mean := ld.Mean()
	capc := *capacity
	if capc == 0 {
		capc = mean / *util
	}
	if !(capc > 0) {
		return fail(fmt.Errorf("--capacity %v: want > 0 (the load has no records to set it from)", capc))
	}
	online := def
	online.Every, online.HalfLife, online.Hysteresis, online.PriorWeight = *every, *halfLife, *hyst, *priorW
	online.PriorMTBF = *priorMTBF
	if online.PriorMTBF == 0 {
		online.PriorMTBF = fl.MTBF()
	}
	online.Cost = CostModel{Base: *base, PerKey: perKey.Seconds()}
	online.Detect, online.Restart, online.Load, online.Persist = *detect, *restart, *loadBase, *persist
	online.Initial = def.Initial
	sc := Scenario{
		Load: ld.Counts, Instances: *instances, Keys: *keys, Zipf: *zipf, Capacity: capc,
		Base: *base, PerKey: perKey.Seconds(), CostNoise: *noise,
		Detect: *detect, Restart: *restart, LoadBase: *loadBase, LoadPerKey: loadPerKey.Seconds(),
		Persist: *persist, Failures: fl, Seed: *seed, Min: *minI, Max: *maxI, Online: online,
	}
	sim, err := NewSim(sc)
	if err != nil {
		return fail(err)
	}
	results := make([]*Result, len(pols))
	errs := make([]error, len(pols))
	var wg sync.WaitGroup
	for i, p := range pols {
		wg.Go(func() { results[i], errs[i] = sim.Run(p) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fail(err)
		}
	}
	rep := makeReport(sim, ld, results, capc)
	rep.Calibration = calRep
	if *plot != "" {
		if err := writePlot(*plot, sim, ld, results); err != nil {
			return fail(err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail(err)
		}
	} else {
		if calRep != nil {
			printCalibration(stdout, calRep)
		}
		printTable(stdout, sim, ld, fl, results, rep)
	}
	fmt.Fprintf(stderr, "spate tuner sim: %d policies x %d instances x %s s simulated in %.2fs\n",
		len(pols), *instances, fmtCount(float64(len(ld.Counts))), time.Since(start).Seconds())
	return 0
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func makeReport(sim *Sim, ld *Load, results []*Result, capc float64) *SimReport {
	rep := &SimReport{
		Efficiency: map[string]float64{}, Waste: map[string]map[string]float64{},
		Gain: map[string]float64{}, GainPoints: map[string]float64{}, Interval: map[string]IntervalSummary{},
		Failures: sim.FailureCount(), Seconds: len(ld.Counts), MeanRate: ld.Mean(), Capacity: capc,
		Utilisation: ld.Mean() / capc,
	}
	var on *Result
	for _, r := range results {
		if r.Policy == PolicyOnline {
			on = r
		}
	}
	for _, r := range results {
		e := r.Efficiency()
		rep.Efficiency[r.Policy] = e
		tot := r.Useful + r.Waste()
		frac := func(x float64) float64 {
			if tot == 0 {
				return 0
			}
			return x / tot
		}
		rep.Waste[r.Policy] = map[string]float64{
			"checkpoint": frac(r.Checkpoint), "lost_work": frac(r.Lost), "replay": frac(r.Replay), "downtime": frac(r.Downtime),
		}
		rep.Interval[r.Policy] = intervalSummary(r)
		if r != on && e > 0 {
			rep.Gain[r.Policy] = on.Efficiency()/e - 1
			rep.GainPoints[r.Policy] = 100 * (on.Efficiency() - e)
		}
	}
	return rep
}

func intervalSummary(r *Result) IntervalSummary {
	if r.Timeline == nil {
		s := slices.Clone(r.Intervals)
		sort.Float64s(s)
		return IntervalSummary{Min: s[0], Median: s[len(s)/2], Max: s[len(s)-1]}
	}
	var all []float64
	for _, tl := range r.Timeline {
		all = append(all, tl...)
	}
	if len(all) == 0 {
		return IntervalSummary{}
	}
	sort.Float64s(all)
	return IntervalSummary{Min: all[0], Median: all[len(all)/2], Max: all[len(all)-1]}
}

func printTable(w io.Writer, sim *Sim, ld *Load, fl *Failures, results []*Result, rep *SimReport) {
	peak := slices.Max(ld.Counts)
	fmt.Fprintf(w, "load      %s: %s s (%s), mean %s rec/s", ld.Spec, fmtCount(float64(len(ld.Counts))), fmtSec(float64(len(ld.Counts))), fmtRate(ld.Mean()/ld.Scale))
	if ld.Scale != 1 {
		fmt.Fprintf(w, " x scale %g = %s rec/s", ld.Scale, fmtRate(ld.Mean()))
	}
	fmt.Fprintf(w, ", peak %s rec/s\n", fmtRate(peak))
	sh := sim.Shares()
	fmt.Fprintf(w, "cluster   %d instances, capacity %s rec/s (mean utilisation %.0f%%), %d keys zipf %g, load shares %.1f%%..%.1f%%\n",
		sim.sc.Instances, fmtRate(rep.Capacity), 100*rep.Utilisation, sim.sc.Keys, sim.sc.Zipf, 100*slices.Min(sh), 100*slices.Max(sh))
	sc := sim.sc
	fmt.Fprintf(w, "costs     checkpoint %s + %s/dirty key (noise %.0f%%), persist %s; recovery: detect %s, restart %s, load %s + %s/key\n",
		fmtDur(sc.Base), fmtSec(sc.PerKey), 100*sc.CostNoise, fmtDur(sc.Persist), fmtDur(sc.Detect), fmtDur(sc.Restart), fmtDur(sc.LoadBase), fmtSec(sc.LoadPerKey))
	fmt.Fprintf(w, "failures  %s\n", fl.Describe())
	fmt.Fprintf(w, "          %d failures of %d instances in this run (seed %d)\n\n", rep.Failures, sc.Instances, sc.Seed)
	fmt.Fprintf(w, "%-12s %-22s %10s %11s %10s %10s %10s  %s\n", "policy", "interval", "efficiency", "checkpoint", "lost work", "replay", "downtime", "doci-online gain")
	for _, r := range results {
		iv := rep.Interval[r.Policy]
		ivs := fmtSec(iv.Median)
		if lo, hi := fmtSec(iv.Min), fmtSec(iv.Max); lo != hi {
			ivs = fmt.Sprintf("%s..%s (%s)", lo, hi, ivs)
		}
		wst := rep.Waste[r.Policy]
		gain := ""
		if g, ok := rep.Gain[r.Policy]; ok {
			gain = fmt.Sprintf("%+.2f%% (%+.3f pt)", 100*g, rep.GainPoints[r.Policy])
		}
		fmt.Fprintf(w, "%-12s %-22s %9.3f%% %10.3f%% %9.3f%% %9.3f%% %9.3f%%  %s\n", r.Policy, ivs, 100*rep.Efficiency[r.Policy],
			100*wst["checkpoint"], 100*wst["lost_work"], 100*wst["replay"], 100*wst["downtime"], gain)
	}
	fmt.Fprintln(w, "\nwaste is a share of the total (useful + wasted) time; interval: min..max (median) over instances and time")
}

// fmtRate prints a rate: 4 significant digits, whole numbers from 10,000.
func fmtRate(r float64) string {
	if r >= 1e4 {
		return fmtCount(r)
	}
	return fmt.Sprintf("%.4g", r)
}

// fmtCount prints n with thousands separators.
func fmtCount(n float64) string {
	s := fmt.Sprintf("%.0f", math.Round(n))
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// writeFile writes data to path via a temporary file in the same directory.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
