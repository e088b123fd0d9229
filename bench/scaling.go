package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"spate/control"
	"spate/coord"
	"spate/events"
	"spate/internal/human"
)

// Scaling is the result of `spate bench scaling`.
type Scaling struct {
	Meta
	// PauseS is the longest time a record waited because of a live
	// scale-out of count 2→4 under load, as the bump of the output lag:
	// the largest lag from the scale command until the rescale is over
	// (eds: until the kill; restart: 2.5 s) less the median lag before it. Rounds also has
	// rescale_done's pause_ms (eds: capture → the new owner's first
	// record of the last of its key groups; restart: every instance
	// stopped → every one restored).
	PauseS map[string]float64 `json:"pause_s"`
	// RecoveryS is how long the job takes to be back after a node is
	// killed --kill-after the scale-out is done: eds kills the node of
	// the new instance count#2 and recovers locally from the post-scaling
	// status (the output lag normal again); checkpoint is the thesis's
	// baseline, a job with no status after the scaling (scaleOpts.baseline):
	// count#0's node killed at the same moment, the last pre-scaling
	// checkpoint restored, and the scaling redone (the output lag normal
	// and the redo re-routed, whichever is later). Rounds also has each run's
	// records replayed after the kill and eds's kill_after.
	RecoveryS map[string]float64 `json:"recovery_s"`
	// OverheadRatio is steady-state throughput (--rate 0) of count scaled
	// live 2→4 at the start over count fixed at 4 from the start, both
	// over the same stretch of job time: from a second after the rescale
	// is done to a second before the run's end (the rescale itself is
	// the pause's business, not the steady state's).
	OverheadRatio float64              `json:"overhead_ratio"`
	Rounds        map[string][]float64 `json:"rounds"`
	Verified      bool                 `json:"verified"`
}

// scaleRun is one run with a live scale of count at scaleAt, and
// optionally the new instance's node killed once the rescale is done.
type scaleRun struct {
	r        *run
	pauseMs  float64
	doneMs   int64 // rescale_done, ms after the job started (the baseline: its redo's)
	routedMs int64 // the baseline: its redo's rescale_rerouted (the scaled job runs)
	killAtMs int64
	err      error
}

// scaleOpts is what a scaling run does besides running.
type scaleOpts struct {
	scaleAt time.Duration // when count is scaled to `to` (the baseline: when its checkpoints stop)
	to      int
	// kill > 0 SIGKILLs the node of the new instance count#2 this long
	// after the rescale is done.
	kill time.Duration
	// baseline is the recovery the thesis compares EDS against: a job
	// with no status of its own after the scaling. Count stays at 2 and
	// no instance checkpoints from scaleAt on (its interval is set to an
	// hour then), count#0's node is killed killAt after the job started,
	// its recovery restores the last checkpoint from before the scaling
	// and replays everything since, and once count#0 has recovered the
	// scale-out is redone (live, as eds's).
	baseline bool
	killAt   time.Duration
}

