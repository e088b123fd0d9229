package tour

import (
	"context"
	"sync"
	"time"

	"spate/control"
	"spate/events"
	"spate/tui"
)

// An aligner times a kill by its victim's checkpoints, as bench recovery
// --align does: the kill comes a set age after the capture of the
// victim's latest checkpoint (a global one, under --ft global), so that
// two clusters killed so lose state of the same age whatever their
// timers. It folds the cluster's events (observe, from the event bus,
// never blocking it) and is safe for concurrent use.
type aligner struct {
	victim string // the instance the kill aims at: count#0

	mu    sync.Mutex
	taken []time.Time   // the capture times of the victim's latest two checkpoints
	tick  chan struct{} // closed at the next checkpoint of the victim
}

func newAligner(victim string) *aligner {
	return &aligner{victim: victim, tick: make(chan struct{})}
}

// captured is when the checkpoint e reports was captured, if it is one of
// victim's (or a global one): an instance's completes total_us after its
// capture, a global one took_ms after its barrier was injected.
func captured(e events.Event, victim string) (time.Time, bool) {
	f, ok := e.Fields.(events.CheckpointFields)
	if !ok || e.Kind != events.Checkpoint || !(f.Global || e.Instance == victim) {
		return time.Time{}, false
	}
	if f.Global {
		return e.Time.Add(-time.Duration(f.TookMs) * time.Millisecond), true
	}
	return e.Time.Add(-time.Duration(f.TotalUs) * time.Microsecond), true
}

func (a *aligner) observe(e events.Event) {
	t, ok := captured(e, a.victim)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.taken = append(a.taken, t)
	if len(a.taken) > 2 {
		a.taken = a.taken[1:]
	}
	close(a.tick)
	a.tick = make(chan struct{})
}

// latest is the capture of the victim's latest checkpoint and the gap
// from the one before (its interval), and a channel closed at the next.
func (a *aligner) latest() (at time.Time, interval time.Duration, next <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.taken) == 2 {
		at, interval = a.taken[1], a.taken[1].Sub(a.taken[0])
	}
	return at, interval, a.tick
}

// due waits for the moment of an aligned kill: half an interval after
// the capture of a checkpoint of the victim whose interval is known, the
// first such moment still to come. It returns the interval and the age
// (the delay after the capture), or false if ctx ends first.
func (a *aligner) due(ctx context.Context) (interval, age time.Duration, ok bool) {
	for {
		at, iv, next := a.latest()
		if iv > 0 {
			if kill := at.Add(iv / 2); time.Until(kill) > 0 {
				t := time.NewTimer(time.Until(kill)) // the kill's schedule, not a synchronisation
				select {
				case <-t.C:
					return iv, iv / 2, true
				case <-ctx.Done():
					t.Stop()
					return 0, 0, false
				}
			}
		}
		select {
		case <-next:
		case <-ctx.Done():
			return 0, 0, false
		}
	}
}

// alignedKill is when the tour's kill came: the victim's checkpoint
// interval then and how long after its latest capture.
type alignedKill struct {
	interval, age time.Duration
}

// alignedControl is the tour's control of its cluster with the lesson's
// kill aligned: that action (and no other, so a kill from the keyboard
// is not held) waits for aligner.due before it is sent. The wait can
// outlast the action's own deadline (an interval and a half, and the
// tuner's intervals are seconds long): it ends with the tour (ctx) or
// after wait, and the kill is then sent with a deadline of its own.
type alignedControl struct {
	tui.Controller
	ctx  context.Context // the tour's
	a    *aligner
	kill control.Action

	mu   sync.Mutex
	done *alignedKill // the aligned kill that was carried out
}

// alignWait bounds the wait for an aligned kill's moment; past it the
// kill is sent unaligned.
const alignWait = time.Minute

// actWait bounds the aligned kill's action itself.
const actWait = 10 * time.Second

func (c *alignedControl) Act(ctx context.Context, act control.Action) (control.Result, error) {
	if act.Verb != c.kill.Verb || act.Target != c.kill.Target || c.aligned() != nil {
		return c.Controller.Act(ctx, act)
	}
	wctx, cancel := context.WithTimeout(c.ctx, alignWait)
	iv, age, ok := c.a.due(wctx)
	cancel()
	actx, cancel := context.WithTimeout(c.ctx, actWait)
	defer cancel()
	res, err := c.Controller.Act(actx, act)
	if err == nil && ok {
		c.mu.Lock()
		c.done = &alignedKill{interval: iv, age: age}
		c.mu.Unlock()
	}
	return res, err
}

// aligned is the lesson's kill once carried out aligned, nil before (or
// if it could not be aligned).
func (c *alignedControl) aligned() *alignedKill {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}
