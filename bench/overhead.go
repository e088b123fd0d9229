package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"spate/coord"
	"spate/events"
	"spate/internal/human"
)

// Overhead is the result of `spate bench overhead`.
type Overhead struct {
	Meta
	// Configs are the configurations run, in the order of the first round
	// (later rounds rotate it).
	Configs []OverheadConfig `json:"configs"`
	// Rounds holds every round's raw values, per configuration C:
	// rps_C and cpu_us_per_record_C (the throughput runs), ckpt_per_s_C,
	// declined_C and ckpt_ms_C (their checkpoints), interval_s_C (the
	// interval C ran at), p99_ms_C (the latency runs). A configuration
	// that did not run in a round (an equal-rate one whose partners had
	// equal rates already) has NaN there.
	Rounds map[string]Values  `json:"rounds"`
	RPS    map[string]float64 `json:"rps"`
	P99Ms  map[string]float64 `json:"p99_ms"`
	Ratio  map[string]float64 `json:"ratio"` // of the medians, throughput: A/B is A's records/s over B's
	// RatioRounds is each round's throughput ratio: the runs of a round
	// are seconds apart on the same machine, so their spread says how far
	// Ratio can be trusted.
	RatioRounds map[string][]float64 `json:"ratio_rounds"`
	// CPU µs per record of the node processes in the throughput runs: on
	// a shared machine, far steadier than records/s. CPURatio A/B is B's
	// over A's: the fraction of its work A keeps useful, against B.
	CPUPerRec      map[string]float64   `json:"cpu_us_per_record"`
	CPURatio       map[string]float64   `json:"cpu_ratio"`
	CPURatioRounds map[string][]float64 `json:"cpu_ratio_rounds"`
	// CI and CPUCI are the 95 % intervals of the mean per-round ratio,
	// in throughput and in CPU per record, with the rounds an interval
	// narrower than WidthTarget needs.
	CI          map[string]CI `json:"ci95"`
	CPUCI       map[string]CI `json:"cpu_ci95"`
	WidthTarget float64       `json:"width_target"`
	// Checkpoints says how each configuration's checkpoints went
	// (medians over the rounds).
	Checkpoints map[string]CheckpointStats `json:"checkpoints"`
	// LikeForLike says, for each ratio of two configurations that both
	// checkpoint, whether they completed checkpoints at the same rate; a
	// ratio that is not like for like is printed with a warning, and the
	// ratio at equal rates beside it.
	LikeForLike map[string]Comparison `json:"like_for_like"`
	DeltaFull   float64               `json:"delta_over_full_bytes"` // spate, count: median of a delta's bytes over its instance's latest full
	DirtyKeys   float64               `json:"delta_keys_fraction"`   // and of the keys it wrote over the full's keys
	Verified    bool                  `json:"verified"`
}

// OverheadConfig is one configuration of bench overhead.
type OverheadConfig struct {
	Name string `json:"name"`
	FT   string `json:"ft"`
	// Binary is the spate binary that runs it, as `BINARY up`; empty: this
	// one (a --baseline build measured beside this one has it set).
	Binary string `json:"binary,omitempty"`
	// Interval is the checkpoint interval it runs at; an equal-rate
	// configuration (Of set) runs at the interval its partner (At)
	// achieved in the same round, so that it varies.
	Interval string `json:"interval"`
	Of       string `json:"of,omitempty"`
	At       string `json:"at,omitempty"`
	// TLS runs it with up --tls (configuration "tls": --ft spate, every
	// link TLS 1.3), measured against spate.
	TLS bool `json:"tls,omitempty"`
}

// CheckpointStats is how a configuration's checkpoints went in a run.
type CheckpointStats struct {
	// PerSec is the checkpoints completed per instance and second of the
	// job (before the drain): --ft spate's instances checkpoint on their
	// own timers; a global checkpoint counts once, for every instance.
	PerSec float64 `json:"per_s"`
	// Declined counts the checkpoints that did not complete: declined by
	// an alignment under backpressure or abandoned (global), failed
	// (spate).
	Declined float64 `json:"declined"`
	// MeanMs is the mean time from trigger to complete: spate, from the
	// instance's capture to its checkpoint durable; global, from the
	// coordinator's trigger to the last instance's snapshot durable.
	MeanMs float64 `json:"trigger_to_complete_ms"`
	// CompactMsPerS is the time the coordinator spent folding chains of
	// checkpoints into one (spate's compactions), ms per second of the
	// job: checkpoint work that the node processes' CPU does not count.
	CompactMsPerS float64 `json:"compaction_ms_per_s"`
}

