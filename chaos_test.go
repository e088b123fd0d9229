package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spate/control"
	"spate/events"
)

// TestControlAPIOnARunningCluster drives a real cluster through `spate
// status` and `spate chaos`: a pause lifted by its duration, a kill of the
// node hosting an instance, a refused verb, a wrong token; then verifies.
func TestControlAPIOnARunningCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	c, wait := startFT(t, "spate", 4)
	c.waitEvent(events.JobStarted, "")

	code, out, errOut := spate(t, "status", "--json", "--data", c.dir)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	var st control.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(st.Nodes) != 4 || st.Nodes[0].PID == 0 || st.Nodes[0].State != "alive" {
		t.Fatalf("status nodes = %+v", st.Nodes)
	}
	owned := map[int]string{}
	for _, in := range st.Instances {
		if in.Op != "count" {
			continue
		}
		for _, g := range in.KeyGroups {
			if prev, dup := owned[g]; dup {
				t.Fatalf("key group %d owned by %s and %s", g, prev, in.ID)
			}
			owned[g] = in.ID
		}
	}
	if len(owned) != 128 {
		t.Fatalf("count instances own %d key groups, want 128", len(owned))
	}

	// A pause shorter than the detection timeout (10s in startUp): the
	// coordinator lifts it after its duration.
	if code, _, errOut := spate(t, "chaos", "pause", "n2", "--for", "1s", "--data", c.dir); code != 0 {
		t.Fatalf("chaos pause: exit %d: %s", code, errOut)
	}
	c.waitEvent(events.FaultEnded, "")

	victim := c.host("count#1")
	if code, out, errOut := spate(t, "chaos", "kill", "count/1", "--data", c.dir); code != 0 || !strings.Contains(out, victim) {
		t.Fatalf("chaos kill count/1: exit %d: %s%s (want %s killed)", code, out, errOut, victim)
	}
	c.waitEvent(events.NodeLost, victim)

	if code, out, errOut := spate(t, "chaos", "checkpoint", "count", "--data", c.dir); code != 0 || !strings.Contains(out, "2 instances") {
		t.Fatalf("chaos checkpoint count: exit %d: %s%s", code, out, errOut)
	}
	c.waitEvent(events.CheckpointRequested, "")
	// An unknown verb is a mistake in the command line (exit 2, one
	// line); the cluster refuses one that reaches it anyway.
	if code, _, errOut := spate(t, "chaos", "frobnicate", "n1", "--data", c.dir); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown verb: exit %d: %s", code, errOut)
	}
	if client, err := control.Dial(c.dir); err != nil {
		t.Fatal(err)
	} else if _, err := client.Act(t.Context(), control.Action{Verb: "frobnicate", Target: "n1"}); err == nil || !strings.Contains(err.Error(), "not a verb") {
		t.Fatalf("the cluster took an unknown verb: %v", err)
	}
	if code, _, errOut := spate(t, "chaos", "kill", "n9", "--data", c.dir); code != 1 || !strings.Contains(errOut, `"n9"`) {
		t.Fatalf("unknown target: exit %d: %s", code, errOut)
	}

	addr, err := os.ReadFile(filepath.Join(c.dir, control.AddrFile))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+strings.TrimSpace(string(addr))+"/v1/act",
		strings.NewReader(`{"verb":"kill","target":"all"}`))
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: HTTP %d, want 401", resp.StatusCode)
	}

	wait()
	c.verifyOK()
	if _, err := os.Stat(filepath.Join(c.dir, control.AddrFile)); !os.IsNotExist(err) {
		t.Fatalf("the control address outlived the run: %v", err)
	}
	if code, _, _ := spate(t, "status", "--data", c.dir); code != 2 {
		t.Fatalf("status of a finished run: exit %d, want 2", code)
	}
}

// chaosRun runs `spate chaos run` on a scenario written to a temp file and
// returns its exit code, output and run directory.
func chaosRun(t *testing.T, yaml string) (int, string, string) {
	t.Helper()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "scenario.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	code, out, errOut := spate(t, "chaos", "run", file, "--data", dir)
	return code, out + errOut, dir
}

