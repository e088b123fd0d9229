package tui

import (
	"fmt"
	"strings"
)

// layout is how much fits. The dashboard degrades in steps: the charts
// strip goes first, then the side pane, then the header and tabs, and at
// last it only says the size it needs.
type layout int

const (
	layoutTooSmall layout = iota
	layoutTable           // one table and one status line
	layoutMain            // header, tabs, one pane, footer
	layoutSide            // + a side pane (nodes and the log's tail)
	layoutFull            // + the throughput and latency strip
)

// The sizes of the steps.
const (
	minW, minH       = 40, 8
	mainW, mainH     = 60, 16
	sideW, sideH     = 110, 30
	fullW, fullH     = 140, 40
	chartsStripLines = 11
)

func layoutFor(w, h int) layout {
	switch {
	case w >= fullW && h >= fullH:
		return layoutFull
	case w >= sideW && h >= sideH:
		return layoutSide
	case w >= mainW && h >= mainH:
		return layoutMain
	case w >= minW && h >= minH:
		return layoutTable
	}
	return layoutTooSmall
}

// View renders exactly m.w x m.h cells.
func (m *model) View() string {
	w, h := m.w, m.h
	if w <= 0 || h <= 0 {
		w, h = 80, 24 // before the first WindowSizeMsg
	}
	return strings.Join(m.frame(w, h), "\n")
}

func (m *model) frame(w, h int) []string {
	lay := layoutFor(w, h)
	if lay == layoutTooSmall {
		msg := []string{
			fmt.Sprintf("terminal %dx%d is too small", w, h),
			fmt.Sprintf("need %dx%d", minW, minH),
			fmt.Sprintf("(%dx%d for all panes)", fullW, fullH),
			"q quits",
		}
		return block(msg, w, h)
	}
	var out []string
	if lay == layoutTable {
		out = append(out, m.header(w, true))
		out = append(out, m.body(w, h-2)...)
		out = append(out, m.footer(w))
		return block(out, w, h)
	}
	out = append(out, m.header(w, false), m.tabs(w))
	bodyH := h - 3
	var strip []string
	if lay == layoutFull && m.mode != modeHelp && m.pane != paneCharts {
		strip = charts(m.view(paneCharts), w, chartsStripLines-1)
		if len(strip) > 0 {
			bodyH -= len(strip) + 1
		}
	}
	switch {
	case lay >= layoutSide && m.mode != modeHelp:
		sw := min(max(w/3, 40), 60)
		mw := w - sw - 3
		main := block(m.body(mw, bodyH), mw, bodyH)
		var side []string
		if m.tour != nil {
			side = block(m.lessonLines(sw, bodyH), sw, bodyH)
		} else {
			side = block(m.side(sw, bodyH), sw, bodyH)
		}
		out = append(out, sideBySide(main, side, m.st.dim.Render(" │ "))...)
	case m.tour != nil && m.mode != modeHelp:
		// No room beside: the lesson above the pane.
		lh := min(bodyH/2, len(m.lessonLines(w, bodyH/2)))
		out = append(out, block(m.lessonLines(w, lh), w, lh)...)
		out = append(out, m.st.dim.Render(strings.Repeat("─", w)))
		out = append(out, block(m.body(w, bodyH-lh-1), w, bodyH-lh-1)...)
	default:
		out = append(out, block(m.body(w, bodyH), w, bodyH)...)
	}
	if len(strip) > 0 {
		out = append(out, m.st.dim.Render(strings.Repeat("─", w)))
		out = append(out, strip...)
	}
	out = append(out, m.footer(w))
	return block(out, w, h)
}