// Comparison is whether a ratio of two checkpointing configurations is
// like for like.
type Comparison struct {
	Like   bool       `json:"like"`
	PerSec [2]float64 `json:"per_s"` // the checkpoint rates of the two, medians
	// Equal is the ratio measured at equal rates instead ("" if it was
	// not needed or could not be run).
	Equal string `json:"equal_rate_ratio,omitempty"`
}

// sameRate is how far apart two checkpoint rates may be, as a fraction of
// the higher, for a ratio to count as like for like.
const sameRate = 0.10

// ohBench is one invocation of bench overhead.
type ohBench struct {
	s         *session
	dur       time.Duration
	keys      int
	rate      float64
	interval  time.Duration
	heartbeat time.Duration
	timeout   time.Duration
	profile   string
	stderr    io.Writer
}

// ohRun is what one throughput run of a configuration measured.
type ohRun struct {
	rps, cpu float64
	ckpt     CheckpointStats
	interval time.Duration
}

func overheadMain(args []string, stdout, stderr io.Writer) (rc int) {
	fs := flag.NewFlagSet("bench overhead", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	rounds := fs.Int("rounds", 3, "rounds; each runs every configuration, in an order that rotates from round to round")
	maxRounds := fs.Int("max-rounds", 0, "go on past --rounds, up to this many, until the 95% intervals of spate/none (throughput and CPU) are narrower than --width (0: --rounds exactly)")
	width := fs.Float64("width", 0.05, "the width a ratio's 95% interval should be under: the output says how many rounds that needs")
	dur := fs.Duration("duration", 10*time.Second, "run time of each run")
	keys := fs.Int("keys", 1_000_000, "distinct keys (state size)")
	rate := fs.Float64("rate", 200_000, "records/s of the latency runs (below every configuration's capacity)")
	interval := fs.Duration("interval", time.Second, "checkpoint interval")
	verify := fs.Bool("verify", true, "verify every run with the oracle (after its round, so that a round's runs follow each other)")
	latency := fs.Bool("latency", true, "also run each configuration paced at --rate, for its p99 output lag")
	only := fs.String("only", "none,spate,global", "the configurations, comma-separated, of none, spate, global and tls (--ft spate with up --tls)")
	baseline := fs.String("baseline", "", "also run --ft spate with this spate binary (a build of another commit, e.g. main), as configuration \"base\": a change measured side by side with it")
	equal := fs.Bool("equal-rate", true, "when spate and global complete checkpoints at different rates, also run, each round, the faster one at the interval the slower achieved")
	profile := fs.String("profile", "", "write a CPU profile of every node process under this directory: DIR/RUN/NODE-PID.prof (RUN is tput-CONFIG-ROUND or lat-CONFIG-ROUND)")
	// The lag rises for a few tens of milliseconds at each window's end:
	// sampled every 100 ms (the default heartbeat), whether a sample falls
	// on the peak was chance, and the p99 of a configuration moved by a
	// hundred milliseconds with the phase of its samples.
	heartbeat := fs.Duration("heartbeat", 20*time.Millisecond, "heartbeat period of the latency runs: the resolution of the output-lag samples")
	// No fault is injected: a node taken for lost is a machine that
	// starved its heartbeats, and with --ft none a loss before the job
	// starts left the run waiting for ever.
	timeout := fs.Duration("timeout", 5*time.Second, "failure-detection timeout of every run (up's --timeout): no fault is injected, and a busy machine starves heartbeats")
	s := newSession("overhead", fs, stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	configs, err := overheadConfigs(*only, *baseline, *interval)
	if err != nil {
		fmt.Fprintln(stderr, "spate bench overhead:", err)
		return 2
	}
	if *rounds < 1 || *dur <= 0 || *keys < 1 || *interval <= 0 || *width <= 0 {
		fmt.Fprintln(stderr, "spate bench overhead: --rounds, --duration, --keys, --interval and --width must be positive")
		return 2
	}
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			fmt.Fprintln(stderr, "spate bench overhead: --profile:", err)
			return 2
		}
	}
	last := max(*rounds, *maxRounds)
	perRound := len(configs)
	if *latency {
		perRound *= 2
	}
	eqRuns := *equal && hasConfig(configs, "spate") && hasConfig(configs, "global")
	var weights []float64
	for range last {
		weights = append(weights, repeat(perRound, runWeight(*dur))...)
		if eqRuns {
			weights = append(weights, runWeight(*dur))
		}
	}
	if err := s.start(weights); err != nil {
		fmt.Fprintln(stderr, "spate bench:", err)
		return 2
	}
	defer func() { s.end(rc) }()
	b := &ohBench{s: s, dur: *dur, keys: *keys, rate: *rate, interval: *interval, heartbeat: *heartbeat, timeout: *timeout, profile: *profile, stderr: stderr}

	tput := map[string][]ohRun{} // by configuration, one per round (zero where it did not run)
	p99 := map[string][]float64{}
	var deltaFull, keyFrac []float64
	res := Overhead{Verified: true, WidthTarget: *width}
	res.Configs = append(res.Configs, configs...)
	var eqCfg *OverheadConfig
	var toVerify []string
	// runOne runs c once, announced as what; rc is not 0 if the benchmark
	// must stop with it. A run of this binary is verified after its round,
	// one of another binary was by its own up.
	runOne := func(c OverheadConfig, kind string, round int, what string) (r *run, rc int) {
		s.step("round %d of %d: %s, %s", round+1, last, c.describe(), what)
		r, dir, err := b.run(c, kind, round)
		if s.interrupted() {
			return nil, exitInterrupted
		}
		if err != nil {
			fmt.Fprintln(stderr, "spate bench overhead:", err)
			return nil, 1
		}
		switch {
		case c.Binary == "":
			toVerify = append(toVerify, dir)
		case r.verified:
			s.discard(dir)
		default:
			res.Verified = false
		}
		return r, 0
	}
	n := 0
	for ; n < last; n++ {
		if n >= *rounds && b.narrowEnough(tput, *width) {
			break
		}
		order := rotate(configs, n)
		toVerify = toVerify[:0]
		var roundEq *OverheadConfig
		round := map[string]ohRun{}
		for _, c := range order {
			r, rc := runOne(c, "tput", n, fmt.Sprintf("throughput run (--rate 0, %v)", *dur))
			if rc != 0 {
				return rc
			}
			round[c.Name] = ohRun{rps: r.rps, cpu: r.cpuPerRec, ckpt: checkpointStats(r), interval: b.intervalOf(c)}
		}
		// At equal checkpoint rates: the faster of spate and global again,
		// at the interval the slower achieved in this round.
		if eqRuns {
			if c, ok := equalRateConfig(round["spate"], round["global"], b.interval); ok {
				r, rc := runOne(c, "tput", n, fmt.Sprintf("throughput run at equal checkpoint rates (--rate 0, %v)", *dur))
				if rc != 0 {
					return rc
				}
				round[c.Name] = ohRun{rps: r.rps, cpu: r.cpuPerRec, ckpt: checkpointStats(r), interval: c.intervalValue()}
				roundEq = &c
				if eqCfg == nil {
					eqCfg = &c
				}
			} else {
				s.prog.drop(1)
			}
		}
		for name, r := range round {
			tput[name] = append(tput[name], make([]ohRun, n+1-len(tput[name]))...)
			tput[name][n] = r
		}
		if *latency {
			for _, c := range order {
				r, rc := runOne(c, "lat", n, fmt.Sprintf("latency run (%s records/s, %v)", human.Count(*rate), *dur))
				if rc != 0 {
					return rc
				}
				p99[c.Name] = append(p99[c.Name], lagP99(r.info, 2*time.Second))
				if c.Name == "spate" {
					deltaFull = append(deltaFull, r.deltaFull...)
					keyFrac = append(keyFrac, r.keyFrac...)
				}
			}
		}
		if *verify {
			for _, dir := range toVerify {
				rep, err := coord.VerifyRun(dir)
				if err != nil || !rep.OK() {
					res.Verified = false
					fmt.Fprintf(stderr, "spate bench: %s did not verify: %v %v\n", dir, rep.String(), err)
					continue
				}
				s.discard(dir)
			}
		}
		if !*asJSON {
			for _, c := range append(order, optional(roundEq)...) {
				r, ok := round[c.Name]
				if !ok {
					continue
				}
				lag := ""
				if xs := p99[c.Name]; len(xs) == n+1 {
					lag = fmt.Sprintf(", p99 output lag %.0f ms", xs[n])
				}
				fmt.Fprintf(stdout, "round %d %-10s %s records/s, %.3f CPU µs/record%s%s\n", n+1, c.Name, human.Count(r.rps), r.cpu, r.ckpt.short(c.FT), lag)
			}
		}
	}
	s.prog.drop(len(s.prog.weights) - s.prog.k)
	s.prog.finish(s.name)
	if eqCfg != nil {
		res.Configs = append(res.Configs, *eqCfg)
	}
	res.fill(tput, p99, n, eqCfg)
	if len(deltaFull) > 0 {
		res.DeltaFull, res.DirtyKeys = median(deltaFull), median(keyFrac)
	}
	res.Meta = s.meta
	if *s.html != "" {
		if err := writeHTML(*s.html, "spate bench overhead", s.meta, res.panels(*rate)); err != nil {
			fmt.Fprintln(stderr, "spate bench overhead:", err)
			return 2
		}
	}
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(res)
	} else {
		res.print(stdout, *keys, *interval, *dur, n, *rate, eqCfg)
	}
	if !res.Verified {
		fmt.Fprintln(stdout, "  WARNING: a run failed verification")
		return 1
	}
	return 0
}

