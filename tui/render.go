package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"spate/internal/human"
)

// Plain string helpers shared by the panes. Widths are terminal cells;
// every helper is safe on styled (ANSI) text.

// width is the printed width of s.
func width(s string) int { return ansi.StringWidth(s) }

// fit cuts s to w cells (with …) or pads it with spaces to exactly w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := width(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// pad is fit for plain text.
func pad(s string, w int) string { return fit(s, w) }

// padLeft right-aligns s in w cells.
func padLeft(s string, w int) string {
	n := width(s)
	if n >= w {
		return fit(s, w)
	}
	return strings.Repeat(" ", w-n) + s
}

// block makes lines into exactly h lines of exactly w cells.
func block(lines []string, w, h int) []string {
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", w)
		}
	}
	return out
}

// sideBySide joins two blocks of the same height with a one-cell gutter.
func sideBySide(a, b []string, sep string) []string {
	out := make([]string, max(len(a), len(b)))
	for i := range out {
		var l, r string
		if i < len(a) {
			l = a[i]
		}
		if i < len(b) {
			r = b[i]
		}
		out[i] = l + sep + r
	}
	return out
}

// column is a table column: a title, a minimum and preferred width, and
// right alignment for numbers. Flex columns share what is left.
type column struct {
	Title string
	W     int
	Right bool
	Flex  bool
	Drop  int // drop order when narrow: higher goes first; 0 never
}

// table renders rows under cols in w x h, keeping row sel visible (sel < 0:
// none, and the view follows the bottom when follow is set). cells may
// carry styles; the selected row is shown in reverse video. It returns the
// lines and the first row shown.
func table(st styles, cols []column, rows [][]string, sel, w, h int, follow bool) []string {
	// Two cells for the cursor (▸), so the selection shows without colour.
	w -= 2
	ic := fitColumns(cols, w)
	var lines []string
	head := make([]string, 0, len(ic))
	for _, c := range ic {
		if c.Right {
			head = append(head, padLeft(c.Title, c.W))
		} else {
			head = append(head, pad(c.Title, c.W))
		}
	}
	lines = append(lines, "  "+st.colHead.Render(fit(strings.Join(head, " "), w)))
	body := h - 1
	if body <= 0 {
		return lines[:min(len(lines), h)]
	}
	first := 0
	if sel >= 0 {
		if sel >= body {
			first = sel - body + 1
		}
	} else if follow && len(rows) > body {
		first = len(rows) - body
	}
	for i := first; i < len(rows) && i < first+body; i++ {
		cells := make([]string, 0, len(ic))
		for _, c := range ic {
			v := ""
			if c.idx < len(rows[i]) {
				v = rows[i][c.idx]
			}
			if i == sel {
				v = ansi.Strip(v)
			}
			if c.Right {
				cells = append(cells, padLeft(v, c.W))
			} else {
				cells = append(cells, fit(v, c.W))
			}
		}
		line := fit(strings.Join(cells, " "), w)
		if i == sel {
			line = "▸ " + st.sel.Render(line)
		} else {
			line = "  " + line
		}
		lines = append(lines, line)
	}
	if len(rows) == 0 {
		lines = append(lines, "  "+st.dim.Render("(nothing yet)"))
	}
	return lines
}

// fitColumns drops columns (highest Drop first) until the minimum widths
// fit in w, then hands the spare cells to the flex columns.
func fitColumns(cols []column, w int) []indexedColumn {
	ic := make([]indexedColumn, len(cols))
	for i, c := range cols {
		ic[i] = indexedColumn{column: c, idx: i}
	}
	need := func() int {
		n := 0
		for _, c := range ic {
			n += c.W + 1
		}
		return n - 1
	}
	for need() > w {
		worst := -1
		for i, c := range ic {
			if c.Drop > 0 && (worst < 0 || c.Drop > ic[worst].Drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		ic = append(ic[:worst], ic[worst+1:]...)
	}
	spare := w - need()
	flex := 0
	for _, c := range ic {
		if c.Flex {
			flex++
		}
	}
	for i := range ic {
		if ic[i].Flex && spare > 0 {
			add := spare / flex
			ic[i].W += add
			spare -= add
			flex--
		}
	}
	return ic
}

type indexedColumn struct {
	column
	idx int
}

// sparkRunes draw one-row charts; the index is the level 0..8.
var sparkRunes = []rune(" ▁▂▃▄▅▆▇█")

// shadeRow styles runs of a row: shaded columns on the fault background.
func shadeRow(st styles, base lipgloss.Style, row []rune, shade []bool) string {
	var b strings.Builder
	start := 0
	flush := func(end int, shaded bool) {
		if end <= start {
			return
		}
		seg := string(row[start:end])
		if shaded {
			b.WriteString(st.fault.Inherit(base).Render(seg))
		} else {
			b.WriteString(base.Render(seg))
		}
	}
	isShaded := func(i int) bool { return i < len(shade) && shade[i] }
	for i := 1; i <= len(row); i++ {
		if i == len(row) || isShaded(i) != isShaded(start) {
			flush(i, isShaded(start))
			start = i
		}
	}
	return b.String()
}

// spark is a one-row sparkline of vals scaled to their maximum.
func spark(vals []float64) string {
	top := 0.0
	for _, v := range vals {
		top = math.Max(top, v)
	}
	var b strings.Builder
	for _, v := range vals {
		l := 0
		if top > 0 {
			l = int(math.Round(v / top * 8))
		}
		if v > 0 && l == 0 {
			l = 1
		}
		b.WriteRune(sparkRunes[l])
	}
	return b.String()
}

// Formatting of quantities: short, fixed vocabulary.

func fmtBytes(n int64) string {
	switch {
	case n < 0:
		return "-"
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}

// fmtRate is a count or rate as human.Count prints it, whole below a
// thousand (a rate's fraction is noise on a dashboard).
func fmtRate(v float64) string {
	if v < 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return human.Count(v)
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func fmtMs(ms float64) string { return fmtDur(time.Duration(ms * float64(time.Millisecond))) }

// fmtAgo says how long before now t was: "3s ago".
func fmtAgo(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh ago", int(d.Hours()))
}

func fmtClock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("15:04:05.000")
}

func ansiStrip(s string) string { return ansi.Strip(s) }
