package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"spate/control"
	"spate/events"
	"spate/spacetime"
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
	// Compare, if set, are the flags of spate up that a second cluster
	// runs the lesson's job with (--ft global) when the step is first
	// shown; its figures are the {cmp_*} ones, and the step waits until
	// they are all there.
	Compare []string
	Text    []string // paragraphs, with {figure} placeholders; one that starts with | is a table
}

// Comparison is what a lesson's comparison cluster has come to: a line
// saying what it is doing, its figures as they come ({cmp_restarted},
// ...), and Done once they are final; Err if it failed.
type Comparison struct {
	Status  string
	Figures map[string]string
	// Loss is the second cluster's loss of the kill, once its recovery
	// is over (nil before): a step's {diagrams} draws it beside the
	// lesson cluster's.
	Loss *spacetime.Loss
	Done bool
	Err  error
}

// Comparer starts a step's comparison (Step.Compare) and returns its
// progress; the channel is closed after the last. age is how long after
// its checkpoint the lesson's kill came (0 if unknown), for the second
// cluster's kill to come as long after one of its own: the same loss.
// The caller (spate tour) owns the second cluster: it stops it with the
// tour.
type Comparer func(flags []string, age time.Duration) <-chan Comparison

// ParseLesson reads a lesson:
//
//	# the lesson's title
//	## a step's title
//	panes: dataflow, checkpoints     (optional; names of the panes)
//	do: kill count#0                  (optional; a command line, as after :)
//	wait: recovery_done               (optional; an event kind: after the
//	                                  step's action if it has one, else
//	                                  any seen so far will do)
//	compare: --ft global              (optional; flags of spate up for a
//	                                  second cluster, see Step.Compare)
//	The text, in paragraphs separated by blank lines, with {figures};
//	lines that start with | are a table (| a | b |, a |---| line under
//	the head), its columns aligned once the figures are in; a paragraph
//	that is only {diagrams}, in a compare: step, draws the lesson
//	cluster's latest loss and the second cluster's side by side
//	(headless; the dashboard's lesson points to its spacetime pane).
//
// Errors name name:line.
func ParseLesson(name string, b []byte) (*Lesson, error) {
	l := &Lesson{}
	var cur *Step
	var para []string
	flush := func() {
		if cur != nil && len(para) > 0 {
			sep := " "
			if strings.HasPrefix(para[0], "|") {
				sep = "\n" // a table keeps its lines
			}
			cur.Text = append(cur.Text, strings.Join(para, sep))
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
		case len(para) == 0 && strings.HasPrefix(line, "compare:"):
			cur.Compare = strings.Fields(line[len("compare:"):])
			if len(cur.Compare) == 0 {
				return nil, fmt.Errorf("%s: compare: want the flags of the second cluster, e.g. --ft global", where)
			}
		case strings.HasPrefix(line, "|"):
			if len(para) > 0 && !strings.HasPrefix(para[0], "|") {
				flush()
			}
			para = append(para, line)
		default:
			if len(para) > 0 && strings.HasPrefix(para[0], "|") {
				flush()
			}
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
	maps.Copy(f, s.recoveryFigures())
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

// recoveryFigures are the figures of the latest recovery: the lost node,
// the instances that restarted (every one in a global rollback), the
// records read again (replayed to the lost instances, or by every source
// in a global rollback), its phases, and the highest output lag from the
// loss to 5 s after the recovery's end.
func (s *state) recoveryFigures() map[string]string {
	f := map[string]string{"restarted": "-", "restore": "-", "catchup": "-", "recovery_total": "-", "lost_node": "-",
		"replayed": "-", "lag_peak": "-", "restored": "-", "loss_age": "-"}
	r := s.latestRecovery()
	if r == nil {
		return f
	}
	if age, ok := s.lossAge(r); ok {
		f["loss_age"] = fmtMs(ms(age))
	}
	if restored := r.restoredAt(); !restored.IsZero() {
		f["restored"] = fmtMs(ms(restored.Sub(r.start())))
	}
	restore, catch, total := r.phaseTimes()
	f["restore"], f["catchup"], f["recovery_total"] = fmtMs(restore), fmtMs(catch), fmtMs(total)
	f["lost_node"] = r.Node
	var ids []string
	var replayed int64
	for _, ir := range r.Insts {
		ids = append(ids, ir.Instance)
		replayed += ir.Replayed
	}
	if r.Global {
		ids, replayed = s.instOrder, r.Records
	}
	f["restarted"], f["restarted_list"], f["replayed"] = itoa(len(ids)), strings.Join(ids, " "), fmtRate(float64(replayed))
	if r.Completed {
		peak := 0.0
		for _, p := range s.tput {
			if !p.At.Before(r.start()) && !p.At.After(r.Done.Add(5*time.Second)) {
				peak = max(peak, p.Lag)
			}
		}
		f["lag_peak"] = fmtMs(peak)
	}
	return f
}

// lossAge is how old the state a recovery went back to was at the loss:
// the time from the completion of the checkpoint it restored (the global
// one it rolled back to, for a global rollback; the oldest of the lost
// instances' otherwise) to the loss. false: not known (yet), or a
// rollback to the start.
func (s *state) lossAge(r *recovery) (time.Duration, bool) {
	if r.Lost.IsZero() {
		return 0, false
	}
	var at time.Time
	for _, c := range s.ckpts {
		if c.End.After(r.Lost) || c.Status != "completed" {
			continue
		}
		if r.Global {
			if c.Global && c.ID == r.Ckpt && r.Ckpt > 0 {
				at = c.End
			}
			continue
		}
		for _, ir := range r.Insts {
			if ir.Instance == c.Instance && ir.Ckpt == c.ID && ir.Ckpt > 0 && (at.IsZero() || c.End.Before(at)) {
				at = c.End
			}
		}
	}
	if at.IsZero() {
		return 0, false
	}
	return r.Lost.Sub(at), true
}

// compareFlags are a comparison's flags: a step's, and, unless they set
// it, --interval as the latest recovery's instances checkpointed here, so
// that both clusters checkpoint as often and the kill can lose as much.
func (s *state) compareFlags(flags []string) []string {
	for _, f := range flags {
		if f == "--interval" || strings.HasPrefix(f, "--interval=") {
			return flags
		}
	}
	r := s.latestRecovery()
	if r == nil {
		return flags
	}
	var iv time.Duration
	for _, ir := range r.Insts {
		iv = max(iv, s.observedInterval(ir.Instance))
	}
	if iv = iv.Round(100 * time.Millisecond); iv <= 0 {
		return flags
	}
	return append(append([]string(nil), flags...), "--interval", iv.String())
}

// latestLossAge is lossAge of the latest recovery, 0 if not known.
func (s *state) latestLossAge() time.Duration {
	if r := s.latestRecovery(); r != nil {
		if age, ok := s.lossAge(r); ok {
			return age
		}
	}
	return 0
}

// restoredAt is when the last of a recovery's instances was restored (a
// global rollback: every one), zero before.
func (r *recovery) restoredAt() time.Time {
	if r.Global {
		return r.Restored
	}
	var last time.Time
	for _, ir := range r.Insts {
		if ir.Restored.IsZero() {
			return time.Time{}
		}
		last = maxTime(last, ir.Restored)
	}
	return last
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// LossAge is how long after its checkpoint the latest recovery's loss
// came, for a comparison to do its kill as long after one of its own;
// false when there is no recovery with a known checkpoint.
func (f *Figures) LossAge() (time.Duration, bool) {
	r := f.s.latestRecovery()
	if r == nil {
		return 0, false
	}
	return f.s.lossAge(r)
}

// Figures folds the events of a run as the dashboard does and gives the
// figures a lesson's text names: for a cluster the dashboard does not
// show (the tour's comparison). It is not safe for concurrent use.
type Figures struct{ s *state }

// NewFigures returns an empty fold.
func NewFigures() *Figures { return &Figures{s: newState()} }

// Add folds one event in.
func (f *Figures) Add(e events.Event) { f.s.apply(e) }

// Map is the figures as they stand, each name prefixed.
func (f *Figures) Map(prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range f.s.figures() {
		out[prefix+k] = v
	}
	return out
}

// Losses are the run's losses so far, oldest first, as package
// spacetime folds them.
func (f *Figures) Losses() []spacetime.Loss { return f.s.losses() }

// Recovered says whether the run's latest recovery is over.
func (f *Figures) Recovered() bool {
	r := f.s.latestRecovery()
	return r != nil && r.Completed
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

// paragraph renders one paragraph of a step's text in w cells: wrapped,
// or, for a table, its rows with the columns aligned (a row too wide is
// cut).
func paragraph(p string, f map[string]string, w int) []string {
	if !strings.HasPrefix(p, "|") {
		return wrap(fill(p, f), w)
	}
	var rows [][]string
	var widths []int
	for _, line := range strings.Split(p, "\n") {
		line = strings.Trim(strings.TrimSpace(line), "|")
		cells := strings.Split(line, "|")
		if strings.Trim(line, "-|: ") == "" {
			continue // the line under the head
		}
		for i, c := range cells {
			cells[i] = fill(strings.TrimSpace(c), f)
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], width(cells[i]))
		}
		rows = append(rows, cells)
	}
	out := make([]string, len(rows))
	for r, cells := range rows {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-width(c)))
			}
		}
		out[r] = b.String()
		if width(out[r]) > w {
			out[r] = fit(out[r], w)
		}
	}
	return out
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
	l       *Lesson
	step    int
	seen    map[events.Kind]uint64 // events of each kind so far
	waitAt  uint64                 // the count of the step's Wait kind it must pass
	done    []bool                 // the step's Do has been sent (or its comparison started)
	compare Comparer               // runs a step's comparison; nil: none can run
	cmp     map[int]*Comparison    // each comparison step's, as far as it has come
}