// overheadConfigs are the configurations --only and --baseline ask for.
func overheadConfigs(only, baseline string, iv time.Duration) ([]OverheadConfig, error) {
	var out []OverheadConfig
	for _, ft := range strings.Split(only, ",") {
		ft = strings.TrimSpace(ft)
		c := OverheadConfig{Name: ft, FT: ft, Interval: iv.String()}
		switch ft {
		case "none", "spate", "global":
		case "tls": // --ft spate with TLS on every link
			c.FT, c.TLS = "spate", true
		default:
			return nil, fmt.Errorf("--only: unknown configuration %q (want none, spate, global or tls)", ft)
		}
		if hasConfig(out, ft) {
			return nil, fmt.Errorf("--only: %s twice", ft)
		}
		out = append(out, c)
	}
	if baseline != "" {
		abs, err := baselineBinary(baseline)
		if err != nil {
			return nil, err
		}
		out = append(out, OverheadConfig{Name: "base", FT: "spate", Binary: abs, Interval: iv.String()})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no configuration to run")
	}
	return out, nil
}

func hasConfig(cs []OverheadConfig, name string) bool {
	return slices.ContainsFunc(cs, func(c OverheadConfig) bool { return c.Name == name })
}

func optional(c *OverheadConfig) []OverheadConfig {
	if c == nil {
		return nil
	}
	return []OverheadConfig{*c}
}

