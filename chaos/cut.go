package chaos

import (
	"fmt"
	"time"
)

// Cut lists, one line a step, what a --set duration shorter than the
// file's does to the schedule as written: the steps it drops (due at or
// after the run's new end) and those it truncates (a fault whose for:
// runs past the new end, where the runner heals everything). Nil when
// nothing is cut: no duration override, or one that is not shorter.
func (sc *Scenario) Cut() []string {
	if _, set := sc.Set["duration"]; !set || sc.Duration <= 0 || sc.FileDuration > 0 && sc.Duration >= sc.FileDuration {
		return nil
	}
	end := sc.Duration
	var out []string
	for _, st := range Plan(sc, sc.FileDuration) {
		if st.At >= end {
			out = append(out, fmt.Sprintf("dropped: %s at %v, at or past the run's end at %v", st.Action, st.At, end))
			continue
		}
		if f, err := time.ParseDuration(st.Action.Args["for"]); err == nil && st.At+f > end {
			out = append(out, fmt.Sprintf("truncated: %s at %v: its for: %v runs to %v, past the run's end at %v, where it is healed", st.Action, st.At, f, st.At+f, end))
		}
	}
	return out
}
