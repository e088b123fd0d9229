package coord

import (
	"strings"
	"testing"
	"time"

	"spate/control"
	"spate/events"
	"spate/job"
	"spate/wire"
)

// The rules of a rescale in every --ft mode (issue 41): the auto-scaler
// and `spate scale` share one check (scaleRefused), and the auto-scaler
// says in its event why a change was refused, not once a second.

// overload runs the auto-scaler for secs seconds on a harness whose
// count instances are busy all the time at 1,000 records a second each
// (DS2 asks for 3 of them), and returns the autoscale events of count.
func overload(t *testing.T, h *coreHarness, secs int) []events.AutoscaleFields {
	t.Helper()
	h.c.cfg.Autoscale = true
	var out []events.AutoscaleFields
	for s := 1; s <= secs+1; s++ { // the first tick only takes the counters in
		h.now = h.now.Add(time.Second)
		h.c.now = h.now
		for _, p := range h.c.plan.Instances {
			if p.Op != "count" {
				continue
			}
			ns := h.c.nodes[p.Node]
			if ns.stats == nil {
				ns.stats = map[job.InstanceID]wire.InstanceStats{}
			}
			ns.stats[p.ID] = wire.InstanceStats{ID: p.ID, In: uint64(s) * 1000, BusyUs: int64(s) * 1_000_000}
		}
		h.c.autoscaleTick()
		h.takeWork()
		for _, e := range h.w.events {
			if f, ok := e.Fields.(events.AutoscaleFields); ok && f.Op == "count" {
				out = append(out, f)
			}
		}
		h.w = work{}
	}
	return out
}

func newModesHarness(t *testing.T, ft, rescale string) *coreHarness {
	t.Helper()
	h := newCoreHarness(t)
	if err := h.deploy(2, 2, ft, ""); err != nil {
		t.Fatal(err)
	}
	h.c.cfg.Rescale = rescale
	h.takeWork()
	h.w = work{}
	return h
}

func TestTheAutoscalerFollowsTheRulesOfScaleInEveryMode(t *testing.T) {
	for _, tc := range []struct{ ft, rescale string }{
		{"spate", "eds"}, {"spate", "restart"},
		{"global", "eds"}, {"global", "restart"},
		{"none", "eds"}, {"none", "restart"},
	} {
		t.Run(tc.ft+"/"+tc.rescale, func(t *testing.T) {
			h := newModesHarness(t, tc.ft, tc.rescale)
			_, scaleErr := h.c.act(control.Action{Verb: "scale", Target: "count", Args: map[string]string{"n": "3"}})
			h = newModesHarness(t, tc.ft, tc.rescale) // the same run, without the scale
			evs := overload(t, h, 12)
			if len(evs) == 0 || evs[0].To != 3 {
				t.Fatalf("autoscale events %+v: want a decision of count 2→3 first", evs)
			}
			started := h.c.eds.cur != nil || h.c.eds.restart != nil
			if tc.ft == "spate" {
				if scaleErr != nil || !started || evs[0].Deferred || evs[0].Refused != "" {
					t.Fatalf("--ft spate: scale said %v; the auto-scaler started a rescale: %v (event %+v)", scaleErr, started, evs[0])
				}
				if tc.rescale == "restart" && h.c.eds.restart == nil {
					t.Fatal("--rescale restart: the auto-scaler did not rescale by restart")
				}
				return
			}
			if scaleErr == nil {
				t.Fatalf("--ft %s: spate scale was not refused", tc.ft)
			}
			if started {
				t.Fatalf("--ft %s: the auto-scaler started a rescale that spate scale refuses (%v)", tc.ft, scaleErr)
			}
			if want := strings.TrimPrefix(scaleErr.Error(), "scale: "); !evs[0].Deferred || evs[0].Refused != want {
				t.Fatalf("--ft %s: the event says deferred %v, refused %q; want %q", tc.ft, evs[0].Deferred, evs[0].Refused, want)
			}
			// 12 seconds of the same refused decision: said at its first
			// second and again 10 s later, not 12 times.
			if len(evs) != 2 {
				t.Fatalf("--ft %s: %d autoscale events of count in 12 s of the same refusal, want 2: %+v", tc.ft, len(evs), evs)
			}
		})
	}
}

// A change deferred because a rescale is in flight is said once with its
// reason, and again when the reason changes.
func TestAnAutoscaleDeferralIsSaidOnceWithItsReason(t *testing.T) {
	h := newModesHarness(t, "spate", "live")
	if _, err := h.c.act(control.Action{Verb: "scale", Target: "rollup", Args: map[string]string{"n": "3"}}); err != nil {
		t.Fatal(err)
	}
	evs := overload(t, h, 5)
	if len(evs) != 1 || !evs[0].Deferred || !strings.Contains(evs[0].Refused, "rescale of rollup to 3 is still in flight") {
		t.Fatalf("5 s of a deferral: events %+v, want one, deferred, saying the rollup rescale is in flight", evs)
	}
}
