package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spate/tour"
)

// TestTourInARealTerminal runs `spate tour` in a tmux pseudo-terminal and
// steps through it with n: each step's title and its first words show
// beside the dashboard; after q the job drains, the tour says the output
// verified, and so does spate verify.
func TestTourInARealTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process terminal test")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	lesson, err := tour.Lesson()
	if err != nil {
		t.Fatal(err)
	}
	sock := fmt.Sprintf("spate-tour-test-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Logf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd := fmt.Sprintf("%s tour --data %s; echo tour-exited-$?; sleep 600", bin, dir)
	tmux("new-session", "-d", "-s", "t", "-x", "160", "-y", "48", cmd)
	t.Cleanup(func() { tmux("kill-server") })
	screen := func() string { return tmux("capture-pane", "-p", "-t", "t") }
	for i, st := range lesson.Steps {
		if i > 0 {
			tmux("send-keys", "-t", "t", "n")
		}
		head := fmt.Sprintf("step %d of %d: ", i+1, len(lesson.Steps))
		// The first words of the step's text, as the side pane wraps them.
		words := strings.Fields(st.Text[0])
		first := strings.Join(words[:min(3, len(words))], " ")
		waitFor(t, 90*time.Second, head+st.Title, func() (bool, string) {
			s := screen()
			return strings.Contains(s, head) && strings.Contains(s, first) && !strings.Contains(s, "… waiting for"), s
		})
		if st.Compare != nil {
			// The comparison's table, its figures in.
			if s := screen(); !strings.Contains(s, "instances restarted") || strings.Contains(s, "{cmp_") {
				t.Errorf("step %d shows no comparison:\n%s", i+1, s)
			}
		}
	}
	tmux("send-keys", "-t", "t", "q")
	waitFor(t, 90*time.Second, "the tour exits 0 after q, its run verified", func() (bool, string) {
		s := screen()
		return strings.Contains(s, "tour-exited-0") && strings.Contains(s, "0 missing, 0 duplicated, 0 wrong"), s
	})
	mustVerify(t, dir, "after the tour")
	mustVerify(t, comparisonDir(t, dir), "the tour's comparison")
}

// TestTourHeadless: spate tour --headless prints every step of the lesson
// with its live figures filled in, and its run verifies.
func TestTourHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	lesson, err := tour.Lesson()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	out, err := exec.Command(bin, "tour", "--headless", "--data", dir, "--wait", "60s").CombinedOutput()
	if err != nil {
		t.Fatalf("spate tour --headless: %v\n%s", err, out)
	}
	text := string(out)
	for i, st := range lesson.Steps {
		if want := fmt.Sprintf("Step %d of %d: %s", i+1, len(lesson.Steps), st.Title); !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	for _, bad := range []string{"{", "refused", "(no "} {
		if strings.Contains(text, bad) {
			t.Errorf("the lesson has %q (a figure not filled, a refused action or a step that waited in vain):\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "0 missing, 0 duplicated, 0 wrong") {
		t.Errorf("the tour's run did not verify:\n%s", text)
	}
	// The comparison, side by side: every instance restarted under
	// --ft global, fewer under --ft spate.
	var spateN, globalN, all, all2 int
	found := false
	for _, line := range strings.Split(text, "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "instances restarted %d of %d %d of %d", &spateN, &all, &globalN, &all2); err == nil {
			found = true
		}
	}
	if !found || spateN >= all || globalN != all2 || all != all2 {
		t.Errorf("the comparison's table: %d of %d restarted here, %d of %d under --ft global:\n%s", spateN, all, globalN, all2, text)
	}
	mustVerify(t, dir, "after the headless tour")
	mustVerify(t, comparisonDir(t, dir), "the tour's comparison")
}

// comparisonDir is the run directory of the tour's comparison beside dir
// (DIR-ft-global-interval-1s: the flags it ran with).
func comparisonDir(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(dir + "-ft-global*")
	if err != nil || len(m) != 1 {
		t.Fatalf("the comparison's run directory: %v %v", m, err)
	}
	return m[0]
}
