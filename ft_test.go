package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"spate/events"
)

// cluster is a running `spate up` seen through its run directory.
type cluster struct {
	t   *testing.T
	dir string
}

func (c *cluster) events() []events.Event { return runEvents(c.t, c.dir) }

// waitEvent waits for an event of kind (on node, if given) and returns it.
func (c *cluster) waitEvent(kind events.Kind, node string) *events.Event {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if e := findEvent(c.events(), kind, node); e != nil {
			return e
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.dump()
	c.t.Fatalf("timed out after 60s waiting for a %s event %s", kind, node)
	return nil
}

// dump logs the run's events, less the frequent ones: what a failed test saw.
func (c *cluster) dump() {
	for _, e := range c.events() {
		switch e.Kind {
		case events.InstancePlaced, events.WindowFired, events.Checkpoint, "trim":
		default:
			c.t.Log(e.Line())
		}
	}
}

// done is the set of instances that have reported instance_done.
func (c *cluster) done() map[string]bool {
	out := map[string]bool{}
	for _, e := range c.events() {
		if e.Kind == events.InstanceDone {
			out[e.Instance] = true
		}
	}
	return out
}

// waitRecoveryPlaced waits for the placements of inst's recovery.
func (c *cluster) waitRecoveryPlaced(inst string) []events.Event {
	c.t.Helper()
	var got []events.Event
	waitFor(c.t, 60*time.Second, "recovery of "+inst, func() (bool, string) {
		got = got[:0]
		for _, e := range c.events() {
			if e.Kind == events.RecoveryPlaced && e.Instance == inst {
				got = append(got, e)
			}
		}
		return len(got) > 0, "not placed yet"
	})
	return got
}

// pid returns the process id of node name.
func (c *cluster) pid(name string) int {
	c.t.Helper()
	e := c.waitEvent(events.NodeJoined, name)
	return e.Fields.(events.NodeJoinedFields).PID
}

// host returns the node an instance was first placed on.
func (c *cluster) host(inst string) string {
	c.t.Helper()
	var node string
	waitFor(c.t, 60*time.Second, "placement of "+inst, func() (bool, string) {
		for _, e := range c.events() {
			if e.Kind == events.InstancePlaced && e.Instance == inst {
				node = e.Node
				return true, ""
			}
		}
		return false, "not placed yet"
	})
	return node
}

func (c *cluster) signal(node string, sig syscall.Signal) {
	c.t.Helper()
	if err := syscall.Kill(c.pid(node), sig); err != nil {
		c.t.Fatalf("signal %v to %s: %v", sig, node, err)
	}
}

func (c *cluster) verifyOK() {
	c.t.Helper()
	code, out, errOut := spate(c.t, "verify", "--data", c.dir)
	if code != 0 {
		c.dump()
		c.t.Fatalf("verify: exit %d: %s%s", code, out, errOut)
	}
}

// startFT starts a run that outlives the faults of a test.
func startFT(t *testing.T, ft string, nodes int, extra ...string) (*cluster, func()) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"--ft", ft, "--nodes", fmt.Sprint(nodes), "--duration", "12s", "--rate", "30000",
		"--interval", "300ms", "--keys", "2000", "--data", dir}, extra...)
	cmd, out := startUp(t, args...)
	c := &cluster{t: t, dir: dir}
	wait := func() {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("up: %v\n%s", err, out)
			}
		case <-time.After(3 * time.Minute): // a drain that never ends
			c.dump()
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("up did not finish within 3 minutes of its end")
		}
	}
	return c, wait
}

func TestFaultToleranceUnderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	cases := []struct {
		name  string
		ft    string
		fault func(c *cluster)
	}{
		{"spate one killed", "spate", func(c *cluster) {
			c.signal(c.host("count#0"), syscall.SIGKILL)
		}},
		{"global one killed", "global", func(c *cluster) {
			c.signal(c.host("count#0"), syscall.SIGKILL)
		}},
		{"spate one killed, restored on the respawned node", "spate", func(c *cluster) {
			lost := c.host("count#0")
			c.signal(lost, syscall.SIGKILL)
			for _, e := range c.waitRecoveryPlaced("count#0") {
				if e.Node == "n1" || e.Node == "n2" || e.Node == "n3" || e.Node == "n4" {
					c.dump()
					c.t.Fatalf("with --recover-on respawned, count#0 was placed on %s, a node from the start", e.Node)
				}
			}
		}},
		{"spate two killed at once", "spate", func(c *cluster) {
			c.signal("n3", syscall.SIGKILL)
			c.signal("n4", syscall.SIGKILL)
		}},
		{"global two killed at once", "global", func(c *cluster) {
			c.signal("n3", syscall.SIGKILL)
			c.signal("n4", syscall.SIGKILL)
		}},
		{"global killed again during its rollback", "global", func(c *cluster) {
			c.signal(c.host("count#0"), syscall.SIGKILL)
			c.waitEvent(events.RecoveryPlaced, "")
			c.signal(c.host("sink#1"), syscall.SIGKILL)
		}},
		{"spate killed again during its recovery", "spate", func(c *cluster) {
			c.signal(c.host("count#0"), syscall.SIGKILL)
			e := c.waitEvent(events.RecoveryPlaced, "")
			c.signal(e.Node, syscall.SIGKILL)
		}},
		{"spate killed while draining, after the sources ended", "spate", func(c *cluster) {
			// count works off its backlog (100 µs a record) long after the
			// sources have ended their streams: its restore needs them to
			// replay to it and end their streams again.
			host := c.host("count#0")
			waitFor(c.t, 60*time.Second, "the sources to end", func() (bool, string) {
				done := c.done()
				return done["source#0"] && done["source#1"], fmt.Sprintf("done: %v", done)
			})
			if c.done()["count#0"] {
				c.t.Fatal("count#0 was done before the kill: nothing to test")
			}
			c.signal(host, syscall.SIGKILL)
		}},
		{"spate killed while checkpointing often", "spate", func(c *cluster) {
			// A 20ms interval: a checkpoint is almost always being written.
			c.signal(c.host("rollup#0"), syscall.SIGKILL)
		}},
		{"global killed while checkpointing often", "global", func(c *cluster) {
			c.signal(c.host("rollup#0"), syscall.SIGKILL)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var extra []string
			if strings.Contains(tc.name, "often") {
				extra = []string{"--interval", "20ms"}
			}
			if strings.Contains(tc.name, "respawned") {
				extra = []string{"--recover-on", "respawned"}
			}
			if strings.Contains(tc.name, "draining") {
				extra = []string{"--cost", "count=100us", "--duration", "5s"}
			}
			c, wait := startFT(t, tc.ft, 4, extra...)
			c.waitEvent(events.Checkpoint, "")
			tc.fault(c)
			c.waitEvent(events.RecoveryRestored, "")
			wait()
			c.verifyOK()
		})
	}
}

func TestPausedNodeIsFencedAsAZombie(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	for _, ft := range []string{"spate", "global"} {
		t.Run(ft, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			// A 2s detection timeout: the pause outlasts it.
			cmd := startRaw(t, "up", "--headless", "--ft", ft, "--nodes", "3", "--duration", "10s", "--rate", "30000",
				"--interval", "300ms", "--keys", "2000", "--timeout", "2s", "--data", dir)
			c := &cluster{t: t, dir: dir}
			victim := c.host("count#0")
			c.waitEvent(events.Checkpoint, "")
			c.signal(victim, syscall.SIGSTOP)
			c.waitEvent(events.NodeLost, victim)
			c.waitEvent(events.RecoveryRestored, "")
			c.signal(victim, syscall.SIGCONT) // the zombie wakes up
			if err := cmd.Wait(); err != nil {
				t.Fatalf("up: %v", err)
			}
			c.verifyOK()
		})
	}
}

func TestCorruptCheckpointFallsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	for _, tc := range []struct{ ft, how string }{
		{"spate", "corrupted"}, {"spate", "truncated"}, {"global", "corrupted"}, {"global", "truncated"},
	} {
		ft, how := tc.ft, tc.how
		t.Run(ft+"/"+how, func(t *testing.T) {
			c, wait := startFT(t, ft, 3)
			victim := c.host("count#0")
			waitFor(t, 60*time.Second, "two checkpoints of count#0", func() (bool, string) {
				m := c.readManifest()
				n := len(m.Instances["count#0"])
				if ft == "global" {
					n = int(m.Global) // complete global checkpoints
				}
				return n >= 2, fmt.Sprintf("%d", n)
			})
			// Freeze the node so that no checkpoint of count#0 completes
			// while we damage the latest one (under global: the one of the
			// latest complete global checkpoint, which the rollback loads).
			c.signal(victim, syscall.SIGSTOP)
			file := c.stableLatest("count#0")
			path := filepath.Join(c.dir, "checkpoints", file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if how == "corrupted" {
				b[len(b)/2] ^= 0xff
			} else {
				b = b[:len(b)/2]
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			c.signal(victim, syscall.SIGKILL)
			c.waitEvent("checkpoint_fallback", "")
			wait()
			c.verifyOK()
		})
	}
}

// stableLatest waits until the checkpoint manifest has at least two
// checkpoints of inst (so there is a fallback) and has stopped changing for
// a second, and returns the file of inst's latest complete checkpoint (with
// --ft global, its part of the latest complete global checkpoint).
func (c *cluster) stableLatest(inst string) string {
	c.t.Helper()
	var last, file string
	var since time.Time
	waitFor(c.t, 60*time.Second, "a stable manifest", func() (bool, string) {
		m := c.readManifest()
		cps := m.Instances[inst]
		if len(cps) < 2 {
			return false, "fewer than two checkpoints of " + inst
		}
		f := cps[len(cps)-1].File
		if m.Global > 0 {
			f = ""
			for _, cp := range cps {
				if cp.ID == m.Global {
					f = cp.File
				}
			}
		}
		if f == "" || f != last {
			last, since = f, time.Now()
			return false, "manifest changed"
		}
		file = last
		return time.Since(since) > time.Second, "changed " + time.Since(since).String() + " ago"
	})
	return file
}

// runManifest is what the tests read of checkpoints/MANIFEST.json.
type runManifest struct {
	Global    uint64
	Instances map[string][]struct {
		ID   uint64
		File string
	}
}

// readManifest reads the complete checkpoints of every instance.
func (c *cluster) readManifest() runManifest {
	var m runManifest
	b, err := os.ReadFile(filepath.Join(c.dir, "checkpoints", "MANIFEST.json"))
	if err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

// TestSourceLostBeforeItsFirstCheckpoint: a source restored without a
// checkpoint keeps its predecessor's pacing clock (so it catches up) and,
// at the drain, reads at least as far as its predecessor had got (so what
// the downstreams applied is inside the final positions).
func TestSourceLostBeforeItsFirstCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	c, wait := startFT(t, "spate", 3, "--interval", "60s", "--duration", "9s")
	victim := c.host("source#0")
	// Late in the run: a source restarted with a fresh clock would end the
	// run short of where its predecessor had got.
	waitFor(t, 60*time.Second, "5 seconds of the job", func() (bool, string) {
		n := 0
		for _, e := range c.events() {
			if e.Kind == events.Throughput {
				n++
			}
		}
		return n >= 5, fmt.Sprintf("%d throughput events", n)
	})
	c.signal(victim, syscall.SIGKILL)
	c.waitEvent(events.NodeLost, victim)
	waitFor(t, 60*time.Second, "source#0 to catch up", func() (bool, string) {
		for _, e := range c.events() {
			if e.Kind == events.RecoveryDone && e.Instance == "source#0" {
				return true, ""
			}
		}
		return false, "no recovery_done for source#0"
	})
	wait()
	c.verifyOK()
}

// TestRecoveryFromACompactedChain: the coordinator compacts long delta
// chains in the background; a recovery then restores from the compacted
// file, and the output is still exact.
func TestRecoveryFromACompactedChain(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	// Many keys and few dirty per interval: long delta chains.
	// A long run: the kill must find the job still running, even under -race.
	c, wait := startFT(t, "spate", 3, "--interval", "200ms", "--keys", "1000000", "--duration", "40s")
	victim := c.host("count#0")
	waitFor(t, 90*time.Second, "a compaction of count#0 and a checkpoint after it", func() (bool, string) {
		compacted := false
		for _, e := range c.events() {
			if e.Kind == events.CheckpointCompacted && e.Instance == "count#0" {
				compacted = true
			} else if compacted && e.Kind == events.Checkpoint && e.Instance == "count#0" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("compacted: %v", compacted)
	})
	c.signal(victim, syscall.SIGKILL)
	e := c.waitEvent(events.RecoveryPlaced, "")
	for _, ev := range c.events() {
		if ev.Kind == events.RecoveryPlaced && ev.Instance == "count#0" {
			e = &ev
		}
	}
	chain := e.Fields.(events.RecoveryPlacedFields).Chain
	if len(chain) == 0 || len(chain) >= 6 || !strings.HasSuffix(chain[0], "-full.ckpt") {
		t.Errorf("count#0 restored from %v: want a compacted full file and fewer than 6 files", chain)
	}
	c.waitEvent(events.RecoveryDone, "")
	wait()
	c.verifyOK()
}
