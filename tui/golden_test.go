package tui

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"spate/events"
)

// updating reports the -update flag. The flag itself is defined by
// charmbracelet/x/exp/golden (imported through teatest); defining it again
// here would panic, so the goldens share it.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// clock is the frozen time of the goldens: just after the recorded run.
var clock = time.Date(2026, 11, 30, 5, 16, 12, 0, time.UTC)

func fixedNow() time.Time { return clock }

// loadEvents reads JSON-lines event files and merges them by time.
func loadEvents(tb testing.TB, names ...string) []events.Event {
	tb.Helper()
	var all []events.Event
	for _, name := range names {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			var e events.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				tb.Fatalf("%s:%d: %v", name, line, err)
			}
			all = append(all, e)
		}
		f.Close()
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all
}

// loaded is a model that has seen the recorded run plus the future kinds,
// at size w x h, in the Ascii profile.
func loaded(tb testing.TB, w, h int, files ...string) *model {
	tb.Helper()
	if len(files) == 0 {
		files = []string{"run-kill.jsonl", "future.jsonl"}
	}
	m := newModel(Options{Plain: true, Now: fixedNow, Title: "golden"})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(eventsMsg(loadEvents(tb, files...)))
	return m
}

func press(m *model, keys ...string) {
	for _, k := range keys {
		m.Update(keyMsg(k))
	}
}

// keyMsg builds the tea.KeyMsg a terminal would send for k.
func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from %s (run with -update if the change is meant):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// checkFrame asserts what every frame must be: exactly h lines of exactly
// w cells, and no colour in the Ascii profile.
func checkFrame(t *testing.T, name, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Errorf("%s: %d lines, want %d", name, len(lines), h)
	}
	for i, l := range lines {
		if n := width(l); n != w {
			t.Errorf("%s: line %d is %d cells wide, want %d: %q", name, i+1, n, w, l)
		}
		if strings.Contains(l, "\x1b[") {
			t.Errorf("%s: line %d has an escape sequence in the Ascii profile: %q", name, i+1, l)
		}
	}
}

func TestGoldenPanes(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		w, h := size[0], size[1]
		for i, p := range panes {
			name := fmt.Sprintf("%s-%s-%dx%d", paneKey(i), p.name(), w, h)
			t.Run(name, func(t *testing.T) {
				m := loaded(t, w, h)
				press(m, paneKey(i))
				got := m.View()
				checkFrame(t, name, got, w, h)
				checkGolden(t, name, got)
			})
		}
	}
}

// TestGoldenScreens covers the other screens: selections and drill-downs,
// help, the filter and command lines, and the degraded layouts.
func TestGoldenScreens(t *testing.T) {
	cases := []struct {
		name string
		w, h int
		keys []string
		file []string
	}{
		{"help-80x24", 80, 24, []string{"?"}, nil},
		{"help-160x48", 160, 48, []string{"?"}, nil},
		{"cluster-detail-n2-160x48", 160, 48, []string{"1", "j", "enter"}, nil},
		{"dataflow-detail-80x24", 80, 24, []string{"2", "j", "j", "enter"}, nil},
		{"checkpoint-detail-80x24", 80, 24, []string{"3", "enter"}, nil},
		{"recovery-detail-160x48", 160, 48, []string{"7", "enter"}, nil},
		{"log-filter-typing-80x24", 80, 24, []string{"/", "r", "e", "c", "o", "v"}, nil},
		{"log-filtered-80x24", 80, 24, []string{"/", "r", "e", "c", "o", "v", "enter"}, nil},
		{"log-event-detail-80x24", 80, 24, []string{"9", "k", "enter"}, nil},
		{"command-typing-80x24", 80, 24, []string{":", "s", "c", "a", "l", "e", " ", "c", "o", "u", "n", "t", " ", "4"}, nil},
		{"command-bad-80x24", 80, 24, []string{":", "s", "c", "a", "l", "e", " ", "c", "o", "u", "n", "t", "enter"}, nil},
		{"read-only-kill-80x24", 80, 24, []string{"j", "x"}, nil},
		{"side-120x32", 120, 32, []string{"3"}, nil},
		{"table-50x12", 50, 12, []string{"1"}, nil},
		{"too-small-30x6", 30, 6, nil, nil},
		{"global-recovery-160x48", 160, 48, []string{"7"}, []string{"run-global.jsonl"}},
		{"global-checkpoints-80x24", 80, 24, []string{"3"}, []string{"run-global.jsonl"}},
		{"empty-80x24", 80, 24, nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m *model
			if c.file != nil && len(c.file) == 0 {
				m = newModel(Options{Plain: true, Now: fixedNow})
				m.Update(tea.WindowSizeMsg{Width: c.w, Height: c.h})
			} else {
				m = loaded(t, c.w, c.h, c.file...)
			}
			press(m, c.keys...)
			got := m.View()
			checkFrame(t, c.name, got, c.w, c.h)
			checkGolden(t, c.name, got)
		})
	}
}
