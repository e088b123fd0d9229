package tui

import (
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// The charts are drawn here, not by a chart library: each series is a
// line of box-drawing glyphs, one glyph per column (a light line for one
// series, a heavy one for the other, so that they stay apart without
// colour), over columns shaded where a fault was open, with a row of
// checkpoint and recovery marks and a time axis under them. A chart is
// plain strings, like every pane. Not ntcharts: it tells overlaid series
// apart by colour only, which NO_COLOR and the plain goldens lose, and
// the shading and mark rows would need its canvas cell by cell anyway.

// glyphs draws one series: flat, a rise (bottom and top corner), a fall
// (top and bottom corner) and the vertical between.
type glyphs struct {
	flat, riseFrom, riseTo, fallFrom, fallTo, vert rune
}

var (
	lightLine = glyphs{'─', '╯', '╭', '╮', '╰', '│'}
	heavyLine = glyphs{'━', '┛', '┏', '┓', '┗', '┃'}
)

// line is one series of a chart: a value per column (NaN: no sample).
type line struct {
	vals  []float64
	g     glyphs
	style lipgloss.Style
}

// plot draws lines in h rows over len(shade) columns, the value range lo
// to hi mapped onto the rows. Later lines are drawn over earlier ones.
// Shaded columns get the fault background.
func plot(st styles, lines []line, shade []bool, h int, lo, hi float64) []string {
	cols := len(shade)
	grid := make([][]rune, h)
	who := make([][]int, h) // which line drew the cell, -1 none
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", cols))
		who[r] = make([]int, cols)
		for c := range who[r] {
			who[r][c] = -1
		}
	}
	row := func(v float64) int { // from the bottom
		if hi <= lo {
			return 0
		}
		y := int(math.Round((v - lo) / (hi - lo) * float64(h-1)))
		return min(max(y, 0), h-1)
	}
	set := func(y, c int, ch rune, k int) {
		grid[h-1-y][c] = ch
		who[h-1-y][c] = k
	}
	for k, l := range lines {
		prev := -1
		for c := 0; c < cols && c < len(l.vals); c++ {
			v := l.vals[c]
			if math.IsNaN(v) {
				prev = -1
				continue
			}
			y := row(v)
			switch {
			case prev < 0 || prev == y:
				set(y, c, l.g.flat, k)
			case y > prev:
				set(prev, c, l.g.riseFrom, k)
				for i := prev + 1; i < y; i++ {
					set(i, c, l.g.vert, k)
				}
				set(y, c, l.g.riseTo, k)
			default:
				set(prev, c, l.g.fallFrom, k)
				for i := y + 1; i < prev; i++ {
					set(i, c, l.g.vert, k)
				}
				set(y, c, l.g.fallTo, k)
			}
			prev = y
		}
	}
	out := make([]string, h)
	for r := range grid {
		var b strings.Builder
		start := 0
		key := func(c int) int {
			k := who[r][c] + 1
			if c < len(shade) && shade[c] {
				k += 1000
			}
			return k
		}
		for c := 1; c <= cols; c++ {
			if c < cols && key(c) == key(start) {
				continue
			}
			seg := string(grid[r][start:c])
			base := st.dim
			if k := who[r][start]; k >= 0 {
				base = lines[k].style
			}
			if shade[start] {
				b.WriteString(st.fault.Inherit(base).Render(seg))
			} else {
				b.WriteString(base.Render(seg))
			}
			start = c
		}
		out[r] = b.String()
	}
	return out
}

// niceRange widens [lo, hi] to round numbers: a step of 1, 2 or 5 times a
// power of ten and at least 1 (the units are whole records and
// milliseconds), at most n steps. A range that starts below half its top
// starts at zero, so rates read from zero and a steady lag shows its
// wobble.
func niceRange(lo, hi float64, n int) (float64, float64, float64) {
	if math.IsNaN(lo) || math.IsNaN(hi) || hi <= 0 && lo >= 0 {
		return 0, 1, 1
	}
	if lo > hi/2 && lo > 0 {
		// keep lo
	} else {
		lo = min(lo, 0)
	}
	span := hi - lo
	if span <= 0 {
		span = math.Max(math.Abs(hi)/10, 1)
	}
	step := max(niceStep(span/float64(max(n, 1))), 1)
	lo = math.Floor(lo/step) * step
	hi = math.Ceil(hi/step) * step
	if hi <= lo {
		hi = lo + step
	}
	for (hi-lo)/step > float64(n) {
		step = niceStep(step * 1.5)
		lo = math.Floor(lo/step) * step
		hi = math.Ceil(hi/step) * step
	}
	return lo, hi, step
}