// rotate is cs starting at its (round mod len)-th: no configuration always
// runs first, after the verification of the round before, or last.
func rotate(cs []OverheadConfig, round int) []OverheadConfig {
	k := round % len(cs)
	return append(append([]OverheadConfig(nil), cs[k:]...), cs[:k]...)
}

func (c OverheadConfig) describe() string {
	switch {
	case c.Binary != "":
		return fmt.Sprintf("--ft %s by %s", c.FT, c.Binary)
	case c.Of != "":
		return fmt.Sprintf("--ft %s at --interval %s (what %s achieved)", c.FT, c.Interval, c.At)
	case c.TLS:
		return "--ft " + c.FT + " --tls"
	}
	return "--ft " + c.FT
}

func (c OverheadConfig) intervalValue() time.Duration {
	d, _ := time.ParseDuration(c.Interval)
	return d
}

func (b *ohBench) intervalOf(c OverheadConfig) time.Duration {
	if d := c.intervalValue(); d > 0 {
		return d
	}
	return b.interval
}

// equalRateConfig is the faster of spate and global (by checkpoints
// completed per second in this round) at the interval the slower
// achieved, if their rates differ by more than sameRate; ok is false if
// they do not, or if the slower completed none (no interval to take).
func equalRateConfig(sp, gl ohRun, iv time.Duration) (OverheadConfig, bool) {
	rs, rg := sp.ckpt.PerSec, gl.ckpt.PerSec
	if rs <= 0 || rg <= 0 || math.Abs(rs-rg) <= sameRate*math.Max(rs, rg) {
		return OverheadConfig{}, false
	}
	fast, slow, r := "spate", "global", rg
	if rg > rs {
		fast, slow, r = "global", "spate", rs
	}
	at := time.Duration(float64(time.Second) / r).Round(10 * time.Millisecond)
	if at <= iv {
		return OverheadConfig{}, false
	}
	return OverheadConfig{Name: fast + "@eq", FT: fast, Interval: at.String(), Of: fast, At: slow}, true
}

