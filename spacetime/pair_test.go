package spacetime

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJoinPadsTheLeftAndTheTallerDecides(t *testing.T) {
	cases := []struct {
		name string
		a, b []string
		want []string
	}{
		{"the left taller", []string{"ab", "─┼", "x"}, []string{"cd"},
			[]string{"ab    cd", "─┼", "x"}},
		{"the right taller", []string{"ab"}, []string{"c", "d", "e"},
			[]string{"ab    c", "      d", "      e"}},
		{"a short left line", []string{"a", "abcd"}, []string{"1", "2"},
			[]string{"a     1", "abcd  2"}},
		{"both empty", nil, nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := join(c.a, c.b, 4, "  "); !reflect.DeepEqual(got, c.want) {
				t.Errorf("join(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
			}
		})
	}
}

func TestSideBySideIsBothDiagramsAtHalfTheWidth(t *testing.T) {
	spate, _ := oneLoss(t, "spate.jsonl")
	global, _ := oneLoss(t, "global.jsonl")
	for _, width := range []int{80, 120, 61} {
		half := (width - 2) / 2
		got := strings.Split(strings.TrimSuffix(SideBySide(width, spate, global, "here: --ft spate", "there: --ft global"), "\n"), "\n")
		left := strings.Split(strings.TrimSuffix(Text(spate, half), "\n"), "\n")
		right := strings.Split(strings.TrimSuffix(Text(global, half), "\n"), "\n")
		if want := max(len(left), len(right)) + 1; len(got) != want {
			t.Errorf("%d: %d lines, want %d", width, len(got), want)
		}
		if !strings.HasPrefix(got[0], "here: --ft spate") || !strings.Contains(got[0], strings.Repeat(" ", half-16+2)+"there: --ft global") {
			t.Errorf("%d: the captions: %q", width, got[0])
		}
		for i, line := range got {
			if n := utf8.RuneCountInString(line); n > width {
				t.Errorf("%d: line %d is %d wide: %q", width, i+1, n, line)
			}
			rs := []rune(line)
			l := strings.TrimRight(string(rs[:min(half, len(rs))]), " ")
			r := ""
			if len(rs) > half+2 {
				r = string(rs[half+2:])
			}
			if i > 0 && i <= len(left) && l != strings.TrimRight(left[i-1], " ") {
				t.Errorf("%d: line %d's left is %q, the diagram's %q", width, i+1, l, left[i-1])
			}
			if i > 0 && i <= len(right) && r != strings.TrimRight(right[i-1], " ") {
				t.Errorf("%d: line %d's right is %q, the diagram's %q", width, i+1, r, right[i-1])
			}
		}
	}
}
