package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"spate/control"
)

// A kill of the coordinator (`kill coord`, resume_after: D) is the
// runner's own step: the control API is the coordinator, which cannot
// SIGKILL itself and report on it. The runner kills it through
// RunOptions.KillCoordinator, starts its successor D later through
// RunOptions.ResumeCoordinator (`spate up --resume DIR`: the nodes, which
// wait --coord-timeout for a coordinator, rejoin it and every instance is
// restored from its checkpoints), and dials the successor's control API,
// which has a new address, before it sends anything else. Between the
// two the cluster has no coordinator: a step due then is logged as
// refused.

// downtime is one death of the coordinator, on the runner's clock.
type downtime struct {
	kill     Step          // the step that killed it
	from     time.Time     // when it was killed
	resumeAt time.Time     // when its successor is started; zero: never
	planAt   time.Duration // when the plan has it: the kill's At plus resume_after
	to       time.Time     // when the successor's control API answered; zero: never
}

// String says when the coordinator died and what follows, in job time.
func (d *downtime) String(jobStart time.Time) string {
	s := fmt.Sprintf("the coordinator was killed at %.1fs", d.from.Sub(jobStart).Seconds())
	if d.resumeAt.IsZero() {
		return s + " and never resumed"
	}
	return s + fmt.Sprintf("; a new one starts at %.1fs", d.resumeAt.Sub(jobStart).Seconds())
}

// canRun refuses a plan that kills the coordinator when the seams to do
// it are missing, before anything starts.
func (o *RunOptions) canRun(steps []Step) error {
	for _, s := range steps {
		if s.Action.Verb != "kill" || s.Action.Target != Coord {
			continue
		}
		if o.KillCoordinator == nil {
			return errors.New("chaos: the scenario kills the coordinator, so the coordinator must run as a process of its own: RunOptions needs KillCoordinator")
		}
		if s.Action.Args[ResumeAfter] != "" && o.ResumeCoordinator == nil {
			return errors.New("chaos: the scenario resumes a killed coordinator: RunOptions needs ResumeCoordinator")
		}
	}
	return nil
}

// killCoord is a `kill coord` step: the coordinator is killed, its dead
// control address removed, and its successor planned (or the run marked
// as one that cannot finish).
func (rn *runner) killCoord(ctx context.Context, s Step) {
	switch {
	case rn.opt.KillCoordinator == nil:
		rn.record(s, rn.opt.Now(), false, "the coordinator runs this schedule itself (spate up --script): only spate chaos run can kill it")
		return
	case rn.down != nil:
		rn.record(s, rn.opt.Now(), false, "no coordinator to kill: "+rn.down.String(rn.jobStart))
		return
	}
	if err := rn.opt.KillCoordinator(); err != nil {
		rn.record(s, rn.opt.Now(), false, "kill the coordinator: "+err.Error())
		return
	}
	at := rn.opt.Now()
	// Its wait reports the kill (signal: killed): not the cluster's end,
	// and not an error of the run.
	select {
	case <-rn.coord.done:
	case <-ctx.Done():
	}
	// A coordinator that stops removes its control address; a dead one
	// cannot. Left there, it would send `spate chaos` and `spate status`
	// to nobody, and the re-dial below could not tell it from the new one.
	if err := os.Remove(filepath.Join(rn.dir, control.AddrFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		rn.notes = append(rn.notes, "the dead coordinator's control address stays: "+err.Error())
	}
	rn.client = nil
	d := &downtime{kill: s, from: at}
	text := "SIGKILL: the coordinator is dead; "
	if v := s.Action.Args[ResumeAfter]; v != "" {
		after, err := time.ParseDuration(v)
		if err != nil || after <= 0 { // Parse checked it; a hand-built step may not be
			after = time.Nanosecond
		}
		d.resumeAt, d.planAt = at.Add(after), s.At+after
		text += fmt.Sprintf("a new one (spate up --resume) in %v", after)
	} else {
		text += "it is never resumed, so the run cannot finish"
		rn.unfinished = d.String(rn.jobStart)
	}
	rn.down = d
	rn.downs = append(rn.downs, d)
	rn.record(s, at, true, text)
}

// resumeBy starts the killed coordinator's successor if it is due by t
// (any time, for t zero), once its time has come. A successor that could
// not start, or ended before its control API was up, marks the run as
// one that cannot finish; an error is a run that could not be carried
// out (ctx ended, or the successor's control API never came).
func (rn *runner) resumeBy(ctx context.Context, t time.Time) error {
	d := rn.down
	if d == nil || d.resumeAt.IsZero() || (!t.IsZero() && d.resumeAt.After(t)) {
		return nil
	}
	if !rn.until(ctx, d.resumeAt) { // no coordinator: only ctx ends the wait
		return ctx.Err()
	}
	s := Step{At: d.planAt, Action: control.Action{Verb: "resume", Target: Coord}}
	started := rn.opt.Now()
	wait, err := rn.opt.ResumeCoordinator(ctx)
	if err != nil {
		rn.record(s, started, false, "spate up --resume: "+err.Error())
		rn.unfinished = fmt.Sprintf("the coordinator was killed at %.1fs; its successor could not start at %.1fs: %v", rn.secs(d.from), rn.secs(started), err)
		return nil
	}
	rn.coord = watch(wait)
	client, err := rn.dial(ctx)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case rn.coord.ended():
		why := fmt.Sprint(rn.coord.err)
		rn.record(s, started, false, "the new coordinator ended before its control API was up: "+why)
		rn.unfinished = fmt.Sprintf("the coordinator was killed at %.1fs; its successor, started at %.1fs, ended before its control API was up: %s", rn.secs(d.from), rn.secs(started), why)
		return nil
	default:
		return fmt.Errorf("chaos: the new coordinator (spate up --resume): %w", err)
	}
	rn.client, rn.down, d.to = client, nil, rn.opt.Now()
	rn.record(s, started, true, fmt.Sprintf("a new coordinator (spate up --resume) goes on with the run; its control API answered after %v",
		d.to.Sub(started).Round(time.Millisecond)))
	return nil
}

