package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"spate/control"
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
	scaledIn := done.Seq
	c.scale("rollup", 3)
	done = c.waitCount("rescale_done", 3)
	t.Logf("rollup scale-out: %s", done.Text)
	c.checkOwners("rollup", 3)
	wait()
	// The retired count#2 and count#3 checkpoint once they own nothing
	// (one may still be in flight at the scale-in), then never again.
	for _, id := range []string{"count#2", "count#3"} {
		n := 0
		for _, e := range c.events() {
			if e.Kind == events.Checkpoint && e.Instance == id && e.Seq > scaledIn {
				n++
			}
		}
		if n > 2 {
			t.Errorf("retired %s completed %d checkpoints after the scale-in; want at most 2", id, n)
		}
	}
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
	e := c.waitEvent(events.Autoscale, "")
	if f := e.Fields.(events.AutoscaleFields); f.Op != "count" || f.From < 1 || f.To < 1 || f.Reason == "" {
		t.Fatalf("autoscale event without its operator, parallelism or reason: %+v", f)
	}
	done := c.waitCount(events.RescaleDone, 1)
	t.Logf("%s; %s", e.Text, done.Text)
	wait()
	c.verifyOK()
}

// status reads `spate status --json`.
func (c *cluster) status() control.Status {
	c.t.Helper()
	code, out, errOut := spate(c.t, "status", "--json", "--data", c.dir)
	if code != 0 {
		c.t.Fatalf("status: exit %d: %s%s", code, out, errOut)
	}
	var st control.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

// nodeOf is the node hosting inst now.
func (c *cluster) nodeOf(inst string) string {
	c.t.Helper()
	for _, in := range c.status().Instances {
		if in.ID == inst {
			return in.Node
		}
	}
	c.t.Fatalf("status: no instance %s", inst)
	return ""
}

// chaos runs `spate chaos ARGS` on the cluster and returns its output.
func (c *cluster) chaos(args ...string) string {
	c.t.Helper()
	code, out, errOut := spate(c.t, append(append([]string{"chaos"}, args...), "--data", c.dir)...)
	if code != 0 {
		c.dump()
		c.t.Fatalf("spate chaos %v: exit %d: %s%s", args, code, out, errOut)
	}
	return out
}

// scaleWhenFree runs `spate scale OP N`, again while the coordinator
// refuses it because a recovery or a rescale is in flight.
func (c *cluster) scaleWhenFree(op string, n int) {
	c.t.Helper()
	waitFor(c.t, 90*time.Second, fmt.Sprintf("scale %s %d to be accepted", op, n), func() (bool, string) {
		code, out, errOut := spate(c.t, "scale", op, fmt.Sprint(n), "--data", c.dir)
		if code == 0 {
			return true, ""
		}
		if !strings.Contains(errOut, "in flight") {
			c.dump()
			c.t.Fatalf("spate scale %s %d: exit %d: %s%s", op, n, code, out, errOut)
		}
		return false, strings.TrimSpace(errOut)
	})
}

// seqOf is the sequence number of the first event of kind on node (any
// node if ""), or 0.
func (c *cluster) seqOf(kind events.Kind, node string) uint64 {
	if e := findEvent(c.events(), kind, node); e != nil {
		return e.Seq
	}
	return 0
}

// movesOf reads a rescale_planned event's moves ("[lo,hi) A→B"): the
// instances that give key groups away and those that receive them.
func movesOf(t *testing.T, e *events.Event) (from, to []string) {
	t.Helper()
	for _, s := range e.Fields.(events.RescalePlannedFields).Moves {
		_, ab, ok1 := strings.Cut(s, " ")
		a, b, ok2 := strings.Cut(ab, "→")
		if !ok1 || !ok2 {
			t.Fatalf("rescale_planned: move %q is not \"RANGE A→B\"", s)
		}
		from, to = append(from, a), append(to, b)
	}
	if len(from) == 0 {
		t.Fatalf("rescale_planned without moves: %v", e.Fields)
	}
	return from, to
}

// TestScaleWorkerKilledInFlight: count scales in 3→2 and, between
// rescale_planned and rescale_done, a worker is killed: the one hosting a
// count instance that gives nothing away (a receiver of the move), or the
// one hosting an old owner, before its capture is durable. A slow
// checkpoint store (every write takes 2.5 s) keeps the captures in flight
// long enough for the kill, driven by the rescale_planned event, to land
// before them; the test checks that it did.
func TestScaleWorkerKilledInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rescale test")
	}
	for _, tc := range []struct {
		name   string
		moving bool
	}{{"receiver", false}, {"old owner", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c, wait := startFT(t, "spate", 4, "--duration", "18s", "--parallelism", "count=3")
			c.waitEvent(events.Checkpoint, "")
			c.chaos("store", "all", "slow=2500ms")
			c.scale("count", 2)
			planned := c.waitCount("rescale_planned", 1)
			from, _ := movesOf(t, planned)
			st := c.status()
			hosts := map[string]string{}
			for _, in := range st.Instances {
				hosts[in.ID] = in.Node
			}
			victim := from[0]
			if !tc.moving {
				victim = ""
				for i := 0; i < 3 && victim == ""; i++ {
					id := fmt.Sprintf("count#%d", i)
					if slices.Contains(from, id) {
						continue
					}
					victim = id
					for _, f := range from {
						if hosts[f] == hosts[id] {
							victim = "" // its node hosts a moving one too
						}
					}
				}
				if victim == "" {
					t.Fatalf("every count instance moves or shares a node with one that does: moves %v, hosts %v", from, hosts)
				}
			}
			node := hosts[victim]
			t.Logf("%s; killing %s (%s)", planned.Text, node, victim)
			c.chaos("kill", victim)
			c.waitEvent(events.NodeLost, node)
			c.waitEvent(events.RecoveryRestored, "")
			c.chaos("heal") // checkpoints at full speed again
			done := c.waitCount("rescale_done", 1)
			lost := c.seqOf(events.NodeLost, node)
			if !(planned.Seq < lost && lost < done.Seq) {
				t.Fatalf("%s was lost at event %d, not between rescale_planned (%d) and rescale_done (%d)", node, lost, planned.Seq, done.Seq)
			}
			for _, e := range c.events() {
				if e.Kind == "rescale_captured" && e.Seq < lost && (!tc.moving || e.Instance == victim) {
					t.Fatalf("%s was lost at event %d, after the capture %q", node, lost, e.Text)
				}
			}
			t.Logf("%s", done.Text)
			c.checkOwners("count", 2)
			wait()
			c.verifyOK()
		})
	}
}

