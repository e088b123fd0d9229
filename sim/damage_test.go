package sim

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"

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
	long(t, "12 simulated runs")
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

// TestNothingLeftToRestoreStopsTheRun damages both restorable
// checkpoints of count#0 (its latest chain's base and its fallback's own
// file) and kills its node 20 ms later: nothing is left to restore it
// from, and the upstreams trimmed what a start from nothing needs. The
// run says so in one instance_unrecoverable event and stops with that
// reason, before the drain (before, it drained on with a hole that only
// the verification reported).
func TestNothingLeftToRestoreStopsTheRun(t *testing.T) {
	long(t, "simulated runs")
	root := simRoot(t)
	cfg := DefaultConfig()
	cfg.Schedule = []Step{
		{At: ms(5000), Action: act("store", "count/0", "file", "base")},
		{At: ms(5000), Action: act("store", "count/0", "file", "fallback")},
		{At: ms(5020), Action: act("kill", "count/0")},
		{At: cfg.Duration, Action: act("drain", "")},
	}
	for seed := uint64(1); seed <= uint64(*runsOf); seed++ {
		runtime.GC() // sync.Pools (yamux's timers) empty: nothing of one bubble reaches the next
		runtime.GC()
		synctest.Test(t, func(t *testing.T) {
			r := Run(context.Background(), seed, cfg, Dir(filepath.Join(root, "unrecoverable"), seed))
			for _, s := range r.Steps[:2] {
				if !strings.Contains(s, "damaged") {
					t.Fatalf("seed %d: a damage did not happen: %q", seed, s)
				}
			}
			if !strings.Contains(r.Err, "count#0 cannot be restored") {
				t.Fatalf("seed %d: %s: want the run stopped, count#0 unrecoverable", seed, r.Verdict())
			}
			evs, _, err := chaos.ReadEvents(filepath.Join(r.Dir, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			var said []events.Event
			drained := false
			for _, e := range evs {
				switch e.Kind {
				case events.InstanceUnrecoverable:
					said = append(said, e)
				case events.DrainStarted:
					drained = true
				}
			}
			if len(said) != 1 || said[0].Instance != "count#0" {
				t.Fatalf("seed %d: instance_unrecoverable events %v, want one, of count#0", seed, said)
			}
			if drained {
				t.Fatalf("seed %d: the job drained on after count#0 was unrecoverable", seed)
			}
		})
	}
}
