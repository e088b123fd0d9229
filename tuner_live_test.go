package main

import (
	"syscall"
	"testing"

	"spate/events"
)

// TestAutoIntervalUnderAKill runs the real binary with --interval auto,
// kills the node hosting count#0, and checks that the tuner's decisions
// are interval events with reasons and inputs, that one is taken after the
// recovery and counts count#0's failure as its own (a failure makes every
// instance due at the next tick), and that the output verifies (0 missing, 0 duplicated, 0 wrong).
func TestAutoIntervalUnderAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	c, wait := startFT(t, "spate", 4, "--interval", "auto", "--failures", "poisson:30s")
	c.waitEvent(events.Interval, "")
	c.waitEvent(events.Checkpoint, "")
	c.signal(c.host("count#0"), syscall.SIGKILL)
	c.waitEvent(events.RecoveryRestored, "")
	wait()
	c.verifyOK()
	var decisions, afterRecovery, ownFailure int
	restored := false
	for _, e := range c.events() {
		switch e.Kind {
		case events.RecoveryRestored:
			restored = true
		case events.Interval:
			f, _ := e.Fields.(events.IntervalFields)
			if f.Reason == "" || f.IntervalMs <= 0 || (f.Why != "" && f.Inputs.Capacity <= 0) {
				c.dump()
				t.Fatalf("interval event without reason, inputs or interval: %s %v", e.Line(), e.Fields)
			}
			decisions++
			if restored {
				afterRecovery++
			}
			if restored && e.Instance == "count#0" && f.OwnFailures >= 1 {
				ownFailure++ // the instance's own failure is in its rate
			}
		}
	}
	if decisions == 0 || afterRecovery == 0 || ownFailure == 0 {
		c.dump()
		t.Fatalf("%d interval decisions, %d after the recovery, %d of count#0 counting its own failure; want some of each", decisions, afterRecovery, ownFailure)
	}
	if findEvent(c.events(), events.TunerSummary, "") == nil {
		t.Error("no tuner_summary event")
	}
}
