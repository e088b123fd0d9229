package tui

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"spate/events"
	"spate/spacetime"
)

// The spacetime package's recorded runs: one node lost in each (spate,
// global, global with a short interval, spate with a parallel recovery).
var spaceRuns = []string{"spate.jsonl", "global.jsonl", "global-short-interval.jsonl", "spate-parallel.jsonl"}

func spacePath(name string) string { return filepath.Join("..", "spacetime", "testdata", name) }

// spaceEvents decodes one of spacetime's recorded runs.
func spaceEvents(t *testing.T, name string) []events.Event {
	t.Helper()
	data, err := os.ReadFile(spacePath(name))
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Event
	names := events.Names{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := events.DecodeLine(line, names)
		if err != nil {
			t.Fatalf("%s:%d: %v", name, i+1, err)
		}
		out = append(out, e)
	}
	return out
}

func folded(evs []events.Event) *state {
	s := newState()
	for _, e := range evs {
		s.apply(e)
	}
	return s
}

func TestTheDashboardsLossesAreThoseOfTheWholeRun(t *testing.T) {
	for _, name := range spaceRuns {
		t.Run(name, func(t *testing.T) {
			evs := spaceEvents(t, name)
			want := spacetime.Losses(evs)
			if len(want) != 1 {
				t.Fatalf("%d losses in the run, want 1", len(want))
			}
			if got := folded(evs).losses(); !reflect.DeepEqual(got, want) {
				t.Errorf("the dashboard's record gives\n%s\nthe run gives\n%s", spacetime.Text(got[0], 80), spacetime.Text(want[0], 80))
			}
		})
	}
}

// A loss keeps its checkpoints after newer ones have pushed them out of
// each instance's latest.
func TestALossKeepsItsCheckpointsLongAfter(t *testing.T) {
	evs := spaceEvents(t, "spate.jsonl")
	want := spacetime.Losses(evs)
	last := evs[len(evs)-1].Time
	var insts []string
	for _, e := range evs {
		if e.Kind == events.InstancePlaced && !strings.Contains(strings.Join(insts, " "), e.Instance) {
			insts = append(insts, e.Instance)
		}
	}
	later := append([]events.Event(nil), evs...)
	for i := 1; i <= 3*maxSpaceTicks; i++ {
		for _, id := range insts {
			later = append(later, events.Event{Time: last.Add(time.Duration(i) * time.Second), Kind: events.Checkpoint,
				Node: "n1", Instance: id, Fields: events.CheckpointFields{ID: uint64(1000 + i)}})
		}
	}
	s := folded(later)
	if n := len(s.space.ticks[insts[0]]); n != maxSpaceTicks {
		t.Fatalf("%s keeps %d checkpoints, want %d: not the shape this test needs", insts[0], n, maxSpaceTicks)
	}
	got := s.losses()
	if len(got) != 1 || !reflect.DeepEqual(got[0], want[0]) {
		t.Errorf("long after, the loss is\n%s\nwant\n%s", spacetime.Text(got[0], 80), spacetime.Text(want[0], 80))
	}
}

func spaceView(s *state, sel int) view {
	return view{s: s, st: newStyles(plainRenderer()), sel: sel, losses: s.losses(), width: 100}
}

func TestTheSpacetimePaneDrawsTheLossInsideThePane(t *testing.T) {
	evs := spaceEvents(t, "spate.jsonl")
	loss := spacetime.Losses(evs)[0]
	s := folded(evs)
	for _, size := range [][2]int{{80, 24}, {80, 60}, {50, 12}, {160, 10}, {30, 3}, {120, 1}} {
		w, h := size[0], size[1]
		lines := spacetimePane{}.render(spaceView(s, 0), w, h)
		if len(lines) > h {
			t.Errorf("%dx%d: %d lines", w, h, len(lines))
		}
		for i, l := range lines {
			if width(l) > w {
				t.Errorf("%dx%d: line %d is %d wide: %q", w, h, i+1, width(l), l)
			}
		}
		if head := "space-time diagram  loss 1 of 1"; !strings.HasPrefix(lines[0], head[:min(len(head), w-1)]) {
			t.Errorf("%dx%d: the head is %q", w, h, lines[0])
		}
		want := diagramLines(loss, w)
		body := lines[1:]
		if len(want) > h-1 && h > 2 {
			more := body[len(body)-1]
			if !strings.HasPrefix(more, "… ") || !strings.Contains(more, "more lines (enter)") {
				t.Errorf("%dx%d: cut without saying so: %q", w, h, more)
			}
			body = body[:len(body)-1]
		}
		for i, l := range body {
			if strings.TrimRight(l, " ") != strings.TrimRight(want[i], " ") {
				t.Errorf("%dx%d: line %d is\n%q, the diagram's is\n%q", w, h, i+2, l, want[i])
			}
		}
		if h == 60 && len(body) != len(want) {
			t.Errorf("%dx%d: %d lines of the diagram's %d, with room for all", w, h, len(body), len(want))
		}
	}
	if got := (spacetimePane{}).render(spaceView(s, 0), 80, 60)[1]; !strings.HasPrefix(got, "n3 lost at 5.00s (kill)") {
		t.Errorf("the diagram's title is %q", got)
	}
	empty := spacetimePane{}.render(spaceView(newState(), 0), 80, 24)
	if len(empty) != 1 || !strings.Contains(empty[0], "no node lost yet") {
		t.Errorf("before a loss: %q", empty)
	}
}

