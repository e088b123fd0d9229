package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"spate/events"
)

// A simulated run (a run directory with the schedule.yaml spate sim keeps)
// can be forked from spate view: w opens a menu of faults to add at the
// position, and the choice runs `spate sim --schedule DIR/schedule.yaml
// --fork-at T --add FAULT --data DIR-fork-N` as a child process; when it
// is done its side-by-side output is shown over the pane and the view
// opens the forked run, DIR-fork-N/fork.

// forkRunner runs spate with args and returns what it printed (stdout and
// stderr); the view's is exec of its own executable, tests give a fake.
type forkRunner func(ctx context.Context, args []string) ([]byte, error)

// execRunner runs this executable with args.
func execRunner(ctx context.Context, args []string) ([]byte, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, self, args...).CombinedOutput()
}

// errNoSchedule is w over a run that spate sim did not make.
const errNoSchedule = "fork: only a simulated run (spate sim --seed S --data DIR) can be forked"

// errForked is w over a fork's run: its schedule's fork step reads the
// fault from the fork's fork.txt, which a new fork would overwrite.
const errForked = "fork: this run is itself a fork (its schedule's fork step reads ../fork.txt); fork the run it came from"

// forkStep is a schedule line's fork step, as sim's Format writes it.
var forkStep = regexp.MustCompile(`(?m)^\s*-\s*\{.*\bfault:\s*fork\b`)

// forker is the fork's part of the view: the menu, the child while it
// runs, and its output once it is done.
type forker struct {
	schedule string // DIR/schedule.yaml; "" when the run has none
	forked   bool   // its schedule has a fork step: the run is a fork
	dir      string // the run directory
	run      forkRunner

	items   []forkItem // the menu, while it is open
	sel     int
	running string // the fault of the child running, "" when none
	cancel  context.CancelFunc
	out     []string // the finished child's output, shown over the pane

	started int // the job_started event's index; -1 until found
	scanned int // events looked at for it
}

// forkItem is one fault of the menu, as the ':' prompt (and --add) takes it.
type forkItem struct {
	Fault, Why string
}

// forkDone is the child's end: its output and, when the forked run's
// events could be opened, the recording.
type forkDone struct {
	out  []byte
	err  error
	dir  string // the forked run's directory
	rec  *recording
	open error
}

// newForker finds dir's schedule.yaml.
func newForker(dir string) *forker {
	f := &forker{dir: dir, run: execRunner, started: -1}
	if dir == "" {
		return f
	}
	p := filepath.Join(dir, "schedule.yaml")
	if b, err := os.ReadFile(p); err == nil {
		f.schedule = p
		f.forked = forkStep.Match(b)
	}
	return f
}

// forkItems is the menu for state s: kill and restart each instance's
// node, partition each node, and scale each keyed operator up by one.
func forkItems(s *state) []forkItem {
	var items []forkItem
	for _, id := range s.instOrder {
		if in := s.insts[id]; in.State != "done" {
			items = append(items, forkItem{"kill " + id, nodeWhy(in.Node)})
		}
	}
	for _, id := range s.instOrder {
		if in := s.insts[id]; in.State != "done" {
			items = append(items, forkItem{"restart " + id, nodeWhy(in.Node)})
		}
	}
	for _, n := range s.nodeOrder {
		switch s.nodes[n].State {
		case "dead", "lost", "failed", "exited", "stopped":
			continue
		}
		items = append(items, forkItem{"partition " + n, "cut it off from the rest"})
	}
	for _, op := range s.opOrder {
		if op == "source" || op == "sink" { // only the keyed operators rescale
			continue
		}
		n := parallelism(s, op)
		items = append(items, forkItem{fmt.Sprintf("scale %s %d", op, n+1), fmt.Sprintf("from %d", n)})
	}
	return items
}

func nodeWhy(node string) string {
	if node == "" {
		return "its node (not known here)"
	}
	return "its node " + node
}

// parallelism is op's instances at s: the latest finished rescale's, or
// the instances seen.
func parallelism(s *state, op string) int {
	for i := len(s.rescales) - 1; i >= 0; i-- {
		if r := s.rescales[i]; r.Op == op {
			if r.Done {
				return r.To
			}
			return r.From
		}
	}
	n := 0
	for _, id := range s.instOrder {
		if s.insts[id].Op == op && s.insts[id].State != "done" {
			n++
		}
	}
	return n
}

// jobTime is the position as the schedule's time: the time of the last
// event applied since job_started (a step's at is measured from there,
// sim drive). ok is false before the job started.
func (m *model) jobTime() (time.Duration, bool) {
	p, f := m.rp, m.fork
	for ; f.started < 0 && f.scanned < p.pos; f.scanned++ {
		if e, err := p.rec.event(f.scanned); err == nil && e.Kind == events.JobStarted {
			f.started = f.scanned
		}
	}
	if f.started < 0 || f.started >= p.pos {
		return 0, false
	}
	return p.rec.time(p.pos - 1).Sub(p.rec.time(f.started)).Round(time.Millisecond), true
}

// forkArgs is the command line of a fork at job time at with fault,
// written to out.
func forkArgs(schedule string, at time.Duration, fault, out string) []string {
	return []string{"sim", "--schedule", schedule, "--fork-at", at.String(), "--add", fault, "--data", out, "--quiet"}
}

