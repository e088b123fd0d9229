package tui

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// simRun copies testdata/simrun/seed-7 (a spate sim run, trimmed) into a
// temporary directory, so that its forks land there, and opens it in the
// view at event pos.
func simRun(t *testing.T, pos int) (*model, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "seed-7")
	copyRun(t, filepath.Join("testdata", "simrun", "seed-7"), dir)
	rec, err := openRecording(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.close)
	m, err := newViewModel(rec, ViewOptions{Plain: true, RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.seek(pos)
	return m, dir
}

func copyRun(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func faults(items []forkItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Fault)
	}
	return out
}

func TestForkMenuItems(t *testing.T) {
	m, _ := simRun(t, 100)
	got := faults(forkItems(m.s))
	var want []string
	for _, verb := range []string{"kill", "restart"} {
		for _, in := range []string{"source#0", "source#1", "count#0", "count#1", "rollup#0", "rollup#1", "sink#0", "sink#1"} {
			want = append(want, verb+" "+in)
		}
	}
	want = append(want, "partition n1", "partition n2", "partition n3", "partition n4", "scale count 3", "scale rollup 3")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("menu:\n got %q\nwant %q", got, want)
	}
}

func TestForkArgs(t *testing.T) {
	m, dir := simRun(t, 100)
	at, ok := m.jobTime()
	if !ok {
		t.Fatal("jobTime: the job has not started at event 100")
	}
	got := forkArgs(filepath.Join(dir, "schedule.yaml"), at, "kill count#1", forkDir(dir))
	want := []string{"sim", "--schedule", filepath.Join(dir, "schedule.yaml"), "--fork-at", "2s", "--add", "kill count#1",
		"--data", dir + "-fork-1", "--quiet"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args:\n got %q\nwant %q", got, want)
	}
	if err := os.Mkdir(dir+"-fork-1", 0o755); err != nil {
		t.Fatal(err)
	}
	if d := forkDir(dir); d != dir+"-fork-2" {
		t.Errorf("forkDir with -fork-1 taken = %q, want %q", d, dir+"-fork-2")
	}
}

func TestForkNeedsASchedule(t *testing.T) {
	m, dir := simRun(t, 100)
	if err := os.Remove(filepath.Join(dir, "schedule.yaml")); err != nil {
		t.Fatal(err)
	}
	m.fork = newForker(dir)
	m.Update(keyMsg("w"))
	if m.mode != modeNormal || m.flash != errNoSchedule {
		t.Errorf("w without schedule.yaml: mode %v, flash %q; want the normal mode and %q", m.mode, m.flash, errNoSchedule)
	}
}

