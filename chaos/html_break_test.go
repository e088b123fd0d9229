package chaos

import (
	"bytes"
	"strings"
	"testing"
)

// A report of a run broken on purpose says so under its title; one of
// the protocol as it should be does not.
func TestTheReportSaysARunIsBrokenOnPurpose(t *testing.T) {
	for _, brk := range []string{"", "stale-slice"} {
		var b bytes.Buffer
		if err := WriteHTML(&b, &Report{Run: "r1", Verdict: "fail", Break: brk}); err != nil {
			t.Fatalf("WriteHTML: %v", err)
		}
		out := b.String()
		if got := strings.Contains(out, "BROKEN ON PURPOSE"); got != (brk != "") || brk != "" && !strings.Contains(out, "BROKEN ON PURPOSE: "+brk) {
			t.Errorf("break %q: banner %v", brk, got)
		}
		if brk != "" && strings.Index(out, "BROKEN ON PURPOSE") > strings.Index(out, `id="verdict"`) {
			t.Errorf("break %q: the banner comes after the verdict", brk)
		}
	}
}
