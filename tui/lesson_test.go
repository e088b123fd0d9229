package tui

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"spate/control"
	"spate/events"
)

const testLesson = `# a test lesson
notes before the first step are not shown

## The nodes
panes: cluster
wait: job_started

There are {nodes} nodes
alive.

Unknown {nope} stays.

## Kill one
panes: recovery, charts
do: kill count#0
wait: node_lost

{restarted} instances restarted: {restarted_list}.
`

func TestParseLesson(t *testing.T) {
	l, err := ParseLesson("l.md", []byte(testLesson))
	if err != nil {
		t.Fatal(err)
	}
	want := &Lesson{Title: "a test lesson", Steps: []Step{
		{Title: "The nodes", Panes: []int{paneCluster}, Wait: "job_started",
			Text: []string{"There are {nodes} nodes alive.", "Unknown {nope} stays."}},
		{Title: "Kill one", Panes: []int{paneRecovery, paneCharts}, Do: &control.Action{Verb: "kill", Target: "count#0"},
			Wait: "node_lost", Text: []string{"{restarted} instances restarted: {restarted_list}."}},
	}}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("got %+v\nwant %+v", l, want)
	}
	for _, c := range []struct{ name, text, want string }{
		{"a bad pane", "## s\npanes: cluster, nodes\n", "l.md:2: panes: \"nodes\" is not a pane"},
		{"a bad action", "## s\ndo: scale count x\n", "l.md:2: do: "},
		{"no steps", "# title only\n", "l.md: no steps"},
	} {
		if _, err := ParseLesson("l.md", []byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// TestLessonInTheDashboard: the step shows beside the panes with its
// figures, its panes starred and the first one shown; n acts once (going
// back and forth does not kill twice), p goes back; a step says it waits
// for its event until one comes after its action.
func TestLessonInTheDashboard(t *testing.T) {
	l, err := ParseLesson("l.md", []byte(testLesson))
	if err != nil {
		t.Fatal(err)
	}
	ctl := &fakeCtl{}
	m := newModel(Options{Plain: true, Now: fixedNow, Title: "golden", Control: ctl, Lesson: l})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	run(m, m.enterStep(0))
	m.Update(eventsMsg(startOfRun(t)))
	v := m.View()
	for _, want := range []string{"step 1 of 2: The nodes", "There are 4 nodes alive.", "Unknown {nope} stays.", "[★1 cluster]"} {
		if !strings.Contains(v, want) {
			t.Errorf("the screen lacks %q:\n%s", want, v)
		}
	}
	checkFrame(t, "lesson", v, 160, 48)
	checkGolden(t, "lesson-step1-160x48", v)

	_, cmd := m.Update(keyMsg("n"))
	run(m, cmd)
	if m.pane != paneRecovery {
		t.Errorf("step 2 shows pane %d, want the recovery pane", m.pane)
	}
	if want := []control.Action{{Verb: "kill", Target: "count#0"}}; !reflect.DeepEqual(ctl.acts, want) {
		t.Errorf("actions %v, want %v", ctl.acts, want)
	}
	if v := m.View(); !strings.Contains(v, "waiting for a node_lost event") || !strings.Contains(v, "★8 charts") {
		t.Errorf("step 2 does not wait for node_lost or star the charts:\n%s", v)
	}
	var rest eventsMsg
	for _, e := range loadEvents(t, "run-kill.jsonl") {
		if e.Seq > 18 {
			rest = append(rest, e)
		}
	}
	m.Update(eventsMsg(rest))
	v = m.View()
	if strings.Contains(v, "waiting for") || !strings.Contains(v, "2 instances restarted: source#1 rollup#1.") {
		t.Errorf("step 2 after the loss:\n%s", v)
	}
	checkGolden(t, "lesson-step2-80x24", func() string { m.Update(tea.WindowSizeMsg{Width: 80, Height: 24}); return m.View() }())
	press(m, "p")
	if m.tour.step != 0 || m.pane != paneCluster {
		t.Errorf("p: step %d, pane %d", m.tour.step, m.pane)
	}
	_, cmd = m.Update(keyMsg("n"))
	run(m, cmd)
	if len(ctl.acts) != 1 {
		t.Errorf("coming back to step 2 acted again: %v", ctl.acts)
	}
	press(m, "n", "n")
	if m.tour.step != 1 {
		t.Errorf("n past the last step: at %d", m.tour.step)
	}
	// A refused action is sent again when the step is shown again.
	ctl.err = errTest("scale: a recovery is in flight")
	press(m, "p")
	m.tour.done[1] = false
	_, cmd = m.Update(keyMsg("n"))
	run(m, cmd)
	if !strings.Contains(m.flash, "p then n tries again") {
		t.Errorf("flash %q after a refusal", m.flash)
	}
	ctl.err = nil
	press(m, "p")
	_, cmd = m.Update(keyMsg("n"))
	run(m, cmd)
	if n := len(ctl.acts); n != 3 {
		t.Errorf("%d actions, want 3 (the first, the refused, the retry): %v", n, ctl.acts)
	}
}

// TestTourLessonNamesKnownFigures: every {figure} of spate tour's lesson
// is one the dashboard fills, once the recorded run (and the future kinds)
// have been folded.
func TestTourLessonNamesKnownFigures(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "tour", "lesson.md"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseLesson("tour/lesson.md", b)
	if err != nil {
		t.Fatal(err)
	}
	f := loaded(t, 160, 48).s.figures()
	// A comparison's figures: a recorded run with --ft global, folded as
	// the tour folds its second cluster's events.
	cmp := NewFigures()
	for _, e := range loadEvents(t, "run-global.jsonl") {
		cmp.Add(e)
	}
	for _, st := range l.Steps {
		f := maps.Clone(f)
		if st.Compare != nil {
			maps.Copy(f, cmp.Map("cmp_"))
			for _, k := range []string{"cmp_flags", "cmp_killed", "cmp_dir", "cmp_verify", "cmp_claims"} {
				f[k] = "x" // the tour's own, not a fold's
			}
			for _, k := range []string{"interval", "loss_age", "restarted", "replayed", "restored", "lag_peak"} {
				f["here_"+k], f["cmp_"+k] = "x", "x" // the tour's table (tour/claims.go)
			}
		}
		for _, p := range st.Text {
			if p == diagramsPara {
				if st.Compare == nil {
					t.Errorf("step %q draws {diagrams} without a comparison", st.Title)
				}
				continue // not a figure: drawn from the losses
			}
			for _, name := range figureRe.FindAllString(p, -1) {
				if _, ok := f[name[1:len(name)-1]]; !ok {
					t.Errorf("step %q names %s, which no figure fills", st.Title, name)
				}
			}
			if got := fill(p, f); figureRe.MatchString(got) {
				t.Errorf("step %q is left with a placeholder: %s", st.Title, got)
			}
		}
	}
}

const compareLesson = `# compare
## Side by side
panes: recovery
compare: --ft global

Both:

| | here | there |
|---|---|---|
| restarted | {restarted} | {cmp_restarted} |
| a longer row name | {recovery_total} | {cmp_recovery_total} |
`

func TestParseLessonCompareAndTables(t *testing.T) {
	l, err := ParseLesson("c.md", []byte(compareLesson))
	if err != nil {
		t.Fatal(err)
	}
	st := l.Steps[0]
	if !reflect.DeepEqual(st.Compare, []string{"--ft", "global"}) || len(st.Text) != 2 || !strings.HasPrefix(st.Text[1], "| | here |") ||
		strings.Count(st.Text[1], "\n") != 3 {
		t.Errorf("step %+v", st)
	}
	if _, err := ParseLesson("c.md", []byte("## s\ncompare:\n")); err == nil || !strings.Contains(err.Error(), "c.md:2: compare:") {
		t.Errorf("an empty compare: %v", err)
	}
	got := paragraph(st.Text[1], map[string]string{"restarted": "2", "cmp_restarted": "8", "recovery_total": "1.2s", "cmp_recovery_total": "950ms"}, 60)
	want := []string{
		"                   here  there",
		"restarted          2     8",
		"a longer row name  1.2s  950ms",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("table\n%q\nwant\n%q", got, want)
	}
}

// TestLessonComparison: a step with compare: starts the comparison once,
// says what it is doing while it runs, and shows its figures beside the
// dashboard's when it is done; without a Comparer it says it cannot.
func TestLessonComparison(t *testing.T) {
	l, err := ParseLesson("c.md", []byte(compareLesson))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan Comparison, 4)
	var asked [][]string
	var ages []time.Duration
	compare := func(flags []string, age time.Duration) <-chan Comparison {
		asked = append(asked, flags)
		ages = append(ages, age)
		return ch
	}
	m := newModel(Options{Plain: true, Now: fixedNow, Lesson: l, Compare: compare})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.Update(eventsMsg(loadEvents(t, "run-kill.jsonl")))
	cmd := m.enterStep(0)
	if len(asked) != 1 || len(asked[0]) != 4 || asked[0][0] != "--ft" || asked[0][1] != "global" || asked[0][2] != "--interval" {
		t.Fatalf("comparisons asked for: %v", asked)
	}
	// The recorded kill came after count#0's ... checkpoint; the second
	// cluster is asked to kill as long after one of its own.
	if want, ok := m.s.lossAge(m.s.latestRecovery()); !ok || ages[0] != want || want <= 0 || want > 2*time.Second {
		t.Errorf("asked to kill %v after a checkpoint, want %v (known %v)", ages[0], want, ok)
	}
	step := func(c Comparison) {
		ch <- c
		msg := cmd()
		_, cmd = m.Update(msg)
	}
	if w := m.tourWaiting(); w != "the second cluster to start" || !strings.Contains(m.View(), "… waiting for the second") {
		t.Errorf("before any news: %q\n%s", w, m.View())
	}
	step(Comparison{Status: "waiting for its second checkpoint", Figures: map[string]string{"cmp_restarted": "-"}})
	if w := m.tourWaiting(); w != "the second cluster: waiting for its second checkpoint" || !strings.Contains(m.View(), "… waiting for the second") {
		t.Errorf("while it runs: %q\n%s", w, m.View())
	}
	step(Comparison{Status: "done", Done: true, Figures: map[string]string{"cmp_restarted": "8", "cmp_recovery_total": "2.1s"}})
	v := m.View()
	if strings.Contains(v, "waiting for") || !regexpRow(v, "restarted", "2", "8") {
		t.Errorf("when done:\n%s", v)
	}
	close(ch)
	if _, next := m.Update(cmd()); next != nil {
		t.Error("still waiting for news after the channel closed")
	}
	// Coming back to the step does not start a second comparison.
	m.enterStep(0)
	if len(asked) != 1 {
		t.Errorf("%d comparisons", len(asked))
	}

	m = newModel(Options{Plain: true, Now: fixedNow, Lesson: l})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.enterStep(0)
	if w := m.tourWaiting(); w != "a second cluster, which only spate tour runs" {
		t.Errorf("without a Comparer: %q", w)
	}
}

// regexpRow says whether some line of v has the cells in order, apart.
func regexpRow(v string, cells ...string) bool {
	for _, line := range strings.Split(v, "\n") {
		rest, ok := line, true
		for _, c := range cells {
			i := strings.Index(rest, c)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(c):]
		}
		if ok {
			return true
		}
	}
	return false
}

// TestComparisonFiguresOfAGlobalRollback: the figures of a global
// rollback count every instance as restarted and the sources' records as
// read again.
func TestComparisonFiguresOfAGlobalRollback(t *testing.T) {
	f := NewFigures()
	for _, e := range loadEvents(t, "run-global.jsonl") {
		f.Add(e)
	}
	m := f.Map("cmp_")
	var records uint64
	for _, e := range loadEvents(t, "run-global.jsonl") {
		if p, ok := e.Fields.(events.RecoveryPlacedFields); ok {
			records = p.Records
		}
	}
	if !f.Recovered() || m["cmp_restarted"] != "8" || m["cmp_replayed"] != fmtRate(float64(records)) || m["cmp_recovery_total"] == "-" {
		t.Errorf("figures %v (records read again %d)", m, records)
	}
	_ = fmt.Sprint()
}
