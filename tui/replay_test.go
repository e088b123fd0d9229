package tui

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"spate/events"
)

// recorded opens a recording in testdata and closes it at the test's end.
func recorded(t *testing.T, name string) *recording {
	t.Helper()
	rec, err := openRecording(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.close)
	return rec
}

// viewing is spate view's model over a recording in testdata at w x h, in
// the Ascii profile. Its clock is the recording's own.
func viewing(t *testing.T, name string, w, h int) *model {
	t.Helper()
	m, err := newViewModel(recorded(t, name), ViewOptions{Plain: true, Title: "golden"})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

func viewKeyMsg(k string) tea.KeyMsg {
	switch k {
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "shift+left":
		return tea.KeyMsg{Type: tea.KeyShiftLeft}
	case "shift+right":
		return tea.KeyMsg{Type: tea.KeyShiftRight}
	case "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	return keyMsg(k)
}

// pressView presses keys; "]KIND" presses ] until the event shown last
// is of that kind.
func pressView(m *model, keys ...string) {
	for _, k := range keys {
		if kind, ok := strings.CutPrefix(k, "]"); ok && kind != "" {
			for i := 0; i < m.rp.rec.len(); i++ {
				m.Update(viewKeyMsg("]"))
				if e, _ := m.rp.rec.event(m.rp.pos - 1); string(e.Kind) == kind {
					break
				}
			}
			continue
		}
		m.Update(viewKeyMsg(k))
	}
}

// TestGoldenView: spate view of the recorded kill at several positions:
// the start, one second in, the node's loss (] jumps), the recovery, the
// end; on the panes that change most.
func TestGoldenView(t *testing.T) {
	sixSec := []string{"shift+right", "shift+right", "shift+right", "shift+right", "shift+right", "shift+right"}
	cases := []struct {
		name string
		w, h int
		keys []string
	}{
		{"view-start-80x24", 80, 24, nil},
		{"view-1s-cluster-160x48", 160, 48, []string{"shift+right"}},
		{"view-6s-charts-160x48", 160, 48, append([]string{"8"}, sixSec...)},
		{"view-lost-cluster-160x48", 160, 48, []string{"]node_lost"}},
		{"view-restored-recovery-80x24", 80, 24, []string{"7", "]recovery_restored"}},
		{"view-recovered-recovery-160x48", 160, 48, []string{"7", "]recovery_done", "enter"}},
		{"view-end-charts-80x24", 80, 24, []string{"8", "G"}},
		{"view-end-dataflow-160x48", 160, 48, []string{"2", "G"}},
		{"view-help-80x24", 80, 24, []string{"?"}},
		{"view-kill-refused-80x24", 80, 24, []string{"G", "j", "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := viewing(t, "run-kill.jsonl", c.w, c.h)
			pressView(m, c.keys...)
			got := m.View()
			checkFrame(t, c.name, got, c.w, c.h)
			checkGolden(t, c.name, got)
		})
	}
}

// TestViewTransport: each transport key moves the position as it says,
// on the model (the program's own loop is TestViewKeysInAProgram).
func TestViewTransport(t *testing.T) {
	m := viewing(t, "run-kill.jsonl", 160, 48)
	rec := m.rp.rec
	n := rec.len()
	pos := func() int { return m.rp.pos }
	if pos() != 0 || m.rp.playing {
		t.Fatalf("opens at %d, playing %v; want 0, paused", pos(), m.rp.playing)
	}
	pressView(m, "right", "right", "right")
	if pos() != 3 {
		t.Errorf("→ ×3: at %d, want 3", pos())
	}
	pressView(m, "left")
	if pos() != 2 {
		t.Errorf("←: at %d, want 2", pos())
	}
	pressView(m, "shift+right")
	if want := rec.countUpTo(rec.time(1).Add(time.Second)); pos() != want {
		t.Errorf("shift+→: at %d, want %d (the events up to one second on)", pos(), want)
	}
	if d := rec.time(pos() - 1).Sub(rec.time(1)); d > time.Second {
		t.Errorf("shift+→ went %v on, more than a second", d)
	}
	pressView(m, "shift+right", "shift+right")
	at := pos()
	pressView(m, "shift+left")
	if want := min(rec.countUpTo(rec.time(at-1).Add(-time.Second)), at-1); pos() != want {
		t.Errorf("shift+←: from %d to %d, want %d", at, pos(), want)
	}
	pressView(m, "G")
	if pos() != n {
		t.Errorf("G: at %d, want %d", pos(), n)
	}
	pressView(m, "g")
	if pos() != 0 {
		t.Errorf("g: at %d, want 0", pos())
	}
	// ] lands on each notable event in turn, [ goes back through them.
	var marks []int
	for i := 0; i < n; i++ {
		if jumpNotable.has(rec.class[i]) {
			marks = append(marks, i+1)
		}
	}
	for k, want := range marks {
		pressView(m, "]")
		if pos() != want {
			t.Fatalf("] #%d: at %d, want %d", k+1, pos(), want)
		}
	}
	pressView(m, "]")
	if pos() != marks[len(marks)-1] || !strings.Contains(m.flash, "no later") {
		t.Errorf("] past the last: at %d, flash %q", pos(), m.flash)
	}
	for k := len(marks) - 2; k >= 0; k-- {
		pressView(m, "[")
		if pos() != marks[k] {
			t.Fatalf("[ back to #%d: at %d, want %d", k+1, pos(), marks[k])
		}
	}
	// The node's loss is one of the marks, and the panes show it there.
	pressView(m, "g")
	for m.s.nodes["n2"] == nil || m.s.nodes["n2"].State != "dead" {
		before := pos()
		pressView(m, "]")
		if pos() == before {
			t.Fatal("] never reached the loss of n2")
		}
	}
	if e, _ := rec.event(pos() - 1); e.Kind != "node_lost" {
		t.Errorf("n2 is dead at %s, want at node_lost", e.Kind)
	}
	// Speed: 1x to start, + up to 16x and no further, - down to 0.25x.
	if speeds[m.rp.speed] != 1 {
		t.Errorf("starts at %gx", speeds[m.rp.speed])
	}
	pressView(m, "+", "+", "+", "+", "+", "+")
	if speeds[m.rp.speed] != 16 {
		t.Errorf("+ ×6: %gx, want 16x", speeds[m.rp.speed])
	}
	pressView(m, "-", "-", "-", "-", "-", "-", "-", "-")
	if speeds[m.rp.speed] != 0.25 {
		t.Errorf("- ×8: %gx, want 0.25x", speeds[m.rp.speed])
	}
	pressView(m, "space")
	if !m.rp.playing {
		t.Error("space does not play")
	}
	pressView(m, "space")
	if m.rp.playing {
		t.Error("space does not pause")
	}
}

// TestViewPlays: ticks advance the recording's clock by the frame times
// the speed, and the state follows; at the end playback stops.
func TestViewPlays(t *testing.T) {
	m := viewing(t, "run-kill.jsonl", 80, 24)
	rec := m.rp.rec
	m.rp.done = true                // no background fold in this test: every position is within the first snapshot
	pressView(m, "space", "+", "+") // 4x
	start := m.rp.at
	m.Update(playTick{})
	if got, want := m.rp.at.Sub(start), 4*m.rp.frame; got != want {
		t.Errorf("one tick at 4x moved the clock %v, want %v", got, want)
	}
	if want := rec.countUpTo(m.rp.at); m.rp.pos != want {
		t.Errorf("after a tick at %d, want %d", m.rp.pos, want)
	}
	for i := 0; i < 1000 && m.rp.playing; i++ {
		m.Update(playTick{})
	}
	if m.rp.playing || m.rp.pos != rec.len() {
		t.Errorf("playing %v at %d of %d; want stopped at the end", m.rp.playing, m.rp.pos, rec.len())
	}
	if m.s.phase != "finished" {
		t.Errorf("phase %q at the end, want finished", m.s.phase)
	}
}

// TestSnapshotsAreTheFold: the state a seek builds from a snapshot is the
// state of folding every event from the start, at every position, forward
// and backward; the snapshots themselves are never changed by a seek.
func TestSnapshotsAreTheFold(t *testing.T) {
	rec := recorded(t, "run-kill.jsonl")
	rec.every = 16
	rec.buildSnapshots()
	if _, done, err := rec.progress(); !done || err != nil {
		t.Fatalf("fold: done %v, %v", done, err)
	}
	if want := rec.len()/16 + 1; len(rec.snaps) != want {
		t.Fatalf("%d snapshots, want %d", len(rec.snaps), want)
	}
	snap3 := rec.snaps[3].clone()
	straight := newState()
	for pos := 0; pos <= rec.len(); pos++ {
		if pos > 0 {
			e, err := rec.event(pos - 1)
			if err != nil {
				t.Fatal(err)
			}
			straight.apply(e)
		}
		got, ok, err := rec.stateAt(pos)
		if err != nil || !ok {
			t.Fatalf("stateAt(%d): ok %v, %v", pos, ok, err)
		}
		if !reflect.DeepEqual(got, straight) {
			t.Fatalf("stateAt(%d) differs from the fold of events [0, %d)", pos, pos)
		}
		got.apply(e0(rec)) // changing a seek's state leaves the snapshots alone
	}
	if !reflect.DeepEqual(rec.snaps[3], snap3) {
		t.Error("a seek changed a snapshot")
	}

	// The model seeks back and forth through the snapshots.
	m, _ := newViewModel(rec, ViewOptions{Plain: true})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	for _, target := range []int{100, 3, 170, 40, 41, 0, 169} {
		m.seek(target)
		want, _, _ := rec.stateAt(target)
		if m.rp.pos != target || !reflect.DeepEqual(m.s, want) {
			t.Errorf("seek(%d): at %d, state equal %v", target, m.rp.pos, reflect.DeepEqual(m.s, want))
		}
	}
}

func e0(rec *recording) (e events.Event) {
	e, _ = rec.event(0)
	return e
}

// TestSeekAheadOfTheFold: a seek past the background fold's snapshots
// lands on its target at once (skimmed from the latest snapshot), with
// the state a fold of every event before it gives, and the background
// fold's progress stays in the header.
func TestSeekAheadOfTheFold(t *testing.T) {
	rec := recorded(t, "run-kill.jsonl")
	rec.every = 16
	m, _ := newViewModel(rec, ViewOptions{Plain: true})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	pressView(m, "G")
	if m.rp.pos != rec.len() {
		t.Fatalf("G before the fold: at %d, want %d", m.rp.pos, rec.len())
	}
	exact := newState()
	if err := rec.fold(exact, 0, rec.len()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(exact, m.s) {
		t.Errorf("G before the fold: the state is not the fold of every event")
	}
	// The fold part of the way: the first three snapshots.
	rec.buildSnapshots()
	all := rec.snaps
	rec.mu.Lock()
	rec.snaps, rec.foldDone = all[:3], false
	rec.mu.Unlock()
	m.Update(playTick{})
	if v := m.View(); !strings.Contains(strings.SplitN(v, "\n", 2)[0], "folded 18%") {
		t.Errorf("the header does not say how far the fold is:\n%s", strings.SplitN(v, "\n", 2)[0])
	}
	for _, target := range []int{100, 33, 31, 150, 2} {
		m.seek(target)
		want := newState()
		if err := rec.fold(want, 0, target); err != nil {
			t.Fatal(err)
		}
		if m.rp.pos != target || !reflect.DeepEqual(want, m.s) {
			t.Errorf("seek(%d) with snapshots to 32: at %d, %s", target, m.rp.pos, stateDiff(want, m.s))
		}
	}
}

// TestViewRefusesActions: every action, by key or by command, is refused
// with a line that says this is a recording; nothing else happens.
func TestViewRefusesActions(t *testing.T) {
	m := viewing(t, "run-kill.jsonl", 80, 24)
	pressView(m, "G")
	for _, keys := range [][]string{{"x"}, {"p"}, {"i"}, {"h"}, {":", "k", "i", "l", "l", " ", "n", "1", "enter"}} {
		_, cmd := m.Update(keyMsg(keys[0]))
		for _, k := range keys[1:] {
			_, cmd = m.Update(keyMsg(k))
		}
		if cmd != nil {
			if msg := cmd(); msg != nil {
				if _, ok := msg.(actionMsg); ok {
					t.Errorf("%v: an action was sent", keys)
				}
			}
		}
		if !strings.Contains(m.flash, "this is a recording") {
			t.Errorf("%v: flash %q, want a line saying this is a recording", keys, m.flash)
		}
		if l := m.s.log[len(m.s.log)-1]; !l.Local || !l.Bad || !strings.Contains(l.E.Text, "would change a cluster") {
			t.Errorf("%v: the log's last line is %q", keys, l.E.Text)
		}
	}
}

// TestViewKeysInAProgram presses the transport keys in a real tea.Program
// and reads the position in the header it draws.
func TestViewKeysInAProgram(t *testing.T) {
	rec := recorded(t, "run-kill.jsonl")
	m, _ := newViewModel(rec, ViewOptions{Plain: true})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 48))
	n := rec.len()
	waitFor := func(what string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(what)) },
			teatest.WithDuration(20*time.Second)) // a hang guard, not a timing assertion
	}
	waitFor(fmt.Sprintf("ev 0/%d", n))
	tm.Send(tea.KeyMsg{Type: tea.KeyRight})
	waitFor(fmt.Sprintf("ev 1/%d", n))
	tm.Type("G")
	waitFor(fmt.Sprintf("ev %d/%d", n, n))
	tm.Type("g")
	waitFor(fmt.Sprintf("ev 0/%d", n))
	tm.Type("]")
	waitFor(fmt.Sprintf("ev %d/%d", rec.next(0, jumpNotable)+1, n))
	tm.Type("++++")
	waitFor("‖ 16x")
	tm.Send(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	waitFor("▶ 16x")
	waitFor(fmt.Sprintf("ev %d/%d", n, n)) // it plays to the end
	tm.Type("x")
	waitFor("this is a recording")
	tm.Type("q")
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(20*time.Second)).(*model)
	if fm.rp.pos != n || fm.rp.playing {
		t.Errorf("at the end: at %d, playing %v", fm.rp.pos, fm.rp.playing)
	}
}

