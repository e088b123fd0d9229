package main

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"spate/events"
)

// waitCount waits for the n-th event of kind and returns it.
func (c *cluster) waitCount(kind events.Kind, n int) *events.Event {
	c.t.Helper()
	var got *events.Event
	waitFor(c.t, 90*time.Second, fmt.Sprintf("%d %s events", n, kind), func() (bool, string) {
		k := 0
		for _, e := range c.events() {
			if e.Kind == kind {
				k++
				if k == n {
					got = &e
					return true, ""
				}
			}
		}
		if e := findEvent(c.events(), events.Error, ""); e != nil {
			return false, fmt.Sprintf("%d so far; an error: %s", k, e.Text)
		}
		return false, fmt.Sprintf("%d so far", k)
	})
	return got
}

// scale runs `spate scale OP N` on the cluster.
func (c *cluster) scale(op string, n int) {
	c.t.Helper()
	code, out, errOut := spate(c.t, "scale", op, fmt.Sprint(n), "--data", c.dir)
	if code != 0 {
		c.dump()
		c.t.Fatalf("spate scale %s %d: exit %d: %s%s", op, n, code, out, errOut)
	}
}

// keyGroups reads `spate status --json`: instance → key groups.
func (c *cluster) keyGroups() map[string][]int {
	c.t.Helper()
	code, out, errOut := spate(c.t, "status", "--json", "--data", c.dir)
	if code != 0 {
		c.t.Fatalf("status: exit %d: %s%s", code, out, errOut)
	}
	var st struct {
		Instances []struct {
			ID        string `json:"id"`
			Op        string `json:"op"`
			Node      string `json:"node"`
			KeyGroups []int  `json:"key_groups"`
		} `json:"instances"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("status --json: %v\n%s", err, out)
	}
	m := map[string][]int{}
	for _, in := range st.Instances {
		m[in.ID] = in.KeyGroups
	}
	return m
}

// checkOwners fails unless op's instances own 0..127 exactly once, with
// want instances owning some.
func (c *cluster) checkOwners(op string, want int) {
	c.t.Helper()
	kgs := c.keyGroups()
	seen := map[int]string{}
	owners := 0
	for i := 0; i < 16; i++ {
		id := fmt.Sprintf("%s#%d", op, i)
		if len(kgs[id]) > 0 {
			owners++
		}
		for _, g := range kgs[id] {
			if o, dup := seen[g]; dup {
				c.t.Fatalf("key group %d owned by %s and %s", g, o, id)
			}
			seen[g] = id
		}
	}
	if len(seen) != 128 || owners != want {
		c.t.Fatalf("%s: %d key groups owned by %d instances, want 128 by %d: %v", op, len(seen), owners, want, kgs)
	}
}

func TestScaleOutAndInUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rescale test")
	}
	c, wait := startFT(t, "spate", 4, "--duration", "16s")
	c.waitEvent(events.Checkpoint, "")
	c.scale("count", 4)
	done := c.waitCount("rescale_done", 1)
	t.Logf("scale-out: %s", done.Text)
	c.checkOwners("count", 4)
	c.scale("count", 2)
	done = c.waitCount("rescale_done", 2)
	t.Logf("scale-in: %s", done.Text)
	c.checkOwners("count", 2)
	c.scale("rollup", 3)
	done = c.waitCount("rescale_done", 3)
	t.Logf("rollup scale-out: %s", done.Text)
	c.checkOwners("rollup", 3)
	wait()
	c.verifyOK()
}

func TestScaleNewOwnerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rescale test")
	}
	c, wait := startFT(t, "spate", 4, "--duration", "14s")
	c.waitEvent(events.Checkpoint, "")
	c.scale("count", 4)
	moved := c.waitCount("rescale_moved", 1)
	c.signal(moved.Node, syscall.SIGKILL) // the new owner, right after it loaded its slice
	c.waitEvent(events.RecoveryRestored, "")
	c.waitCount("rescale_done", 1)
	c.checkOwners("count", 4)
	wait()
	c.verifyOK()
}

func TestScaleOldOwnerKilledDuringTheMove(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rescale test")
	}
	c, wait := startFT(t, "spate", 4, "--duration", "14s")
	c.waitEvent(events.Checkpoint, "")
	old := c.host("count#1")
	c.scale("count", 4)
	c.signal(old, syscall.SIGKILL) // before, during or just after its release
	c.waitEvent(events.RecoveryRestored, "")
	c.waitCount("rescale_done", 1)
	c.checkOwners("count", 4)
	wait()
	c.verifyOK()
}

func TestScaleByRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rescale test")
	}
	c, wait := startFT(t, "spate", 4, "--duration", "16s", "--rescale", "restart")
	c.waitEvent(events.Checkpoint, "")
	c.scale("count", 4)
	done := c.waitCount("rescale_done", 1)
	t.Logf("restart 2→4: %s", done.Text)
	c.checkOwners("count", 4)
	c.scale("count", 2)
	done = c.waitCount("rescale_done", 2)
	t.Logf("restart 4→2: %s", done.Text)
	c.checkOwners("count", 2)
	wait()
	c.verifyOK()
}

// TestAutoscaleFollowsTheLoad: under a light load the auto-scaler takes
// count (and rollup) in, by events that give their inputs and reasons,
// through the live rescale path; the output stays exact.
func TestAutoscaleFollowsTheLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rescale test")
	}
	c, wait := startFT(t, "spate", 4, "--duration", "14s", "--autoscale", "--parallelism", "count=3")
	e := c.waitEvent("autoscale", "")
	for _, k := range []string{"op", "from", "to", "reason", "true_rate", "input_rate", "backlog"} {
		if _, ok := e.Fields[k]; !ok {
			t.Fatalf("autoscale event without %s: %v", k, e.Fields)
		}
	}
	done := c.waitCount("rescale_done", 1)
	t.Logf("%s; %s", e.Text, done.Text)
	wait()
	c.verifyOK()
}
