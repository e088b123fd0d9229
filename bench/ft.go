package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"spate/coord"
	"spate/events"
)

// run is one cluster run of a benchmark and what it observed.
type run struct {
	info      *coord.RunInfo
	rps       float64
	verified  bool
	mu        sync.Mutex
	evs       []events.Event
	killAtMs  int64         // ms after the job started that the killed node died; 0: no kill
	killTook  time.Duration // from the signal to the death
	killSent  int64         // ms after the job started that the signal was sent
	killErr   error
	cpuPerRec float64 // CPU µs the node processes spent per record read
	replayed  uint64
	lastFull  map[string][2]float64 // per instance: bytes and keys of its latest full checkpoint
	deltaFull []float64             // a delta's bytes / its instance's latest full's bytes
	keyFrac   []float64             // a delta's keys / its instance's latest full's keys
}

// observe collects what the benchmark needs from the events.
func (r *run) observe(e events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case events.Replay:
		f, _ := e.Fields.(events.ReplayFields)
		r.replayed += f.Records
	case events.RecoveryPlaced:
		f, _ := e.Fields.(events.RecoveryPlacedFields)
		r.replayed += f.Records // a global rollback's; 0 for an instance's
	case events.Checkpoint:
		f, _ := e.Fields.(events.CheckpointFields)
		b, k := float64(f.Bytes), float64(f.Keys)
		if b == 0 || !strings.HasPrefix(e.Instance, "count#") {
			break
		}
		if r.lastFull == nil {
			r.lastFull = map[string][2]float64{}
		}
		if f.Full {
			r.lastFull[e.Instance] = [2]float64{b, k}
		} else if f, ok := r.lastFull[e.Instance]; ok && f[1] > 0 {
			r.deltaFull = append(r.deltaFull, b/f[0])
			r.keyFrac = append(r.keyFrac, k/f[1])
		}
	}
	r.evs = append(r.evs, e)
}

// setKill records the moments the kill signal was sent and the killed
// node was seen dead.
func (r *run) setKill(sentMs int64, took time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killSent, r.killAtMs, r.killTook, r.killErr = sentMs, sentMs+took.Milliseconds(), took, err
}

// settleKill bounds the death of the killed node, once the run is over, by
// the first loss the coordinator detected after the signal: the poller
// that watched the process die runs in this process, which the cluster
// starves of CPU now and then, and sees a death late; the node was dead
// by the time its loss was detected at the latest.
func (r *run) settleKill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.info == nil || r.info.JobStart == nil || r.killAtMs <= 0 {
		return
	}
	for _, e := range r.evs {
		if e.Kind != events.NodeLost {
			continue
		}
		ms := e.Time.Sub(*r.info.JobStart).Milliseconds()
		if ms >= r.killSent && ms < r.killAtMs {
			r.killAtMs, r.killTook = ms, time.Duration(ms-r.killSent)*time.Millisecond
			return
		}
	}
}

// clusterRun runs cfg; with kill > 0 it SIGKILLs the node hosting victim
// kill after the job started.
func clusterRun(ctx context.Context, cfg coord.Config, kill time.Duration, victim string, verify bool) (*run, error) {
	r := &run{}
	var mu sync.Mutex
	pids := map[string]int{}
	hosts := map[string]string{}
	var started time.Time
	obs := func(e events.Event) {
		r.observe(e)
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case events.NodeSpawned:
			if f, ok := e.Fields.(events.NodeSpawnedFields); ok {
				pids[e.Node] = f.PID
			}
		case events.InstancePlaced:
			hosts[e.Instance] = e.Node
		case events.JobStarted:
			started = e.Time
			if kill > 0 {
				go func() {
					time.Sleep(kill) // the benchmark's schedule, not a synchronisation
					mu.Lock()
					pid := pids[hosts[victim]]
					mu.Unlock()
					if pid <= 0 {
						r.setKill(0, 0, fmt.Errorf("no node process is known to host %s", victim))
						return
					}
					sent := time.Since(started)
					took, err := killNode(pid)
					r.setKill(sent.Milliseconds(), took, err)
				}()
			}
		}
	}
	dir, err := coord.Up(ctx, cfg, coord.Options{Observe: obs})
	if err != nil {
		return nil, err
	}
	ri, n, rps, err := finishedRun(dir)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.info, r.rps = ri, rps
	err = r.killErr
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: kill: %w", dir, err)
	}
	r.settleKill()
	if n > 0 {
		r.cpuPerRec = ri.NodeCPU * 1e6 / float64(n)
	}
	r.verified = true
	if verify {
		rep, err := coord.VerifyRun(dir)
		r.verified = err == nil && rep.OK()
		if !r.verified {
			fmt.Fprintf(os.Stderr, "spate bench: %s did not verify: %v %v\n", dir, rep.String(), err)
		}
	}
	return r, nil
}