type chaosReport struct {
	Verdict    string `json:"verdict"`
	Lost       int    `json:"lost"`
	Duplicated int    `json:"duplicated"`
	Wrong      int    `json:"wrong"`
	Faults     []struct {
		Verb string `json:"verb"`
	} `json:"faults"`
	Actions []struct {
		Action string `json:"action"`
		OK     bool   `json:"ok"`
		Text   string `json:"text"`
	} `json:"actions"`
}

func readReport(t *testing.T, dir string) chaosReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r chaosReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(html), "<svg") {
		t.Fatalf("report.html: %v (%d bytes)", err, len(html))
	}
	return r
}

// TestChaosEveryFaultKind applies every kind of fault to a real cluster
// from a scenario, under spate and global, and requires the verdict pass:
// exactly-once held through all of them.
func TestChaosEveryFaultKind(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	for _, ft := range []string{"spate", "global"} {
		t.Run(ft, func(t *testing.T) {
			// A damaged checkpoint file: spate falls back to the instance's
			// previous complete checkpoint, global to the previous global one.
			corrupt := "  - {at: 6s, fault: store, target: count/0, corrupt: true}\n  - {at: 6500ms, fault: kill, target: count/0}"
			code, out, dir := chaosRun(t, `name: every fault kind
cluster:
  nodes: 4
  rate: 30000
  keys: 2000
  duration: 16s
  ft: `+ft+`
  interval: 300ms
  timeout: 2s
schedule:
  - {at: 1s, fault: link, target: n2, latency: 30ms, jitter: 10ms, bandwidth: 2MB/s, for: 2s}
  - {at: 2s, fault: link, target: n3, reset: true}
  - {at: 3s, fault: store, target: count, slow: 100ms, for: 1s}
  - {at: 4s, fault: store, target: n4, fail: true, for: 1s}
  - {at: 5s, fault: partition, groups: [[n1, n2], [n3, n4]], oneway: true, for: 500ms}
`+corrupt+`
  - {at: 8s, fault: pause, target: n1, for: 500ms}
  - {at: 9s, fault: partition, shape: majority, for: 3s}
  - {at: 13s, fault: restart, target: one}
checks:
  - exactly_once
`)
			if code != 0 {
				t.Fatalf("chaos run: exit %d\n%s", code, out)
			}
			r := readReport(t, dir)
			if r.Verdict != "pass" || r.Lost+r.Duplicated+r.Wrong != 0 {
				t.Fatalf("report: %+v", r)
			}
			for _, a := range r.Actions {
				if !a.OK {
					t.Errorf("action %s refused: %s", a.Action, a.Text)
				}
			}
			mustVerify(t, dir, "after every fault kind")
		})
	}
}

// TestChaosScenarioThatMustFail: with --ft none a kill loses results; the
// run exits 1 and the report counts them.
func TestChaosScenarioThatMustFail(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	code, out, dir := chaosRun(t, `name: kill without fault tolerance
cluster: {nodes: 3, rate: 30000, keys: 2000, duration: 8s, ft: none}
schedule:
  - {at: 3s, fault: kill, target: count}
checks: [exactly_once]
`)
	if code != 1 {
		t.Fatalf("chaos run: exit %d, want 1\n%s", code, out)
	}
	if r := readReport(t, dir); r.Verdict != "fail" || r.Lost == 0 {
		t.Fatalf("report: verdict %s, %d lost; want fail with results lost", r.Verdict, r.Lost)
	}
}

func TestChaosBadScenarioIsExit2WithItsLine(t *testing.T) {
	code, out, _ := chaosRun(t, "name: bad\ncluster: {nodes: 3}\nschedule:\n  - at: 2s\n    fault: explode\n")
	if code != 2 || !strings.Contains(out, "scenario.yaml:5:") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("exit %d, output %q: want exit 2 and one line naming scenario.yaml:5", code, out)
	}
	code, out, _ = chaosRun(t, "name: bad\ncluster:\n  nodes: 0\n")
	if code != 2 || !strings.Contains(out, "scenario.yaml:3:") {
		t.Fatalf("exit %d, output %q: want exit 2 naming scenario.yaml:3", code, out)
	}
}

