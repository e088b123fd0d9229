package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"spate/control"
	"spate/events"
)

// Exit codes of a scenario run (and of `spate chaos run`).
const (
	ExitPass   = 0 // every check passed
	ExitFail   = 1 // a check failed
	ExitNotRun = 2 // bad input, or the run could not be carried out
)

// RunOptions are the seams of Run: how to start and verify a cluster, and
// the clock. Start and Verify are required.
type RunOptions struct {
	// Start starts `spate up --headless` with clusterArgs (the scenario's
	// cluster: flags, --data and --headless added by the caller) and
	// returns the run directory as soon as it exists (or before: the
	// runner waits for the control file in it), and wait, which returns
	// when the cluster has finished. Cancelling ctx stops it.
	Start func(ctx context.Context, clusterArgs []string) (dir string, wait func() error, err error)
	// Verify compares the run's output with the oracle.
	Verify func(dir string) (Verify, error)
	// Now and After are the clock (default time.Now and time.After).
	Now   func() time.Time
	After func(d time.Duration) <-chan time.Time
	// Out gets one progress line per step (nil: discarded).
	Out io.Writer
	// Poll is how often to look for the control file (default 50ms);
	// StartTimeout bounds the wait for it (default 60s), both on the
	// injected clock. The wait for the job to start ends with the
	// cluster or with ctx.
	Poll         time.Duration
	StartTimeout time.Duration
	// JUnit, if set, is a file to write the result to as JUnit XML, one
	// test case per check (WriteJUnit), whatever the outcome.
	JUnit string

	// A scenario that kills the coordinator (Scenario.KillsCoordinator)
	// needs the coordinator to be a process of its own, and these seams;
	// Run refuses it without them (ExitNotRun, before anything starts).
	//
	// KillCoordinator SIGKILLs the coordinator and returns once it is
	// dead: the wait of Start (or of the last ResumeCoordinator) returns
	// by then or soon after.
	KillCoordinator func() error
	// ResumeCoordinator starts a new coordinator on the run directory
	// (`spate up --resume DIR`) and returns wait, which returns when that
	// coordinator has finished. Cancelling ctx stops it. Required when a
	// kill has resume_after:.
	ResumeCoordinator func(ctx context.Context) (wait func() error, err error)
	// AwaitNodes, after a kill of the coordinator that no coordinator
	// followed, waits for the nodes it left to exit (each gives up after
	// --coord-timeout), so that nothing writes to the run directory as
	// the report is made. Optional.
	AwaitNodes func(ctx context.Context) error
}

// Run runs a scenario: it starts the cluster, waits for its control API
// and for the job to start, sends each planned step at its time after the
// job started (a refused action is logged in the report, not fatal),
// sends a final heal when the cluster's duration is up (or after the last
// step when it has none), waits for the cluster to finish, verifies the
// output, evaluates the checks, and writes report.json and report.html in
// the run directory. It returns ExitPass, ExitFail or ExitNotRun (with the
// error) and the run directory ("" if none was made).
//
// A scenario that expects to fail (expect: fail) turns the verdict
// around: a failed check is ExitPass, and all checks passing ExitFail.
//
// A `kill coord` step goes through opt.KillCoordinator, not the control
// API (the coordinator would be killing itself); with resume_after: D,
// opt.ResumeCoordinator starts a new coordinator D later, the runner dials
// its control API (a new address) before the next step and waits for it,
// not the dead one, to finish before verifying. Steps due while no
// coordinator runs are logged as refused. When no coordinator follows a
// kill (no resume_after:, or the new one ended before its control API was
// up) the run cannot finish: the later steps are not sent, nothing is
// verified, and every check fails, naming why; such a scenario is written
// with expect: fail.
func Run(ctx context.Context, sc *Scenario, opt RunOptions) (verdict int, dir string, err error) {
	start := time.Now()
	if opt.Now != nil {
		start = opt.Now()
	}
	verdict, dir, r, err := run(ctx, sc, opt)
	if opt.JUnit != "" {
		elapsed := time.Since(start)
		if opt.Now != nil {
			elapsed = opt.Now().Sub(start)
		}
		if jerr := writeJUnitFile(opt.JUnit, sc, r, err, elapsed); jerr != nil {
			if err == nil {
				err = fmt.Errorf("chaos: --junit: %w", jerr)
			}
			return ExitNotRun, dir, err
		}
	}
	return verdict, dir, err
}