// finishedRun reads the run.json of a run that must have finished: its
// records read and their rate over the job's time.
func finishedRun(dir string) (ri *coord.RunInfo, records uint64, rps float64, err error) {
	if ri, err = coord.ReadRunInfo(dir); err != nil {
		return nil, 0, 0, err
	}
	if ri.JobStart == nil || ri.Finished == nil {
		return nil, 0, 0, fmt.Errorf("%s: run did not finish", dir)
	}
	for _, v := range ri.Positions {
		records += v
	}
	return ri, records, float64(records) / ri.Finished.Sub(*ri.JobStart).Seconds(), nil
}

// lagP99 is the 99th percentile of the output lag after warm-up.
func lagP99(ri *coord.RunInfo, warm time.Duration) float64 {
	var xs []float64
	for _, s := range ri.Lag {
		if s[0] >= warm.Milliseconds() {
			xs = append(xs, float64(s[1]))
		}
	}
	return percentile(xs, 0.99)
}

func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// lagGap is how long the output lag may go unsampled, with lag samples
// every heartbeat, before recoveryTime counts the stretch as not normal.
func lagGap(heartbeat time.Duration) time.Duration { return max(250*time.Millisecond, 10*heartbeat) }

// recoveryTime is how long after the kill the output lag took to be back
// to normal (at most the pre-kill p99 plus a quarter, and at least 50 ms
// more) and stay there for a second. A stretch of more than gap without a
// sample is not normal: nothing says the output moved. Nor is a sample
// whose output has not yet reached the moment of the kill (elapsed minus
// lag): while the output is stalled its lag grows from where it was, and
// where the pre-kill lag was high it stays under the bar for a while
// without anything having recovered.
func recoveryTime(ri *coord.RunInfo, killAt int64, warm, gap time.Duration) (float64, bool) {
	var before []float64
	for _, s := range ri.Lag {
		if s[0] >= warm.Milliseconds() && s[0] < killAt {
			before = append(before, float64(s[1]))
		}
	}
	p99 := percentile(before, 0.99)
	normal := p99 + max(50, p99/4)
	var since int64 = -1
	prev := killAt
	for _, s := range ri.Lag {
		if s[0] < killAt {
			continue
		}
		if s[0]-prev > gap.Milliseconds() {
			since = -1
		}
		prev = s[0]
		if float64(s[1]) <= normal && s[0]-s[1] >= killAt {
			if since < 0 {
				since = s[0]
			}
			if s[0]-since >= 1000 {
				return float64(since-killAt) / 1000, true
			}
		} else {
			since = -1
		}
	}
	return 0, false
}

func benchConfig(root, name string, round int, ft string) coord.Config {
	cfg := coord.DefaultConfig()
	cfg.Nodes, cfg.Local, cfg.FT, cfg.Headless = 4, 4, ft, true
	cfg.Data = filepath.Join(root, fmt.Sprintf("%s-%s-%d", name, ft, round))
	return cfg
}