// run runs configuration c once: kind "tput" unpaced, "lat" at b.rate. It
// returns the run and its directory.
func (b *ohBench) run(c OverheadConfig, kind string, round int) (*run, string, error) {
	cfg := coord.DefaultConfig()
	cfg.Nodes, cfg.Local, cfg.FT, cfg.Headless, cfg.TLS = 4, 4, c.FT, true, c.TLS
	cfg.Data = filepath.Join(b.s.root, fmt.Sprintf("%s-%s-%d", kind, c.Name, round))
	cfg.Rate, cfg.Duration, cfg.Keys, cfg.Interval, cfg.Timeout = 0, b.dur, b.keys, b.intervalOf(c).String(), b.timeout
	if kind == "lat" {
		cfg.Rate, cfg.Heartbeat = b.rate, b.heartbeat
	}
	var env []string
	if b.profile != "" {
		dir := filepath.Join(b.profile, filepath.Base(cfg.Data))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", err
		}
		env = append(env, "SPATE_CPUPROFILE="+dir)
	}
	var r *run
	var err error
	if c.Binary != "" {
		r, err = binaryRun(b.s.ctx, c.Binary, cfg, env)
	} else {
		// The coordinator spawns the nodes with this process's
		// environment; the runs are one at a time.
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
			defer os.Unsetenv(k)
		}
		r, err = clusterRun(b.s.ctx, cfg, 0, "", false)
	}
	return r, cfg.Data, err
}

// narrowEnough reports whether the 95 % intervals of spate/none, in
// throughput and in CPU per record, are narrower than width (with no
// spate or no none: of every configuration against none).
func (b *ohBench) narrowEnough(tput map[string][]ohRun, width float64) bool {
	var pairs [][2]string
	if _, ok := tput["spate"]; ok {
		pairs = append(pairs, [2]string{"spate", "none"})
	} else {
		for name := range tput {
			if name != "none" {
				pairs = append(pairs, [2]string{name, "none"})
			}
		}
	}
	for _, p := range pairs {
		t, c := pairRounds(tput, p[0], p[1])
		if len(t) == 0 || ci95(t, width).Width >= width || ci95(c, width).Width >= width {
			return false
		}
	}
	return len(pairs) > 0
}

// pairRounds is the per-round ratios of a over b, in throughput (a's
// records/s over b's) and in CPU per record (b's over a's), over the
// rounds where both ran.
func pairRounds(tput map[string][]ohRun, a, b string) (rps, cpu []float64) {
	ra, rb := tput[a], tput[b]
	for i := range min(len(ra), len(rb)) {
		if ra[i].rps > 0 && rb[i].rps > 0 {
			rps = append(rps, ra[i].rps/rb[i].rps)
		}
		if ra[i].cpu > 0 && rb[i].cpu > 0 {
			cpu = append(cpu, rb[i].cpu/ra[i].cpu)
		}
	}
	return rps, cpu
}

// checkpointStats reads how a run's checkpoints went from its events,
// over the job before the drain.
func checkpointStats(r *run) CheckpointStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	var start, end time.Time
	insts := map[string]bool{}
	for _, e := range r.evs {
		switch e.Kind {
		case events.JobStarted:
			if start.IsZero() {
				start = e.Time
			}
		case events.DrainStarted:
			if end.IsZero() {
				end = e.Time
			}
		case events.InstancePlaced:
			insts[e.Instance] = true
		}
	}
	if r.info != nil && r.info.JobStart != nil && start.IsZero() {
		start = *r.info.JobStart
	}
	if r.info != nil && r.info.Finished != nil && end.IsZero() {
		end = *r.info.Finished
	}
	secs := end.Sub(start).Seconds()
	if secs <= 0 || len(insts) == 0 {
		return CheckpointStats{}
	}
	done := map[string][]time.Time{} // completions, by instance ("" for global checkpoints)
	var n int
	var sumMs, compactMs float64
	declined := map[string]bool{}
	for _, e := range r.evs {
		if e.Time.Before(start) || e.Time.After(end) {
			continue
		}
		switch f := e.Fields.(type) {
		case events.CheckpointFields:
			if f.Global {
				done[""] = append(done[""], e.Time)
				n++
				sumMs += float64(f.TookMs)
			} else if e.Instance != "" {
				done[e.Instance] = append(done[e.Instance], e.Time)
				n++
				sumMs += float64(f.TotalUs) / 1000
			}
		case events.CheckpointDeclinedFields:
			declined[fmt.Sprintf("global %v", f.ID)] = true
		case events.ErrorFields:
			if strings.Contains(e.Text, "abandoned") {
				declined[fmt.Sprintf("global %v", f.ID)] = true
			}
		case events.CheckpointFailedFields:
			declined[fmt.Sprintf("%s %v", e.Instance, f.ID)] = true
		case events.CheckpointCompactedFields:
			compactMs += float64(f.Ms)
		}
	}
	st := CheckpointStats{Declined: float64(len(declined)), CompactMsPerS: compactMs / secs}
	if n == 0 {
		return st
	}
	st.MeanMs = sumMs / float64(n)
	if ts, ok := done[""]; ok {
		st.PerSec = 1 / achievedInterval(ts, end)
		return st
	}
	for inst := range insts {
		if ts := done[inst]; len(ts) > 0 {
			st.PerSec += 1 / achievedInterval(ts, end)
		}
	}
	st.PerSec /= float64(len(insts))
	return st
}