// TestForkOfAFork: a forked run's schedule has the fork step, whose
// fault a new fork's fork.txt would replace: w says so.
func TestForkOfAFork(t *testing.T) {
	m, dir := simRun(t, 100)
	p := filepath.Join(dir, "schedule.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(b, "  - {at: 2s, fault: fork}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	m.fork = newForker(dir)
	m.Update(keyMsg("w"))
	if m.mode != modeNormal || m.flash != errForked {
		t.Errorf("w over a fork: mode %v, flash %q; want %q", m.mode, m.flash, errForked)
	}
}

// TestForkHelp: the help screen of a recording has w.
func TestForkHelp(t *testing.T) {
	m, _ := simRun(t, 100)
	m.keys.recording = true
	if help := strings.Join(m.keys.helpText(m.st), "\n"); !strings.Contains(help, "what if: fork a simulated run") {
		t.Errorf("the help screen does not have w:\n%s", help)
	}
}

func TestForkBeforeTheJob(t *testing.T) {
	m, _ := simRun(t, 5)
	m.Update(keyMsg("w"))
	if m.mode != modeNormal || !strings.Contains(m.flash, "not started") {
		t.Errorf("w before job_started: mode %v, flash %q", m.mode, m.flash)
	}
	m.seek(100)
	m.Update(keyMsg("w"))
	if m.mode != modeFork {
		t.Errorf("w after job_started (having asked before it): mode %v, flash %q; want the menu", m.mode, m.flash)
	}
}

// TestForkStates: w opens the menu, esc closes it, enter runs the child
// (a fake) as a command, and its end opens the forked run with the
// child's output over it.
func TestForkStates(t *testing.T) {
	m, dir := simRun(t, 100)
	var ran []string
	m.fork.run = func(ctx context.Context, args []string) ([]byte, error) {
		ran = args
		out := args[len(args)-2]
		copyRun(t, filepath.Join("testdata", "simrun", "seed-7"), filepath.Join(out, "fork"))
		return []byte("base          fork\nok            ok\n"), nil
	}
	m.Update(keyMsg("w"))
	if m.mode != modeFork || len(m.fork.items) == 0 {
		t.Fatalf("after w: mode %v, %d items; want the menu", m.mode, len(m.fork.items))
	}
	if !strings.Contains(strings.Join(m.body(120, 30), "\n"), "fork the run at 2s") {
		t.Errorf("the menu does not say the position:\n%s", strings.Join(m.body(120, 30), "\n"))
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEsc})
	if m.mode != modeNormal {
		t.Fatalf("esc: mode %v, want normal", m.mode)
	}
	m.Update(keyMsg("w"))
	m.Update(tea.KeyMsg{Type: tea.KeyDown})
	want := m.fork.items[1].Fault
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if cmd == nil || m.fork.running != want || !strings.HasPrefix(m.flash, "forking: running the two runs…") {
		t.Fatalf("enter: running %q, flash %q, cmd %v; want %q running", m.fork.running, m.flash, cmd != nil, want)
	}
	if ran != nil {
		t.Fatal("the child ran in Update, not in the command")
	}
	m.Update(keyMsg("w"))
	if m.mode != modeNormal || !strings.Contains(m.flash, "still running") {
		t.Errorf("w while running: mode %v, flash %q", m.mode, m.flash)
	}
	msg := cmd()
	if ran[6] != want || ran[8] != dir+"-fork-1" {
		t.Errorf("the child's args %q: want --add %q --data %s", ran, want, dir+"-fork-1")
	}
	nm, _ := m.Update(msg)
	fm := nm.(*model)
	if fm == m {
		t.Fatal("done: the view did not open the forked run")
	}
	t.Cleanup(fm.rp.rec.close)
	forked := filepath.Join(dir+"-fork-1", "fork")
	if fm.opt.RunDir != forked || fm.rp.rec.path != filepath.Join(forked, "events.jsonl") || fm.fork.schedule == "" {
		t.Errorf("the forked run: dir %q, events %q, schedule %q; want %s", fm.opt.RunDir, fm.rp.rec.path, fm.fork.schedule, forked)
	}
	if want := m.rp.rec.countUpTo(m.rp.at.Add(-time.Nanosecond)); fm.rp.pos != want || want == 0 {
		t.Errorf("the forked run opens at event %d, want %d (just before the fork)", fm.rp.pos, want)
	}
	if fm.mode != modeForkOut || !strings.Contains(strings.Join(fm.body(120, 30), "\n"), "base          fork") {
		t.Errorf("done: mode %v, body:\n%s\nwant the child's output", fm.mode, strings.Join(fm.body(120, 30), "\n"))
	}
	fm.Update(tea.KeyMsg{Type: tea.KeyEsc})
	if fm.mode != modeNormal {
		t.Errorf("esc over the output: mode %v, want normal", fm.mode)
	}
}

// TestForkFails: a child that fails without a forked run says its error
// and its last line, and the view stays on its run.
func TestForkFails(t *testing.T) {
	m, _ := simRun(t, 100)
	m.fork.run = func(ctx context.Context, args []string) ([]byte, error) {
		return []byte("spate sim: --fork-at: 9s is not before the drain at 8s\n"), os.ErrInvalid
	}
	m.Update(keyMsg("w"))
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	nm, _ := m.Update(cmd())
	if nm.(*model) != m || m.fork.running != "" || !strings.Contains(m.flash, "not before the drain") {
		t.Errorf("failed fork: same model %v, running %q, flash %q", nm.(*model) == m, m.fork.running, m.flash)
	}
}
