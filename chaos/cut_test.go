package chaos

import (
	"os"
	"strings"
	"testing"
)

// TestAShorterDurationSaysWhatItCuts: --set duration=15s on the teaching
// demo (30 s) names the partition at 17 s and the pause at 24 s as
// dropped, one line each, and nothing else; a duration that is not
// shorter, or none, cuts nothing; a fault whose for: runs past the end is
// truncated.
func TestAShorterDurationSaysWhatItCuts(t *testing.T) {
	b, err := os.ReadFile("../examples/teaching.yaml")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(set ...string) *Scenario {
		t.Helper()
		var over []Override
		for _, kv := range set {
			o, err := ParseOverride(kv)
			if err != nil {
				t.Fatal(err)
			}
			over = append(over, o)
		}
		sc, err := ParseWith("teaching.yaml", b, over)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	cut := parse("duration=15s").Cut()
	if len(cut) != 2 || !strings.HasPrefix(cut[0], "dropped: partition") || !strings.Contains(cut[0], "at 17s") ||
		!strings.HasPrefix(cut[1], "dropped: pause") || !strings.Contains(cut[1], "at 24s") {
		t.Errorf("--set duration=15s cuts %q", cut)
	}
	if cut := parse("duration=8s").Cut(); len(cut) != 4 || !strings.HasPrefix(cut[0], "truncated: link") {
		t.Errorf("--set duration=8s cuts %q, want the link truncated and three steps dropped", cut)
	}
	for _, set := range [][]string{nil, {"duration=30s"}, {"duration=60s"}, {"nodes=5"}} {
		if cut := parse(set...).Cut(); cut != nil {
			t.Errorf("%v cuts %q", set, cut)
		}
	}
	// A random soak shortened: not refused, one line for its random: entry.
	soak, err := os.ReadFile("../examples/soak.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ParseOverride("duration=90s")
	sc, err := ParseWith("soak.yaml", soak, []Override{o})
	if err != nil {
		t.Fatal(err)
	}
	// Its fixed-time steps past 90 s are each named as dropped; the
	// one at 1 m is kept.
	for _, c := range sc.Cut() {
		if !strings.HasPrefix(c, "dropped: ") || !strings.Contains(c, "at or past the run's end at 1m30s") {
			t.Errorf("the soak at 90s: %q", c)
		}
	}
	if cut := sc.Cut(); len(cut) < 5 {
		t.Errorf("the soak at 90s cuts %d steps: %q", len(cut), cut)
	}
	if sh := sc.Shortened(); len(sh) != 1 || !strings.HasPrefix(sh[0], "shortened: random: faults") {
		t.Errorf("the soak at 90s: %q", sh)
	}
}