// achievedInterval is the interval at which checkpoints completed at
// times ts (ascending, at least one) until end: their mean spacing, or,
// if longer, the time from the first to end over their number, which
// counts a stall at the end (a global checkpoint declined, then
// abandoned). A count over the run's time instead would depend on the
// phase of the first checkpoint (a spate instance's timer first fires an
// interval after the start, a global checkpoint is triggered at once):
// 9 against 10 in a 10 s run, as far apart as two configurations that
// truly differ.
func achievedInterval(ts []time.Time, end time.Time) float64 {
	k := len(ts)
	tail := end.Sub(ts[0]).Seconds() / float64(k)
	if k == 1 {
		return math.Max(tail, 1e-3)
	}
	return math.Max(math.Max(ts[k-1].Sub(ts[0]).Seconds()/float64(k-1), tail), 1e-3)
}

// short is the checkpoint figures of one run, for its line.
func (c CheckpointStats) short(ft string) string {
	if ft == "none" {
		return ""
	}
	return fmt.Sprintf(", %.2f checkpoints/s per instance (%.0f declined, %.0f ms trigger to complete)", c.PerSec, c.Declined, c.MeanMs)
}

// fill computes the medians, ratios and intervals of n rounds.
func (res *Overhead) fill(tput map[string][]ohRun, p99 map[string][]float64, n int, eq *OverheadConfig) {
	res.Rounds = map[string]Values{}
	res.RPS, res.P99Ms, res.CPUPerRec = map[string]float64{}, map[string]float64{}, map[string]float64{}
	res.Ratio, res.RatioRounds, res.CPURatio, res.CPURatioRounds = map[string]float64{}, map[string][]float64{}, map[string]float64{}, map[string][]float64{}
	res.CI, res.CPUCI = map[string]CI{}, map[string]CI{}
	res.Checkpoints, res.LikeForLike = map[string]CheckpointStats{}, map[string]Comparison{}
	for _, c := range res.Configs {
		runs := tput[c.Name]
		runs = append(runs, make([]ohRun, max(n-len(runs), 0))...)
		// Each figure's values in the rounds the configuration ran in,
		// and over every round, NaN where it did not run.
		figs := []struct {
			name     string
			of       func(ohRun) float64
			ran, all []float64
		}{
			{name: "rps_", of: func(r ohRun) float64 { return r.rps }},
			{name: "cpu_us_per_record_", of: func(r ohRun) float64 { return r.cpu }},
			{name: "ckpt_per_s_", of: func(r ohRun) float64 { return r.ckpt.PerSec }},
			{name: "declined_", of: func(r ohRun) float64 { return r.ckpt.Declined }},
			{name: "ckpt_ms_", of: func(r ohRun) float64 { return r.ckpt.MeanMs }},
			{name: "compaction_ms_per_s_", of: func(r ohRun) float64 { return r.ckpt.CompactMsPerS }},
			{name: "interval_s_", of: func(r ohRun) float64 { return r.interval.Seconds() }},
		}
		for _, r := range runs {
			for i := range figs {
				f := &figs[i]
				if r.rps <= 0 {
					f.all = append(f.all, math.NaN())
					continue
				}
				f.ran, f.all = append(f.ran, f.of(r)), append(f.all, f.of(r))
			}
		}
		for i, f := range figs {
			if i < 2 || c.FT != "none" {
				res.Rounds[f.name+c.Name] = f.all
			}
		}
		res.RPS[c.Name], res.CPUPerRec[c.Name] = median(figs[0].ran), median(figs[1].ran)
		if c.FT != "none" {
			res.Checkpoints[c.Name] = CheckpointStats{PerSec: median(figs[2].ran), Declined: median(figs[3].ran), MeanMs: median(figs[4].ran), CompactMsPerS: median(figs[5].ran)}
		}
		if xs, ok := p99[c.Name]; ok {
			res.Rounds["p99_ms_"+c.Name] = xs
			res.P99Ms[c.Name] = median(xs)
		}
	}
	for _, p := range res.pairs(eq) {
		key := p[0] + "/" + p[1]
		rps, cpu := pairRounds(tput, p[0], p[1])
		if len(rps) == 0 {
			continue
		}
		res.RatioRounds[key], res.CPURatioRounds[key] = rps, cpu
		res.CI[key], res.CPUCI[key] = ci95(rps, res.WidthTarget), ci95(cpu, res.WidthTarget)
		if res.RPS[p[1]] > 0 && res.CPUPerRec[p[0]] > 0 {
			res.Ratio[key] = res.RPS[p[0]] / res.RPS[p[1]]
			res.CPURatio[key] = res.CPUPerRec[p[1]] / res.CPUPerRec[p[0]]
		}
		a, aok := res.Checkpoints[p[0]]
		b, bok := res.Checkpoints[p[1]]
		if aok && bok {
			cmp := Comparison{PerSec: [2]float64{a.PerSec, b.PerSec}}
			cmp.Like = math.Abs(a.PerSec-b.PerSec) <= sameRate*math.Max(a.PerSec, b.PerSec)
			if !cmp.Like && eq != nil && (eq.Of == p[0] || eq.Of == p[1]) && (eq.At == p[0] || eq.At == p[1]) {
				if eq.Of == p[0] {
					cmp.Equal = eq.Name + "/" + p[1]
				} else {
					cmp.Equal = p[0] + "/" + eq.Name
				}
			}
			res.LikeForLike[key] = cmp
		}
	}
}

