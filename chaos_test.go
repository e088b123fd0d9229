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

	if code, _, errOut := spate(t, "chaos", "frobnicate", "n1", "--data", c.dir); code != 1 || !strings.Contains(errOut, "not a verb") {
		t.Fatalf("unknown verb: exit %d: %s", code, errOut)
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