// tempRoot is the directory a benchmark's runs go in: data, or a
// temporary one that cleanup removes, unless keep or the benchmark failed
// (rc 1 or 2; not an interruption): the failed run's logs and events are
// then what says why, and cleanup says where they are.
func tempRoot(data string, keep bool, stderr io.Writer) (string, func(rc int), error) {
	if data != "" {
		return data, func(int) {}, os.MkdirAll(data, 0o755)
	}
	tmp, err := os.MkdirTemp("", "spate-bench-")
	return tmp, func(rc int) {
		if keep || (rc != 0 && rc != exitInterrupted) {
			fmt.Fprintf(stderr, "spate bench: the run directories are kept in %s\n", tmp)
			return
		}
		os.RemoveAll(tmp)
	}, err
}

// Recovery is the result of `spate bench recovery`.
type Recovery struct {
	Meta
	// Rounds holds every round's raw values: recovery_s_FT, replayed_FT,
	// kill_at_s (when the round's kill was due, after the job started) and
	// capacity_rps (the measured capacity, when --rate 0).
	Rounds map[string][]float64 `json:"rounds"`
	// PhaseRounds and UntouchedRounds are each round's phases and
	// untouched figures, per configuration.
	PhaseRounds     map[string][]Phases    `json:"phase_rounds"`
	UntouchedRounds map[string][]Untouched `json:"untouched_rounds"`
	Rate            float64                `json:"rate"` // the offered load, records/s
	RecoveryS       map[string]float64     `json:"recovery_s"`
	Replayed        map[string]float64     `json:"replayed"`
	Ratio           map[string]float64     `json:"ratio"`
	// PhasesMs says where the time went, in ms after the kill (medians):
	// the loss detected, every lost instance (global: the whole job)
	// restored, and (spate) every lost instance caught up with its
	// upstreams; back to normal output lag is RecoveryS.
	PhasesMs map[string]Phases `json:"phases_ms"`
	// Untouched says whether the instances a failure did not take kept
	// running (medians): how many instances the recovery restarted, and
	// the lowest input rate of the others while it ran.
	Untouched map[string]Untouched `json:"untouched"`
	Verified  bool                 `json:"verified"`
}

// Untouched is what a recovery did to the instances it did not have to
// recover.
type Untouched struct {
	Restarted float64 `json:"restarted"` // instances restarted by the recovery
	Instances float64 `json:"instances"` // of the job's
	// MinRate is the lowest input rate of an instance not restarted, in
	// the metrics covering the recovery (from the kill until a sample
	// after the output lag was normal again), as a fraction of its median
	// before the kill; -1 if every instance was restarted.
	MinRate float64 `json:"min_rate"`
}