func run(ctx context.Context, sc *Scenario, opt RunOptions) (verdict int, dir string, rep *Report, err error) {
	if opt.Start == nil || opt.Verify == nil {
		return ExitNotRun, "", nil, errors.New("chaos: RunOptions needs Start and Verify")
	}
	opt.defaults()
	steps := Plan(sc, sc.Duration)
	if err := opt.canRun(steps); err != nil {
		return ExitNotRun, "", nil, err
	}
	fmt.Fprintf(opt.Out, "chaos: %s: %d steps over %v\n", sc.Name, len(steps), sc.Duration)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir, wait, err := opt.Start(runCtx, append([]string(nil), sc.Cluster...))
	if err != nil {
		return ExitNotRun, dir, nil, fmt.Errorf("chaos: start the cluster: %w", err)
	}
	rn := &runner{opt: opt, sc: sc, dir: dir, coord: watch(wait)}
	// Any way out before the cluster finished stops it first.
	stop := func(err error) (int, string, *Report, error) {
		cancel()
		<-rn.coord.done
		return ExitNotRun, dir, nil, err
	}

	ended, err := rn.drive(runCtx, steps)
	if err != nil {
		return stop(err)
	}
	if ctx.Err() != nil {
		return stop(ctx.Err())
	}
	if ended {
		rn.notes = append(rn.notes, "the cluster finished before the schedule did: later steps were not sent")
	}
	if rn.unfinished != "" {
		return rn.notFinished(ctx, stop)
	}
	select {
	case <-rn.coord.done:
	case <-ctx.Done():
		return stop(ctx.Err())
	}
	if err := rn.coord.err; err != nil {
		rn.notes = append(rn.notes, "the cluster ended with an error: "+err.Error())
		fmt.Fprintf(opt.Out, "chaos: the cluster ended with an error: %v\n", err)
	}

	v, err := opt.Verify(dir)
	if err != nil && rn.coord.err != nil {
		// The cluster stopped the job (an instance with nothing left to
		// restore it from, say): a failed verdict that says why, not a
		// run that could not be run.
		return rn.unverified("the cluster stopped the job: " + rn.coord.err.Error())
	}
	if err != nil {
		return ExitNotRun, dir, nil, fmt.Errorf("chaos: verify %s: %w", dir, err)
	}
	r, err := BuildReport(dir, sc, v)
	if err != nil {
		return ExitNotRun, dir, nil, fmt.Errorf("chaos: report: %w", err)
	}
	rn.fill(r)
	return rn.finish(r)
}

// fill adds what only the runner knows to a report: its actions, its
// notes, and the spans in which the coordinator was down.
func (rn *runner) fill(r *Report) {
	r.Actions = rn.log
	r.Notes = append(r.Notes, rn.notes...)
	for _, d := range rn.downs {
		r.Faults = append(r.Faults, rn.span(d, r))
	}
	sortFaults(r.Faults)
}

// finish writes the report, prints the checks and the verdict, and
// returns the outcome.
func (rn *runner) finish(r *Report) (int, string, *Report, error) {
	opt, sc, dir := rn.opt, rn.sc, rn.dir
	if err := WriteReport(dir, r); err != nil {
		return ExitNotRun, dir, r, fmt.Errorf("chaos: write the report: %w", err)
	}
	for _, c := range r.Checks {
		mark := "pass"
		if !c.Pass {
			mark = "FAIL"
		}
		fmt.Fprintf(opt.Out, "chaos: %-4s %s: %s\n", mark, c.Name, c.Detail)
	}
	if r.Break != "" {
		fmt.Fprintf(opt.Out, "chaos: BROKEN ON PURPOSE: %s (the cluster's break: a mechanism deliberately wrong)\n", r.Break)
	}
	if rn.unfinished != "" {
		fmt.Fprintf(opt.Out, "chaos: verdict %s: the run did not finish (%s); report in %s\n", r.Verdict, rn.unfinished, dir)
	} else {
		fmt.Fprintf(opt.Out, "chaos: verdict %s: %d lost, %d duplicated, %d wrong; report in %s\n", r.Verdict, r.Lost, r.Duplicated, r.Wrong, dir)
	}
	if sc.Expect == ExpectFail {
		if r.Verdict == VerdictFail {
			fmt.Fprintln(opt.Out, "chaos: the scenario expects to fail, and it did: exit 0")
		} else {
			fmt.Fprintln(opt.Out, "chaos: the scenario expects to fail, but every check passed: exit 1")
		}
	}
	return Outcome(sc, r.Verdict), dir, r, nil
}

