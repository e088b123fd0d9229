package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"spate/control"
	"spate/events"
)

// Lesson is a guided tour: numbered steps, each a short text shown beside
// the live dashboard with the panes it talks about highlighted. It is
// read from a Markdown file (ParseLesson) so that it is easy to edit and
// to translate.
type Lesson struct {
	Title string
	Steps []Step
}

// Step is one step of a lesson.
type Step struct {
	Title string
	Panes []int           // the panes highlighted, the first one shown
	Do    *control.Action // done on the cluster when the step is first shown
	Wait  events.Kind     // the event the step is about; the step says it is waiting until one arrives
	Text  []string        // paragraphs, with {figure} placeholders
}

// ParseLesson reads a lesson:
//
//	# the lesson's title
//	## a step's title
//	panes: dataflow, checkpoints     (optional; names of the panes)
//	do: kill count#0                  (optional; a command line, as after :)
//	wait: recovery_done               (optional; an event kind: after the
//	                                  step's action if it has one, else
//	                                  any seen so far will do)
//	The text, in paragraphs separated by blank lines, with {figures}.
//
// Errors name name:line.
func ParseLesson(name string, b []byte) (*Lesson, error) {
	l := &Lesson{}
	var cur *Step
	var para []string
	flush := func() {
		if cur != nil && len(para) > 0 {
			cur.Text = append(cur.Text, strings.Join(para, " "))
		}
		para = nil
	}
	for i, raw := range strings.Split(string(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))), "\n") {
		line := strings.TrimSpace(raw)
		where := fmt.Sprintf("%s:%d", name, i+1)
		switch {
		case strings.HasPrefix(line, "## "):
			flush()
			l.Steps = append(l.Steps, Step{Title: strings.TrimSpace(line[3:])})
			cur = &l.Steps[len(l.Steps)-1]
		case strings.HasPrefix(line, "# "):
			l.Title = strings.TrimSpace(line[2:])
		case cur == nil:
			// before the first step: notes for whoever edits the file
		case line == "":
			flush()
		case len(para) == 0 && strings.HasPrefix(line, "panes:"):
			for _, p := range strings.Split(line[len("panes:"):], ",") {
				p = strings.TrimSpace(p)
				k := paneIndex(p)
				if k < 0 {
					return nil, fmt.Errorf("%s: panes: %q is not a pane (%s)", where, p, paneNames())
				}
				cur.Panes = append(cur.Panes, k)
			}
		case len(para) == 0 && strings.HasPrefix(line, "do:"):
			a, err := parseCommand(strings.TrimSpace(line[len("do:"):]))
			if err != nil {
				return nil, fmt.Errorf("%s: do: %v", where, err)
			}
			cur.Do = &a
		case len(para) == 0 && strings.HasPrefix(line, "wait:"):
			cur.Wait = events.Kind(strings.TrimSpace(line[len("wait:"):]))
		default:
			para = append(para, line)
		}
	}
	flush()
	if len(l.Steps) == 0 {
		return nil, fmt.Errorf("%s: no steps (a step starts with ## and its title)", name)
	}
	return l, nil
}

func paneIndex(name string) int {
	for i, p := range panes {
		if p.name() == name {
			return i
		}
	}
	return -1
}

func paneNames() string {
	names := make([]string, len(panes))
	for i, p := range panes {
		names[i] = p.name()
	}
	return strings.Join(names, ", ")
}

var figureRe = regexp.MustCompile(`\{[a-z0-9_]+\}`)