// act sends one action to the run's coordinator.
func act(dir string, a control.Action) error {
	c, err := control.Dial(dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Act(ctx, a)
	if err == nil && !res.OK {
		err = fmt.Errorf("%s %s: %s", a.Verb, a.Target, res.Text)
	}
	return err
}

func scalingRun(ctx context.Context, cfg coord.Config, o scaleOpts) (*scaleRun, error) {
	sr := &scaleRun{r: &run{}, killAtMs: -1}
	var mu sync.Mutex
	pids, hosts := map[string]int{}, map[string]string{}
	var started time.Time
	var dir string
	redone := false
	fail := func(err error) {
		if err != nil {
			mu.Lock()
			sr.err = err
			mu.Unlock()
		}
	}
	scale := func(d string) error {
		return act(d, control.Action{Verb: "scale", Target: "count", Args: map[string]string{"n": fmt.Sprint(o.to)}})
	}
	killHost := func(inst string, after time.Duration) {
		pid := pids[hosts[inst]]
		if pid <= 0 {
			fail(fmt.Errorf("no node process is known to host %s", inst))
			return
		}
		sr.killAtMs = 0 // taken: the moment of the death is set once the run is over
		go func() {
			time.Sleep(after) // the benchmark's schedule, not a synchronisation
			sent := time.Since(started)
			took, err := killNode(pid)
			sr.r.setKill(sent.Milliseconds(), took, err)
		}()
	}
	obs := func(e events.Event) {
		sr.r.observe(e)
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case events.NodeSpawned:
			if f, ok := e.Fields.(events.NodeSpawnedFields); ok {
				pids[e.Node] = f.PID
			}
		case events.InstancePlaced, events.RecoveryPlaced, events.RescaleMoved:
			hosts[e.Instance] = e.Node
		case events.JobStarted:
			started = e.Time
			d := dir
			go func() {
				time.Sleep(o.scaleAt) // the benchmark's schedule, not a synchronisation
				if !o.baseline {
					fail(scale(d))
					return
				}
				fail(act(d, control.Action{Verb: "interval", Target: "all", Args: map[string]string{"interval": "1h"}}))
				time.Sleep(o.killAt - o.scaleAt)
				mu.Lock()
				defer mu.Unlock()
				killHost("count#0", 0)
			}()
		case events.RecoveryDone:
			if o.baseline && !redone && e.Instance == "count#0" {
				redone = true
				d := dir
				go func() { // the scaling redone, once no recovery is in flight
					for range 200 {
						err := scale(d)
						if err == nil || !strings.Contains(err.Error(), "in flight") {
							fail(err)
							return
						}
						time.Sleep(50 * time.Millisecond) // polling the coordinator's answer
					}
					fail(errors.New("the redo of the scaling was refused for 10 s: a recovery stayed in flight"))
				}()
			}
		case events.RescaleRerouted:
			sr.routedMs = e.Time.Sub(started).Milliseconds()
		case events.RescaleDone:
			sr.doneMs = e.Time.Sub(started).Milliseconds()
			if f, ok := e.Fields.(events.RescaleDoneFields); ok {
				sr.pauseMs = float64(f.PauseMs)
			}
			if o.kill > 0 && sr.killAtMs < 0 {
				killHost("count#2", o.kill)
			}
		}
	}
	started0 := func(d string) { mu.Lock(); dir = d; mu.Unlock() }
	d, err := coord.Up(ctx, cfg, coord.Options{Observe: obs, Started: started0})
	if err != nil {
		return nil, err
	}
	ri, _, rps, err := finishedRun(d)
	if err != nil {
		return nil, err
	}
	sr.r.mu.Lock()
	sr.r.info, sr.r.rps = ri, rps
	sr.r.mu.Unlock()
	sr.r.settleKill()
	sr.r.mu.Lock()
	if sr.killAtMs == 0 {
		sr.killAtMs, err = sr.r.killAtMs, sr.r.killErr
	}
	sr.r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: kill: %w", d, err)
	}
	rep, verr := coord.VerifyRun(d)
	sr.r.verified = verr == nil && rep.OK()
	if !sr.r.verified {
		fmt.Fprintf(os.Stderr, "spate bench: %s did not verify: %v %v\n", d, rep.String(), verr)
	}
	return sr, sr.err
}

