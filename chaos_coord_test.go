package main

import (
	"strings"
	"testing"
)

// A scenario's `kill coordinator` on a real cluster: `spate chaos run`
// runs the coordinator as a child process, SIGKILLs it, and starts `spate
// up --resume` on the run directory; the nodes rejoin, the job drains,
// and exactly-once holds.
func TestChaosKillsAndResumesTheCoordinator(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	code, out, dir := chaosRun(t, `name: the coordinator killed and resumed
cluster: {nodes: 3, rate: 30000, keys: 2000, duration: 10s, ft: spate, interval: 300ms, timeout: 10s, coord-timeout: 60s}
schedule:
  - {at: 2s, fault: link, target: n2, latency: 20ms, for: 1s}
  - {at: 4s, fault: kill, target: coordinator, resume_after: 2s}
  - {at: 8s, fault: kill, target: count#0}
checks: [exactly_once]
`)
	if code != 0 {
		t.Fatalf("chaos run: exit %d\n%s", code, out)
	}
	r := readReport(t, dir)
	if r.Verdict != "pass" || r.Lost != 0 || r.Duplicated != 0 || r.Wrong != 0 {
		t.Fatalf("report: verdict %s, %d lost, %d duplicated, %d wrong\n%s", r.Verdict, r.Lost, r.Duplicated, r.Wrong, out)
	}
	var sent []string
	for _, a := range r.Actions {
		if !a.OK {
			t.Errorf("%s refused: %s", a.Action, a.Text)
		}
		sent = append(sent, a.Action)
	}
	if got, want := strings.Join(sent, ", "), "link n2 for=1s latency=20ms, kill coord resume_after=2s, resume coord, kill count#0, heal"; got != want {
		t.Errorf("actions %q\nwant %q\n%s", got, want, out)
	}
	mustVerify(t, dir, "after the coordinator was killed and resumed")
	checkReport(t, dir) // the coordinator's downtime is a fault of the schema's shape
}

// Killed and never resumed: the nodes give up after --coord-timeout, the
// run cannot finish, and the scenario, which says so, passes.
func TestChaosCoordinatorNeverResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	code, out, dir := chaosRun(t, `name: the coordinator killed for good
expect: fail
cluster: {nodes: 3, rate: 30000, keys: 2000, duration: 10s, ft: spate, interval: 300ms, coord-timeout: 2s}
schedule:
  - {at: 3s, fault: kill, target: coord}
checks: [exactly_once]
`)
	if code != 0 {
		t.Fatalf("chaos run: exit %d, want 0 (expect: fail)\n%s", code, out)
	}
	if r := readReport(t, dir); r.Verdict != "fail" {
		t.Fatalf("verdict %s\n%s", r.Verdict, out)
	}
	checkReport(t, dir)
	// `spate chaos run` waits for the nodes; it kills those still there
	// at its end, and says so.
	if !strings.Contains(out, "never resumed") || strings.Contains(out, "killed n") || strings.Contains(out, "did not all exit") {
		t.Errorf("want the nodes to have left on their own after --coord-timeout:\n%s", out)
	}
}
