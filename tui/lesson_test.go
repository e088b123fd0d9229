package tui

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"spate/control"
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
	for _, st := range l.Steps {
		for _, p := range st.Text {
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
