package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"spate/control"
	"spate/coord"
	"spate/events"
	"spate/internal/human"
	"spate/stores"
	"spate/traces"
)

// `spate bench resume`: how soon a job goes on after its coordinator
// died. Each run is `spate up --headless` in a child process, SIGKILLed
// (the coordinator alone: its nodes live on and wait for another) --kill
// plus a phase after its job started, then, --gap after its death,
// `spate up --headless --resume DIR` to the end of the run. Its phases
// are read from DIR/events.jsonl and timed from the moment this process
// started the --resume process (resumeRun).

// resumeTarget is issue 22's target: every instance restored within 2 s
// of the new coordinator's start.
const resumeTarget = 2 * time.Second

// controlPoll is how often the control API of a resumed coordinator is
// asked for its status until it answers: the resolution of the control
// phase.
const controlPoll = 5 * time.Millisecond

// Resume is the result of `spate bench resume`.
type Resume struct {
	Meta
	TargetMs float64 `json:"target_ms"` // every instance restored within this of the --resume process's start
	// CoordTimeoutS is how long the nodes wait for a coordinator (up's
	// --coord-timeout default): --gap must be shorter.
	CoordTimeoutS float64 `json:"coord_timeout_s"`
	// Configs are the configurations' figures over their rounds, in the
	// order of --ft (and --store).
	Configs []ResumeConfig `json:"configs"`
	// Runs is every run, round by round, a round's configurations in the
	// order they ran (it alternates).
	Runs []ResumeRun `json:"runs"`
	// Ratios are global/spate of the phases both have (at each store).
	Ratios   []ResumeRatio `json:"ratios,omitempty"`
	Verified bool          `json:"verified"` // every run whose job had started resumed and verified
}

// ResumePhases are the moments of a resume, in ms from the start of the
// --resume process; -1 where a run has none.
type ResumePhases struct {
	// Started is coord_resumed "started": the new coordinator has read the
	// run and listens for its nodes.
	Started float64 `json:"started_ms"`
	// Control is when its control API first answered a status request
	// (asked every 5 ms from the process's start; the request goes through
	// the coordinator's event loop).
	Control float64 `json:"control_ms"`
	// Rejoined is coord_resumed "rejoined": every recorded node has
	// rejoined and reported its instances (or the wait for the missing
	// ones is over: ResumeEvents.Missing).
	Rejoined float64 `json:"rejoined_ms"`
	// Restored is when the last instance was restored (recovery_restored;
	// under global the one event of the whole job's rollback): -1 if not
	// every instance being restored was.
	Restored float64 `json:"restored_ms"`
	// CaughtUp is the last instance's recovery_done: -1 if not every
	// restored instance caught up, and always under global, whose
	// rollback has no per-instance catch-up.
	CaughtUp float64 `json:"caught_up_ms"`
}

// ResumeEvents is what a run's events.jsonl says of its resume.
type ResumeEvents struct {
	JobStarted bool `json:"job_started"` // the killed coordinator had started the job
	// Instances is the plan's instance count (instance_placed before the
	// resume); Restoring those the resume set out to restore
	// (coord_resumed "restoring"); Restored and CaughtUp how many of them
	// got there (recovery_restored, recovery_done; under global every one
	// at once with the rollback's recovery_restored, and no recovery_done).
	Instances int          `json:"instances"`
	Restoring int          `json:"restoring"`
	Restored  int          `json:"restored"`
	CaughtUp  int          `json:"caught_up"`
	Phases    ResumePhases `json:"phases"`
	// Nodes are the node processes the killed coordinator had (spawned
	// and not lost); SamePID those that rejoined the new one with the pid
	// they had, OtherPID those that rejoined with another ("n2: pid 5,
	// spawned as 4"), Missing those the resume declared lost, Respawned
	// the nodes it spawned, LostLater the nodes lost after it started.
	Nodes     []string `json:"nodes"`
	SamePID   []string `json:"same_pid"`
	OtherPID  []string `json:"other_pid,omitempty"`
	Missing   []string `json:"missing,omitempty"`
	Respawned []string `json:"respawned,omitempty"`
	LostLater []string `json:"lost_later,omitempty"`
	// CutLine is true if the killed coordinator left its last event
	// half-written (the resumed one ends that line and starts its own).
	CutLine bool `json:"cut_line,omitempty"`
}

// allRejoined reports whether every node of the killed coordinator came
// back as the same process, and none was respawned.
func (ev ResumeEvents) allRejoined() bool {
	return len(ev.Nodes) > 0 && len(ev.SamePID) == len(ev.Nodes) && len(ev.OtherPID) == 0 && len(ev.Missing) == 0 && len(ev.Respawned) == 0
}

// allRestored reports whether every instance of the plan was restored.
func (ev ResumeEvents) allRestored() bool {
	return ev.Instances > 0 && ev.Restored == ev.Instances && ev.Phases.Restored >= 0
}