// compareMsg is a comparison's news for step i; ok false: it is over.
type compareMsg struct {
	step int
	c    Comparison
	ok   bool
	ch   <-chan Comparison
}

// nextComparison waits for step i's next news.
func nextComparison(step int, ch <-chan Comparison) tea.Cmd {
	return func() tea.Msg {
		c, ok := <-ch
		return compareMsg{step: step, c: c, ok: ok, ch: ch}
	}
}

// onComparison keeps a comparison's news and waits for the next.
func (m *model) onComparison(msg compareMsg) tea.Cmd {
	t := m.tour
	if !msg.ok {
		if c := t.cmp[msg.step]; c != nil && !c.Done && c.Err == nil {
			c.Err = fmt.Errorf("the second cluster stopped before its figures were in")
		}
		return nil
	}
	c := msg.c
	t.cmp[msg.step] = &c
	if c.Err != nil {
		m.note("comparison: "+c.Err.Error(), true)
	}
	return nextComparison(msg.step, msg.ch)
}

// stepFigures are the figures a step's text is filled with: the
// dashboard's, and its comparison's.
func (m *model) stepFigures() map[string]string {
	f := m.s.figures()
	if c := m.tour.cmp[m.tour.step]; c != nil {
		maps.Copy(f, c.Figures)
	}
	return f
}

