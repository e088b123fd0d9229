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
	// returns the run directory as soon as it exists, and wait, which
	// returns when the cluster has finished. Cancelling ctx stops it.
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
	fmt.Fprintf(opt.Out, "chaos: %s: %d steps over %v\n", sc.Name, len(steps), sc.Duration)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir, wait, err := opt.Start(runCtx, append([]string(nil), sc.Cluster...))
	if err != nil {
		return ExitNotRun, dir, nil, fmt.Errorf("chaos: start the cluster: %w", err)
	}
	done := make(chan struct{})
	rn := &runner{opt: opt, sc: sc, dir: dir, done: done}
	go func() {
		rn.waitErr = wait()
		close(done)
	}()
	// Any way out before the cluster finished stops it first.
	stop := func(err error) (int, string, *Report, error) {
		cancel()
		<-rn.done
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
	select {
	case <-rn.done:
	case <-ctx.Done():
		return stop(ctx.Err())
	}
	if rn.waitErr != nil {
		rn.notes = append(rn.notes, "the cluster ended with an error: "+rn.waitErr.Error())
		fmt.Fprintf(opt.Out, "chaos: the cluster ended with an error: %v\n", rn.waitErr)
	}

	v, err := opt.Verify(dir)
	if err != nil {
		return ExitNotRun, dir, nil, fmt.Errorf("chaos: verify %s: %w", dir, err)
	}
	r, err := BuildReport(dir, sc, v)
	if err != nil {
		return ExitNotRun, dir, nil, fmt.Errorf("chaos: report: %w", err)
	}
	r.Actions = rn.log
	r.Notes = append(r.Notes, rn.notes...)
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
	fmt.Fprintf(opt.Out, "chaos: verdict %s: %d lost, %d duplicated, %d wrong; report in %s\n", r.Verdict, r.Lost, r.Duplicated, r.Wrong, dir)
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
// each step at its time and the final heal. ended reports that the
// cluster finished before the schedule did.
func (rn *runner) drive(ctx context.Context, steps []Step) (ended bool, err error) {
	client, err := rn.dial(ctx)
	if err != nil {
		return false, err
	}
	jobStart, err := rn.jobStarted(ctx, client)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(rn.opt.Out, "chaos: the job started; run directory %s\n", rn.dir)
	for _, s := range steps {
		if !rn.until(ctx, jobStart.Add(s.At)) {
			return true, nil
		}
		rn.act(ctx, client, jobStart, s)
	}
	if ctx.Err() != nil {
		return false, nil
	}
	end := rn.opt.Now()
	if rn.sc.Duration > 0 {
		end = jobStart.Add(rn.sc.Duration)
	}
	if !rn.until(ctx, end) {
		return true, nil
	}
	rn.act(ctx, client, jobStart, Step{At: end.Sub(jobStart), Action: control.Action{Verb: "heal"}})
	return false, nil
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
// The scenario's cluster: block and checks are not used.
func Drive(ctx context.Context, dir string, sc *Scenario, done <-chan struct{}, opt RunOptions) ([]ActionLog, error) {
	opt.defaults()
	rn := &runner{opt: opt, sc: sc, dir: dir, done: done}
	_, err := rn.drive(ctx, Plan(sc, sc.Duration))
	return rn.log, err
}

// runner is one Run's state; only Run's goroutine touches it, but for
// waitErr, written before done is closed.
type runner struct {
	opt     RunOptions
	sc      *Scenario
	dir     string
	done    <-chan struct{} // closed when the cluster has finished
	waitErr error
	log     []ActionLog
	notes   []string
}

// dial waits for the run directory's control file.
func (rn *runner) dial(ctx context.Context) (*control.Client, error) {
	deadline := rn.opt.Now().Add(rn.opt.StartTimeout)
	for {
		c, err := control.Dial(rn.dir)
		if err == nil {
			return c, nil
		}
		if !rn.opt.Now().Before(deadline) {
			return nil, fmt.Errorf("chaos: no control API after %v: %w", rn.opt.StartTimeout, err)
		}
		select {
		case <-rn.opt.After(rn.opt.Poll):
		case <-rn.done:
			return nil, fmt.Errorf("chaos: the cluster ended before its control API was up: %v", rn.waitErr)
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
	case <-rn.done:
		return time.Time{}, fmt.Errorf("chaos: the cluster ended before the job started: %v", rn.waitErr)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// until waits for t; false if the cluster finished or ctx ended first.
func (rn *runner) until(ctx context.Context, t time.Time) bool {
	select {
	case <-rn.done:
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
	case <-rn.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// act sends one step and logs what the cluster said.
func (rn *runner) act(ctx context.Context, c *control.Client, jobStart time.Time, s Step) {
	res, err := c.Act(ctx, s.Action)
	l := ActionLog{AtMs: ms(rn.opt.Now().Sub(jobStart)), PlanMs: ms(s.At), Action: s.Action.String(), OK: err == nil, Text: res.Text}
	if err != nil {
		l.Text = err.Error()
	}
	rn.log = append(rn.log, l)
	state := "ok"
	if !l.OK {
		state = "refused"
	}
	fmt.Fprintf(rn.opt.Out, "chaos: %7.1fs %s: %s: %s\n", l.AtMs/1000, l.Action, state, l.Text)
}
