package tui

import (
	"github.com/charmbracelet/lipgloss"
)

// styles is the one place colours live. Every colour is adaptive (a light
// and a dark variant), and every meaning also has a non-colour mark (a word,
// a glyph, reverse video for the selection), so the dashboard reads the
// same under NO_COLOR and in the Ascii goldens.
type styles struct {
	header, tab, tabOn       lipgloss.Style
	title, dim, key          lipgloss.Style
	sel, colHead             lipgloss.Style
	ok, warn, bad, info      lipgloss.Style
	fault, bar, bar2         lipgloss.Style
	input, flashOK, flashBad lipgloss.Style
}

func newStyles(r *lipgloss.Renderer) styles {
	c := func(light, dark string) lipgloss.AdaptiveColor {
		return lipgloss.AdaptiveColor{Light: light, Dark: dark}
	}
	fg := func(light, dark string) lipgloss.Style { return r.NewStyle().Foreground(c(light, dark)) }
	return styles{
		header:   r.NewStyle().Bold(true).Foreground(c("#1a1a1a", "#f0f0f0")).Background(c("#d7d7ff", "#3a3a6a")),
		tab:      fg("#555555", "#a8a8a8"),
		tabOn:    r.NewStyle().Bold(true).Reverse(true),
		title:    r.NewStyle().Bold(true).Foreground(c("#005f87", "#87d7ff")),
		dim:      fg("#6c6c6c", "#8a8a8a"),
		key:      r.NewStyle().Bold(true).Foreground(c("#5f00af", "#d7afff")),
		sel:      r.NewStyle().Reverse(true),
		colHead:  r.NewStyle().Bold(true).Underline(true),
		ok:       fg("#007a00", "#5fd75f"),
		warn:     fg("#875f00", "#ffd75f"),
		bad:      r.NewStyle().Bold(true).Foreground(c("#af0000", "#ff5f5f")),
		info:     fg("#005f87", "#5fafff"),
		fault:    r.NewStyle().Background(c("#ffd7d7", "#5f0000")),
		bar:      fg("#0087af", "#5fafff"),
		bar2:     fg("#af5f00", "#ffaf5f"),
		input:    r.NewStyle().Bold(true),
		flashOK:  fg("#007a00", "#5fd75f"),
		flashBad: r.NewStyle().Bold(true).Foreground(c("#af0000", "#ff5f5f")),
	}
}

// stateStyle colours a node or instance state.
func (s styles) stateStyle(st string) lipgloss.Style {
	switch st {
	case "alive", "running", "completed", "OK", "done":
		return s.ok
	case "suspect", "paused", "partitioned", "restoring", "replaying", "LOW", "joining", "spawned", "fallback":
		return s.warn
	case "dead", "lost", "failed", "HIGH", "exited":
		return s.bad
	}
	return s.dim
}