// ResumeRun is one run's figures.
type ResumeRun struct {
	Round  int    `json:"round"` // from 1
	Config string `json:"config"`
	FT     string `json:"ft"`
	Store  string `json:"store,omitempty"`
	// KillAtS is when the SIGKILL was sent, after the job started;
	// KillTookMs how long the coordinator took to die; GapS the time from
	// its death to the start of the --resume process.
	KillAtS    float64 `json:"kill_at_s"`
	KillTookMs float64 `json:"kill_took_ms"`
	GapS       float64 `json:"gap_s"`
	ResumeExit int     `json:"resume_exit"` // the --resume process's exit code (-1: ended by a signal)
	ResumeEvents
	// The verification of the whole run, by the resumed up (its
	// report.json) or, without one, by this process.
	Verified   bool   `json:"verified"`
	Verdict    string `json:"verdict"`
	Windows    int    `json:"windows"`
	Lost       int    `json:"lost"`
	Duplicated int    `json:"duplicated"`
	Wrong      int    `json:"wrong"`
	// Counted is whether the run is in its configuration's medians: its
	// job had started and it resumed (exit 0). Failed is whether it makes
	// the benchmark fail: its job had started and it did not resume or
	// did not verify. Problems says what went wrong, if anything.
	Counted  bool     `json:"counted"`
	Failed   bool     `json:"failed"`
	Problems []string `json:"problems,omitempty"`
}

// metTarget reports whether every instance was restored within the
// target.
func (rr ResumeRun) metTarget() bool {
	return rr.Counted && rr.allRestored() && rr.Phases.Restored <= float64(resumeTarget.Milliseconds())
}

// ResumeConfig is one configuration's figures over its rounds.
type ResumeConfig struct {
	Name    string       `json:"name"` // "spate", or "spate/coord" with --store
	FT      string       `json:"ft"`
	Store   string       `json:"store,omitempty"`
	Runs    int          `json:"runs"`
	Counted int          `json:"counted"` // runs in the medians
	Medians ResumePhases `json:"medians"` // of the counted runs that have each phase; -1: none has it
	// Met is how many of the counted runs restored every instance within
	// the target.
	Met         int `json:"target_met"`
	AllRestored int `json:"all_restored"` // counted runs that restored every instance of the plan
	AllRejoined int `json:"all_rejoined"` // counted runs whose every node rejoined with its own pid, none respawned
	Verified    int `json:"verified"`     // runs that verified
}

// ResumeRatio is global/spate of one phase: of the medians, by round
// (null where a round lacks one side), and the 95 % interval of the
// rounds' mean.
type ResumeRatio struct {
	Phase  string   `json:"phase"`           // restored_ms
	Of     string   `json:"of"`              // "global/spate"
	Store  string   `json:"store,omitempty"` // with --store: the store both ran with
	Median *float64 `json:"of_medians"`      // null if a side has no value
	Rounds Values   `json:"rounds"`
	CI     CI       `json:"ci"`
}

// resumeFTs reads --ft: spate and global, each at most once.
func resumeFTs(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		switch f {
		case "spate", "global":
		case "none":
			return nil, fmt.Errorf("--ft %s: none cannot resume (no state of its instances is durable)", list)
		default:
			return nil, fmt.Errorf("--ft %s: %q: want spate, global or both (spate,global)", list, f)
		}
		if slices.Contains(out, f) {
			return nil, fmt.Errorf("--ft %s: %s is given twice", list, f)
		}
		out = append(out, f)
	}
	return out, nil
}

// resumeStores reads --store: dir and coord ("": the default store).
func resumeStores(list string) ([]benchStore, error) {
	set, err := parseStores(list)
	if err != nil {
		return nil, err
	}
	for _, b := range set {
		if b.sp.Kind == stores.S3 {
			return nil, fmt.Errorf("--store %s: s3 is not measured by bench resume: want dir, coord or both", list)
		}
	}
	return set, nil
}

func resumeMain(args []string, stdout, stderr io.Writer) int {
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "spate bench resume: this binary:", err)
		return 2
	}
	return resumeBench(bin, args, stdout, stderr)
}