func scalingMain(args []string, stdout, stderr io.Writer) (rc int) {
	fs := flag.NewFlagSet("bench scaling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	rounds := fs.Int("rounds", 3, "rounds; each runs every configuration")
	// The defaults give count a state worth stopping for: its state is
	// the keys of its open windows (a key whose windows have fired is
	// dropped), so it grows with rate × window, not with --keys. At
	// 50k records/s, 1 s windows and 100k keys (the earlier defaults)
	// count held about 40k keys in all, which a full checkpoint and a
	// restart of the whole job handle in ~0.1 s: no test of stopping the
	// world. At 100k records/s over 1M keys with 5 s windows, scaled 3 s
	// into a window, it holds about 150k keys (2.3 MB raw per instance).
	dur := fs.Duration("duration", 30*time.Second, "run time of the pause and recovery runs")
	tput := fs.Duration("tput", 20*time.Second, "run time of the throughput runs (the ratio is taken from a second after the rescale to a second before the end)")
	scaleAtF := fs.Duration("scale", 13*time.Second, "when count scales 2→4, after the job started")
	keys := fs.Int("keys", 1_000_000, "distinct keys")
	rate := fs.Float64("rate", 100_000, "records/s of the pause and recovery runs")
	window := fs.Duration("window", 5*time.Second, "tumbling window size: count's state is the keys of its open windows, about rate × window records' worth")
	interval := fs.Duration("interval", time.Second, "checkpoint interval")
	killAfter := fs.Duration("kill-after", 3*time.Second, "how long after the rescale is done eds's kill comes: long enough for every instance to checkpoint its post-scaling status (3 intervals by default), so that eds recovers from that, not from the pre-copy's bases")
	only := fs.String("only", "", "run only these of eds,restart,checkpoint,overhead (comma-separated; for a diagnosis: the medians then miss the others)")
	s := newSession("scaling", fs, stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	all := []string{"eds", "restart", "checkpoint", "overhead"}
	runs := map[string]bool{}
	for _, r := range all {
		runs[r] = *only == ""
	}
	if *only != "" {
		for _, r := range strings.Split(*only, ",") {
			if !slices.Contains(all, r) {
				fmt.Fprintf(stderr, "spate bench scaling: --only: unknown run %q (want eds, restart, checkpoint or overhead)\n", r)
				return 2
			}
			runs[r] = true
		}
	}
	scaleAt := *scaleAtF
	var weights []float64
	for range *rounds {
		for _, r := range all {
			switch {
			case !runs[r]:
			case r == "overhead":
				weights = append(weights, runWeight(*tput), runWeight(*tput))
			default:
				weights = append(weights, runWeight(*dur))
			}
		}
	}
	if err := s.start(weights); err != nil {
		fmt.Fprintln(stderr, "spate bench:", err)
		return 2
	}
	defer func() { s.end(rc) }()
	root := s.root
	res := Scaling{PauseS: map[string]float64{}, RecoveryS: map[string]float64{}, Rounds: map[string][]float64{}, Verified: true}
	fail := func(what string, err error) int {
		fmt.Fprintf(stderr, "spate bench scaling: %s: %v\n", what, err)
		return 1
	}
	base := func(name string, i int, ft string) coord.Config {
		cfg := benchConfig(root, name, i, ft)
		cfg.Rate, cfg.Duration, cfg.Keys, cfg.Interval, cfg.Window = *rate, *dur, *keys, interval.String(), *window
		// Kills are seen at once (the connection closes); a long timeout
		// keeps a saturated 2-core machine from declaring live nodes dead.
		cfg.Timeout = 5 * time.Second
		return cfg
	}
	for i := range *rounds {
		edsKill := int64(-1)
		if runs["eds"] {
			// eds: live scale-out, then the new instance's node killed.
			s.step("round %d of %d: eds, count 2→4 live at %v, then the new instance's node killed", i+1, *rounds, scaleAt)
			sr, err := scalingRun(s.ctx, base("eds", i, "spate"), scaleOpts{scaleAt: scaleAt, to: 4, kill: *killAfter})
			if s.interrupted() {
				return exitInterrupted
			}
			if err != nil {
				return fail("eds run", err)
			}
			res.Verified = res.Verified && sr.r.verified
			t, ok := recoveryTime(sr.r.info, sr.killAtMs, 2*time.Second, lagGap(coord.DefaultConfig().Heartbeat))
			if !ok || sr.killAtMs < 0 {
				t = (*dur).Seconds() - float64(max(sr.killAtMs, 0))/1000
			}
			res.add("pause_eds", lagBump(sr.r.info, scaleAt.Milliseconds(), sr.killAtMs, 2*time.Second))
			res.add("pause_ms_eds", sr.pauseMs)
			res.add("recovery_eds", t)
			res.add("kill_after_eds", float64(sr.killAtMs-sr.doneMs)/1000)
			res.add("replayed_eds", float64(replayedAfter(sr.r, sr.killAtMs)))
			edsKill = sr.killAtMs
		}
		if runs["restart"] {
			// restart: the Flink way.
			cfg := base("restart", i, "spate")
			cfg.Rescale = "restart"
			s.step("round %d of %d: restart, count 2→4 by --rescale restart at %v", i+1, *rounds, scaleAt)
			sr, err := scalingRun(s.ctx, cfg, scaleOpts{scaleAt: scaleAt, to: 4})
			if s.interrupted() {
				return exitInterrupted
			}
			if err != nil {
				return fail("restart run", err)
			}
			res.Verified = res.Verified && sr.r.verified
			res.add("pause_restart", lagBump(sr.r.info, scaleAt.Milliseconds(), scaleAt.Milliseconds()+2500, 2*time.Second))
			res.add("pause_ms_restart", sr.pauseMs)
		}
		if runs["checkpoint"] {
			// checkpoint: no status after the scaling; count#0's node
			// killed when eds's was, the last pre-scaling checkpoint
			// restored, then the scaling redone.
			killAt := time.Duration(max(edsKill, scaleAt.Milliseconds()+2000+killAfter.Milliseconds())) * time.Millisecond
			s.step("round %d of %d: checkpoint, no checkpoint from %v on, count#0's node killed at %v, then count 2→4 again", i+1, *rounds, scaleAt, killAt)
			sr, err := scalingRun(s.ctx, base("ckpt", i, "spate"), scaleOpts{scaleAt: scaleAt, to: 4, baseline: true, killAt: killAt})
			if s.interrupted() {
				return exitInterrupted
			}
			if err != nil {
				return fail("checkpoint run", err)
			}
			res.Verified = res.Verified && sr.r.verified
			t, ok := recoveryTime(sr.r.info, sr.killAtMs, 2*time.Second, lagGap(coord.DefaultConfig().Heartbeat))
			switch {
			case !ok || sr.killAtMs <= 0 || sr.routedMs <= sr.killAtMs:
				t = (*dur).Seconds() - float64(max(sr.killAtMs, 0))/1000 // never back, or the scaling never redone
			default:
				// Back, and scaled again: the redo has re-routed, its new
				// owners run (its done waits for their first checkpoints
				// too, which eds's recovery is not charged for).
				t = max(t, float64(sr.routedMs-sr.killAtMs)/1000)
			}
			res.add("recovery_checkpoint", t)
			res.add("replayed_checkpoint", float64(replayedAfter(sr.r, sr.killAtMs)))
		}
		if runs["overhead"] {
			// overhead: throughput with count scaled live 2→4 against fixed at 4.
			cfg := base("sliced", i, "spate")
			cfg.Rate, cfg.Duration = 0, *tput
			s.step("round %d of %d: overhead, count scaled live 2→4 at 1s (--rate 0, %v)", i+1, *rounds, *tput)
			sr, err := scalingRun(s.ctx, cfg, scaleOpts{scaleAt: time.Second, to: 4})
			if s.interrupted() {
				return exitInterrupted
			}
			if err != nil {
				return fail("sliced run", err)
			}
			res.Verified = res.Verified && sr.r.verified
			cfg = base("fixed", i, "spate")
			cfg.Rate, cfg.Duration = 0, *tput
			cfg.Parallelism = map[string]int{"source": 2, "count": 4, "rollup": 2, "sink": 2}
			s.step("round %d of %d: overhead, count fixed at 4 (--rate 0, %v)", i+1, *rounds, *tput)
			fr, err := clusterRun(s.ctx, cfg, 0, "", true)
			if s.interrupted() {
				return exitInterrupted
			}
			if err != nil {
				return fail("fixed run", err)
			}
			res.Verified = res.Verified && fr.verified
			from, to := max(sr.doneMs+1000, 3000), tput.Milliseconds()-1000
			sliced, fixed := steadyRate(sr.r, from, to), steadyRate(fr, from, to)
			if sr.doneMs <= 0 || sliced <= 0 || fixed <= 0 {
				return fail("overhead runs", fmt.Errorf("no steady stretch between %d and %d ms (rescale done at %d ms): make --tput longer", from, to, sr.doneMs))
			}
			res.add("overhead", sliced/fixed)
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "round %d:", i+1)
			for _, k := range []string{"pause_eds", "pause_restart", "recovery_eds", "kill_after_eds", "recovery_checkpoint", "replayed_eds", "replayed_checkpoint", "overhead"} {
				if xs := res.Rounds[k]; len(xs) > i {
					fmt.Fprintf(stdout, " %s %.3f", k, xs[i])
				}
			}
			fmt.Fprintln(stdout)
		}
	}
	res.PauseS["eds"], res.PauseS["restart"] = median(res.Rounds["pause_eds"]), median(res.Rounds["pause_restart"])
	res.RecoveryS["eds"], res.RecoveryS["checkpoint"] = median(res.Rounds["recovery_eds"]), median(res.Rounds["recovery_checkpoint"])
	res.OverheadRatio = median(res.Rounds["overhead"])
	s.prog.finish(s.name)
	res.Meta = s.meta
	if *s.html != "" {
		sec := func(v float64) string { return fmt.Sprintf("%.3fs", v) }
		pp := panel{Title: "pause: rise of the output lag during the rescale, s", Format: sec}
		pp.add("eds", res.Rounds["pause_eds"])
		pp.add("restart", res.Rounds["pause_restart"])
		pr := panel{Title: "recovery after a kill --kill-after the rescale, s", Format: sec}
		pr.add("eds (post-scaling status)", res.Rounds["recovery_eds"])
		pr.add("checkpoint (pre-scaling checkpoint, scaling redone)", res.Rounds["recovery_checkpoint"])
		po := panel{Title: "steady throughput, sliced over fixed", Format: func(v float64) string { return fmt.Sprintf("%.3f", v) }}
		po.add("sliced/fixed", res.Rounds["overhead"])
		if err := writeHTML(*s.html, "spate bench scaling", s.meta, []panel{pp, pr, po}); err != nil {
			fmt.Fprintln(stderr, "spate bench scaling:", err)
			return 2
		}
	}
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(res)
	} else {
		fmt.Fprintf(stdout, "scaling (4 nodes, count 2→4 at %v, %s records/s, %d keys, %d rounds, medians):\n", scaleAt, human.Count(*rate), *keys, *rounds)
		fmt.Fprintf(stdout, "  pause     eds %.3fs   restart %.3fs   (restart/eds %.1fx)\n", res.PauseS["eds"], res.PauseS["restart"], res.PauseS["restart"]/max(res.PauseS["eds"], 1e-3))
		fmt.Fprintf(stdout, "  recovery  eds %.2fs   checkpoint %.2fs   (checkpoint/eds %.1fx; killed %.1fs after the rescale; replayed eds %s, checkpoint %s)\n",
			res.RecoveryS["eds"], res.RecoveryS["checkpoint"], res.RecoveryS["checkpoint"]/max(res.RecoveryS["eds"], 1e-3),
			median(res.Rounds["kill_after_eds"]), human.Count(median(res.Rounds["replayed_eds"])), human.Count(median(res.Rounds["replayed_checkpoint"])))
		fmt.Fprintf(stdout, "  overhead  throughput sliced/fixed %.3f\n", res.OverheadRatio)
	}
	if !res.Verified {
		fmt.Fprintln(stdout, "  WARNING: a run failed verification")
		return 1
	}
	return 0
}

