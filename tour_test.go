package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// TestTourComparisonSaysWhatItsTableShows runs the headless tour three
// times and reads its comparison step: both clusters checkpointed at
// the same interval (the table's first row, to the tenth of a second the
// second cluster's --interval is rounded to), the kills were aligned (the
// sentence that says so is there), and every sentence that compares the
// two ("Label: H here against T under --ft global: WORD, ...") quotes the
// row of the table it names and says the way its figures go: fewer, more
// or as many; shorter, longer or as long; lower, higher or as high.
// Each comparing row of the table has its sentence.
func TestTourComparisonSaysWhatItsTableShows(t *testing.T) {
	if testing.Short() {
		t.Skip("three tours of several processes each")
	}
	lesson, err := tour.Lesson()
	if err != nil {
		t.Fatal(err)
	}
	cmpStep := -1
	for i, st := range lesson.Steps {
		if st.Compare != nil {
			cmpStep = i
		}
	}
	if cmpStep < 0 {
		t.Fatal("the lesson has no comparison step")
	}
	head := fmt.Sprintf("Step %d of %d: ", cmpStep+1, len(lesson.Steps))
	next := fmt.Sprintf("Step %d of %d: ", cmpStep+2, len(lesson.Steps))
	for run := 1; run <= 3; run++ {
		dir := filepath.Join(t.TempDir(), "run")
		out, err := exec.Command("nice", "-n", "10", bin, "tour", "--headless", "--data", dir, "--wait", "60s").CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: spate tour --headless: %v\n%s", run, err, out)
		}
		text := string(out)
		a, b := strings.Index(text, head), strings.Index(text, next)
		if a < 0 || b < a {
			t.Fatalf("run %d: no comparison step in\n%s", run, text)
		}
		step := text[a:b]
		rows := tableRows(step)
		prose := strings.Join(strings.Fields(step), " ")
		t.Logf("run %d:\n%s", run, step)
		if !strings.Contains(prose, "Both clusters checkpoint every") {
			t.Errorf("run %d: the kills were not aligned:\n%s", run, step)
		}
		iv, ok := rows["checkpoint interval"]
		if !ok {
			t.Fatalf("run %d: no checkpoint interval row in\n%s", run, step)
		}
		if h, c := parseFigure(t, iv[0]), parseFigure(t, iv[1]); math.Abs(h-c) > 0.06 {
			t.Errorf("run %d: the clusters checkpoint at %s and %s", run, iv[0], iv[1])
		}
		claimed := map[string]bool{}
		for _, m := range claimRe.FindAllStringSubmatch(prose, -1) {
			label, h, c, word := strings.ToLower(m[1]), m[2], m[3], m[4]
			row, ok := rows[label]
			if !ok {
				t.Errorf("run %d: the sentence %q names no row of the table %v", run, m[0], rows)
				continue
			}
			claimed[label] = true
			if h != row[0] || c != row[1] {
				t.Errorf("run %d: %q quotes %s and %s, the table %s and %s", run, m[0], h, c, row[0], row[1])
				continue
			}
			hv, cv := parseFigure(t, h), parseFigure(t, c)
			var agrees bool
			switch word {
			case "fewer", "shorter", "lower":
				agrees = hv < cv
			case "more", "longer", "higher":
				agrees = hv > cv
			case "as many", "as long", "as high":
				agrees = h == c
			case "about as long":
				agrees = math.Abs(hv-cv) <= 0.3*max(hv, cv)
			}
			if !agrees {
				t.Errorf("run %d: %q says %s of %s against %s", run, m[0], word, h, c)
			}
		}
		for _, label := range []string{"state lost since the checkpoint", "instances restarted", "records sent or read again", "loss to restored", "highest output lag"} {
			if r, ok := rows[label]; ok && r[0] != "-" && r[1] != "-" && !claimed[label] {
				t.Errorf("run %d: no sentence compares the row %q (%s, %s):\n%s", run, label, r[0], r[1], step)
			}
		}
		mustVerify(t, dir, fmt.Sprintf("run %d", run))
	}
}

// claimRe is a sentence of the tour's comparison (tour/claims.go).
var claimRe = regexp.MustCompile(`([A-Z][a-z' #0-9]+): (\S+(?: of \d+| [nµm]?s)?) here against (\S+(?: of \d+| [nµm]?s)?) under --ft \w+: (about as long|as many|as long|as high|fewer|more|shorter|longer|lower|higher)\b`)

// tableRows are the rows of the headless comparison's table: the label,
// lower case, and its two cells (columns are two spaces or more apart).
func tableRows(step string) map[string][2]string {
	rows := map[string][2]string{}
	sep := regexp.MustCompile(`\s{2,}`)
	for _, line := range strings.Split(step, "\n") {
		cells := sep.Split(strings.TrimSpace(line), -1)
		if len(cells) == 3 {
			rows[strings.ToLower(cells[0])] = [2]string{cells[1], cells[2]}
		}
	}
	return rows
}

// parseFigure reads a figure as internal/human prints it: "2 of 8" (2),
// "49.1k", "12 ms" or "2.7 s" (in seconds), "3m05s".
func parseFigure(t *testing.T, s string) float64 {
	t.Helper()
	s, _, _ = strings.Cut(s, " of ")
	if d, err := time.ParseDuration(strings.ReplaceAll(s, " ", "")); err == nil {
		return d.Seconds()
	}
	mult := 1.0
	for suf, m := range map[string]float64{"k": 1e3, "M": 1e6, "G": 1e9} {
		if v, ok := strings.CutSuffix(s, suf); ok {
			s, mult = v, m
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("a figure %q that is no number", s)
	}
	return v * mult
}
