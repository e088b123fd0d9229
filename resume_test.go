package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"spate/coord"
	"spate/events"
)

// The coordinator killed with SIGKILL and resumed by `spate up --resume`
// (issue 22, item 4): the nodes wait for it, rejoin, every instance is
// restored from its checkpoints, and the run verifies.

// startResumable starts a run whose coordinator a test kills.
func startResumable(t *testing.T, ft, duration string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"--ft", ft, "--nodes", "3", "--duration", duration, "--rate", "30000",
		"--interval", "300ms", "--keys", "2000", "--coord-timeout", "60s", "--data", dir}, extra...)
	cmd, _ := startUp(t, args...)
	return cmd, dir
}

// countEvents counts the events of kind in a run's log.
func countEvents(evs []events.Event, kind events.Kind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// killCoordinator kills cmd with SIGKILL and waits for it.
func killCoordinator(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// resume runs `spate up --resume dir` to its end.
func resume(t *testing.T, dir string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, "up", "--headless", "--resume", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err), out.String()
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the resumed coordinator did not finish within 3 minutes\n%s", out.String())
	}
	return 0, ""
}

// nodePids is the pid of every node process the run spawned.
func nodePids(evs []events.Event) map[string]int {
	pids := map[string]int{}
	for _, e := range evs {
		if e.Kind == events.NodeSpawned {
			if f, ok := e.Fields.(events.NodeSpawnedFields); ok {
				pids[e.Node] = f.PID
			}
		}
	}
	return pids
}

// alive reports whether pid is a running process (not gone, not a zombie).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func TestCoordinatorKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	for _, tc := range []struct {
		name, ft string
		when     events.Kind // what the kill waits for
		after    int         // how many of it
	}{
		{"spate mid-run", "spate", events.Checkpoint, 6},
		{"global mid-run", "global", events.Checkpoint, 3},
		{"spate during a recovery", "spate", events.RecoveryPlaced, 1},
		{"spate during a rescale", "spate", events.RescaleStaged, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, dir := startResumable(t, tc.ft, "8s")
			var victim int
			waitFor(t, 60*time.Second, fmt.Sprintf("%d %s events", tc.after, tc.when), func() (bool, string) {
				evs := runEvents(t, dir)
				if victim == 0 && countEvents(evs, events.Checkpoint) >= 6 {
					switch tc.when {
					case events.RecoveryPlaced:
						victim = nodePids(evs)["n2"] // a worker lost, and the coordinator while it recovers
						_ = syscall.Kill(victim, syscall.SIGKILL)
					case events.RescaleStaged:
						victim = -1 // count 2→4, and the coordinator lost while the new instances load
						if code, out, errOut := spate(t, "scale", "count", "4", "--data", dir); code != 0 {
							t.Fatalf("scale: exit %d: %s%s", code, out, errOut)
						}
					}
				}
				n := countEvents(evs, tc.when)
				return n >= tc.after, fmt.Sprintf("%d", n)
			})
			before := nodePids(runEvents(t, dir))
			killCoordinator(t, cmd)
			// The dead coordinator's run.json says when the job started:
			// the resumed run's duration and output lag count from it.
			ri, err := coord.ReadRunInfo(dir)
			if err != nil {
				t.Fatal(err)
			}
			if ri.JobStart == nil {
				t.Fatal("run.json of the killed coordinator has no job_started")
			}
			code, out := resume(t, dir)
			if code != 0 {
				t.Fatalf("resume: exit %d\n%s", code, out)
			}
			after, err := coord.ReadRunInfo(dir)
			if err != nil {
				t.Fatal(err)
			}
			if after.JobStart == nil || !after.JobStart.Equal(*ri.JobStart) {
				t.Errorf("the resumed run's job_started is %v, want the first start %v", after.JobStart, *ri.JobStart)
			}
			if len(after.Resumed) == 0 || !hasLagAfter(after, after.Resumed[len(after.Resumed)-1]) {
				t.Errorf("no output lag sampled after the resume at %v (%d samples)", after.Resumed, len(after.Lag))
			}
			evs := runEvents(t, dir)
			for i := 1; i < len(evs); i++ {
				if evs[i].Seq != evs[i-1].Seq+1 {
					t.Fatalf("events.jsonl: seq %d follows %d: the resumed coordinator's events do not continue the log", evs[i].Seq, evs[i-1].Seq)
				}
			}
			rejoined := 0
			for _, e := range evs {
				if f, ok := e.Fields.(events.NodeJoinedFields); ok && f.Rejoined {
					rejoined++
					if before[e.Node] != f.PID {
						t.Errorf("%s rejoined with pid %d, had %d: not the same process", e.Node, f.PID, before[e.Node])
					}
				}
			}
			if want := 3; tc.when == events.RecoveryPlaced {
				want = 2 // n2 was killed before the coordinator; it may have been respawned as n4 first
				if rejoined < want {
					t.Errorf("%d nodes rejoined, want at least %d\n%s", rejoined, want, out)
				}
			} else if rejoined != want {
				t.Errorf("%d nodes rejoined, want %d\n%s", rejoined, want, out)
			}
			if countEvents(evs, events.CoordResumed) < 2 {
				t.Errorf("no coord_resumed events\n%s", out)
			}
			mustVerify(t, dir, "after the resume")
			checkFile(t, dir, "run.json", "run.schema.json") // with its resumed times
			checkEvents(t, dir)                              // both coordinators' events, one log
			for name, pid := range before {
				if alive(pid) {
					t.Errorf("node %s (pid %d) still runs after the resumed run ended", name, pid)
				}
			}
		})
	}
}

