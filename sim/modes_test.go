package sim

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"spate/chaos"
	"spate/events"
)

// Pinned shapes of the modes the nemesis does not draw yet (issue 41):
// the auto-scaler under every --ft, with kills; --rescale restart and a
// scale asked under --ft global.

// autoscaleCheck fails a run whose auto-scaler started a rescale where
// spate scale refuses one (live reports whether it may), or whose
// changes went unsaid.
func autoscaleCheck(live bool) func(t *testing.T, r Result) {
	return func(t *testing.T, r Result) {
		evs, _, err := chaos.ReadEvents(filepath.Join(r.Dir, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var planned, changes, refused int
		for _, e := range evs {
			switch f := e.Fields.(type) {
			case events.RescalePlannedFields:
				planned++
			case events.AutoscaleFields:
				if f.To != f.From {
					changes++
				}
				if f.Refused != "" {
					refused++
				}
			}
		}
		switch {
		case changes == 0:
			t.Fatalf("seed %d: the auto-scaler decided no change in the whole run: the shape tests nothing", r.Seed)
		case !live && planned > 0:
			t.Fatalf("seed %d: %d rescales planned under a mode that refuses spate scale", r.Seed, planned)
		case !live && refused == 0:
			t.Fatalf("seed %d: %d changes decided, none said refused", r.Seed, changes)
		}
	}
}

func TestTheAutoscalerInEveryMode(t *testing.T) {
	long(t, "simulated runs")
	kills := []Step{
		{At: 2500 * time.Millisecond, Action: act("kill", "count/0")},
		{At: 5000 * time.Millisecond, Action: act("kill", "rollup/1")},
		{At: 7500 * time.Millisecond, Action: act("kill", "count/1")},
	}
	for _, tc := range []struct {
		ft, rescale string
		steps       []Step
	}{
		{"global", "", kills},
		{"global", "restart", kills},
		{"none", "", nil}, // none promises no loss only without faults
		{"spate", "", kills},
		{"spate", "restart", kills},
	} {
		t.Run(tc.ft+"/"+tc.rescale, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.FT, cfg.Rescale, cfg.Autoscale = tc.ft, tc.rescale, true
			runShapes(t, cfg, []shape{{name: "autoscale", steps: tc.steps, check: autoscaleCheck(tc.ft == "spate")}})
		})
	}
}

// A drain forced past its wait for a rescale (drainWaitLimit) that has
// not prepared: the old owner's store fails for a little longer than the
// wait, so that the pre-copy's fresh checkpoints could complete during
// the drain. count is slowed (Autoscale's cost; the auto-scaler then
// defers to the rescale in flight) so that the drain takes a while. The
// rescale must be abandoned as the drain starts, not carried on in it.
func TestADrainForcedPastAStalledRescale(t *testing.T) {
	long(t, "simulated runs")
	cfg := DefaultConfig()
	cfg.Autoscale = true
	at := cfg.Duration - 400*time.Millisecond
	var shapes []shape
	for _, fails := range []time.Duration{10*time.Second + 600*time.Millisecond, 11 * time.Second, 12 * time.Second} {
		for _, n := range []string{"4", "1"} {
			name := fmt.Sprintf("count 2→%s, store failing %v", n, fails)
			shapes = append(shapes, shape{name: name, steps: []Step{
				{At: at - 100*time.Millisecond, Action: act("store", "count/0", "fail", "true", "for", fails.String())},
				{At: at, Action: act("scale", "count", "n", n)},
			}, check: func(t *testing.T, r Result) {
				evs, _, err := chaos.ReadEvents(filepath.Join(r.Dir, "events.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				draining := false
				for _, e := range evs {
					switch e.Kind {
					case events.DrainStarted:
						draining = true
					case events.RescalePlanned, events.RescaleStaged, events.RescaleMoved, events.RescaleRerouted, events.RescaleCaptured: // a done (the settle) may follow
						if draining {
							t.Errorf("%s, seed %d: %s after the drain started: %s", name, r.Seed, e.Kind, e.Text)
						}
					}
				}
			}})
		}
	}
	runShapes(t, cfg, shapes)
}