// Outcome is the exit code of a verdict for sc: ExitPass when the verdict
// is the one the scenario expects (pass, unless expect: fail).
func Outcome(sc *Scenario, verdict string) int {
	want := VerdictPass
	if sc.Expect == ExpectFail {
		want = VerdictFail
	}
	if verdict == want {
		return ExitPass
	}
	return ExitFail
}

// drive waits for the control API and for the job to start, then sends
// each step at its time, starts a killed coordinator's successor at its
// time, and sends the final heal. ended reports that the cluster finished
// before the schedule did. When the run cannot finish (rn.unfinished) it
// returns at once, without the later steps or the heal.
func (rn *runner) drive(ctx context.Context, steps []Step) (ended bool, err error) {
	client, err := rn.dial(ctx)
	if err != nil {
		return false, err
	}
	rn.client = client
	jobStart, err := rn.jobStarted(ctx, client)
	if err != nil {
		return false, err
	}
	rn.jobStart = jobStart
	fmt.Fprintf(rn.opt.Out, "chaos: the job started; run directory %s\n", rn.dir)
	for i, s := range steps {
		if err := rn.resumeBy(ctx, jobStart.Add(s.At)); err != nil {
			return false, err
		}
		if rn.unfinished != "" {
			rn.unsent(len(steps) - i)
			return false, nil
		}
		if !rn.until(ctx, jobStart.Add(s.At)) {
			return true, nil
		}
		rn.step(ctx, s)
	}
	// A resume due after the last step, even after the run's duration:
	// without it the job never ends.
	if err := rn.resumeBy(ctx, time.Time{}); err != nil {
		return false, err
	}
	if rn.unfinished != "" || ctx.Err() != nil {
		return false, nil
	}
	end := rn.opt.Now()
	if rn.sc.Duration > 0 {
		end = jobStart.Add(rn.sc.Duration)
	}
	if !rn.until(ctx, end) {
		return true, nil
	}
	rn.act(ctx, Step{At: end.Sub(jobStart), Action: control.Action{Verb: "heal"}})
	return false, nil
}

// step sends one step: a kill of the coordinator is the runner's own, any
// other goes to the control API, unless no coordinator runs to take it.
func (rn *runner) step(ctx context.Context, s Step) {
	switch {
	case s.Action.Verb == "kill" && s.Action.Target == Coord:
		rn.killCoord(ctx, s)
	case rn.down != nil:
		rn.record(s, rn.opt.Now(), false, "no coordinator to send it to: "+rn.down.String(rn.jobStart))
	default:
		rn.act(ctx, s)
	}
}

// defaults fills in the clock, the output and the polling of o.
func (o *RunOptions) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Poll <= 0 {
		o.Poll = 50 * time.Millisecond
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = time.Minute
	}
}

// Drive applies a scenario's schedule to a cluster someone else started
// (`spate up --script`): it waits for the control API in dir and for the
// job to start, sends each step at its time and a final heal, and returns
// what the cluster said to each. done closes when the cluster finishes.
// The scenario's cluster: block and checks are not used. A kill of the
// coordinator is refused (logged) unless opt has KillCoordinator: the
// coordinator running the script would be killing itself.
func Drive(ctx context.Context, dir string, sc *Scenario, done <-chan struct{}, opt RunOptions) ([]ActionLog, error) {
	opt.defaults()
	rn := &runner{opt: opt, sc: sc, dir: dir, coord: &coordProc{done: done}}
	_, err := rn.drive(ctx, Plan(sc, sc.Duration))
	return rn.log, err
}