// figures are the live numbers a lesson's text may name.
func (s *state) figures() map[string]string {
	f := map[string]string{}
	alive := 0
	for _, n := range s.nodes {
		if n.State == "alive" {
			alive++
		}
	}
	f["nodes"] = itoa(alive)
	f["instances"] = itoa(len(s.instOrder))
	var chain []string
	for _, op := range s.opOrder {
		n := 0
		for _, in := range s.insts {
			if in.Op == op {
				n++
			}
		}
		chain = append(chain, fmt.Sprintf("%s ×%d", op, n))
	}
	f["dataflow"] = strings.Join(chain, " → ")
	if in, ok := s.insts["count#0"]; ok {
		f["count0_groups"] = in.KeyGroups
		f["count0_node"] = in.Node
	}
	var full, delta int
	var caps, pers []time.Duration
	var stored int64
	for _, c := range s.ckpts {
		if c.Status != "completed" {
			continue
		}
		if c.Full {
			full++
		} else {
			delta++
		}
		stored += c.Stored
		if c.Capture > 0 || c.Persist > 0 {
			caps, pers = append(caps, c.Capture), append(pers, c.Persist)
		}
	}
	f["checkpoints"], f["full"], f["delta"] = itoa(full+delta), itoa(full), itoa(delta)
	f["stored"] = fmtBytes(stored)
	f["capture"], f["persist"] = fmtDur(median(caps)), fmtDur(median(pers))
	var held, freed int64
	trims := 0
	for _, b := range s.backups {
		held += b.Held
		freed += b.Freed
		trims += b.Trims
	}
	f["held"], f["trimmed"], f["trims"] = fmtBytes(held), fmtBytes(freed), itoa(trims)
	f["recoveries"] = itoa(len(s.recoveries))
	f["restarted"], f["restore"], f["catchup"], f["recovery_total"], f["lost_node"] = "-", "-", "-", "-", "-"
	if r := s.latestRecovery(); r != nil {
		restore, catch, total := r.phaseTimes()
		f["restarted"] = itoa(len(r.Insts))
		f["restore"], f["catchup"], f["recovery_total"] = fmtMs(restore), fmtMs(catch), fmtMs(total)
		f["lost_node"] = r.Node
		var ids []string
		for _, ir := range r.Insts {
			ids = append(ids, ir.Instance)
		}
		f["restarted_list"] = strings.Join(ids, " ")
	}
	f["rescales"], f["moves"], f["pause"] = itoa(len(s.rescales)), "-", "-"
	if n := len(s.rescales); n > 0 {
		r := s.rescales[n-1]
		f["moves"], f["pause"] = itoa(r.Moves), fmtMs(r.PauseMs)
		f["rescale"] = fmt.Sprintf("%s %d→%d (%s)", r.Op, r.From, r.To, r.Phase)
	}
	f["interval"], f["reason"] = "-", "-"
	if len(s.tunerOrder) > 0 {
		t := s.tuner[s.tunerOrder[0]]
		for _, id := range s.tunerOrder {
			if s.tuner[id].At.After(t.At) {
				t = s.tuner[id]
			}
		}
		f["interval"], f["reason"], f["interval_of"] = fmtDur(t.Interval), t.Reason, t.Instance
	}
	f["in_rate"], f["out_rate"], f["lag"] = "-", "-", "-"
	if n := len(s.tput); n > 0 {
		p := s.tput[n-1]
		f["in_rate"], f["out_rate"], f["lag"] = fmtRate(p.In), fmtRate(p.Out), fmtMs(p.Lag)
	}
	return f
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = append([]time.Duration(nil), ds...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// fill replaces the {figures} of text; an unknown one stays as it is.
func fill(text string, f map[string]string) string {
	return figureRe.ReplaceAllStringFunc(text, func(k string) string {
		if v, ok := f[k[1:len(k)-1]]; ok && v != "" {
			return v
		}
		return k
	})
}

// wrap breaks text into lines of at most w cells.
func wrap(text string, w int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case width(line)+1+width(word) <= w:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// tour is a lesson's progress in the dashboard.
type tour struct {
	l      *Lesson
	step   int
	seen   map[events.Kind]uint64 // events of each kind so far
	waitAt uint64                 // the count of the step's Wait kind it must pass
	done   []bool                 // the step's Do has been sent
}

// lessonLines renders the current step in w x h.
func (m *model) lessonLines(w, h int) []string {
	t := m.tour
	st := t.l.Steps[t.step]
	out := []string{
		m.st.title.Render(fit(fmt.Sprintf("step %d of %d: %s", t.step+1, len(t.l.Steps), st.Title), w)),
	}
	if m.tourWaiting() {
		out = append(out, m.st.warn.Render(fit("… waiting for a "+string(st.Wait)+" event", w)))
	}
	f := m.s.figures()
	for _, p := range st.Text {
		out = append(out, "")
		out = append(out, wrap(fill(p, f), w)...)
	}
	out = append(out, "", m.st.dim.Render(fit("n next · p previous · q quit (the job drains)", w)))
	if len(out) > h {
		out = append(out[:h-1], m.st.dim.Render(fit("n next · p previous · q quit", w)))
	}
	return out
}

func (m *model) tourWaiting() bool {
	st := m.tour.l.Steps[m.tour.step]
	return st.Wait != "" && (m.tour.seen[st.Wait] <= m.tour.waitAt || !settled(m.s, st.Wait))
}

// settled says whether what an event of kind k is about is over: a
// recovery_done ends a recovery only when its last instance has caught up.
func settled(s *state, k events.Kind) bool {
	if k == events.RecoveryDone {
		r := s.latestRecovery()
		return r != nil && r.Completed
	}
	return true
}

// enterStep shows step i: its first pane, and its action once.
func (m *model) enterStep(i int) tea.Cmd {
	t := m.tour
	t.step = min(max(i, 0), len(t.l.Steps)-1)
	st := t.l.Steps[t.step]
	if len(st.Panes) > 0 {
		m.setPane(st.Panes[0])
	}
	// A step that acts waits for an event after its action; one that only
	// looks is content with one seen before.
	t.waitAt = 0
	if st.Do != nil && !t.done[t.step] {
		t.waitAt = t.seen[st.Wait]
	}
	if st.Do != nil && !t.done[t.step] {
		t.done[t.step] = true
		return m.act(*st.Do)
	}
	return nil
}

// refused forgets that the current step's action was sent when the
// cluster refused it (busy with a recovery, say), so that coming back to
// the step sends it again.
func (t *tour) refused(a control.Action) bool {
	if st := t.l.Steps[t.step]; st.Do != nil && st.Do.String() == a.String() {
		t.done[t.step] = false
		return true
	}
	return false
}

// highlighted reports whether the current step talks about pane p.
func (m *model) highlighted(p int) bool {
	if m.tour == nil {
		return false
	}
	for _, k := range m.tour.l.Steps[m.tour.step].Panes {
		if k == p {
			return true
		}
	}
	return false
}

// LessonHeadless goes through the lesson on a live cluster without a
// screen, for a terminal that cannot draw the dashboard (and for tests):
// for each step it does the step's action, waits for its event (at most
// wait), and prints the step with its live figures. It folds evs as the
// dashboard does; ctl acts on the cluster.
func LessonHeadless(ctx context.Context, l *Lesson, evs <-chan events.Event, ctl Controller, out io.Writer, wait time.Duration) error {
	s := newState()
	seen := map[events.Kind]uint64{}
	take := func(e events.Event) {
		s.apply(e)
		seen[e.Kind]++
	}
	drain := func() {
		for {
			select {
			case e, ok := <-evs:
				if !ok {
					return
				}
				take(e)
			default:
				return
			}
		}
	}
	fmt.Fprintf(out, "%s\n\n", l.Title)
	for i, st := range l.Steps {
		drain()
		var from uint64
		if st.Do != nil {
			from = seen[st.Wait]
		}
		deadline := time.Now().Add(wait)
		if st.Do != nil {
			// A refused action (the cluster is busy: a recovery in
			// flight) is tried again twice a second until the wait is up.
			for {
				actx, cancel := context.WithTimeout(ctx, actTimeout)
				res, err := ctl.Act(actx, *st.Do)
				cancel()
				if err == nil {
					if res.Text != "" {
						fmt.Fprintf(out, "(%s: %s)\n", st.Do, res.Text)
					}
					break
				}
				if time.Now().After(deadline) {
					fmt.Fprintf(out, "(%s refused: %v)\n", st.Do, err)
					break
				}
				select {
				case <-time.After(500 * time.Millisecond):
				case <-ctx.Done():
					return ctx.Err()
				}
				drain()
			}
		}
		timer := time.NewTimer(max(time.Until(deadline), 0))
		if st.Wait != "" {
		waiting:
			for seen[st.Wait] <= from || !settled(s, st.Wait) {
				select {
				case e, ok := <-evs:
					if !ok {
						break waiting
					}
					take(e)
				case <-timer.C:
					fmt.Fprintf(out, "(no %s event in %s)\n", st.Wait, wait)
					break waiting
				case <-ctx.Done():
					timer.Stop()
					return ctx.Err()
				}
			}
			drain()
		}
		timer.Stop()
		f := s.figures()
		fmt.Fprintf(out, "Step %d of %d: %s\n", i+1, len(l.Steps), st.Title)
		for _, p := range st.Text {
			for _, line := range wrap(fill(p, f), 76) {
				fmt.Fprintln(out, "  "+line)
			}
			fmt.Fprintln(out)
		}
	}
	return nil
}