func TestViewShowsOnlyTheLossesBeforeItsPosition(t *testing.T) {
	rec, err := openRecording(spacePath("spate.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.close)
	lostAt := -1
	for i, e := range spaceEvents(t, "spate.jsonl") {
		if e.Kind == events.NodeLost {
			lostAt = i
			break
		}
	}
	if lostAt < 0 {
		t.Fatal("no node_lost in the run")
	}
	m, err := newViewModel(rec, ViewOptions{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 40})
	press(m, "0")
	cases := []struct {
		pos  int
		want string
	}{
		{lostAt, "no node lost yet"}, // the node_lost is the next event
		{lostAt + 1, "n3 lost at 5.00s (kill)"},
		{rec.len(), "n3 lost at 5.00s (kill)"},
		{0, "no node lost yet"},
		{lostAt - 1, "no node lost yet"},
	}
	for _, c := range cases {
		m.seek(c.pos)
		if frame := m.View(); !strings.Contains(frame, c.want) {
			t.Errorf("at %d of %d (the node_lost is %d): no %q in\n%s", c.pos, rec.len(), lostAt, c.want, frame)
		}
	}
	// At the end the seek's state is the full fold's, and so is the diagram.
	m.seek(rec.len())
	want := folded(spaceEvents(t, "spate.jsonl"))
	if !reflect.DeepEqual(m.s.losses(), want.losses()) {
		t.Error("at the end of the recording the pane's losses are not the fold's")
	}
}

// The skim (a seek ahead of the background fold) gives the fold's
// record at every position of a run with a loss, when each instance
// checkpointed more often before it than it keeps: the pin at the loss
// needs checkpoints that only it reads.
func TestSkimKeepsTheSpacetimeRecord(t *testing.T) {
	ckpt := func(at time.Time, node, id string, n int) events.Event {
		return events.Event{Time: at, Kind: events.Checkpoint, Node: node, Instance: id, Fields: events.CheckpointFields{ID: uint64(n)}}
	}
	var evs []events.Event
	run := spaceEvents(t, "spate.jsonl")
	for _, e := range run {
		if e.Kind == events.NodeLost {
			for i := 1; i <= 3*maxSpaceTicks; i++ {
				evs = append(evs, ckpt(e.Time.Add(-time.Duration(3*maxSpaceTicks-i+1)*time.Microsecond), "n4", "count#1", 100+i))
			}
		}
		evs = append(evs, e)
	}
	// Then enough of them that those before the loss are neither among
	// their key's last nor among the last rows of the checkpoints table.
	end := run[len(run)-1].Time
	for i := 1; i <= maxCkpts+3*maxSpaceTicks; i++ {
		id, node := "rollup#0", "n1"
		if i%10 == 0 {
			id, node = "count#1", "n4"
		}
		evs = append(evs, ckpt(end.Add(time.Duration(i)*time.Millisecond), node, id, 1000+i))
	}
	var b bytes.Buffer
	for i, e := range evs {
		e.Seq = uint64(i + 1)
		line, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := openRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.close)
	rec.every = 1 << 20 // one snapshot: the start
	rec.buildSnapshots()
	straight := newState()
	for pos := 0; pos <= rec.len(); pos++ {
		if pos > 0 {
			if err := rec.fold(straight, pos-1, pos); err != nil {
				t.Fatal(err)
			}
		}
		if pos%5 != 0 && pos != rec.len() {
			continue
		}
		got, err := rec.skim(rec.snaps[0], 0, pos)
		if err != nil {
			t.Fatal(err)
		}
		if diff := stateDiff(straight, got); diff != "" {
			t.Fatalf("skim to %d: %s", pos, diff)
		}
	}
	before := 0 // the checkpoints before the loss pinned
	for _, p := range straight.space.pinned {
		if p.Instance == "count#1" && p.Tick.ID > 100 && p.Tick.ID <= 100+3*maxSpaceTicks {
			before++
		}
	}
	if before != maxSpaceTicks {
		t.Errorf("%d of count#1's checkpoints before the loss pinned, want %d: not the shape this test needs", before, maxSpaceTicks)
	}
}

// A comparison step's {diagrams}: the lesson cluster's loss and the
// second cluster's side by side, within the width; a sentence until
// both are there.
func TestTheComparisonDrawsBothLossesSideBySide(t *testing.T) {
	here := folded(spaceEvents(t, "spate.jsonl"))
	there := spacetime.Losses(spaceEvents(t, "global.jsonl"))[0]
	got := diagrams(here, &Comparison{Loss: &there}, "--ft global", 78)
	want := strings.Split(strings.TrimSuffix(spacetime.SideBySide(78, here.losses()[0], there,
		"here, --ft spate:", "the second cluster, --ft global:"), "\n"), "\n")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the diagrams:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, l := range got {
		if width(l) > 78 {
			t.Errorf("line %d is %d wide: %q", i+1, width(l), l)
		}
	}
	if !strings.HasPrefix(got[1], "n3 lost at 5.00s (kill)") || !strings.Contains(got[1], "  n3 lost at") {
		t.Errorf("not both titles: %q", got[1])
	}
	for _, c := range []*Comparison{nil, {}} {
		if got := diagrams(here, c, "--ft global", 78); len(got) != 1 || !strings.Contains(got[0], "come once both are over") {
			t.Errorf("before the second cluster's loss: %q", got)
		}
	}

	// The dashboard's spacetime pane in the tour: the pair, cut to it.
	v := spaceView(here, 0)
	v.cmp = &Comparison{Loss: &there, Figures: map[string]string{"cmp_flags": "--ft global"}}
	lines := spacetimePane{}.render(v, 100, 20)
	if len(lines) > 20 || !strings.Contains(lines[0], "the same kill here and on the second cluster") ||
		!strings.HasPrefix(lines[1], "here, --ft spate:") || !strings.Contains(lines[1], "the second cluster, --ft global:") {
		t.Errorf("the tour's pane:\n%s", strings.Join(lines, "\n"))
	}
	for i, l := range lines {
		if width(l) > 100 {
			t.Errorf("the tour's pane: line %d is %d wide", i+1, width(l))
		}
	}
}

// A flood of replays (a rescale's re-sends, many of them) fills the
// record: they go first, and the loss stays.
func TestAFloodOfReplaysKeepsTheLoss(t *testing.T) {
	evs := spaceEvents(t, "spate.jsonl")
	s := folded(evs)
	at := evs[len(evs)-1].Time
	for i := 0; i < 3*maxSpaceEvents; i++ {
		at = at.Add(time.Millisecond)
		s.apply(events.Event{Time: at, Kind: events.Replay, Node: "n1", Instance: "source#0",
			Fields: events.ReplayFields{To: "count#1", Records: 1}})
	}
	if n := len(s.space.evs); n > maxSpaceEvents {
		t.Errorf("the record holds %d events, at most %d", n, maxSpaceEvents)
	}
	ls := s.losses()
	if want := spacetime.Losses(evs); len(ls) != 1 || ls[0].Node != want[0].Node || len(ls[0].Restores) != len(want[0].Restores) ||
		!ls[0].Done.Equal(want[0].Done) {
		t.Errorf("after the flood: %d losses\n%s", len(ls), strings.Join(func() []string {
			var out []string
			for _, l := range ls {
				out = append(out, spacetime.Text(l, 80))
			}
			return out
		}(), "\n"))
	}
}

// 0 from the recovery pane shows the loss of the recovery selected there.
func TestTheRecoverySelectedPicksItsLoss(t *testing.T) {
	t1, t2 := clock, clock.Add(time.Second)
	ls := []spacetime.Loss{{Node: "n3", Detected: t1}, {Node: "n2", Detected: t2}}
	for _, c := range []struct {
		r    recovery
		want int
	}{
		{recovery{Node: "n2", Lost: t2}, 0}, // newest first
		{recovery{Node: "n3", Lost: t1}, 1},
		{recovery{Node: "n3", Lost: t2}, -1}, // a suspicion, or a node lost without instances
	} {
		if got := lossOf(ls, &c.r); got != c.want {
			t.Errorf("lossOf(%s at %s) = %d, want %d", c.r.Node, c.r.Lost.Format(time.TimeOnly), got, c.want)
		}
	}
	m := newModel(Options{Plain: true, Now: fixedNow})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(eventsMsg(spaceEvents(t, "spate.jsonl")))
	press(m, "7", "0")
	if m.pane != paneSpacetime || m.sel[paneSpacetime] != 0 || !strings.Contains(m.View(), "n3 lost at 5.00s (kill)") {
		t.Errorf("7 then 0: pane %d, loss %d:\n%s", m.pane, m.sel[paneSpacetime], m.View())
	}
}
