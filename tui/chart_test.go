package tui

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// TestChartsUnderNoColor: on a terminal that could show colour, NO_COLOR
// gives the charts pane exactly the plain goldens (the glyphs carry every
// meaning); with colour, the same frame plus colours, and the fault
// windows on a background.
func TestChartsUnderNoColor(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("COLORTERM", "truecolor")
	// Without NO_COLOR this terminal gets colour: the test below is about
	// NO_COLOR, not a terminal that has none.
	if p := lipgloss.NewRenderer(io.Discard, termenv.WithTTY(true)).ColorProfile(); p == termenv.Ascii {
		t.Fatalf("the terminal's profile is Ascii without NO_COLOR")
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		w, h := size[0], size[1]
		name := "8-charts-" + itoa(w) + "x" + itoa(h)
		t.Run(name, func(t *testing.T) {
			t.Setenv("NO_COLOR", "1")
			m := loaded(t, w, h)
			m.st = newStyles(lipgloss.NewRenderer(io.Discard, termenv.WithTTY(true)))
			press(m, "8")
			got := m.View()
			checkFrame(t, name, got, w, h)
			checkGolden(t, name, got)
		})
		t.Run(name+"-colour", func(t *testing.T) {
			m := loaded(t, w, h)
			r := lipgloss.NewRenderer(io.Discard)
			r.SetColorProfile(termenv.TrueColor)
			r.SetHasDarkBackground(true)
			m.st = newStyles(r)
			press(m, "8")
			got := m.View()
			if !strings.Contains(got, "\x1b[") {
				t.Fatal("no colour at all")
			}
			plain := loaded(t, w, h)
			press(plain, "8")
			if ansi.Strip(got) != plain.View() {
				t.Errorf("the colour frame is not the plain frame plus colour:\n%s", ansi.Strip(got))
			}
			if bg := "48;2;95;0;0"; !strings.Contains(got, bg) {
				t.Errorf("no fault shading (background %s) in the colour frame", bg)
			}
		})
	}
}

func TestNiceRange(t *testing.T) {
	cases := []struct {
		name           string
		lo, hi         float64
		wantLo, wantHi float64
	}{
		{"rates from zero", 5700, 63100, 0, 80000},
		{"a steady lag keeps its floor", 104, 106, 104, 106},
		{"a lag spike", 100, 900, 0, 1000},
		{"nothing", 0, 0, 0, 1},
		{"one value", 50, 50, 50, 52},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lo, hi, step := niceRange(c.lo, c.hi, 4)
			if lo != c.wantLo || hi != c.wantHi {
				t.Errorf("niceRange(%g, %g) = %g..%g (step %g), want %g..%g", c.lo, c.hi, lo, hi, step, c.wantLo, c.wantHi)
			}
			if lo > c.lo || hi < c.hi || (hi-lo)/step > 4+1e-9 {
				t.Errorf("niceRange(%g, %g) = %g..%g step %g: does not cover, or more than 4 steps", c.lo, c.hi, lo, hi, step)
			}
		})
	}
}

// TestPlotDrawsALine: a rise, a fall and a flat stretch are one line of
// connected glyphs, one per column; a gap (NaN) leaves its column empty;
// the second series uses the heavy glyphs.
func TestPlotDrawsALine(t *testing.T) {
	st := newStyles(plainRenderer())
	nan := math.NaN()
	rows := plot(st, []line{
		{vals: []float64{0, 0, 3, 3, 1, nan, 1}, g: lightLine, style: st.bar},
		{vals: []float64{nan, nan, nan, nan, nan, nan, 2}, g: heavyLine, style: st.bar2},
	}, make([]bool, 7), 4, 0, 3)
	want := []string{
		"  ╭─╮  ",
		"  │ │ ━",
		"  │ ╰ ─",
		"──╯    ",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestValueLabelsNameTheirRows: a label is on the row that shows its
// value, or not at all; two labels are never on adjacent rows.
func TestValueLabelsNameTheirRows(t *testing.T) {
	got := valueLabels(0, 80, 20, 5, 3, func(v float64) string { return itoa(int(v)) })
	want := []string{" 80", "   ", " 40", "   ", "  0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("5 rows: %q, want %q", got, want)
	}
	got = valueLabels(0, 80, 20, 9, 3, func(v float64) string { return itoa(int(v)) })
	want = []string{" 80", "   ", " 60", "   ", " 40", "   ", " 20", "   ", "  0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("9 rows: %q, want %q", got, want)
	}
	got = valueLabels(0, 80, 20, 4, 3, func(v float64) string { return itoa(int(v)) })
	want = []string{" 80", "   ", "   ", "  0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("4 rows: %q, want %q (no row shows 20, 40 or 60 exactly)", got, want)
	}
}

// TestTimeAxisLabelsTheClock: labels at round times, a ┴ under each.
func TestTimeAxisLabelsTheClock(t *testing.T) {
	st := newStyles(plainRenderer())
	start := time.Date(2026, 11, 30, 5, 16, 0, 500e6, time.UTC)
	axis, labels := timeAxis(st, start, 100*time.Millisecond, make([]bool, 60))
	if !strings.Contains(labels, "05:16:02") || !strings.Contains(labels, "05:16:04") {
		t.Errorf("labels %q lack 05:16:02 and 05:16:04", labels)
	}
	if c := strings.Index(string([]rune(axis)), "┴"); c < 0 {
		t.Errorf("axis %q has no tick", axis)
	}
	if r := []rune(axis); r[35] != '┴' { // 05:16:04 is 3.5 s in: column 35
		t.Errorf("axis %q: no tick at column 35", axis)
	}
}

func plainRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return r
}