// runner is one Run's state; only Run's goroutine touches it.
type runner struct {
	opt      RunOptions
	sc       *Scenario
	dir      string
	coord    *coordProc      // the coordinator running the cluster (after a kill, the dead one until its successor starts)
	client   *control.Client // coord's control API; nil while it is down
	jobStart time.Time       // when the job started, on the runner's clock
	// down is the coordinator's death in progress (nil while one runs);
	// downs are all of them, for the report.
	down  *downtime
	downs []*downtime
	// unfinished says why the run cannot finish ("": it can): a killed
	// coordinator that no other one followed.
	unfinished string
	log        []ActionLog
	notes      []string
}

// coordProc is one coordinator's life: done closes when it has finished,
// err (written before) is what its wait returned.
type coordProc struct {
	done <-chan struct{}
	err  error
}

// watch calls wait on a goroutine of its own.
func watch(wait func() error) *coordProc {
	done := make(chan struct{})
	p := &coordProc{done: done}
	go func() {
		p.err = wait()
		close(done)
	}()
	return p
}

// ended reports whether p has finished.
func (p *coordProc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// finished is closed when the cluster has finished; nil (never ready)
// while its coordinator is down, since the dead one's end is not the
// cluster's.
func (rn *runner) finished() <-chan struct{} {
	if rn.down != nil {
		return nil
	}
	return rn.coord.done
}

// dial waits for the run directory's control file.
func (rn *runner) dial(ctx context.Context) (*control.Client, error) {
	deadline := rn.opt.Now().Add(rn.opt.StartTimeout)
	for {
		c, err := control.Dial(rn.dir)
		if err == nil {
			return c, nil
		}
		if !rn.opt.Now().Before(deadline) && !rn.coord.ended() { // an end is the better reason
			return nil, fmt.Errorf("chaos: no control API after %v: %w", rn.opt.StartTimeout, err)
		}
		select {
		case <-rn.opt.After(rn.opt.Poll):
		case <-rn.coord.done:
			return nil, fmt.Errorf("chaos: the cluster ended before its control API was up: %v", rn.coord.err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// jobStarted waits for the job_started event and returns the time it was
// seen, on the runner's clock. It has no timeout of its own: the cluster
// ending, or ctx, ends the wait.
func (rn *runner) jobStarted(ctx context.Context, c *control.Client) (time.Time, error) {
	evCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan struct{})
	streamErr := make(chan error, 1)
	go func() {
		streamErr <- c.Events(evCtx, 0, func(e events.Event) bool {
			if e.Kind == events.JobStarted {
				close(started)
				return false
			}
			return true
		})
	}()
	select {
	case <-started:
		return rn.opt.Now(), nil
	case err := <-streamErr:
		select {
		case <-started:
			return rn.opt.Now(), nil
		default:
		}
		if err == nil {
			err = errors.New("the event stream ended")
		}
		return time.Time{}, fmt.Errorf("chaos: waiting for the job to start: %w", err)
	case <-rn.coord.done:
		return time.Time{}, fmt.Errorf("chaos: the cluster ended before the job started: %v", rn.coord.err)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// until waits for t; false if the cluster finished or ctx ended first.
func (rn *runner) until(ctx context.Context, t time.Time) bool {
	select {
	case <-rn.finished():
		return false
	default:
	}
	d := t.Sub(rn.opt.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-rn.opt.After(d):
		return ctx.Err() == nil
	case <-rn.finished():
		return false
	case <-ctx.Done():
		return false
	}
}

// act sends one step to the control API and logs what the cluster said.
func (rn *runner) act(ctx context.Context, s Step) {
	res, err := rn.client.Act(ctx, s.Action)
	text := res.Text
	if err != nil {
		text = err.Error()
	}
	rn.record(s, rn.opt.Now(), err == nil, text)
}

// record logs a step done (or refused) at time at, in the report's
// actions and as a progress line.
func (rn *runner) record(s Step, at time.Time, ok bool, text string) {
	l := ActionLog{AtMs: ms(at.Sub(rn.jobStart)), PlanMs: ms(s.At), Action: s.Action.String(), OK: ok, Text: text}
	rn.log = append(rn.log, l)
	state := "ok"
	if !l.OK {
		state = "refused"
	}
	fmt.Fprintf(rn.opt.Out, "chaos: %7.1fs %s: %s: %s\n", l.AtMs/1000, l.Action, state, l.Text)
}
