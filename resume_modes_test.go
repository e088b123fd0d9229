package main

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"spate/events"
)

// A node paused (SIGSTOP) past the failure-detection timeout is lost and
// its instances recovered; the coordinator that paused it then dies. No
// timer of the dead coordinator wakes the node any more: the resumed one
// ends it (it used to be left stopped, for ever), and the run verifies.
func TestANodeLostWhilePausedIsEndedByTheResumedCoordinator(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	cmd, dir := startResumable(t, "spate", "8s", "--timeout", "1s")
	waitFor(t, 60*time.Second, "3 checkpoints", func() (bool, string) {
		n := countEvents(runEvents(t, dir), events.Checkpoint)
		return n >= 3, fmt.Sprint(n)
	})
	pid := nodePids(runEvents(t, dir))["n2"]
	if pid <= 0 {
		t.Fatal("no pid of n2 in the run's events")
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // never leave a stopped process behind
	if code, out, errOut := spate(t, "chaos", "pause", "n2", "--for", "5m", "--data", dir); code != 0 {
		t.Fatalf("pause: exit %d: %s%s", code, out, errOut)
	}
	waitFor(t, 60*time.Second, "n2 lost and its instances placed", func() (bool, string) {
		evs := runEvents(t, dir)
		return findEvent(evs, events.NodeLost, "n2") != nil && findEvent(evs, events.RecoveryPlaced, "") != nil, "not yet"
	})
	killCoordinator(t, cmd)
	if code, out := resume(t, dir); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	mustVerify(t, dir, "after the resume")
	waitFor(t, 10*time.Second, "the paused, lost n2 to be gone", func() (bool, string) {
		return !alive(pid), fmt.Sprintf("pid %d still there", pid)
	})
}