// forkDir is the first DIR-fork-N that does not exist.
func forkDir(dir string) string {
	dir = strings.TrimRight(dir, string(filepath.Separator))
	for n := 1; ; n++ {
		p := dir + "-fork-" + strconv.Itoa(n)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return p
		}
	}
}

// openFork is w: the menu, or a line saying why not.
func (m *model) openFork() {
	f := m.fork
	switch {
	case f == nil || f.schedule == "":
		m.flash, m.flashOK = errNoSchedule, false
	case f.forked:
		m.flash, m.flashOK = errForked, false
	case f.running != "":
		m.flash, m.flashOK = "fork: "+f.running+" is still running", false
	default:
		if _, ok := m.jobTime(); !ok {
			m.flash, m.flashOK = "fork: the job has not started here (move on past job_started)", false
			return
		}
		f.items, f.sel = forkItems(m.s), 0
		if len(f.items) == 0 {
			m.flash, m.flashOK = "fork: no instance or node here to add a fault to", false
			return
		}
		m.rp.playing = false
		m.mode = modeFork
	}
}

// forkKey is a key in the menu: arrows move, enter runs, esc cancels.
func (m *model) forkKey(k tea.KeyMsg) tea.Cmd {
	f := m.fork
	switch {
	case keyIs(k, m.keys.Down):
		f.sel = min(f.sel+1, len(f.items)-1)
	case keyIs(k, m.keys.Up):
		f.sel = max(f.sel-1, 0)
	case keyIs(k, m.keys.Back):
		m.mode, f.items = modeNormal, nil
	case keyIs(k, m.keys.Enter):
		m.mode = modeNormal
		it := f.items[f.sel]
		f.items = nil
		return m.startFork(it.Fault)
	}
	return nil
}

// startFork runs the fork as a tea.Cmd.
func (m *model) startFork(fault string) tea.Cmd {
	f := m.fork
	at, ok := m.jobTime()
	if !ok {
		m.flash, m.flashOK = "fork: the job has not started here", false
		return nil
	}
	out := forkDir(f.dir)
	args := forkArgs(f.schedule, at, fault, out)
	ctx, cancel := context.WithCancel(context.Background())
	f.running, f.cancel = fault, cancel
	m.flash, m.flashOK = "forking: running the two runs… ("+fault+" at "+at.String()+")", true
	m.note("fork: spate "+strings.Join(args, " "), false)
	run := f.run
	return func() tea.Msg {
		defer cancel()
		b, err := run(ctx, args)
		d := forkDone{out: b, err: err, dir: filepath.Join(out, "fork")}
		if d.rec, d.open = openRecording(filepath.Join(d.dir, "events.jsonl")); d.open != nil {
			d.rec = nil
		}
		return d
	}
}

// onForkDone shows the child's output and opens the forked run: a new
// model over its recording, as spate view --data opens one, at the
// position it was forked from.
func (m *model) onForkDone(d forkDone) (tea.Model, tea.Cmd) {
	f := m.fork
	f.running, f.cancel = "", nil
	lines := strings.Split(strings.TrimRight(string(d.out), "\n"), "\n")
	if d.rec == nil {
		text := "fork failed"
		if d.err != nil {
			text += ": " + d.err.Error()
		} else if d.open != nil {
			text += ": " + oneLine(d.open)
		}
		if last := lastLine(d.out); last != "" {
			text += ": " + last
		}
		m.note(text, true)
		m.flash, m.flashOK = text, false
		return m, nil
	}
	nm, _ := newViewModel(d.rec, ViewOptions{In: m.opt.In, Out: m.opt.Out, RunDir: d.dir, Plain: m.opt.Plain, Frame: m.rp.frame})
	nm.fork.run = f.run
	nm.w, nm.h = m.w, m.h
	nm.fork.out = lines
	nm.mode = modeForkOut
	// The two runs are the same up to the fork: the forked one opens just
	// before it, at the position it was forked from.
	nm.seek(d.rec.countUpTo(m.rp.at.Add(-time.Nanosecond)))
	nm.flash, nm.flashOK = "the forked run: "+d.dir, true
	if d.err != nil {
		nm.flash, nm.flashOK = "the forked run ("+d.err.Error()+"): "+d.dir, false
	}
	m.rp.rec.close()
	return nm, nm.Init()
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// forkMenu is the menu's lines, over the pane.
func (m *model) forkMenu(h int) []string {
	f := m.fork
	at, _ := m.jobTime()
	lines := []string{m.st.title.Render("fork the run at "+at.String()+": add a fault") + m.st.dim.Render("  (↑/↓ pick, enter run, esc cancel)")}
	for i, it := range f.items {
		mark := "  "
		if i == f.sel {
			mark = "▸ "
		}
		lines = append(lines, mark+pad(it.Fault, 20)+" "+m.st.dim.Render(it.Why))
	}
	off := max(f.sel-(h-2), 0)
	return append(lines[:1], scrolled(lines[1:], off, h-1)...)
}

// forkOutput is the finished child's output, over the pane.
func (m *model) forkOutput(h int) []string {
	head := m.st.title.Render("the fork, side by side") + m.st.dim.Render("  (esc: the forked run, j/k scroll)")
	return append([]string{head}, scrolled(m.fork.out, m.scroll, h-1)...)
}