// TestScaleWhileAWorkerIsPaused: a rescale asked for while a worker is
// paused (SIGSTOP through the control API) waits for it: no slice is
// captured while the node is stopped and still counted alive. Resumed
// within the detection timeout, the node answers and the rescale
// completes; paused past it, the node is lost, its instances are
// recovered, the rescale completes without it, and the zombie it becomes
// on resume is fenced off.
func TestScaleWhileAWorkerIsPaused(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rescale test")
	}
	c, wait := startFT(t, "spate", 4, "--duration", "24s", "--timeout", "3s")
	c.waitEvent(events.Checkpoint, "")

	// Resumed in time.
	victim := c.nodeOf("count#1")
	c.chaos("pause", victim)
	c.scale("count", 4)
	c.waitCount("rescale_planned", 1)
	c.chaos("resume", victim)
	done := c.waitCount("rescale_done", 1)
	free := c.seqOf(events.FaultEnded, "")
	if lost := c.seqOf(events.NodeLost, victim); lost != 0 && lost < free {
		free = lost
	}
	for _, e := range c.events() {
		if e.Kind == "rescale_captured" && e.Seq < free {
			t.Fatalf("a slice was captured while %s was paused: %s", victim, e.Text)
		}
	}
	t.Logf("paused %s, resumed: %s", victim, done.Text)
	c.checkOwners("count", 4)

	// Paused past the detection timeout.
	zombie := c.nodeOf("count#0")
	c.chaos("pause", zombie)
	c.scale("count", 2)
	c.waitEvent(events.NodeLost, zombie)
	done = c.waitCount("rescale_done", 2)
	c.chaos("resume", zombie) // it wakes up fenced
	t.Logf("paused %s past the timeout: %s", zombie, done.Text)
	c.checkOwners("count", 2)
	wait()
	c.verifyOK()
}

// TestScaleAlternatingWithKills: for a minute at least, count rescales
// 2→4→3→2→4… and between the rescales the node of a random count instance
// is killed (and respawned): every other kill right after the rescale is
// planned (in flight), the others after it is done. A rescale asked for
// while a recovery is in flight is refused and asked again. Then Ctrl-C
// drains the run, and the output must be exact.
func TestScaleAlternatingWithKills(t *testing.T) {
	if testing.Short() {
		t.Skip("long multi-process rescale test")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out := startUp(t, "--ft", "spate", "--nodes", "4", "--duration", "0", "--rate", "20000",
		"--interval", "300ms", "--keys", "2000", "--data", dir)
	c := &cluster{t: t, dir: dir}
	c.waitEvent(events.Checkpoint, "")
	start := time.Now()
	kills := 0
	kill := func() string {
		kills++
		var owners []string
		for _, in := range c.status().Instances {
			if in.Op == "count" && len(in.KeyGroups) > 0 {
				owners = append(owners, in.ID)
			}
		}
		victim := owners[rng.IntN(len(owners))]
		return victim + ": " + strings.TrimSpace(c.chaos("kill", victim))
	}
	sizes := []int{4, 3, 2}
	rescales, inFlight := 0, 0
	// The coordinator respawns at most 32 nodes in a run (more looks like
	// a crash loop): at most 24 kills, and after each rescale and kill the
	// job runs on for two throughput reports (about 2 s).
	for (time.Since(start) < time.Minute || rescales < 6) && kills < 24 {
		n := sizes[rescales%len(sizes)]
		c.scaleWhenFree("count", n)
		rescales++
		planned := c.waitCount("rescale_planned", rescales)
		what := ""
		if rescales%2 == 1 {
			what = kill()
		}
		done := c.waitCount("rescale_done", rescales)
		if rescales%2 == 1 {
			if lost := c.lostAfter(planned.Seq); lost != 0 && lost < done.Seq {
				inFlight++
				what += " (in flight)"
			}
		} else {
			what = kill()
		}
		t.Logf("rescale %d to %d: %s; killed %s", rescales, n, done.Text, what)
		c.waitAfter(events.Throughput, c.lastSeq(), 2)
	}
	// One more, once no recovery is left in flight.
	n := sizes[rescales%len(sizes)]
	c.scaleWhenFree("count", n)
	c.waitCount("rescale_done", rescales+1)
	c.checkOwners("count", n)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		c.dump()
		t.Fatalf("up after Ctrl-C: %v\n%s", err, tail(out))
	}
	t.Logf("%d rescales, %d kills, %d of them while a rescale was in flight, in %v", rescales+1, kills, inFlight, time.Since(start).Round(time.Second))
	c.verifyOK()
}