// TestUpScriptAppliesTheSchedule: `spate up --script` drives an ordinary
// run with a scenario's schedule.
func TestUpScriptAppliesTheSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "s.yaml")
	if err := os.WriteFile(file, []byte("name: script\nschedule:\n  - {at: 2s, fault: kill, target: count/0}\n  - {at: 3s, fault: pause, target: n1, for: 500ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	cmd, out := startUp(t, "--nodes", "3", "--duration", "8s", "--rate", "30000", "--keys", "2000", "--interval", "300ms", "--script", file, "--data", dir)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	c := &cluster{t: t, dir: dir}
	var verbs []string
	for _, e := range c.events() {
		if e.Kind == events.FaultStarted {
			verbs = append(verbs, e.Fields.(events.FaultStartedFields).Verb)
		}
	}
	if strings.Join(verbs, ",") != "kill,pause,heal" && strings.Join(verbs, ",") != "kill,pause" {
		t.Fatalf("faults started: %v, want kill then pause", verbs)
	}
	c.waitEvent(events.NodeLost, "")
	c.verifyOK()
}

// TestChaosRandomSoak: random kills, restarts, pauses, partitions, link
// faults, slow and damaged checkpoints and rescales, up to three close
// together, for three minutes; exactly-once must hold and every recovery
// must finish. (examples/soak.yaml is the 10-minute one.)
func TestChaosRandomSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process soak test")
	}
	code, out, dir := chaosRun(t, `name: random soak (CI)
cluster: {nodes: 5, rate: 30000, keys: 5000, duration: 3m, ft: spate, interval: 500ms, timeout: 2s}
schedule:
  - random: {seed: 7, mean: 8s, faults: [kill, restart, pause, partition, link, store, corrupt, scale], burst: 3, gap: 500ms, for: 2s, target: one, from: 5s, until: 170s}
checks: [exactly_once, all_recovered, {max_recovery: 10s}]
`)
	if code != 0 {
		t.Fatalf("chaos run: exit %d\n%s", code, out)
	}
	if r := readReport(t, dir); r.Verdict != "pass" || len(r.Faults) < 5 {
		t.Fatalf("report: verdict %s with %d faults", r.Verdict, len(r.Faults))
	}
}

// TestCompoundFaultsOnACheckpointChain: a sink's node killed, the newest
// checkpoint of what it hosted damaged before the restored generation
// took one of its own, and the node of the new owner killed again, under
// spate and under global (a rollback, a damaged global checkpoint, a second
// loss). The second restore falls back to a checkpoint older than the one
// the first restore used: before the output limits followed the restored
// checkpoint, the results between the two were counted twice (2,914 and
// 5,890 duplicated in one run each).
func TestCompoundFaultsOnACheckpointChain(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	for _, tc := range []struct{ ft, corrupt, second string }{
		{"spate", "sink#0", "sink#0"},
		{"global", "count#0", "rollup#1"},
	} {
		t.Run(tc.ft, func(t *testing.T) {
			code, out, dir := chaosRun(t, `name: compound faults on a checkpoint chain
cluster: {nodes: 4, rate: 30000, keys: 5000, duration: 12s, ft: `+tc.ft+`, interval: 1s}
schedule:
  - {at: 4s, fault: kill, target: sink#0}
  - {at: 4.15s, fault: store, target: `+tc.corrupt+`, corrupt: true}
  - {at: 4.3s, fault: kill, target: `+tc.second+`}
checks: [exactly_once, all_recovered]
`)
			if code != 0 {
				t.Fatalf("chaos run: exit %d\n%s", code, out)
			}
			if r := readReport(t, dir); r.Verdict != "pass" {
				t.Fatalf("report: verdict %s", r.Verdict)
			}
		})
	}
}