// resumeBench is `spate bench resume` with bin as the spate binary that
// runs up (this one's, for the command).
func resumeBench(bin string, args []string, stdout, stderr io.Writer) (rc int) {
	const name = "spate bench resume"
	fs := flag.NewFlagSet("bench resume", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON: every run's values and each configuration's medians")
	rounds := fs.Int("rounds", 3, "rounds; each runs every configuration once, the order alternating")
	dur := fs.Duration("duration", 20*time.Second, "up's --duration of each run (the resumed coordinator runs the job on and drains it)")
	killAt := fs.Duration("kill", 9*time.Second, "when spate up (the coordinator alone) is SIGKILLed, after its job started, plus a phase that spreads the rounds' kills evenly over one checkpoint interval")
	gap := fs.Duration("gap", time.Second, "from the coordinator's death to the start of spate up --resume (under up's --coord-timeout, for which the nodes wait)")
	keys := fs.Int("keys", 1_000_000, "distinct keys (state size)")
	rate := fs.Float64("rate", 600_000, "records/s (paced: a restored instance catches up with the offered load)")
	interval := fs.Duration("interval", time.Second, "checkpoint interval (fixed)")
	nodes := fs.Int("nodes", 4, "worker nodes")
	ftList := fs.String("ft", "spate,global", "the ft modes compared: spate, global or both")
	storeList := fs.String("store", "", "STORE,...: run every ft mode with each checkpoint and output store, a configuration each (spate/dir, spate/coord, ...): dir, coord; \"\": up's default store")
	source := fs.String("source", "gen:constant", "input: a steady load, the same whenever the kill falls")
	s := newSession("resume", fs, stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	coordTimeout := coord.DefaultConfig().CoordTimeout
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s: %s\n", name, fmt.Sprintf(format, a...))
		return 2
	}
	switch {
	case *rounds < 1:
		return bad("--rounds %d: want at least 1", *rounds)
	case *nodes < 1:
		return bad("--nodes %d: want at least 1", *nodes)
	case *keys < 1:
		return bad("--keys %d: want at least 1", *keys)
	case !(*rate > 0):
		return bad("--rate %v: want a positive rate (a paced run: a restored instance catches up with the offered load)", *rate)
	case *interval <= 0:
		return bad("--interval %v: want a positive checkpoint interval", *interval)
	case *killAt <= 0:
		return bad("--kill %v: want a positive time after the job's start", *killAt)
	case *gap < 0:
		return bad("--gap %v: must not be negative", *gap)
	case *gap >= coordTimeout:
		return bad("--gap %v: at or above the nodes' --coord-timeout (%v): they would have exited before the resume", *gap, coordTimeout)
	}
	// The latest kill comes an interval after --kill, and the resume
	// --gap after it: both before the run's end, counted from the job's
	// start (a resumed job drains a second after the resume at the
	// earliest).
	if least := *killAt + *interval + *gap; *dur <= least {
		return bad("--duration %v: want more than %v (--kill, an interval and --gap: the resume must come before the run's end)", *dur, least)
	}
	fts, err := resumeFTs(*ftList)
	if err != nil {
		return bad("%v", err)
	}
	storeSet, err := resumeStores(*storeList)
	if err != nil {
		return bad("%v", err)
	}
	confs := recConfs(fts, storeSet)
	config := func(conf recConf, round int) (coord.Config, error) {
		cfg := coord.DefaultConfig()
		cfg.Nodes, cfg.Local, cfg.FT, cfg.Headless = *nodes, *nodes, conf.ft, true
		cfg.Rate, cfg.Duration, cfg.Keys, cfg.Interval, cfg.Source = *rate, *dur, *keys, interval.String(), *source
		tag := conf.ft
		if conf.store.label != "" {
			tag += "-" + conf.store.label
			cfg.Store = conf.store.spec
		}
		cfg.Data = filepath.Join(s.root, fmt.Sprintf("resume-%s-%d", tag, round))
		return cfg, cfg.Validate()
	}
	for _, conf := range confs { // before any run
		cfg, err := config(conf, 0)
		if err != nil {
			return bad("%v", err)
		}
		if _, err := traces.Open(cfg.Source, cfg.SourceOptions()); err != nil {
			return bad("--source %s: %v", cfg.Source, err)
		}
	}
	text := stdout // the runs' lines and the summary; beside the progress when stdout has the JSON
	if *asJSON {
		text = stderr
	}
	// The ETA allows for a resumed coordinator that runs the job a whole
	// --duration after the resume (one that does not know when the job
	// first started does): --kill, --gap, --duration, both coordinators'
	// starts, the drain and the verification.
	weight := killAt.Seconds() + gap.Seconds() + dur.Seconds() + 4
	if err := s.start(repeat(*rounds*len(confs), weight)); err != nil {
		return bad("%v", err)
	}
	defer func() { s.end(rc) }()
	res := Resume{TargetMs: float64(resumeTarget.Milliseconds()), CoordTimeoutS: coordTimeout.Seconds(), Verified: true}
	for i := range *rounds {
		// Where the kill falls in the checkpoint period decides how old
		// the state restored is: the rounds' kills are spread evenly over
		// one interval, the same moment for every configuration of a
		// round.
		phase := time.Duration((float64(i) + 0.5) / float64(*rounds) * float64(*interval))
		for _, conf := range roundOrder(confs, i) {
			cfg, err := config(conf, i)
			if err != nil {
				return bad("%v", err)
			}
			args := upArgs(cfg)
			if cfg.Store != "" {
				args = append(args, "--store", cfg.Store)
			}
			what := "--ft " + conf.ft
			if conf.store.label != "" {
				what += " --store " + conf.store.label
			}
			s.step("round %d of %d: %s, spate up SIGKILLed %v after its job started, resumed %v after (%d nodes, %s records/s, %v)",
				i+1, *rounds, what, (*killAt + phase).Round(time.Millisecond), *gap, *nodes, human.Count(*rate), *dur)
			o := resumeOpts{args: args, dir: cfg.Data, kill: *killAt + phase, gap: *gap}
			rr, err := resumeRun(s.ctx, bin, o)
			if s.interrupted() {
				return exitInterrupted
			}
			if err != nil {
				fmt.Fprintf(stderr, "%s: round %d, %s: %v\n", name, i+1, conf.key(), err)
				return 1
			}
			rr.Round, rr.Config, rr.FT, rr.Store = i+1, conf.key(), conf.ft, conf.store.label
			if rr.Failed {
				res.Verified = false
			}
			if !rr.Failed && rr.Counted && rr.Verified {
				if s.discard(cfg.Data) {
					os.Remove(cfg.Data + ".log")
					os.Remove(cfg.Data + ".resume.log")
				}
			}
			res.Runs = append(res.Runs, rr)
			printResumeRun(text, rr)
		}
	}
	names := make([]string, len(confs))
	for i, c := range confs {
		names[i] = c.key()
		res.Configs = append(res.Configs, summariseResume(c, res.Runs))
	}
	res.Ratios = resumeRatios(confs, res.Runs, *rounds)
	s.prog.finish(s.name)
	res.Meta = s.meta
	if *s.html != "" {
		if err := writeHTML(*s.html, "spate bench resume", s.meta, resumePanels(res, names)); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 2
		}
	}
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(text, "resume (%d nodes, %d keys, %s records/s, interval %v, --duration %v; spate up SIGKILLed %v after its job started plus a phase over the interval, spate up --resume started %v after its death; times from the start of the --resume process, as this process started it; rounds: %d; medians):\n",
		*nodes, *keys, human.Count(*rate), *interval, *dur, *killAt, *gap, *rounds)
	for _, c := range res.Configs {
		printResumeConfig(text, c, res.Runs)
	}
	for _, r := range res.Ratios {
		fmt.Fprintf(text, "  %s\n", r)
	}
	nf := 0
	for _, rr := range res.Runs {
		if rr.Failed {
			nf++
		}
	}
	if nf > 0 {
		fmt.Fprintf(text, "  WARNING: %d runs did not resume or did not verify (above)\n", nf)
		return 1
	}
	for _, c := range res.Configs {
		if c.Counted == 0 {
			fmt.Fprintf(text, "  WARNING: no run of %s was measured\n", c.Name)
			return 1
		}
	}
	return 0
}