// secs is t in seconds of job time.
func (rn *runner) secs(t time.Time) float64 { return t.Sub(rn.jobStart).Seconds() }

// unsent notes the n steps a run that cannot finish did not send.
func (rn *runner) unsent(n int) {
	switch {
	case n == 1:
		rn.notes = append(rn.notes, rn.unfinished+": the step after it was not sent")
	case n > 1:
		rn.notes = append(rn.notes, fmt.Sprintf("%s: the %d steps after it were not sent", rn.unfinished, n))
	}
}

// notFinished ends a run no coordinator finishes: it waits for the nodes
// the dead coordinator left, then reports every check as not met. There
// is nothing to verify: the job never ended, and verify needs its final
// source positions.
func (rn *runner) notFinished(ctx context.Context, stop func(error) (int, string, *Report, error)) (int, string, *Report, error) {
	out := rn.opt.Out
	fmt.Fprintf(out, "chaos: %s: the run cannot finish\n", rn.unfinished)
	if rn.opt.AwaitNodes != nil {
		fmt.Fprintln(out, "chaos: waiting for the nodes to exit (each waits --coord-timeout for a coordinator, then stops)")
		if err := rn.opt.AwaitNodes(ctx); err != nil {
			if ctx.Err() != nil {
				return stop(ctx.Err())
			}
			rn.notes = append(rn.notes, "the nodes did not all exit: "+err.Error())
			fmt.Fprintf(out, "chaos: the nodes did not all exit: %v\n", err)
		}
	}
	return rn.unverified(rn.unfinished)
}

// unverified ends a run whose job did not finish (why): a report whose
// every check fails, saying why, and the verdict fail.
func (rn *runner) unverified(why string) (int, string, *Report, error) {
	rn.unfinished = why // the verdict line says it, not counts never taken
	r, err := BuildReport(rn.dir, rn.sc, Verify{})
	if err != nil {
		return ExitNotRun, rn.dir, nil, fmt.Errorf("chaos: report: %w", err)
	}
	for i := range r.Checks {
		r.Checks[i].Pass = false
		r.Checks[i].Detail = "not met: the run did not finish: " + why
	}
	r.Verdict = VerdictFail
	rn.notes = append(rn.notes, "the run did not finish ("+why+"): its output was not verified")
	rn.fill(r)
	return rn.finish(r)
}

// span is d as a fault of the report, in job time: from the kill until
// the new coordinator's control API answered, or open to the run's end.
func (rn *runner) span(d *downtime, r *Report) FaultSpan {
	fs := FaultSpan{Verb: "kill", Target: Coord, Nodes: []string{Coord}, Args: cloneAction(d.kill.Action).Args}
	off := d.from.Sub(rn.jobStart)
	fs.Start, fs.StartMs = r.JobStarted.Add(off), ms(off)
	if d.to.IsZero() {
		fs.Open = true
		fs.End, fs.EndMs = r.Finished, r.DurationMs
		if fs.EndMs < fs.StartMs { // the last event came before the kill
			fs.End, fs.EndMs = fs.Start, fs.StartMs
		}
		return fs
	}
	off = d.to.Sub(rn.jobStart)
	fs.End, fs.EndMs = r.JobStarted.Add(off), ms(off)
	return fs
}

// coordSpans are the coordinator's deaths among a report's faults (the
// runner's, not the cluster's events), for a report made again.
func coordSpans(fs []FaultSpan) []FaultSpan {
	var out []FaultSpan
	for _, f := range fs {
		if f.Target == Coord && f.Verb == "kill" {
			out = append(out, f)
		}
	}
	return out
}

// sortFaults orders faults by their start, the cluster's before the
// runner's at the same time.
func sortFaults(fs []FaultSpan) {
	slices.SortStableFunc(fs, func(a, b FaultSpan) int {
		switch {
		case a.StartMs < b.StartMs:
			return -1
		case a.StartMs > b.StartMs:
			return 1
		}
		return 0
	})
}
