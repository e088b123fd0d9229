package chaos

import (
	"bytes"
	"strings"
	"testing"
)

// TestEmptySectionsAreOneLine checks that a report with no recoveries,
// rescales or faults says so in one line, without the section's explanation.
func TestEmptySectionsAreOneLine(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, &Report{Run: "r1", Verdict: "pass"}); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	out := b.String()
	for _, s := range []string{"no node was lost", "no rescale", "no faults"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q", s)
		}
	}
	for _, lead := range []string{"Each instance lost with a node", "Each change of an operator", "The faults injected"} {
		if strings.Contains(out, lead) {
			t.Errorf("empty section still prints its explanation %q", lead)
		}
	}
}