// resumeOpts is one run of the benchmark.
type resumeOpts struct {
	args []string      // the first up's arguments
	dir  string        // its run directory
	kill time.Duration // after its job started
	gap  time.Duration // from its death to the resume's start
}

// resumeRun runs one run: `BIN up` with o.args, SIGKILLed o.kill after
// its job started (its events.jsonl read as it writes it, for the
// job_started event's time), then, o.gap after its death, `BIN up
// --headless --resume DIR` to the end of the run, whose phases are timed
// from the moment just before this process started it (exec.Cmd.Start:
// the fork and exec are in the times). An error is a run that could not
// be measured at all (a process that cannot be started, a spate up that
// ended before its kill, an events log that does not decode); what went
// wrong with the resume is in the run's Problems. Ctrl-C (ctx
// cancelled) drains the coordinator running, or, between the two, stops
// the nodes the dead one left.
func resumeRun(ctx context.Context, bin string, o resumeOpts) (ResumeRun, error) {
	rr := ResumeRun{ResumeExit: -1}
	first, logf, err := upCommand(ctx, bin, o.args, o.dir, nil)
	if err != nil {
		return rr, err
	}
	defer logf.Close()
	if err := first.Start(); err != nil {
		return rr, upFailed(bin, o.args, o.dir, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	evPath := filepath.Join(o.dir, "events.jsonl")
	et := newEventTail(evPath)
	var jobStart, killSent time.Time
	var took time.Duration
	tick := time.NewTicker(eventPoll) // reading a file another process appends to: nothing to wait on
	defer tick.Stop()
	var due <-chan time.Time // once the job started
	for killSent.IsZero() {
		select {
		case err := <-exited:
			if ctx.Err() != nil {
				return rr, nil
			}
			killLeftNodes(o.dir)
			return rr, fmt.Errorf("spate up ended before its kill (%v): %s (its output is in %s.log)", err, lastLogLine(o.dir+".log"), o.dir)
		case <-tick.C:
			if err := et.poll(func(e events.Event) {
				if e.Kind == events.JobStarted && jobStart.IsZero() {
					jobStart = e.Time
				}
			}); err != nil {
				_ = first.Process.Kill()
				<-exited
				killLeftNodes(o.dir)
				return rr, err
			}
			if !jobStart.IsZero() {
				tick.Stop()
				due = time.After(time.Until(jobStart.Add(o.kill)))
			}
		case <-due:
			killSent = time.Now()
			var err error
			if took, err = killNode(first.Process.Pid); err != nil {
				<-exited // gone already (ESRCH)
				return rr, fmt.Errorf("SIGKILL of spate up (pid %d): %w", first.Process.Pid, err)
			}
		}
	}
	<-exited
	died := killSent.Add(took)
	rr.KillAtS, rr.KillTookMs = killSent.Sub(jobStart).Seconds(), float64(took.Microseconds())/1000
	select {
	case <-time.After(time.Until(died.Add(o.gap))):
	case <-ctx.Done():
		killLeftNodes(o.dir)
		return rr, nil
	}
	resumeArgs := []string{"up", "--headless", "--quiet", "--resume", o.dir}
	second, logr, err := upCommand(ctx, bin, resumeArgs, o.dir+".resume", nil) // its output in DIR.resume.log
	if err != nil {
		killLeftNodes(o.dir)
		return rr, err
	}
	defer logr.Close()
	t0 := time.Now()
	if err := second.Start(); err != nil {
		killLeftNodes(o.dir)
		return rr, upFailed(bin, resumeArgs, o.dir, err)
	}
	rr.GapS = t0.Sub(died).Seconds()
	answered := make(chan time.Time, 1)
	stopPoll := make(chan struct{})
	go pollControl(o.dir, stopPoll, answered)
	werr := second.Wait()
	close(stopPoll)
	control := <-answered
	if ctx.Err() != nil {
		killLeftNodes(o.dir)
		return rr, nil
	}
	rr.ResumeExit = exitCodeOf(werr)
	ev, err := readResumeEvents(evPath, t0)
	if err != nil {
		killLeftNodes(o.dir)
		return rr, err
	}
	rr.ResumeEvents = ev
	rr.Phases.Control = -1
	if !control.IsZero() {
		rr.Phases.Control = msSince(t0, control)
	}
	if !rr.JobStarted {
		rr.Problems = append(rr.Problems, "the coordinator was killed before its job started: not counted")
	}
	if rr.ResumeExit != 0 {
		rr.Problems = append(rr.Problems, fmt.Sprintf("spate up --resume failed (exit %d): %s (its output is in %s.resume.log)", rr.ResumeExit, lastLogLine(o.dir+".resume.log"), o.dir))
		killLeftNodes(o.dir) // they would wait --coord-timeout for another
	} else {
		rr.verify(o.dir)
	}
	rr.Counted = rr.JobStarted && rr.ResumeExit == 0
	rr.Failed = rr.JobStarted && (rr.ResumeExit != 0 || !rr.Verified)
	switch {
	case !rr.Counted:
	case rr.Restoring == 0:
		rr.Problems = append(rr.Problems, "the resume restored nothing (no coord_resumed \"restoring\" event)")
	case !rr.allRestored():
		rr.Problems = append(rr.Problems, fmt.Sprintf("not every instance was restored: %d of %d (the resume set out to restore %d)", rr.Restored, rr.Instances, rr.Restoring))
	}
	if rr.Counted && !rr.allRejoined() {
		rr.Problems = append(rr.Problems, "not every node rejoined as the same process: "+rr.rejoinText())
	}
	return rr, nil
}

// verify takes the verdict of the run's verification from the report
// the resumed up wrote (report.json), or, without one, verifies the run.
func (rr *ResumeRun) verify(dir string) {
	var rep struct {
		Verdict                          string
		Windows, Lost, Duplicated, Wrong int
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		vr, verr := coord.VerifyRun(dir)
		if verr != nil {
			rr.Verdict = "error"
			rr.Problems = append(rr.Problems, fmt.Sprintf("no report.json (%v), and verify failed: %v", err, verr))
			return
		}
		rep.Verdict, rep.Windows, rep.Lost, rep.Duplicated, rep.Wrong = "fail", vr.Windows, vr.Missing, vr.Duplicated, vr.Wrong
		if vr.OK() {
			rep.Verdict = "pass"
		}
	}
	rr.Verdict, rr.Windows, rr.Lost, rr.Duplicated, rr.Wrong = rep.Verdict, rep.Windows, rep.Lost, rep.Duplicated, rep.Wrong
	rr.Verified = rep.Verdict == "pass" && rep.Lost == 0 && rep.Duplicated == 0 && rep.Wrong == 0
	if !rr.Verified {
		rr.Problems = append(rr.Problems, fmt.Sprintf("did not verify: verdict %s, %d lost, %d duplicated, %d wrong", rep.Verdict, rep.Lost, rep.Duplicated, rep.Wrong))
	}
}

// pollControl asks the control API of the run in dir for its status
// every controlPoll until it answers or stop is closed, and sends the
// moment of the first answer (zero if none) on answered. Until the new
// coordinator writes its address, the file has the dead one's, which
// refuses the connection at once.
func pollControl(dir string, stop <-chan struct{}, answered chan<- time.Time) {
	var at time.Time
	defer func() { answered <- at }()
	tick := time.NewTicker(controlPoll)
	defer tick.Stop()
	for {
		if c, err := control.Dial(dir); err == nil {
			c.HTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := c.Status(ctx)
			cancel()
			if err == nil {
				at = time.Now()
				return
			}
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// readResumeEvents reads a resumed run's events.jsonl: the events before
// the first coord_resumed are the killed coordinator's, the rest the new
// one's. t0 is when the --resume process was started (the phases are
// timed from it). A line that is not an event is an error naming it
// (file:line), but for the killed coordinator's last line left
// half-written (the line just before the new coordinator's first event,
// or the file's last line), which is noted (CutLine).
func readResumeEvents(path string, t0 time.Time) (ResumeEvents, error) {
	ev := ResumeEvents{Phases: ResumePhases{Started: -1, Control: -1, Rejoined: -1, Restored: -1, CaughtUp: -1}}
	b, err := os.ReadFile(path)
	if err != nil {
		return ev, err
	}
	var (
		resumed   bool // the new coordinator's events
		restoring = -1 // the index of coord_resumed "restoring" in evs
		pending   error
		evs       []events.Event
		names     = events.Names{}
		spawned   = map[string]int{} // node -> pid, the killed coordinator's
		gone      = map[string]bool{}
		placed    = map[string]bool{}
	)
	lines := bytes.Split(b, []byte{'\n'})
	for i, line := range lines {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		e, err := events.DecodeLine(line, names)
		if err != nil {
			if pending != nil {
				return ev, pending
			}
			pending = fmt.Errorf("%s:%d: %w", path, i+1, err)
			continue
		}
		if pending != nil {
			// Only the new coordinator's first event may follow a line that
			// is not one: the dead one's last, cut short.
			if f, ok := e.Fields.(events.CoordResumedFields); !ok || f.Phase != "started" || resumed {
				return ev, pending
			}
			ev.CutLine, pending = true, nil
		}
		evs = append(evs, e)
		if !resumed {
			if f, ok := e.Fields.(events.CoordResumedFields); ok && f.Phase == "started" {
				resumed = true
				ev.Phases.Started = msSince(t0, e.Time)
				continue
			}
			switch e.Kind { // by kind: an event whose payload has nothing to say has none
			case events.JobStarted:
				ev.JobStarted = true
			case events.NodeSpawned:
				if f, ok := e.Fields.(events.NodeSpawnedFields); ok {
					spawned[e.Node] = f.PID
				}
				delete(gone, e.Node)
			case events.NodeLost, events.NodeExited:
				gone[e.Node] = true
			case events.InstancePlaced:
				placed[e.Instance] = true
			}
			continue
		}
		switch f := e.Fields.(type) {
		case events.CoordResumedFields:
			switch f.Phase {
			case "rejoined":
				if ev.Phases.Rejoined < 0 {
					ev.Phases.Rejoined, ev.Missing = msSince(t0, e.Time), f.Missing
				}
			case "restoring":
				if restoring < 0 {
					restoring, ev.Restoring = len(evs)-1, f.Instances
				}
			}
		case events.NodeJoinedFields:
			if f.Rejoined {
				switch pid, ok := spawned[e.Node]; {
				case ok && pid == f.PID:
					ev.SamePID = append(ev.SamePID, e.Node)
				case ok:
					ev.OtherPID = append(ev.OtherPID, fmt.Sprintf("%s: pid %d, spawned as %d", e.Node, f.PID, pid))
				default:
					ev.OtherPID = append(ev.OtherPID, fmt.Sprintf("%s: pid %d, not spawned by the dead coordinator", e.Node, f.PID))
				}
			}
		}
		switch e.Kind {
		case events.NodeSpawned:
			ev.Respawned = append(ev.Respawned, e.Node)
		case events.NodeLost:
			ev.LostLater = append(ev.LostLater, e.Node)
		}
	}
	if pending != nil {
		ev.CutLine = true // the last line: the dead coordinator's, cut short, and nothing after it
	}
	for name := range spawned {
		if !gone[name] {
			ev.Nodes = append(ev.Nodes, name)
		}
	}
	sort.Strings(ev.Nodes)
	sort.Strings(ev.SamePID)
	ev.Instances = len(placed)
	if restoring < 0 {
		return ev, nil
	}
	// The restores and catch-ups of the instances the resume set out to
	// restore: the moment the last of them got there.
	restored, caught := map[string]bool{}, map[string]bool{}
	for _, e := range evs[restoring+1:] {
		switch e.Kind {
		case events.RecoveryRestored:
			if ev.Phases.Restored >= 0 {
				continue
			}
			if e.Instance == "" { // global: the whole job's rollback is over
				ev.Restored = ev.Restoring
			} else {
				restored[e.Instance] = true
				ev.Restored = len(restored)
			}
			if ev.Restored >= ev.Restoring && ev.Restoring > 0 {
				ev.Phases.Restored = msSince(t0, e.Time)
			}
		case events.RecoveryDone:
			if e.Instance != "" && ev.Phases.CaughtUp < 0 {
				caught[e.Instance] = true
				ev.CaughtUp = len(caught)
				if ev.CaughtUp >= ev.Restoring && ev.Restoring > 0 {
					ev.Phases.CaughtUp = msSince(t0, e.Time)
				}
			}
		}
	}
	return ev, nil
}

// msSince is t - t0 in ms.
func msSince(t0, t time.Time) float64 { return float64(t.Sub(t0).Microseconds()) / 1000 }

// exitCodeOf is a finished process's exit code from its Wait error: -1
// if it did not exit (killed by a signal, not started).
func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// lastLogLine is the last non-empty line of a log file ("" if none).
func lastLogLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// killLeftNodes SIGKILLs the node processes of the run in dir that still
// run once no coordinator will take them back (a resume that failed or
// was interrupted): they would otherwise wait --coord-timeout for one.
// coord.LiveNodes never takes a reused pid for one.
func killLeftNodes(dir string) {
	for _, n := range coord.LiveNodes(dir) {
		_ = syscall.Kill(n.PID, syscall.SIGKILL)
	}
}

// summariseResume is configuration c's figures over its runs.
func summariseResume(c recConf, runs []ResumeRun) ResumeConfig {
	rc := ResumeConfig{Name: c.key(), FT: c.ft, Store: c.store.label}
	vals := map[string][]float64{}
	for _, rr := range runs {
		if rr.Config != rc.Name {
			continue
		}
		rc.Runs++
		if rr.Verified {
			rc.Verified++
		}
		if !rr.Counted {
			continue
		}
		rc.Counted++
		if rr.metTarget() {
			rc.Met++
		}
		if rr.allRestored() {
			rc.AllRestored++
		}
		if rr.allRejoined() {
			rc.AllRejoined++
		}
		for _, name := range resumePhaseNames {
			if v := rr.Phases.get(name); v >= 0 {
				vals[name] = append(vals[name], v)
			}
		}
	}
	med := func(name string) float64 {
		if len(vals[name]) == 0 {
			return -1
		}
		return median(vals[name])
	}
	rc.Medians = ResumePhases{Started: med("started_ms"), Control: med("control_ms"), Rejoined: med("rejoined_ms"),
		Restored: med("restored_ms"), CaughtUp: med("caught_up_ms")}
	return rc
}

// resumeRatios are global/spate, at each store, of the time to every
// instance restored: the phase both ft modes have that depends on the
// mode (the rejoin does not; a global rollback has no catch-up of each
// instance).
func resumeRatios(confs []recConf, runs []ResumeRun, rounds int) []ResumeRatio {
	var out []ResumeRatio
	for _, c := range confs {
		if c.ft != "spate" {
			continue
		}
		g := recConf{ft: "global", store: c.store}
		if !slices.ContainsFunc(confs, func(x recConf) bool { return x.key() == g.key() }) {
			continue
		}
		for _, phase := range []string{"restored_ms"} {
			num, den := phaseRounds(runs, g.key(), rounds, phase), phaseRounds(runs, c.key(), rounds, phase)
			rs, ci := roundRatios(num, den, rounds)
			out = append(out, ResumeRatio{Phase: phase, Of: "global/spate", Store: c.store.label,
				Median: finite(medianFinite(num) / medianFinite(den)), Rounds: rs, CI: ci})
		}
	}
	return out
}

// phaseRounds is a configuration's value of a phase in each round: NaN
// where it has none (not counted, or never got there).
func phaseRounds(runs []ResumeRun, key string, rounds int, phase string) []float64 {
	xs := make([]float64, rounds)
	for i := range xs {
		xs[i] = math.NaN()
	}
	for _, rr := range runs {
		if rr.Config == key && rr.Counted && rr.Round >= 1 && rr.Round <= rounds {
			if v := rr.Phases.get(phase); v >= 0 {
				xs[rr.Round-1] = v
			}
		}
	}
	return xs
}

// medianFinite is the median of the values of xs that are not NaN; NaN
// if none is.
func medianFinite(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	return median(v)
}

func (r ResumeRatio) String() string {
	of := "-"
	if r.Median != nil {
		of = fmt.Sprintf("%.2f", *r.Median)
	}
	by := make([]string, len(r.Rounds))
	for i, x := range r.Rounds {
		by[i] = "-"
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			by[i] = fmt.Sprintf("%.2f", x)
		}
	}
	mean := r.CI.String()
	if r.CI.Rounds == 0 {
		mean = "no round has both"
	}
	at := ""
	if r.Store != "" {
		at = " at --store " + r.Store
	}
	return fmt.Sprintf("%s%s of the time to %s: %s (of the medians); by round %s: mean %s", r.Of, at, phaseWords[r.Phase], of, strings.Join(by, " "), mean)
}

// resumePhaseNames are the phases in the order they come, by their JSON
// names.
var resumePhaseNames = []string{"started_ms", "control_ms", "rejoined_ms", "restored_ms", "caught_up_ms"}

// phaseWords names the phases in the output.
var phaseWords = map[string]string{
	"started_ms":   "the run read, listening (coord_resumed started)",
	"control_ms":   "control API answered",
	"rejoined_ms":  "every node rejoined and reported",
	"restored_ms":  "every instance restored",
	"caught_up_ms": "every instance caught up (recovery_done)",
}

// get is the phase of that JSON name.
func (p ResumePhases) get(name string) float64 {
	switch name {
	case "started_ms":
		return p.Started
	case "control_ms":
		return p.Control
	case "rejoined_ms":
		return p.Rejoined
	case "restored_ms":
		return p.Restored
	case "caught_up_ms":
		return p.CaughtUp
	}
	return -1
}

// secs is a phase in seconds, "-" if absent.
func secs(ms float64) string {
	if ms < 0 || math.IsNaN(ms) {
		return "-"
	}
	return fmt.Sprintf("%.2fs", ms/1000)
}

func (rr ResumeRun) rejoinText() string {
	s := fmt.Sprintf("%d of %d nodes rejoined with their own pid", len(rr.SamePID), len(rr.Nodes))
	if len(rr.OtherPID) > 0 {
		s += "; with another: " + strings.Join(rr.OtherPID, ", ")
	}
	if len(rr.Missing) > 0 {
		s += "; missing: " + strings.Join(rr.Missing, ", ")
	}
	if len(rr.Respawned) > 0 {
		s += "; respawned: " + strings.Join(rr.Respawned, ", ")
	}
	if len(rr.LostLater) > 0 {
		s += "; lost after the resume: " + strings.Join(rr.LostLater, ", ")
	}
	return s
}

func printResumeRun(w io.Writer, rr ResumeRun) {
	head := fmt.Sprintf("round %d %s", rr.Round, rr.Config)
	var ph []string
	for _, name := range resumePhaseNames {
		if name == "caught_up_ms" && rr.FT == "global" {
			continue
		}
		ph = append(ph, strings.TrimSuffix(name, "_ms")+" "+secs(rr.Phases.get(name)))
	}
	fmt.Fprintf(w, "%s: killed %.2fs after the job started (dead %.1fms later), resumed %.2fs after its death: %s; %d of %d instances restored",
		head, rr.KillAtS, rr.KillTookMs, rr.GapS, strings.Join(ph, ", "), rr.Restored, rr.Instances)
	if rr.FT != "global" {
		fmt.Fprintf(w, ", %d caught up", rr.CaughtUp)
	}
	fmt.Fprintf(w, "; %s", rr.rejoinText())
	if rr.Verdict != "" {
		fmt.Fprintf(w, "; verified %v (%d lost, %d duplicated, %d wrong; %d windows)", rr.Verified, rr.Lost, rr.Duplicated, rr.Wrong, rr.Windows)
	}
	fmt.Fprintln(w)
	for _, p := range rr.Problems {
		fmt.Fprintf(w, "%s: %s\n", head, p)
	}
}

func printResumeConfig(w io.Writer, c ResumeConfig, runs []ResumeRun) {
	fmt.Fprintf(w, "  %s (%d of %d runs measured; by round, s: x not measured, - never got there):\n", c.Name, c.Counted, c.Runs)
	for _, name := range resumePhaseNames {
		if name == "caught_up_ms" && c.FT == "global" {
			fmt.Fprintf(w, "    %-48s     -  (a global rollback has no per-instance catch-up)\n", phaseWords[name])
			continue
		}
		var rounds []string
		for _, rr := range runs {
			if rr.Config != c.Name {
				continue
			}
			v := "x"
			if x := rr.Phases.get(name); rr.Counted && x >= 0 {
				v = fmt.Sprintf("%.2f", x/1000)
			} else if rr.Counted {
				v = "-"
			}
			rounds = append(rounds, v)
		}
		fmt.Fprintf(w, "    %-48s %5s  rounds %s\n", phaseWords[name], secs(c.Medians.get(name)), strings.Join(rounds, " "))
	}
	n := c.Counted
	fmt.Fprintf(w, "    every instance restored in %d of %d rounds; every node rejoined with its own pid, none respawned, in %d of %d; verified (0 lost, 0 duplicated, 0 wrong) %d of %d runs\n",
		c.AllRestored, n, c.AllRejoined, n, c.Verified, c.Runs)
	fmt.Fprintf(w, "    target: every instance restored within %v: met in %d of %d rounds", resumeTarget, c.Met, n)
	if n < c.Runs {
		fmt.Fprintf(w, " (%d more not measured: their rounds' lines say why)", c.Runs-n)
	}
	fmt.Fprintln(w)
}

// resumePanels are the page's figures: each phase but the first, per
// configuration and round.
func resumePanels(res Resume, names []string) []panel {
	var ps []panel
	for _, phase := range resumePhaseNames[1:] {
		p := panel{Title: phaseWords[phase] + ", s from the start of spate up --resume", Format: secs}
		for _, name := range names {
			var xs []float64
			for _, rr := range res.Runs {
				if v := rr.Phases.get(phase); rr.Config == name && rr.Counted && v >= 0 {
					xs = append(xs, v)
				}
			}
			p.add(name, xs)
		}
		ps = append(ps, p)
	}
	return ps
}