// lostAfter is the sequence number of the first node_lost event after
// event seq, or 0.
func (c *cluster) lostAfter(seq uint64) uint64 {
	for _, e := range c.events() {
		if e.Kind == events.NodeLost && e.Seq > seq {
			return e.Seq
		}
	}
	return 0
}

// tail is the end of a process's output, for a failure message.
func tail(b *bytes.Buffer) string {
	s := b.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

// TestAutoscaleFollowsALoadStep: count starts with one instance made
// heavy by a simulated cost (50µs a record, asleep: about 20k records/s
// per instance, without taking the machine's CPU), under a rate trace
// that steps from 2k/s up to 24k/s for 14 s and back down. The auto-scaler
// must scale count out when the load steps up, and in again once it has
// stepped down; then Ctrl-C drains the run and the output must be exact.
func TestAutoscaleFollowsALoadStep(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process rescale test")
	}
	var trace strings.Builder
	for s := 0; s < 120; s++ {
		n := 2000
		if s >= 4 && s < 18 {
			n = 24000
		}
		fmt.Fprintln(&trace, n)
	}
	file := filepath.Join(t.TempDir(), "step.txt")
	if err := os.WriteFile(file, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out := startUp(t, "--ft", "spate", "--nodes", "4", "--source", "rate:"+file, "--interval", "300ms",
		"--keys", "2000", "--autoscale", "--parallelism", "count=1,rollup=1", "--cost", "count=50us", "--data", dir)
	c := &cluster{t: t, dir: dir}
	// waitScaled waits for a rescale of count done in the direction
	// given, after event seq; it returns the event.
	waitScaled := func(up bool, after uint64) *events.Event {
		t.Helper()
		var got *events.Event
		waitFor(t, 90*time.Second, fmt.Sprintf("count scaled (up: %v) after event %d", up, after), func() (bool, string) {
			var seen []string
			for _, e := range c.events() {
				if f, ok := e.Fields.(events.AutoscaleFields); ok && f.Op == "count" && e.Seq > after {
					seen = append(seen, e.Text)
				}
				f, ok := e.Fields.(events.RescaleDoneFields)
				if !ok || f.Op != "count" || e.Seq <= after {
					continue
				}
				if (f.To > f.From) == up {
					got = &e
					return true, ""
				}
			}
			if len(seen) > 3 {
				seen = seen[len(seen)-3:]
			}
			return false, strings.Join(seen, "; ")
		})
		return got
	}
	upDone := waitScaled(true, 0)
	downDone := waitScaled(false, upDone.Seq)
	for _, e := range c.events() {
		if f, ok := e.Fields.(events.RescalePlannedFields); ok && f.Op == "count" && e.Seq < downDone.Seq {
			if !strings.HasPrefix(f.Why, "autoscale") {
				t.Fatalf("a rescale not of the auto-scaler: %s", e.Text)
			}
			t.Logf("%s", e.Text)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		c.dump()
		t.Fatalf("up after Ctrl-C: %v\n%s", err, tail(out))
	}
	t.Logf("up: %s; down: %s", upDone.Text, downDone.Text)
	c.verifyOK()
}

// lastSeq is the sequence number of the last event so far.
func (c *cluster) lastSeq() uint64 {
	evs := c.events()
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// waitAfter waits for n events of kind after event seq.
func (c *cluster) waitAfter(kind events.Kind, seq uint64, n int) {
	c.t.Helper()
	waitFor(c.t, 90*time.Second, fmt.Sprintf("%d %s events after event %d", n, kind, seq), func() (bool, string) {
		k := 0
		for _, e := range c.events() {
			if e.Kind == kind && e.Seq > seq {
				k++
			}
		}
		return k >= n, fmt.Sprintf("%d so far", k)
	})
}