// header is the status bar: run, phase, events, drops, the selected node.
func (m *model) header(w int, compact bool) string {
	s := m.s
	title := m.opt.Title
	if title == "" {
		title = s.run
	}
	phase := s.phase
	switch {
	case phase == "" && m.rp != nil:
		phase = "at the start"
	case phase == "":
		phase = "waiting for events"
	}
	if m.ended {
		phase += " (stream ended)"
	}
	parts := []string{"spate"}
	if title != "" {
		parts = append(parts, title)
	}
	if s.brk != "" {
		parts = append(parts, "BROKEN:"+s.brk) // on purpose (--break): said even when compact
	}
	if !compact {
		if s.job != "" {
			parts = append(parts, s.job)
		}
		if s.ft != "" {
			parts = append(parts, "ft "+s.ft)
		}
	}
	parts = append(parts, phase)
	dropped := m.dropped
	if m.opt.Dropped != nil {
		dropped += m.opt.Dropped()
	}
	parts = append(parts, fmt.Sprintf("events %d", s.total))
	if m.rp == nil && (dropped > 0 || !compact) {
		parts = append(parts, fmt.Sprintf("dropped %d", dropped))
	}
	if n := m.selectedNode(); n != "" {
		parts = append(parts, "node "+n)
	}
	if m.rp != nil {
		parts[0] = "spate view"
	}
	left := " " + strings.Join(parts, " │ ")
	right := m.now().Format("15:04:05") + " "
	if e := s.ended; !e.IsZero() {
		right = "ended " + e.Format("15:04:05") + " " // the run's clock stops with it
	}
	if compact {
		right = ""
	}
	if m.rp != nil {
		// The transport comes first: the run's names give way to it.
		right = m.transport(max(w/2+10, 20)) + " "
		left = fit(left, max(w-width(right), 0))
	}
	if width(left)+width(right) > w {
		return m.st.header.Render(fit(left, w))
	}
	return m.st.header.Render(left + strings.Repeat(" ", w-width(left)-width(right)) + right)
}

// tabs lists the panes; when they do not fit, only the current one is
// named.
func (m *model) tabs(w int) string {
	full := make([]string, len(panes))
	short := make([]string, len(panes))
	for i, p := range panes {
		star := ""
		if m.highlighted(i) {
			star = "★"
		}
		full[i] = fmt.Sprintf("%s%s %s", star, paneKey(i), p.name())
		short[i] = star + paneKey(i)
		if i == m.pane {
			short[i] = full[i]
		}
	}
	names := full
	if width(strings.Join(full, "  "))+3 > w { // a space and the brackets
		names = short
	}
	var b strings.Builder
	b.WriteString(" ")
	for i, n := range names {
		if i > 0 {
			b.WriteString("  ")
		}
		switch {
		case i == m.pane:
			b.WriteString(m.st.tabOn.Render("[" + n + "]"))
		case m.highlighted(i):
			b.WriteString(m.st.warn.Render(n))
		default:
			b.WriteString(m.st.tab.Render(n))
		}
	}
	return fit(b.String(), w)
}

// body is the current pane, or the help or detail screen over it.
func (m *model) body(w, h int) []string {
	switch m.mode {
	case modeHelp:
		lines := m.keys.helpText(m.st)
		if m.opt.RunDir != "" {
			lines = append(lines, "", m.st.title.Render("run directory"), "  "+m.opt.RunDir+"  (events.jsonl, logs/, checkpoints/, output/)")
		}
		return scrolled(lines, m.scroll, h)
	case modeFork:
		return m.forkMenu(h)
	case modeForkOut:
		return m.forkOutput(h)
	case modeDetail:
		title, lines := panes[m.pane].detail(m.view(m.pane))
		head := m.st.title.Render(title) + m.st.dim.Render("  (esc back, j/k scroll)")
		return append([]string{head}, scrolled(lines, m.scroll, h-1)...)
	}
	return panes[m.pane].render(m.view(m.pane), w, h)
}

func scrolled(lines []string, off, h int) []string {
	if off > len(lines)-h {
		off = max(len(lines)-h, 0)
	}
	lines = lines[off:]
	if len(lines) > h {
		lines = lines[:h]
	}
	return lines
}

// footer is the input line when typing, else the last action's result and
// the key hints.
func (m *model) footer(w int) string {
	switch m.mode {
	case modeFilter:
		return fit(m.st.input.Render("/")+m.input.View()+m.st.dim.Render("   enter keep · esc cancel"), w)
	case modeCommand:
		return fit(m.st.input.Render(":")+m.input.View()+m.st.dim.Render("   enter run · esc cancel · ? help"), w)
	}
	left := ""
	if m.flash != "" {
		st := m.st.flashOK
		if !m.flashOK {
			st = m.st.flashBad
		}
		left = st.Render(fit(m.flash, min(w/2, width(m.flash)))) + "  "
	} else if m.filter != "" {
		left = m.st.key.Render("/"+m.filter) + "  "
	}
	return fit(left+m.keys.shortHelp(m.st, w-width(left)), w)
}
