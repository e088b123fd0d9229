package tui

import (
	"strings"
	"testing"
	"time"

	"spate/events"
)

// The side pane's recent events show what changes the run (the loss, the
// recovery, the faults) and sum the checkpoints and trims, one line a
// second, instead of a line each.
func TestTheSidePaneShowsWhatChangesTheRun(t *testing.T) {
	m := loaded(t, 160, 48, "run-kill.jsonl")
	press(m, "2") // not the cluster pane, so the nodes are listed too
	side := strings.Join(m.side(60, 200), "\n")
	for _, want := range []string{"nodes", "node_lost", "recovery_done", "checkpoints"} {
		if !strings.Contains(side, want) {
			t.Errorf("the side pane lacks %q:\n%s", want, side)
		}
	}
	ckpts := 0
	for _, e := range loadEvents(t, "run-kill.jsonl") {
		if e.Kind == events.Checkpoint {
			ckpts++
		}
	}
	lines := strings.Split(side, "\n")
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && (f[1] == "checkpoint" || f[1] == "trim" || f[1] == "metrics" || f[1] == "throughput") {
			t.Errorf("a routine event on a line of its own: %s", l)
		}
	}
	if n := strings.Count(side, "frame_error"); n != 1 || !strings.Contains(side, "frame_error (and 3 more)") {
		t.Errorf("the kill's closed streams on %d lines, want one:\n%s", n, side)
	}
	if len(lines) >= ckpts {
		t.Errorf("%d lines for a run of %d checkpoints", len(lines), ckpts)
	}
	// Beside the cluster pane, which lists the nodes, it does not list
	// them again.
	press(m, "1")
	if side := strings.Join(m.side(60, 48), "\n"); strings.Contains(side, "nodes") {
		t.Errorf("the nodes twice, beside the cluster pane:\n%s", side)
	}
}

// Once the run has finished, the dashboard says so: no node is alive, and
// the panes' clock (the charts' time axis) stops at the end even as the
// wall clock goes on.
func TestAFinishedRunSaysSoAndStops(t *testing.T) {
	now := clock
	m := newModel(Options{Plain: true, Now: func() time.Time { return now }, Title: "golden"})
	m.Update(eventsMsgOf(loadEvents(t, "run-kill.jsonl")))
	if m.s.ended.IsZero() {
		t.Fatal("no run_finished folded")
	}
	for id, n := range m.s.nodes {
		if n.State == "alive" {
			t.Errorf("%s is alive after the run finished", id)
		}
	}
	v1 := m.view(paneCharts)
	now = now.Add(time.Minute)
	v2 := m.view(paneCharts)
	if !v1.now.Equal(m.s.ended) || !v2.now.Equal(m.s.ended) {
		t.Errorf("the panes' clock is %v then %v, want the end %v", v1.now, v2.now, m.s.ended)
	}
	if a, b := strings.Join(charts(v1, 160, 10), "\n"), strings.Join(charts(v2, 160, 10), "\n"); a != b {
		t.Errorf("the charts moved a minute after the end:\n%s\n---\n%s", a, b)
	}
	if h := m.header(160, false); !strings.Contains(h, "finished") || !strings.Contains(h, "ended ") {
		t.Errorf("the header does not say the run ended: %s", h)
	}
}

// spate view at its start shows no chart axis of a time before the run
// and does not say it waits for events.
func TestAViewAtItsStartShowsNoTimeBeforeTheRun(t *testing.T) {
	m := viewing(t, "run-kill.jsonl", 160, 48)
	frame := m.View()
	if strings.Contains(frame, "waiting for events") {
		t.Errorf("a recording at its start says it is waiting:\n%s", frame)
	}
	if got := charts(m.view(paneCharts), 160, 10); len(got) != 1 || !strings.Contains(got[0], "no events yet") {
		t.Errorf("the charts at the start: %q", got)
	}
}

func eventsMsgOf(evs []events.Event) eventsMsg { return eventsMsg(evs) }