// lessonLines renders the current step in w x h.
func (m *model) lessonLines(w, h int) []string {
	t := m.tour
	st := t.l.Steps[t.step]
	out := []string{
		m.st.title.Render(fit(fmt.Sprintf("step %d of %d: %s", t.step+1, len(t.l.Steps), st.Title), w)),
	}
	if why := m.tourWaiting(); why != "" {
		for _, l := range wrap("… waiting for "+why, w) {
			out = append(out, m.st.warn.Render(l))
		}
	}
	f := m.stepFigures()
	for _, p := range st.Text {
		out = append(out, "")
		if p == diagramsPara {
			// Too narrow here: the spacetime pane draws them.
			out = append(out, wrap("The spacetime pane (0) draws both recoveries side by side once both are over.", w)...)
			continue
		}
		out = append(out, paragraph(p, f, w)...)
	}
	out = append(out, "", m.st.dim.Render(fit("n next · p previous · q quit (the job drains)", w)))
	if len(out) > h {
		out = append(out[:h-1], m.st.dim.Render(fit("n next · p previous · q quit", w)))
	}
	return out
}

// tourWaiting says what the current step waits for ("" nothing): its
// event, or its comparison.
func (m *model) tourWaiting() string {
	t := m.tour
	st := t.l.Steps[t.step]
	if st.Wait != "" && (t.seen[st.Wait] <= t.waitAt || !settled(m.s, st.Wait)) {
		return "a " + string(st.Wait) + " event"
	}
	if st.Compare != nil {
		switch c := t.cmp[t.step]; {
		case t.compare == nil:
			return "a second cluster, which only spate tour runs"
		case c == nil:
			return "the second cluster to start"
		case c.Err != nil:
			return "nothing more: the second cluster failed (" + c.Err.Error() + ")"
		case !c.Done:
			return "the second cluster: " + c.Status
		}
	}
	return ""
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
	if st.Compare != nil && !t.done[t.step] && t.compare != nil {
		t.done[t.step] = true
		return nextComparison(t.step, t.compare(m.s.compareFlags(st.Compare), m.s.latestLossAge()))
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
func LessonHeadless(ctx context.Context, l *Lesson, evs <-chan events.Event, ctl Controller, compare Comparer, out io.Writer, wait time.Duration) error {
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
		var cmp Comparison
		if st.Compare != nil {
			cmp = headlessComparison(ctx, s, st, compare, evs, take, out)
		}
		f := s.figures()
		maps.Copy(f, cmp.Figures)
		fmt.Fprintf(out, "Step %d of %d: %s\n", i+1, len(l.Steps), st.Title)
		for _, p := range st.Text {
			lines := paragraph(p, f, 76)
			if p == diagramsPara {
				lines = diagrams(s, &cmp, f["cmp_flags"], 78)
			}
			for _, line := range lines {
				fmt.Fprintln(out, "  "+line)
			}
			fmt.Fprintln(out)
		}
	}
	return nil
}

// headlessComparison runs step st's comparison to its end, saying what it
// does, and returns its figures; the lesson's own events go on being
// folded meanwhile (take).
func headlessComparison(ctx context.Context, s *state, st Step, compare Comparer, evs <-chan events.Event, take func(events.Event), out io.Writer) Comparison {
	if compare == nil {
		fmt.Fprintln(out, "(no second cluster to compare with)")
		return Comparison{}
	}
	var last Comparison
	ch := compare(s.compareFlags(st.Compare), s.latestLossAge())
	for {
		select {
		case c, ok := <-ch:
			if !ok {
				if !last.Done && last.Err == nil {
					fmt.Fprintln(out, "(the second cluster stopped before its figures were in)")
				}
				return last
			}
			if c.Err != nil {
				fmt.Fprintf(out, "(the second cluster: %v)\n", c.Err)
			} else if c.Status != last.Status {
				fmt.Fprintf(out, "(second cluster: %s)\n", c.Status)
			}
			last = c
		case e, ok := <-evs:
			if !ok {
				evs = nil // the lesson's cluster is gone; the comparison may still finish
				continue
			}
			take(e)
		case <-ctx.Done():
			return last
		}
	}
}

// diagramsPara is a step's paragraph that draws the lesson cluster's
// latest loss and its comparison's side by side, as space-time diagrams.
const diagramsPara = "{diagrams}"

// diagrams is the {diagrams} paragraph at width w: the lesson cluster's
// latest loss on the left, the second cluster's (run with flags) on the
// right, each captioned with its --ft; a line saying they are not there yet until both
// are.
func diagrams(s *state, c *Comparison, flags string, w int) []string {
	here := s.losses()
	if len(here) == 0 || c == nil || c.Loss == nil {
		return wrap("The space-time diagrams of both recoveries come once both are over.", w)
	}
	ft := s.ft
	if ft == "" {
		ft = "spate"
	}
	there := "the second cluster:"
	for i, f := range strings.Fields(flags) { // its --ft: the rest does not fit
		if v, ok := strings.CutPrefix(f, "--ft="); ok {
			there = "the second cluster, --ft " + v + ":"
		} else if f == "--ft" && i+1 < len(strings.Fields(flags)) {
			there = "the second cluster, --ft " + strings.Fields(flags)[i+1] + ":"
		}
	}
	text := spacetime.SideBySide(w, here[len(here)-1], *c.Loss, "here, --ft "+ft+":", there)
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}