func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// valueLabels labels the top row with hi, the bottom one with lo, and a
// row between with a multiple of step only where that value falls on the
// row (a label never names a value its row does not show): a column of h
// strings (from the top) of width w, right-aligned.
func valueLabels(lo, hi, step float64, h, w int, unit func(float64) string) []string {
	out := make([]string, h)
	for i := range out {
		out[i] = strings.Repeat(" ", w)
	}
	if h < 1 || hi <= lo {
		if h > 0 {
			out[h-1] = padLeft(unit(lo), w)
		}
		return out
	}
	used := make([]bool, h)
	put := func(r int, v float64) {
		used[r] = true
		out[r] = padLeft(unit(v), w)
	}
	put(h-1, lo)
	if h >= 2 {
		put(0, hi)
	}
	for v := lo + step; v < hi-step/2; v += step {
		exact := (v - lo) / (hi - lo) * float64(h-1)
		y := math.Round(exact)
		r := h - 1 - int(y)
		if math.Abs(exact-y) > 0.2 || r <= 0 || r >= h-1 || used[r-1] || used[r+1] {
			continue
		}
		put(r, v)
	}
	return out
}

// timeSteps are the spacings of the time axis's labels.
var timeSteps = []time.Duration{
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

// timeAxis is the axis row (─, ┴ at each label, ░ where shaded) and the
// row of clock labels under it, for cols columns of step from start.
func timeAxis(st styles, start time.Time, step time.Duration, shade []bool) (string, string) {
	cols := len(shade)
	axis := []rune(strings.Repeat("─", cols))
	labels := []rune(strings.Repeat(" ", cols))
	var every time.Duration
	for _, d := range timeSteps {
		if int(d/step) >= 12 {
			every = d
			break
		}
	}
	if every > 0 && step > 0 {
		format := "15:04:05"
		if every < time.Second {
			format = "04:05.0"
		}
		t := start.Truncate(every)
		if t.Before(start) {
			t = t.Add(every)
		}
		for ; ; t = t.Add(every) {
			c := int(t.Sub(start) / step)
			if c >= cols {
				break
			}
			axis[c] = '┴'
			l := []rune(t.Format(format))
			at := c - len(l)/2
			if at < 0 || at+len(l) > cols {
				continue
			}
			copy(labels[at:], l)
		}
	}
	for c := range axis {
		if shade[c] {
			axis[c] = '░'
		}
	}
	return shadeRow(st, st.dim, axis, shade), st.dim.Render(string(labels))
}

// marks is the row of events under a chart: ┆ a checkpoint completed in
// the column, F a full one, ✗ a node lost (a recovery starts), ✓ a
// recovery done. The strongest mark of a column wins.
func (s *state) marks(start time.Time, step time.Duration, cols int) []rune {
	row := []rune(strings.Repeat(" ", cols))
	rank := map[rune]int{' ': 0, '┆': 1, 'F': 2, '✓': 3, '✗': 4}
	put := func(t time.Time, r rune) {
		if t.IsZero() || t.Before(start) {
			return
		}
		c := int(t.Sub(start) / step)
		if c == cols && t.Equal(start.Add(time.Duration(cols)*step)) {
			c = cols - 1 // at now: the last column
		}
		if c < cols && rank[r] > rank[row[c]] {
			row[c] = r
		}
	}
	for _, c := range s.ckpts {
		if c.Status != "completed" {
			continue
		}
		if c.Full {
			put(c.End, 'F')
		} else {
			put(c.End, '┆')
		}
	}
	for _, r := range s.recoveries {
		put(r.start(), '✗')
		if r.Completed {
			put(r.Done, '✓')
		}
	}
	return row
}

// marksLegend explains the marks row and the shading.
const marksLegend = "┆ ckpt F full ✗ lost ✓ recovered ░ fault"