// untouched finds, in a run's events, which instances the recovery from
// its kill restarted (one recovery_placed each; one for the whole job
// under global) and how the others' input rates held up until recoveryS
// after the kill. Metrics come about once a second, each covering the
// second before it.
func untouched(r *run, recoveryS float64) Untouched {
	u := Untouched{MinRate: -1}
	if r.info == nil || r.info.JobStart == nil || r.killAtMs <= 0 {
		return u
	}
	kill := r.info.JobStart.Add(time.Duration(r.killAtMs) * time.Millisecond)
	end := kill.Add(time.Duration((recoveryS + 1.1) * float64(time.Second)))
	warm := r.info.JobStart.Add(2 * time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	all, restarted := map[string]bool{}, map[string]bool{}
	before := map[string][]float64{}
	for _, e := range r.evs {
		switch {
		case e.Kind == events.InstancePlaced && e.Time.Before(kill):
			all[e.Instance] = true
		case e.Kind == events.RecoveryPlaced && !e.Time.Before(kill) && e.Time.Before(end):
			if e.Instance == "" {
				maps.Copy(restarted, all)
			} else {
				restarted[e.Instance] = true
			}
		case e.Kind == events.Metrics && e.Instance != "" && e.Time.After(warm) && e.Time.Before(kill):
			if f, ok := e.Fields.(events.MetricsFields); ok {
				before[e.Instance] = append(before[e.Instance], f.InRate)
			}
		}
	}
	u.Restarted, u.Instances = float64(len(restarted)), float64(len(all))
	for _, e := range r.evs {
		if e.Kind != events.Metrics || e.Instance == "" || restarted[e.Instance] || !e.Time.After(kill) || e.Time.After(end) {
			continue
		}
		m, ok := e.Fields.(events.MetricsFields)
		if b := before[e.Instance]; ok && len(b) > 0 && median(b) > 0 {
			if f := m.InRate / median(b); u.MinRate < 0 || f < u.MinRate {
				u.MinRate = f
			}
		}
	}
	return u
}

func (u Untouched) String() string {
	if u.MinRate < 0 {
		return fmt.Sprintf("restarted %.0f of %.0f instances", u.Restarted, u.Instances)
	}
	return fmt.Sprintf("restarted %.0f of %.0f instances; the others' input never below %.0f%% of before", u.Restarted, u.Instances, 100*u.MinRate)
}

// Phases are the moments of one recovery, in ms after the kill; -1 where
// a run has no such moment.
type Phases struct {
	Detected float64 `json:"detected"`
	Restored float64 `json:"restored"`
	CaughtUp float64 `json:"caught_up"`
}

// phases finds, in a run's events, the moments of the recovery from its
// kill: the first node_lost after it, the last recovery_restored and the
// last recovery_done of that recovery (before anything is lost again).
func phases(r *run) Phases {
	ph := Phases{Detected: -1, Restored: -1, CaughtUp: -1}
	if r.info == nil || r.info.JobStart == nil || r.killAtMs <= 0 {
		return ph
	}
	kill := r.info.JobStart.Add(time.Duration(r.killAtMs) * time.Millisecond)
	ms := func(t time.Time) float64 { return float64(t.Sub(kill).Microseconds()) / 1000 }
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evs {
		if e.Time.Before(kill) {
			continue
		}
		switch e.Kind {
		case events.NodeLost:
			if ph.Detected >= 0 {
				return ph // a later loss: another recovery
			}
			ph.Detected = ms(e.Time)
		case events.RecoveryRestored:
			if ph.Detected >= 0 {
				ph.Restored = ms(e.Time)
			}
		case events.RecoveryDone:
			if ph.Detected >= 0 {
				ph.CaughtUp = ms(e.Time)
			}
		}
	}
	return ph
}

// medianPhases is the median of each phase over the runs that have it.
func medianPhases(ps []Phases) Phases {
	pick := func(f func(Phases) float64) float64 {
		var xs []float64
		for _, p := range ps {
			if v := f(p); v >= 0 {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return -1
		}
		return median(xs)
	}
	return Phases{
		Detected: pick(func(p Phases) float64 { return p.Detected }),
		Restored: pick(func(p Phases) float64 { return p.Restored }),
		CaughtUp: pick(func(p Phases) float64 { return p.CaughtUp }),
	}
}

// ratios formats xs as "0.97 0.82 ...".
func ratios(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}

// medianUntouched is the median of each figure over the rounds (MinRate:
// over the rounds that have one).
func medianUntouched(us []Untouched) Untouched {
	var r, n, m []float64
	for _, u := range us {
		r, n = append(r, u.Restarted), append(n, u.Instances)
		if u.MinRate >= 0 {
			m = append(m, u.MinRate)
		}
	}
	out := Untouched{Restarted: median(r), Instances: median(n), MinRate: -1}
	if len(m) > 0 {
		out.MinRate = median(m)
	}
	return out
}

func (p Phases) String() string {
	at := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("detected %s, restored %s, caught up %s", at(p.Detected), at(p.Restored), at(p.CaughtUp))
}

func recoveryMain(args []string, stdout, stderr io.Writer) (rc int) {
	fs := flag.NewFlagSet("bench recovery", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	rounds := fs.Int("rounds", 3, "rounds; each runs every configuration")
	dur := fs.Duration("duration", 20*time.Second, "run time of each run")
	killAt := fs.Duration("kill", 8*time.Second, "when the worker is killed, after the job started, plus a phase that spreads the rounds' kills evenly over one interval")
	keys := fs.Int("keys", 100_000, "distinct keys (state size)")
	rate := fs.Float64("rate", 0, "records/s (0: --load times the capacity measured first)")
	load := fs.Float64("load", 0.5, "with --rate 0, the offered load as a fraction of the measured capacity (--ft none's: spate and global have less)")
	interval := fs.Duration("interval", time.Second, "checkpoint interval")
	victim := fs.String("victim", "count#0", "the instance whose node is killed")
	heartbeat := fs.Duration("heartbeat", 20*time.Millisecond, "heartbeat period: the resolution of the output-lag samples")
	source := fs.String("source", "gen:constant", "input: a steady load, so that the output lag before the kill is a baseline")
	par := fs.String("parallelism", "", "OP=N,...: parallelism over the job's defaults")
	s := newSession("recovery", fs, stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	parallelism := coord.DefaultConfig().Parallelism
	if err := coord.ParseParallelism(*par, parallelism); err != nil {
		fmt.Fprintln(stderr, "spate bench recovery:", err)
		return 2
	}
	fts := []string{"spate", "global"}
	weights := repeat(*rounds*len(fts), runWeight(*dur))
	if *rate <= 0 {
		weights = append([]float64{runWeight(10 * time.Second)}, weights...)
	}
	if err := s.start(weights); err != nil {
		fmt.Fprintln(stderr, "spate bench:", err)
		return 2
	}
	defer func() { s.end(rc) }()
	root := s.root
	var capacityRPS []float64
	if *rate <= 0 {
		// Recovery time depends on the spare capacity left for catching
		// up, so the load is set relative to what this machine can do.
		// The rate of the steady stretch: the first seconds, with little
		// state yet, run far faster.
		cfg := benchConfig(root, "capacity", 0, "none")
		cfg.Rate, cfg.Duration, cfg.Keys, cfg.Source, cfg.Parallelism = 0, 10*time.Second, *keys, *source, parallelism
		s.step("capacity: --ft none at --rate 0 for 10s")
		r, err := clusterRun(s.ctx, cfg, 0, "", false)
		if s.interrupted() {
			return exitInterrupted
		}
		if err != nil {
			fmt.Fprintln(stderr, "spate bench recovery: capacity:", err)
			return 1
		}
		capacity := steadyRate(r, 4000, 9000)
		if capacity <= 0 {
			capacity = r.rps
		}
		*rate = math.Round(*load * capacity)
		capacityRPS = append(capacityRPS, capacity)
		if !*asJSON {
			fmt.Fprintf(stdout, "capacity %s records/s (--ft none, unpaced, from 4 s to 9 s of the job); offered load %.0f%% of it: %s records/s\n", si(capacity), 100**load, si(*rate))
		}
	}
	rec := map[string][]float64{}
	rep := map[string][]float64{}
	phs := map[string][]Phases{}
	unt := map[string][]Untouched{}
	res := Recovery{Rate: *rate, RecoveryS: map[string]float64{}, Replayed: map[string]float64{}, Ratio: map[string]float64{},
		PhasesMs: map[string]Phases{}, Untouched: map[string]Untouched{}, Verified: true}
	var killAts []float64
	for i := range *rounds {
		// Where a kill falls in the checkpoint period decides how much is
		// replayed, and both configurations' checkpoint timers start with
		// the job: a fixed moment would favour whichever one's phase it
		// happens to suit. The rounds' kills are spread evenly over one
		// interval instead, the same moment for both in a round.
		at := *killAt + time.Duration((float64(i)+0.5)/float64(*rounds)*float64(*interval))
		killAts = append(killAts, at.Seconds())
		for _, ft := range fts {
			cfg := benchConfig(root, "rec", i, ft)
			cfg.Rate, cfg.Duration, cfg.Keys, cfg.Interval, cfg.Heartbeat = *rate, *dur, *keys, interval.String(), *heartbeat
			cfg.Source, cfg.Parallelism = *source, parallelism
			s.step("round %d of %d: --ft %s, %s's node killed at %v (%s records/s, %v)", i+1, *rounds, ft, *victim, at, si(*rate), *dur)
			r, err := clusterRun(s.ctx, cfg, at, *victim, true)
			if s.interrupted() {
				return exitInterrupted
			}
			if err != nil {
				fmt.Fprintln(stderr, "spate bench recovery:", err)
				return 1
			}
			res.Verified = res.Verified && r.verified
			t, ok := recoveryTime(r.info, r.killAtMs, 2*time.Second, lagGap(*heartbeat))
			if !ok {
				t = (*dur - at).Seconds() // never back to normal within the run
			}
			ph, un := phases(r), untouched(r, t)
			rec[ft] = append(rec[ft], t)
			rep[ft] = append(rep[ft], float64(r.replayed))
			phs[ft] = append(phs[ft], ph)
			unt[ft] = append(unt[ft], un)
			if !*asJSON {
				if r.killTook > 10*time.Millisecond {
					fmt.Fprintf(stdout, "round %d %-6s the killed node took %v to die (inside a system call): its recovery is timed from its death\n", i+1, ft, r.killTook.Round(time.Millisecond))
				}
				fmt.Fprintf(stdout, "round %d %-6s killed at %v, back to normal %.2fs after (%v), %d records replayed; %v\n", i+1, ft, at, t, ph, r.replayed, un)
			}
		}
	}
	for _, ft := range fts {
		res.RecoveryS[ft], res.Replayed[ft] = median(rec[ft]), median(rep[ft])
		res.PhasesMs[ft] = medianPhases(phs[ft])
		res.Untouched[ft] = medianUntouched(unt[ft])
	}
	res.Ratio["global/spate"] = res.RecoveryS["global"] / res.RecoveryS["spate"]
	s.prog.finish(s.name)
	res.Meta, res.Rounds, res.PhaseRounds, res.UntouchedRounds = s.meta, map[string][]float64{"kill_at_s": killAts}, phs, unt
	if capacityRPS != nil {
		res.Rounds["capacity_rps"] = capacityRPS
	}
	pt := panel{Title: "time to normal output lag after the kill, s", Format: func(v float64) string { return fmt.Sprintf("%.2fs", v) }}
	pp := panel{Title: "records replayed", Format: si}
	for _, ft := range fts {
		res.Rounds["recovery_s_"+ft], res.Rounds["replayed_"+ft] = rec[ft], rep[ft]
		pt.add(ft, rec[ft])
		pp.add(ft, rep[ft])
	}
	if *s.html != "" {
		if err := writeHTML(*s.html, "spate bench recovery", s.meta, []panel{pt, pp}); err != nil {
			fmt.Fprintln(stderr, "spate bench recovery:", err)
			return 2
		}
	}
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(res)
	} else {
		fmt.Fprintf(stdout, "recovery (4 nodes, %s records/s, %d keys, interval %v, node of %s killed at %v + phases over an interval, %d rounds, medians):\n", si(*rate), *keys, *interval, *victim, *killAt, *rounds)
		for _, ft := range fts {
			fmt.Fprintf(stdout, "  %-6s %.2fs to normal output lag, %.0f records replayed; %v; %v\n", ft, res.RecoveryS[ft], res.Replayed[ft], res.PhasesMs[ft], res.Untouched[ft])
		}
		fmt.Fprintf(stdout, "  global/spate %.2f\n", res.Ratio["global/spate"])
	}
	if !res.Verified {
		fmt.Fprintln(stdout, "  WARNING: a run failed verification")
		return 1
	}
	return 0
}