// TestViewBadLines: a line that is not an event is a one-line error naming
// the file and line, exit code 2, whether it shows at the open (cut short,
// not JSON) or only when folded (a broken value past the prefix).
func TestViewBadLines(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "run-kill.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	cases := []struct {
		name string
		bad  string
	}{
		{"cut short", `{"seq":5,"time":"2026-11-30T05:16:01.300890195Z","kind":"node_sp`},
		{"not JSON", `hello`},
		{"no time", `{"seq":5,"kind":"node_spawned","text":"x"}`},
		{"broken past the prefix", `{"seq":5,"time":"2026-11-30T05:16:01.300890195Z","kind":"node_spawned","text":"x","fields":{"pid":12,}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			body := strings.Join(lines[:4], "") + c.bad + "\n" + strings.Join(lines[5:], "")
			if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := viewMain([]string{"--data", dir}, &out, &errb, func(d string) (string, error) { return d, nil },
				strings.NewReader(""))
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			msg := errb.String()
			if want := filepath.Join(dir, "events.jsonl") + ":5: "; !strings.Contains(msg, want) || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr %q, want one line naming %s", msg, want)
			}
		})
	}
}

// TestViewMainFlags: bad flags and a missing run are exit 2 with a line.
func TestViewMainFlags(t *testing.T) {
	noRun := func(string) (string, error) { return "", fmt.Errorf("no --data given and no spate-data/latest") }
	for _, args := range [][]string{{"--speed", "32"}, {"--bogus"}, {"extra"}, {}} {
		var errb bytes.Buffer
		if code := viewMain(args, io.Discard, &errb, noRun, strings.NewReader("")); code != 2 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
