package coord

import (
	"context"
	"strings"
	"testing"
	"time"

	"spate/control"
	"spate/events"
	"spate/wire"
)

// TestAutoIntervalDecidesAndTheNodeApplies runs the in-memory cluster with
// --interval auto: the tuner's decisions are interval events with reasons
// and inputs; the interval action pins an instance to a short interval,
// which its node applies (it checkpoints at the new pace); a bad duration
// is a one-line error; interval=auto gives the instance back to the tuner.
func TestAutoIntervalDecidesAndTheNodeApplies(t *testing.T) {
	mc := newMemCluster()
	cfg := testConfig(t)
	cfg.Interval = "auto"           // with the default 24h prior: long intervals
	cfg.Duration = 12 * time.Second // the first decision comes Every (5 s) after the instance is first measured
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	evc := make(chan events.Event, 1<<16)
	type outcome struct {
		badErr, targetErr, pinErr, unpinErr error
	}
	res := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() { res <- o }()
		var cl *control.Client
		decided, pinned, after := false, false, 0
		for e := range evc {
			switch {
			case !decided && e.Kind == events.Interval && e.Instance == "count#1" && !strings.HasPrefix(e.Fields.(events.IntervalFields).Reason, "set by hand"):
				decided = true
				var err error
				if cl, err = control.Dial(cfg.Data); err != nil {
					o.pinErr = err
					return
				}
				ctx := context.Background()
				_, o.badErr = cl.Act(ctx, control.Action{Verb: "interval", Target: "count#1", Args: map[string]string{"interval": "-5s"}})
				_, o.targetErr = cl.Act(ctx, control.Action{Verb: "interval", Target: "nosuch", Args: map[string]string{"interval": "1s"}})
				if _, o.pinErr = cl.Act(ctx, control.Action{Verb: "interval", Target: "count/1", Args: map[string]string{"interval": "50ms"}}); o.pinErr != nil {
					return
				}
			case e.Kind == events.Interval && e.Instance == "count#1" && e.Fields.(events.IntervalFields).Reason == "set by hand":
				pinned = true // count checkpoints from here, in the stream's order, as the check below does
			case pinned && e.Kind == events.Checkpoint && e.Instance == "count#1":
				if after++; after == 5 {
					_, o.unpinErr = cl.Act(context.Background(), control.Action{Verb: "interval", Target: "count#1", Args: map[string]string{"interval": "auto"}})
					return
				}
			}
		}
	}()
	dir, err := Up(context.Background(), cfg, Options{Transport: mc.mem, Spawn: mc.spawn, Observe: func(e events.Event) { evc <- e }})
	close(evc)
	if err != nil {
		t.Fatal(err)
	}
	o := <-res
	evs := readEvents(t, dir)
	if o.pinErr != nil || o.unpinErr != nil {
		dumpEvents(t, dir)
		t.Fatalf("pin: %v; unpin: %v", o.pinErr, o.unpinErr)
	}
	if o.badErr == nil || !strings.Contains(o.badErr.Error(), `"-5s" is not a positive duration`) || strings.Contains(o.badErr.Error(), "\n") {
		t.Errorf("interval=-5s: got %v, want a one-line error naming the bad duration", o.badErr)
	}
	if o.targetErr == nil || !strings.Contains(o.targetErr.Error(), `"nosuch"`) {
		t.Errorf("target nosuch: got %v, want an error naming it", o.targetErr)
	}

	// The tuner's decisions: reasons and inputs, for every instance kind.
	var auto, pin, unpin int
	var pinSeq uint64
	ckAfterPin := 0
	for _, e := range evs {
		switch {
		case e.Kind == events.Interval:
			f, _ := e.Fields.(events.IntervalFields)
			reason := f.Reason
			if reason == "" || f.Instance != e.Instance || f.IntervalMs <= 0 {
				t.Errorf("interval event without reason, inputs, instance or interval_ms: %s %v", e.Line(), e.Fields)
			}
			switch {
			case reason == "set by hand":
				pin++
				pinSeq = e.Seq
				if e.Instance != "count#1" || f.IntervalMs != 50 {
					t.Errorf("pin event: %s %v", e.Line(), e.Fields)
				}
			case strings.HasPrefix(reason, "set by hand: back to auto"):
				unpin++
			default:
				auto++
				if f.Why == "" || f.Inputs == (events.IntervalInputs{}) {
					t.Errorf("decision without its kind or inputs: %+v", f)
				}
				if e.Instance == "count#1" && pin == 0 && f.IntervalMs < 1000 {
					t.Errorf("count#1's tuned interval is %vms; the test needs one of at least 1s to see the pin apply", f.IntervalMs)
				}
			}
		case e.Kind == events.Checkpoint && e.Instance == "count#1" && pin > 0:
			ckAfterPin++
		}
	}
	if auto == 0 || pin != 1 || unpin != 1 || pinSeq == 0 {
		dumpEvents(t, dir)
		t.Fatalf("interval events: %d decisions, %d pins, %d unpins; want decisions, one pin, one unpin", auto, pin, unpin)
	}
	if ckAfterPin < 5 {
		t.Errorf("count#1 took %d checkpoints after its interval was pinned to 50ms, want at least 5", ckAfterPin)
	}
	var summary *events.Event
	for i := range evs {
		if evs[i].Kind == events.TunerSummary {
			summary = &evs[i]
		}
	}
	if summary == nil {
		t.Error("no tuner_summary event")
	}
	rep, err := VerifyRun(dir)
	if err != nil || !rep.OK() {
		dumpEvents(t, dir)
		t.Fatalf("verify: %v %v", rep, err)
	}
}

