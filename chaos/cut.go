package chaos

import (
	"fmt"
	"time"
)

// Cut lists, one line a step, what a --set duration shorter than the
// file's does to the schedule's at: steps: those it drops (due at or
// after the run's new end) and those it truncates (a fault whose for:
// runs past the new end, where the runner heals everything). Nil when
// nothing is cut: no duration override, or one that is not shorter.
// Repeating entries (every:, random:) are bounded by the run by design;
// Shortened says what the new end does to them.
func (sc *Scenario) Cut() []string {
	end, ok := sc.shorter()
	if !ok {
		return nil
	}
	var out []string
	for _, e := range sc.Schedule {
		if e.Random != nil || e.Every > 0 {
			continue
		}
		if e.At >= end {
			out = append(out, fmt.Sprintf("dropped: %s at %v (line %d), at or past the run's end at %v", e.Action, e.At, e.Line, end))
			continue
		}
		if f, err := time.ParseDuration(e.Action.Args["for"]); err == nil && e.At+f > end {
			out = append(out, fmt.Sprintf("truncated: %s at %v (line %d): its for: %v runs to %v, past the run's end at %v, where it is healed", e.Action, e.At, e.Line, f, e.At+f, end))
		}
	}
	return out
}

// Shortened lists, one line an entry, the repeating entries (every:,
// random:) that a --set duration shorter than the file's ends early: they
// stop at the run's new end, with fewer steps than over the file's
// duration.
func (sc *Scenario) Shortened() []string {
	end, ok := sc.shorter()
	if !ok {
		return nil
	}
	var out []string
	for _, e := range sc.Schedule {
		var until time.Duration
		var what string
		switch {
		case e.Random != nil:
			until, what = e.Random.Until, fmt.Sprintf("random: faults (line %d)", e.Line)
		case e.Every > 0:
			until, what = e.Until, fmt.Sprintf("every %v: %s (line %d)", e.Every, e.Action, e.Line)
		default:
			continue
		}
		if until <= 0 || until > sc.FileDuration && sc.FileDuration > 0 {
			until = sc.FileDuration
		}
		if until > end || until <= 0 {
			one := &Scenario{Schedule: []Entry{e}}
			all, kept := len(Plan(one, sc.FileDuration)), len(Plan(one, end))
			out = append(out, fmt.Sprintf("shortened: %s ends at %v: %d of its %d steps", what, end, kept, all))
		}
	}
	return out
}

// shorter is the run's end when a --set duration makes it shorter than
// the file's.
func (sc *Scenario) shorter() (time.Duration, bool) {
	_, set := sc.Set["duration"]
	if !set || sc.Duration <= 0 || sc.FileDuration > 0 && sc.Duration >= sc.FileDuration {
		return 0, false
	}
	return sc.Duration, true
}