// hasLagAfter reports whether ri has an output-lag sample taken after t.
func hasLagAfter(ri *coord.RunInfo, t time.Time) bool {
	for _, l := range ri.Lag {
		if ri.JobStart.Add(time.Duration(l[0]) * time.Millisecond).After(t) {
			return true
		}
	}
	return false
}

// The drain is under way when the coordinator dies: the resumed one
// restores the instances and drains them to the same end.
func TestCoordinatorKilledWhileDraining(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	// count slower than the input (400 µs a record, 5,000 records/s for
	// both instances, against 8,000 offered): the sources are held back,
	// and the drain, which reads every partition to its highest grant,
	// takes a second or more instead of milliseconds.
	cmd, dir := startResumable(t, "spate", "3s", "--cost", "count=400us", "--rate", "8000")
	waitFor(t, 60*time.Second, "the drain", func() (bool, string) {
		return findEvent(runEvents(t, dir), events.DrainStarted, "") != nil, "not yet"
	})
	killCoordinator(t, cmd)
	if findEvent(runEvents(t, dir), events.RunFinished, "") != nil {
		t.Fatal("the run finished before the kill: the drain was too fast for the test")
	}
	if code, out := resume(t, dir); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	mustVerify(t, dir, "after the resume of a drain")
}

// Nobody resumes: every node waits --coord-timeout, then exits.
func TestCoordinatorKilledAndNeverResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	cmd, dir := startResumable(t, "spate", "30s", "--coord-timeout", "2s")
	waitFor(t, 60*time.Second, "the job", func() (bool, string) {
		return countEvents(runEvents(t, dir), events.Checkpoint) >= 3, "no checkpoints yet"
	})
	pids := nodePids(runEvents(t, dir))
	killCoordinator(t, cmd)
	waitFor(t, 60*time.Second, "every node to exit", func() (bool, string) {
		var left []string
		for name, pid := range pids {
			if alive(pid) {
				left = append(left, name)
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})
	logs, _ := os.ReadFile(filepath.Join(dir, "logs", "n1.log"))
	if !strings.Contains(string(logs), "no coordinator within 2s") {
		t.Errorf("n1's log does not say why it stopped:\n%s", logs)
	}
}