func TestIntervalActionOutsideSpate(t *testing.T) {
	for _, ft := range []string{"none", "global"} {
		c := &core{cfg: Config{FT: ft, Interval: "auto"}, ft: ftFor(wire.FTMode(ft))}
		_, err := c.actInterval(control.Action{Verb: "interval", Target: "all", Args: map[string]string{"interval": "1s"}})
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("--ft %s: got %v, want a one-line refusal", ft, err)
		}
	}
	c := &core{cfg: Config{FT: "spate", Interval: "auto"}, ft: spateFT{}}
	if _, err := c.actInterval(control.Action{Verb: "interval", Target: "all"}); err == nil {
		t.Error("no interval argument: no error")
	}
}

// TestLostReplayCountsFromTheRestoredCheckpoint: the records a lost
// generation re-processes are counted from the checkpoint its successor
// restores, never from the generation's start when that checkpoint was
// captured after the generation's last heartbeat (the bug that made a
// kill just after a capture count the whole generation as replay).
func TestLostReplayCountsFromTheRestoredCheckpoint(t *testing.T) {
	cp := &wire.Checkpoint{Gen: 3, In: 64_000}
	for _, tc := range []struct {
		name  string
		gen   uint64
		in    uint64
		extra float64
		cp    *wire.Checkpoint
		want  uint64
	}{
		{"heartbeat after the capture", 3, 65_000, 0, cp, 1_000},
		{"heartbeat after the capture, with the records since it", 3, 65_000, 400, cp, 1_400},
		{"capture after the last heartbeat", 3, 63_800, 0, cp, 0},
		{"capture after the last heartbeat, records since it", 3, 63_800, 500, cp, 300},
		{"checkpoint of an older generation: all of it", 4, 5_000, 100, cp, 5_100},
		{"no checkpoint: all of it", 3, 5_000, 0, nil, 5_000},
		{"negative extra is none", 3, 65_000, -10, cp, 1_000},
	} {
		if got := lostReplay(tc.gen, tc.in, tc.extra, tc.cp); got != tc.want {
			t.Errorf("%s: lostReplay = %d, want %d", tc.name, got, tc.want)
		}
	}
}