// pairs are the ratios the benchmark reports: every configuration against
// none, spate against global and against the baseline, tls against
// spate, and the equal-rate configuration against its partner.
func (res *Overhead) pairs(eq *OverheadConfig) [][2]string {
	var out [][2]string
	for _, c := range res.Configs {
		if c.Name != "none" && hasConfig(res.Configs, "none") {
			out = append(out, [2]string{c.Name, "none"})
		}
	}
	if hasConfig(res.Configs, "spate") {
		if hasConfig(res.Configs, "tls") {
			out = append(out, [2]string{"tls", "spate"})
		}
		for _, other := range []string{"global", "base"} {
			if hasConfig(res.Configs, other) {
				out = append(out, [2]string{"spate", other})
			}
		}
	}
	if eq != nil {
		if eq.Of == "spate" {
			out = append(out, [2]string{eq.Name, eq.At})
		} else {
			out = append(out, [2]string{eq.At, eq.Name})
		}
	}
	return out
}

func (res *Overhead) panels(rate float64) []panel {
	pr := panel{Title: "throughput, records/s (--rate 0)", Format: human.Count}
	pl := panel{Title: fmt.Sprintf("p99 output lag, ms (at %s records/s)", human.Count(rate)), Format: func(v float64) string { return fmt.Sprintf("%.0f ms", v) }}
	pc := panel{Title: "CPU µs per record (node processes, throughput runs)", Format: func(v float64) string { return fmt.Sprintf("%.3f", v) }}
	pk := panel{Title: "checkpoints completed per instance and second (throughput runs)", Format: func(v float64) string { return fmt.Sprintf("%.2f", v) }}
	finite := func(xs []float64) []float64 {
		return slices.DeleteFunc(slices.Clone(xs), func(x float64) bool { return math.IsNaN(x) })
	}
	for _, c := range res.Configs {
		pr.add(c.Name, finite(res.Rounds["rps_"+c.Name]))
		pc.add(c.Name, finite(res.Rounds["cpu_us_per_record_"+c.Name]))
		if xs, ok := res.Rounds["p99_ms_"+c.Name]; ok {
			pl.add(c.Name, xs)
		}
		if xs, ok := res.Rounds["ckpt_per_s_"+c.Name]; ok {
			pk.add(c.Name, finite(xs))
		}
	}
	out := []panel{pr, pc, pk}
	if len(pl.Configs) > 0 {
		out = append(out, pl)
	}
	return out
}

