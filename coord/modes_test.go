package coord

import (
	"fmt"
	"strings"
	"syscall"
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
	if err := h.deploy(2, 2, ft, "", rescale); err != nil {
		t.Fatal(err)
	}
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

// A node paused past the timeout is lost, still there, stopped; the
// coordinator dies before the pause's time is up, and its timer with it.
// The resumed coordinator ends the node (SIGKILL reaches a stopped
// process) and watches it until it is gone; a node paused and not lost
// is woken, as before.
func TestAResumedCoordinatorEndsANodeLostWhilePaused(t *testing.T) {
	h := newModesHarness(t, "spate", "eds")
	for _, name := range []string{"n1", "n2"} {
		h.c.nodes[name].local, h.c.nodes[name].pid = true, 100
	}
	var out strings.Builder
	for _, line := range []string{"act pause n2 for=1m", "act pause n1 for=1m", "lose n2"} {
		if err := h.line(line, &out); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out.String())
		}
	}
	if err := h.crash(); err != nil {
		t.Fatal(err)
	}
	sigs := map[string]syscall.Signal{}
	for _, o := range h.c.take().ops {
		if s, ok := o.(signalOp); ok {
			sigs[s.node] = s.sig
		}
	}
	if sigs["n2"] != syscall.SIGKILL || sigs["n1"] != syscall.SIGCONT {
		t.Fatalf("the resumed coordinator signals %v: want n2 (lost while paused) SIGKILL, n1 (paused) SIGCONT", sigs)
	}
	if ns := h.c.nodes["n2"]; ns.state != nodeLost {
		t.Fatalf("n2 is %s after the resume: want lost (not exited), so that adoptNodes watches its process", ns.state)
	}
}

// A node that joined and was lost before the last one joined (its
// stream ended: a kill during the start) still counted as joined, and
// the deploy placed instances on it: nothing ever recovered them (the
// loss was taken before there was a plan), the job started without
// them, and the drain waited for them for ever. The deploy now places
// on the nodes that are live; the lost node's share goes to the others.
func TestANodeLostBeforeTheDeployHostsNothing(t *testing.T) {
	for _, ft := range []string{"none", "spate", "global"} {
		t.Run(ft, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Nodes, cfg.Interval, cfg.Respawn, cfg.FT = 3, "1s", false, ft
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			c := newCore(cfg, "run", now)
			admit := func(name string) {
				t.Helper()
				if refused, err := c.admit(now, joinIn{name: name, listen: "mem:" + name}); refused != nil || err != nil {
					t.Fatalf("join %s: %v %v", name, refused, err)
				}
			}
			admit("n1")
			admit("n2")
			if err := c.handleMsg(nodeMsg{node: "n1", err: fmt.Errorf("EOF")}); err != nil {
				t.Fatal(err)
			}
			admit("n3")
			if c.plan == nil {
				t.Fatal("no deploy once every node of the run had joined or been lost")
			}
			for _, p := range c.plan.Instances {
				if p.Node == "n1" {
					t.Fatalf("%s placed on n1, lost before the deploy", p.ID)
				}
			}
			for _, name := range []string{"n2", "n3"} {
				if err := c.handleMsg(nodeMsg{node: name, ctl: &wire.Control{Kind: wire.CtlReady}}); err != nil {
					t.Fatal(err)
				}
			}
			if !c.started {
				t.Fatal("the job did not start on the nodes left")
			}
			if err := c.checkInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A drain that has waited drainWaitLimit for a rescale that has not
// prepared yet (a pre-copy waiting for its fresh checkpoints, the old
// owner's store failing) starts, and the rescale is abandoned: it used to
// stay in flight, and once the store was back it staged, prepared and
// released during the drain, moving key groups out of instances that
// were draining. One that has prepared (the nodes know its new instances
// as inputs, the receivers hold their watermarks) is waited for, as one
// that has released is.
func TestADrainForcedPastARescaleAbandonsItBeforeItsPrepare(t *testing.T) {
	run := func(t *testing.T, lines ...string) *coreHarness {
		t.Helper()
		h := newModesHarness(t, "spate", "eds")
		var out strings.Builder
		for _, line := range lines {
			if err := h.line(line, &out); err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out.String())
			}
		}
		return h
	}
	t.Run("pre-copy waiting for its checkpoints", func(t *testing.T) {
		h := run(t, "checkpointed count#0 id=1 full", "checkpointed count#1 id=1 full",
			"act scale count n=4", "drain", "tick 10s alive", "drain")
		if !h.c.draining {
			t.Fatal("the drain did not start after drainWaitLimit")
		}
		if h.c.eds.cur != nil {
			t.Fatalf("the drain started with rescale %d in its %s phase still in flight", h.c.eds.cur.id, h.c.eds.cur.phase)
		}
		var out strings.Builder
		for _, line := range []string{"checkpointed source#0 id=1 full", "checkpointed source#1 id=1 full",
			"checkpointed count#0 id=2", "checkpointed count#1 id=2"} {
			if err := h.line(line, &out); err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "<- rescale") {
				t.Fatalf("during the drain the coordinator went on with the rescale: %q\n%s", l, out.String())
			}
		}
	})
	t.Run("prepared", func(t *testing.T) {
		h := run(t, "act scale count n=4", "drain", "tick 10s alive", "drain")
		if h.c.eds.cur == nil || !h.c.eds.cur.prepared {
			t.Fatal("no prepared rescale in flight")
		}
		if h.c.draining {
			t.Fatal("the drain started while the nodes were preparing the rescale")
		}
	})
}
