package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spate/events"
)

// TestDashboardInARealTerminal runs `spate up` in a tmux pseudo-terminal:
// the dashboard shows the nodes, x kills the selected one, the screen shows
// it dead and the recovery done, and q drains the job and quits.
func TestDashboardInARealTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process terminal test")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	sock := fmt.Sprintf("spate-test-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Logf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if d := os.Getenv("KEEP"); d != "" {
		dir = d
	}
	cmd := fmt.Sprintf("%s up --duration 60s --rate 20000 --keys 2000 --interval 300ms --timeout 10s --data %s; echo spate-exited-$?; sleep 600", bin, dir)
	tmux("new-session", "-d", "-s", "t", "-x", "160", "-y", "48", cmd)
	t.Cleanup(func() { tmux("kill-server") })
	screen := func() string { return tmux("capture-pane", "-p", "-t", "t") }
	see := func(what string, cond func(string) bool) {
		t.Helper()
		waitFor(t, 60*time.Second, what, func() (bool, string) {
			s := screen()
			return cond(s), s
		})
	}
	see("the dashboard with four live nodes", func(s string) bool {
		return strings.Count(s, "alive") >= 4 && strings.Contains(s, "q quit")
	})
	c := &cluster{t: t, dir: dir}
	c.waitEvent(events.Checkpoint, "")
	tmux("send-keys", "-t", "t", "x") // the selected node: n1
	see("n1 dead", func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, "n1 ") && strings.Contains(line, "dead") {
				return true
			}
		}
		return false
	})
	c.waitEvent(events.RecoveryDone, "")
	tmux("send-keys", "-t", "t", "7") // the recovery pane: its timeline
	see("n1's recovery with its phases", func(s string) bool {
		return strings.Contains(s, "[7 recovery]") && strings.Contains(s, "timeline") && strings.Contains(s, "source#0")
	})
	tmux("send-keys", "-t", "t", "q")
	see("spate up exited 0 after q", func(s string) bool { return strings.Contains(s, "spate-exited-0") })
	mustVerify(t, dir, "after the dashboard's kill")
}
