package sim

import (
	"path/filepath"
	"strings"
	"testing"

	"spate/chaos"
	"spate/events"
)

// TestOneDamagedFileNeverLosesAnInstance pins one damaged file of a
// checkpoint chain followed by a loss of its instance (PROTOCOL.md,
// "Damage: what is covered"): the base of the latest restorable
// checkpoint of a keyed instance, of a source and of a rollup, each
// damaged 70 ms before its node is killed; and the fallback's file
// damaged, then the newest file, then the kill. Before, the latest two
// restorable checkpoints shared their base: "restore of count#0 failed:
// … checksum mismatch", and the instance was lost.
func TestOneDamagedFileNeverLosesAnInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("12 simulated runs")
	}
	damagedFirst := func(t *testing.T, r Result) {
		t.Helper()
		for _, s := range r.Steps {
			if strings.Contains(s, "store") && !strings.Contains(s, "damaged") {
				t.Fatalf("seed %d: a damage did not happen: %q", r.Seed, s)
			}
		}
		evs, _, err := chaos.ReadEvents(filepath.Join(r.Dir, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs {
			if e.Kind == events.CheckpointCorrupted {
				n++
			}
		}
		if n == 0 {
			t.Fatalf("seed %d: no checkpoint_corrupted event", r.Seed)
		}
	}
	for _, sh := range []shape{
		{name: "count's base damaged, then a kill", check: damagedFirst, steps: []Step{
			{At: ms(3000), Action: act("store", "count/0", "file", "base")},
			{At: ms(3070), Action: act("kill", "count/0")},
		}},
		{name: "a source's base damaged, then a kill", check: damagedFirst, steps: []Step{
			{At: ms(3000), Action: act("store", "source/0", "file", "base")},
			{At: ms(3070), Action: act("kill", "source/0")},
		}},
		{name: "rollup's base damaged, then a kill", check: damagedFirst, steps: []Step{
			{At: ms(3000), Action: act("store", "rollup/0", "file", "base")},
			{At: ms(3070), Action: act("kill", "rollup/0")},
		}},
		{name: "the fallback damaged, then the newest, then a kill", check: damagedFirst, steps: []Step{
			{At: ms(3600), Action: act("store", "count/0", "file", "fallback")},
			{At: ms(4000), Action: act("store", "count/0", "file", "newest")},
			{At: ms(4700), Action: act("kill", "count/0")},
		}},
	} {
		t.Run(sh.name, func(t *testing.T) { runShapes(t, DefaultConfig(), []shape{sh}) })
	}
}