func (res *Overhead) print(w io.Writer, keys int, iv, dur time.Duration, rounds int, rate float64, eq *OverheadConfig) {
	fmt.Fprintf(w, "overhead (4 nodes, %d keys, interval %v, %v runs, %d rounds; medians, and the 95%% interval of the mean per-round ratio):\n", keys, iv, dur, rounds)
	fmt.Fprintf(w, "  %-10s %10s %12s %14s %9s %18s %12s %12s\n", "config", "records/s", "CPU µs/rec", "ckpt/s/inst", "declined", "trigger→complete", "compaction", "p99 lag")
	for _, c := range res.Configs {
		ck, has := res.Checkpoints[c.Name]
		cks, dec, ms, comp := "-", "-", "-", "-"
		if has {
			cks, dec, ms = fmt.Sprintf("%.2f", ck.PerSec), fmt.Sprintf("%.0f", ck.Declined), fmt.Sprintf("%.0f ms", ck.MeanMs)
			comp = fmt.Sprintf("%.1f ms/s", ck.CompactMsPerS)
		}
		lag := "-"
		if v, ok := res.P99Ms[c.Name]; ok {
			lag = fmt.Sprintf("%.0f ms", v)
		}
		fmt.Fprintf(w, "  %-10s %10s %12.3f %14s %9s %18s %12s %12s\n", c.Name, human.Count(res.RPS[c.Name]), res.CPUPerRec[c.Name], cks, dec, ms, comp, lag)
	}
	fmt.Fprintln(w, "  (CPU µs/rec: the node processes'; compaction: the coordinator's folding of checkpoint chains, ms a second, not in it)")
	if eq != nil {
		fmt.Fprintf(w, "  %s is --ft %s at the interval %s achieved in its round (%s)\n", eq.Name, eq.FT, eq.At, ivList(res.Rounds["interval_s_"+eq.Name]))
	}
	wanted := 1 / iv.Seconds()
	for _, c := range res.Configs {
		if ck, ok := res.Checkpoints[c.Name]; ok && c.Of == "" && ck.PerSec < (1-sameRate)*wanted {
			fmt.Fprintf(w, "  %s completed %.2f checkpoints/s per instance, not the %.2f of --interval %v: its overhead is that of checkpointing every %.1fs\n",
				c.Name, ck.PerSec, wanted, iv, 1/math.Max(ck.PerSec, 1e-9))
		}
	}
	for _, p := range res.pairs(eq) {
		key := p[0] + "/" + p[1]
		ci, ok := res.CI[key]
		if !ok {
			continue
		}
		cc := res.CPUCI[key]
		fmt.Fprintf(w, "  %-15s throughput %s   CPU per record %s   (by round: %s)\n", key, ci, cc, ratios(res.RatioRounds[key]))
		if cmp, ok := res.LikeForLike[key]; ok && !cmp.Like {
			fmt.Fprintf(w, "  %-15s NOT like for like: %s completed %.2f checkpoints/s per instance, %s %.2f", "", p[0], cmp.PerSec[0], p[1], cmp.PerSec[1])
			if cmp.Equal != "" {
				fmt.Fprintf(w, "; at equal rates see %s", cmp.Equal)
			}
			fmt.Fprintln(w)
		}
		need := max(ci.Need, cc.Need)
		if ci.Rounds >= 2 && (ci.Width >= res.WidthTarget || cc.Width >= res.WidthTarget) {
			fmt.Fprintf(w, "  %-15s intervals %.3f and %.3f wide: narrower than %.2f needs about %d rounds (--rounds or --max-rounds)\n", "", ci.Width, cc.Width, res.WidthTarget, need)
		}
	}
	if res.DeltaFull > 0 {
		fmt.Fprintf(w, "  count's delta checkpoints (spate, latency runs): %.1f%% of a full one's bytes, writing %.1f%% of its keys\n", 100*res.DeltaFull, 100*res.DirtyKeys)
	}
}

// ivList formats interval rounds (seconds, NaN where not run) as "2.1s 1.9s -".
func ivList(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		if math.IsNaN(x) {
			s[i] = "-"
		} else {
			s[i] = fmt.Sprintf("%.2fs", x)
		}
	}
	return strings.Join(s, " ")
}
