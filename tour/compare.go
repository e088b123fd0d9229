package tour

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"spate/control"
	"spate/coord"
	"spate/events"
	"spate/tui"
)

// comparisons run the lesson's comparisons (a step's compare: line): the
// tour's job on a second cluster with other flags (--ft global), at the
// checkpoint interval the victim of the tour's kill had when it was
// killed, and the tour's kill (the lesson's first do: kill) done there
// too, as long after a checkpoint's capture as the tour's came (both
// aligned, as bench recovery --align does: align.go), so that both lose
// state of the same age. Its figures ({cmp_restarted}, ...) are for the
// step to show beside the tour's own, and the sentences that compare the
// two ({cmp_claims}) are written from both clusters' figures
// (claims.go). Each runs in a run directory of its own beside the
// tour's (DIR-ft-global-...), then drains and is verified by the oracle
// like the tour's. Wait waits for all of them.
type comparisons struct {
	base []string       // the tour's flags of spate up, without --data
	dir  string         // the tour's run directory
	kill control.Action // the lesson's kill
	// aligned is the tour's kill as it was aligned (nil: it was not),
	// and here the tour cluster's figures.
	aligned func() *alignedKill
	here    *syncFigures
	wg      sync.WaitGroup
}

// settle is how long a comparison runs on after its recovery, so that
// the output lag's peak is in and has passed.
const settle = 5 * time.Second

// guard bounds a whole comparison: a cluster that hangs is reported, not
// waited for for ever.
const guard = 3 * time.Minute

// comparer is c as the dashboard takes it; ctx is the tour's: its end
// stops every comparison.
func (c *comparisons) comparer(ctx context.Context) tui.Comparer {
	return func(flags []string, age time.Duration) <-chan tui.Comparison {
		ch := make(chan tui.Comparison, 8)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer close(ch)
			c.run(ctx, flags, age, ch)
		}()
		return ch
	}
}

// Wait waits until every comparison has drained.
func (c *comparisons) Wait() { c.wg.Wait() }

// label names flags in a directory name: ft-global.
func label(flags []string) string {
	var parts []string
	for _, f := range flags {
		parts = append(parts, strings.TrimLeft(strings.ReplaceAll(f, "=", "-"), "-"))
	}
	return strings.Join(parts, "-")
}

// withInterval is flags with --interval iv in place of any --interval
// they have.
func withInterval(flags []string, iv time.Duration) []string {
	var out []string
	for i := 0; i < len(flags); i++ {
		switch f := flags[i]; {
		case f == "--interval" || f == "-interval":
			i++
		case strings.HasPrefix(f, "--interval=") || strings.HasPrefix(f, "-interval="):
		default:
			out = append(out, f)
		}
	}
	return append(out, "--interval", iv.String())
}

