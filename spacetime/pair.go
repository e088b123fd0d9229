package spacetime

import (
	"strings"
	"unicode/utf8"
)

// pairGap is the blank between the two diagrams of SideBySide.
const pairGap = "  "

// SideBySide renders two losses next to each other in width columns, to
// compare them (spate tour: the same kill under --ft spate and --ft
// global). Each gets half the width, less the gap between them: a
// caption line, then Text at that width. Every line but the last is
// padded to its column, so the right diagram starts in the same column
// on every line, and the taller diagram decides how many lines there
// are.
func SideBySide(width int, left, right Loss, leftCaption, rightCaption string) string {
	half := max((width-len(pairGap))/2, 1)
	col := func(l Loss, caption string) []string {
		lines := strings.Split(strings.TrimSuffix(Text(l, half), "\n"), "\n")
		return append([]string{clip(caption, half)}, lines...)
	}
	var b strings.Builder
	for _, line := range join(col(left, leftCaption), col(right, rightCaption), half, pairGap) {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// join puts b beside a: each line of a padded to w columns (one a rune),
// then gap, then b's line; as many lines as the longer has, a missing
// line blank. Trailing blanks are cut.
func join(a, b []string, w int, gap string) []string {
	out := make([]string, max(len(a), len(b)))
	for i := range out {
		var l, r string
		if i < len(a) {
			l = a[i]
		}
		if i < len(b) {
			r = b[i]
		}
		if n := utf8.RuneCountInString(l); n < w {
			l += strings.Repeat(" ", w-n)
		}
		out[i] = strings.TrimRight(l+gap+r, " ")
	}
	return out
}