// lagBump is how far the output lag rose over its normal (the median
// after warm-up, before from) between from and to (ms after the job
// started; to < 0: the end), in seconds. The median, not the p99: the
// lag jumps at every window's firing, and a p99 of those jumps hid a
// stall of the same size (an EDS pause of 0.3 s read as 0 with 5 s
// windows). from and to should not take in a firing: the defaults scale
// 3 s into a 5 s window and measure the restart for 2.5 s.
func lagBump(ri *coord.RunInfo, from, to int64, warm time.Duration) float64 {
	var before []float64
	peak := 0.0
	for _, s := range ri.Lag {
		switch {
		case s[0] >= warm.Milliseconds() && s[0] < from:
			before = append(before, float64(s[1]))
		case s[0] >= from && (to < 0 || s[0] <= to):
			peak = max(peak, float64(s[1]))
		}
	}
	return max(peak-percentile(before, 0.5), 0) / 1000
}

func (s *Scaling) add(k string, v float64) { s.Rounds[k] = append(s.Rounds[k], v) }

// steadyRate is the sources' records/s between from and to ms of job time,
// from the coordinator's throughput samples (their running total of
// records read): the first sample at or after from, the last at or before
// to.
func steadyRate(r *run, from, to int64) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.info == nil || r.info.JobStart == nil {
		return 0
	}
	var t0, t1 int64 = -1, -1
	var n0, n1 float64
	for _, e := range r.evs {
		if e.Kind != events.Throughput {
			continue
		}
		f, ok := e.Fields.(events.ThroughputFields)
		if !ok {
			continue
		}
		in := f.In
		t := e.Time.Sub(*r.info.JobStart).Milliseconds()
		if t >= from && t0 < 0 {
			t0, n0 = t, float64(in)
		}
		if t <= to {
			t1, n1 = t, float64(in)
		}
	}
	if t0 < 0 || t1 <= t0 {
		return 0
	}
	return (n1 - n0) * 1000 / float64(t1-t0)
}

// replayedAfter is the records replayed from ms after the job started on.
func replayedAfter(r *run, ms int64) uint64 { return replayedBetween(r, ms, math.MaxInt64) }

// replayedBetween is the records replayed from ms after the job started
// until (and not after) to ms.
func replayedBetween(r *run, ms, to int64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.info == nil || r.info.JobStart == nil {
		return 0
	}
	var n uint64
	for _, e := range r.evs {
		if at := e.Time.Sub(*r.info.JobStart).Milliseconds(); at < ms || at > to {
			continue
		}
		switch f := e.Fields.(type) {
		case events.ReplayFields:
			n += f.Records
		case events.RecoveryPlacedFields:
			n += f.Records
		}
	}
	return n
}
