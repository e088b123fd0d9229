package human

import "testing"

// Nothing reads as seconds, not as a count of the smallest unit.
func TestNoTimeIsZeroSeconds(t *testing.T) {
	if got := Duration(0); got != "0 s" {
		t.Errorf("Duration(0) = %q", got)
	}
	if got := Seconds(0); got != "0 s" {
		t.Errorf("Seconds(0) = %q", got)
	}
}