func (c *comparisons) run(ctx context.Context, flags []string, age time.Duration, ch chan<- tui.Comparison) {
	ctx, cancel := context.WithTimeout(ctx, guard)
	defer cancel()
	target := strings.Replace(c.kill.Target, "/", "#", 1)
	var ak *alignedKill
	if c.aligned != nil {
		ak = c.aligned()
	}
	if ak != nil {
		flags, age = withInterval(flags, ak.interval.Round(100*time.Millisecond)), ak.age
	}
	what := strings.Join(flags, " ")
	figs := tui.NewFigures()
	last := tui.Comparison{Figures: map[string]string{"cmp_flags": what}}
	claims := pendingClaims()
	send := func(status string, err error, done bool) {
		last.Status, last.Err, last.Done = status, err, done
		last.Figures = maps.Clone(last.Figures)
		maps.Copy(last.Figures, figs.Map("cmp_"))
		maps.Copy(last.Figures, claims)
		select {
		case ch <- last:
		case <-ctx.Done():
		}
	}
	dir := c.dir + "-" + label(flags)
	cfg, err := coord.ParseUp(append(append(append([]string(nil), c.base...), flags...), "--data", dir), io.Discard)
	if err != nil {
		send("", fmt.Errorf("compare: %s: %v", what, err), false)
		return
	}
	last.Figures["cmp_dir"] = dir
	send("starting, with "+what, nil, false)

	upCtx, stop := context.WithCancel(ctx)
	defer stop()
	cl := start(upCtx, cfg, nil)
	evc, done := cl.events, cl.done
	var ctl *control.Client
	select {
	case d := <-cl.started:
		if ctl, err = control.Dial(d); err != nil {
			stop()
			<-done
			send("", fmt.Errorf("compare: %v", err), false)
			return
		}
	case err := <-done:
		send("", fmt.Errorf("compare: %s: %v", what, err), false)
		return
	}

	const (
		checkpointing = iota // until two checkpoints of the kill's instance (or two global ones) are complete, then to the kill's moment
		recovering           // the kill sent: until the recovery is over
		settling             // until the output lag has settled
	)
	phase, ckpts := checkpointing, 0
	var recovered, lastCk time.Time
	var due <-chan time.Time // the kill's moment: age after a checkpoint's capture
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	send("waiting for its second checkpoint", nil, false)
loop:
	for {
		var e events.Event
		var ok bool
		select {
		case e, ok = <-evc:
			if !ok {
				break loop
			}
		case <-due:
			due = nil
			actx, acancel := context.WithTimeout(ctx, 10*time.Second)
			res, err := ctl.Act(actx, c.kill)
			acancel()
			if err != nil {
				send("", fmt.Errorf("compare: %s: %v", c.kill, err), false)
				break loop
			}
			last.Figures["cmp_killed"] = strings.Join(res.Nodes, " ")
			send(fmt.Sprintf("%s: %s; waiting for the recovery", c.kill, res.Text), nil, false)
			phase = recovering
			continue
		case <-ctx.Done():
			break loop
		}
		figs.Add(e)
		switch phase {
		case checkpointing:
			taken, isCk := captured(e, target)
			if !isCk {
				break
			}
			if ckpts++; ckpts >= 2 && due == nil {
				if ak == nil {
					// Not aligned: a loss older than the interval would
					// never come; at most most of one.
					age = min(age, taken.Sub(lastCk)*4/5)
				}
				if at := taken.Add(age); time.Until(at) > 0 {
					timer = time.NewTimer(time.Until(at)) // the comparison's schedule, not a synchronisation
					due = timer.C
				}
			}
			lastCk = taken
		case recovering:
			if figs.Recovered() {
				phase, recovered = settling, e.Time
				send("recovered; the output catches up", nil, false)
			}
		case settling:
			if e.Time.Sub(recovered) >= settle {
				break loop
			}
		}
	}
	stop() // the comparison drains
	upErr := <-done
	switch {
	case phase != settling:
		send("", fmt.Errorf("compare: %s stopped before its recovery was over", what), false)
		return
	case upErr != nil && !errors.Is(upErr, context.Canceled):
		send("", fmt.Errorf("compare: %s: %v", what, upErr), false)
		return
	}
	if ls := figs.Losses(); len(ls) > 0 {
		l := ls[len(ls)-1] // the kill's: the one loss it has
		last.Loss = &l
	}
	there, _ := figs.Recovery(target)
	var mine tui.RecoveryNumbers
	if c.here != nil {
		mine, _ = c.here.recovery(target)
	}
	claims = compareClaims(mine, there, ak, target, ftOf(flags))
	send("verifying its output", nil, false)
	rep, err := coord.VerifyRun(dir)
	if err != nil {
		send("", fmt.Errorf("compare: verify %s: %v", filepath.Base(dir), err), false)
		return
	}
	last.Figures["cmp_verify"] = rep.String()
	if !rep.OK() {
		send("", fmt.Errorf("compare: %s: %s", what, rep.String()), false)
		return
	}
	send("done", nil, true)
}

// ftOf is the --ft mode flags set, "" if none.
func ftOf(flags []string) string {
	for i, f := range flags {
		if v, ok := strings.CutPrefix(f, "--ft="); ok {
			return v
		}
		if f == "--ft" && i+1 < len(flags) {
			return flags[i+1]
		}
	}
	return ""
}
