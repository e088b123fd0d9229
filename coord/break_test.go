package coord

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"spate/internal/breaks"
)

// Nothing is broken unless --break names it; a name reaches the plan the
// nodes get and run.json; an unknown one is a usage error naming the flag.
func TestBreakIsOffUnlessNamed(t *testing.T) {
	c, err := ParseUp(nil, io.Discard)
	if err != nil || !c.Break.Empty() {
		t.Fatalf("default: %v, %v", c.Break, err)
	}
	if b, _ := json.Marshal(c); strings.Contains(string(b), `"break"`) {
		t.Errorf("run.json of a run without --break names one: %s", b)
	}
	c, err = ParseUp([]string{"--break", "accept-fenced"}, io.Discard)
	if err != nil || c.Break != breaks.Of(breaks.AcceptFenced) {
		t.Fatalf("--break accept-fenced: %v, %v", c.Break, err)
	}
	if b, _ := json.Marshal(c); !strings.Contains(string(b), `"break":"accept-fenced"`) {
		t.Errorf("run.json does not name the break: %s", b)
	}
	co := &core{cfg: c}
	if !co.acceptFenced(1, 2) || co.acceptFenced(2, 2) || co.acceptFenced(3, 2) {
		t.Error("accept-fenced: only an older generation counts")
	}
	if (&core{}).acceptFenced(1, 2) {
		t.Error("a fenced generation counts without --break")
	}
	_, err = ParseUp([]string{"--break", "list"}, io.Discard)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--break") || strings.Contains(err.Error(), "\n") {
		t.Errorf("--break list to ParseUp (spate up prints the list itself): %v", err)
	}
}
