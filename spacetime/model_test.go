package spacetime

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"spate/events"
)

func TestAKillUnderSpateIsOneLossWithItsRestoresAndReplays(t *testing.T) {
	l, evs := oneLoss(t, "spate.jsonl")
	var lostEv, faultEv events.Event
	restored := map[string]events.RecoveryRestoredFields{}
	restoredAt := map[string]time.Time{}
	var replays []Replay
	for _, e := range evs {
		switch f := e.Fields.(type) {
		case events.NodeLostFields:
			lostEv = e
		case events.FaultStartedFields:
			faultEv = e
		case events.RecoveryRestoredFields:
			restored[e.Instance], restoredAt[e.Instance] = f, e.Time
		case events.ReplayFields:
			replays = append(replays, Replay{From: e.Instance, To: f.To, Records: f.Records, At: e.Time})
		}
	}
	if l.Node != lostEv.Node || !l.Detected.Equal(lostEv.Time) || l.Global {
		t.Fatalf("loss of %s at %v (global %v), want %s at %v", l.Node, l.Detected, l.Global, lostEv.Node, lostEv.Time)
	}
	if l.Fault != "kill" || !l.Killed.Equal(faultEv.Time) {
		t.Errorf("fault %q at %v, want the kill at %v", l.Fault, l.Killed, faultEv.Time)
	}
	if got, want := l.Lost(), []string{"count#0", "sink#0"}; !slices.Equal(got, want) {
		t.Errorf("lost %v, want %v", got, want)
	}
	if len(l.Lanes) != 8 {
		t.Errorf("%d lanes, want the job's 8 instances", len(l.Lanes))
	}
	if len(l.Restores) != len(restored) || len(restored) == 0 {
		t.Fatalf("%d restores, the run has %d", len(l.Restores), len(restored))
	}
	for _, r := range l.Restores {
		f, ok := restored[r.Instance]
		if !ok || r.Checkpoint != f.Checkpoint || !r.Restored.Equal(restoredAt[r.Instance]) {
			t.Errorf("%s restored from %d at %v, the event says %d at %v", r.Instance, r.Checkpoint, r.Restored, f.Checkpoint, restoredAt[r.Instance])
		}
		// The checkpoint restored is one the run completed, before the
		// loss, and its tick is on the lane, inside the window.
		var tick *Tick
		for _, tk := range l.Lane(r.Instance).Ticks {
			if tk.ID == r.Checkpoint && tk.At.Equal(r.CheckpointAt) {
				tick = &tk
			}
		}
		if r.CheckpointAt.IsZero() || !r.CheckpointAt.Before(l.Detected) || tick == nil {
			t.Errorf("%s: checkpoint %d at %v, tick %v", r.Instance, r.Checkpoint, r.CheckpointAt, tick)
		}
		if r.CheckpointAt.Before(l.Start) || r.Done.IsZero() || r.Done.After(l.End) {
			t.Errorf("%s: checkpoint at %v, done at %v, window %v..%v", r.Instance, r.CheckpointAt, r.Done, l.Start, l.End)
		}
	}
	if !slices.Equal(l.Replays, replays) {
		t.Errorf("replays %+v, the events say %+v", l.Replays, replays)
	}
	// The window is around the loss, not the run.
	run := evs[len(evs)-1].Time.Sub(evs[0].Time)
	if w := l.End.Sub(l.Start); w <= 0 || w > run/4 {
		t.Errorf("window %v of a %v run", w, run)
	}
	for _, ln := range l.Lanes {
		for _, tk := range ln.Ticks {
			if tk.At.Before(l.Start) || tk.At.After(l.End) {
				t.Errorf("%s: tick %d at %v outside the window", ln.Instance, tk.ID, tk.At)
			}
		}
	}
}

func TestAKillUnderGlobalRollsEveryLaneBack(t *testing.T) {
	for _, name := range []string{"global.jsonl", "global-short-interval.jsonl"} {
		t.Run(name, func(t *testing.T) {
			l, evs := oneLoss(t, name)
			var placed events.RecoveryPlacedFields
			var restoredAt time.Time
			for _, e := range evs {
				switch f := e.Fields.(type) {
				case events.RecoveryPlacedFields:
					placed = f
				case events.RecoveryRestoredFields:
					restoredAt = e.Time
				}
			}
			rb := l.Rollback
			if !l.Global || rb == nil {
				t.Fatalf("global %v, rollback %v", l.Global, rb)
			}
			if rb.Checkpoint != placed.Checkpoint || rb.Records != placed.Records || !rb.Restored.Equal(restoredAt) || !l.Done.Equal(restoredAt) {
				t.Errorf("rollback %+v, done %v; the events say checkpoint %d, %d records, restored at %v",
					*rb, l.Done, placed.Checkpoint, placed.Records, restoredAt)
			}
			if len(l.Restores) != 0 || len(l.Replays) != 0 {
				t.Errorf("restores %v, replays %v: a global rollback has neither", l.Restores, l.Replays)
			}
			for _, ln := range l.Lanes {
				id, at, ok := l.Restored(ln.Instance)
				if !ok || id != rb.Checkpoint || !at.Equal(rb.CheckpointAt) {
					t.Errorf("%s restored from %d at %v (%v)", ln.Instance, id, at, ok)
				}
				if !slices.ContainsFunc(ln.Ticks, func(tk Tick) bool { return tk.Global && tk.ID == rb.Checkpoint }) {
					t.Errorf("%s: no tick of global checkpoint %d in %v", ln.Instance, rb.Checkpoint, ln.Ticks)
				}
			}
			// The checkpoint lies far before the kill: the axis breaks
			// and the recovery keeps most of the width.
			ax := l.Axis(100, 3)
			if !ax.Broken() {
				t.Fatalf("axis %+v not broken", ax)
			}
			k, _ := ax.X(l.Killed)
			d, _ := ax.X(l.Done)
			if d-k < 40 {
				t.Errorf("the recovery gets %.0f of 100 units", d-k)
			}
		})
	}
}

func TestAxisBreaksOnlyWhenTheCheckpointIsFarBeforeTheFault(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	loss := func(ckMs int) Loss {
		return Loss{Killed: at(1000), Detected: at(1005), Done: at(1100), Start: at(ckMs - 10), End: at(1110),
			Restores: []Restore{{Instance: "a#0", Checkpoint: 3, CheckpointAt: at(ckMs), Restored: at(1020), Done: at(1100)}}}
	}
	for _, tc := range []struct {
		name   string
		ckMs   int
		broken bool
	}{
		{"a checkpoint just before", 950, false},
		{"a checkpoint seconds before", -4000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ax := loss(tc.ckMs).Axis(200, 4)
			if ax.Broken() != tc.broken {
				t.Fatalf("broken %v, want %v: %+v", ax.Broken(), tc.broken, ax)
			}
			prev := -1.0
			for ms := tc.ckMs - 10; ms <= 1110; ms++ {
				x, ok := ax.X(at(ms))
				if x < 0 || x > 200 || x < prev {
					t.Fatalf("X(%dms) = %v after %v", ms, x, prev)
				}
				if ok {
					prev = x
				}
			}
			for _, ms := range []int{tc.ckMs, 1000, 1100} {
				if _, ok := ax.X(at(ms)); !ok {
					t.Errorf("%dms is not drawn", ms)
				}
			}
		})
	}
}

func TestLossesPassesOverWhatItCannotPlace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := []events.Event{
		{Kind: events.Replay, Time: t0, Instance: "source#0", Fields: events.ReplayFields{To: "count#0", Records: 5}},
		{Kind: events.RecoveryRestored, Time: t0, Instance: "count#0", Fields: events.RecoveryRestoredFields{Checkpoint: 2}},
		{Kind: events.RecoveryRestored, Time: t0, Fields: events.RecoveryRestoredFields{Checkpoint: 2}},
		{Kind: events.RecoveryPlaced, Time: t0, Fields: events.RecoveryPlacedFields{Checkpoint: 2}},
		{Kind: events.RecoveryDone, Time: t0, Instance: "count#0"},
		{Kind: events.NodeLost, Time: t0, Node: "n1", Fields: events.NodeLostFields{Reason: "before the job"}},
		{Kind: events.Checkpoint, Time: t0, Fields: events.CheckpointFields{ID: 1}},
		{Kind: "a_newer_kind", Time: t0, Fields: events.Other{K: "a_newer_kind"}},
	}
	if ls := Losses(evs); len(ls) != 0 {
		t.Fatalf("losses %+v from events that make none", ls)
	}
	if ls := Losses(nil); len(ls) != 0 {
		t.Fatalf("losses %+v from no events", ls)
	}
	// A loss whose recovery the run does not hold: lanes, no restore, no
	// end, and a window all the same.
	lost, err := events.DecodeLine([]byte(`{"v":1,"seq":9,"time":"2026-01-01T00:00:01Z","kind":"node_lost","node":"n2","fields":{"instances":["count#1"],"reason":"EOF"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, lost)
	ls := Losses(evs)
	if len(ls) != 1 || ls[0].Node != "n2" || !ls[0].Done.IsZero() || !ls[0].End.After(ls[0].Start) {
		t.Fatalf("losses %+v, want n2's, never done, with a window", ls)
	}
	if got := Text(ls[0], 60); got == "" {
		t.Error("no text")
	}
	if got := Text(Loss{}, 0); got == "" {
		t.Error("no text for the zero Loss")
	}
}

// TestAGlobalRollbackPastADamagedCheckpointKeepsTheOneItUsed: under
// --ft global the coordinator orders the rollback again, to an older
// checkpoint, when an instance cannot load the one it chose.
func TestAGlobalRollbackPastADamagedCheckpointKeepsTheOneItUsed(t *testing.T) {
	lines := []string{
		`{"v":1,"seq":1,"time":"2026-01-01T00:00:00Z","kind":"job_started"}`,
		`{"v":1,"seq":2,"time":"2026-01-01T00:00:00Z","kind":"instance_placed","node":"n1","instance":"source#0","fields":{"op":"source","partitions":[0],"ranges":null}}`,
		`{"v":1,"seq":3,"time":"2026-01-01T00:00:00Z","kind":"instance_placed","node":"n2","instance":"count#0","fields":{"op":"count","partitions":null,"ranges":[{"lo":0,"hi":128}]}}`,
		`{"v":1,"seq":4,"time":"2026-01-01T00:00:01Z","kind":"checkpoint","fields":{"global":true,"id":1,"took_ms":5}}`,
		`{"v":1,"seq":5,"time":"2026-01-01T00:00:02Z","kind":"checkpoint","fields":{"global":true,"id":2,"took_ms":5}}`,
		`{"v":1,"seq":6,"time":"2026-01-01T00:00:02.5Z","kind":"fault_started","fields":{"args":null,"id":1,"nodes":["n2"],"target":"count","verb":"kill"}}`,
		`{"v":1,"seq":7,"time":"2026-01-01T00:00:02.6Z","kind":"node_lost","node":"n2","fields":{"instances":["count#0"],"reason":"EOF"}}`,
		`{"v":1,"seq":8,"time":"2026-01-01T00:00:02.6Z","kind":"recovery_placed","node":"n2","fields":{"checkpoint":2,"records":900}}`,
		`{"v":1,"seq":9,"time":"2026-01-01T00:00:02.7Z","kind":"checkpoint_fallback","node":"n1","instance":"source#0","fields":{"checkpoint":2,"error":"damaged","fallback":1}}`,
		`{"v":1,"seq":10,"time":"2026-01-01T00:00:02.7Z","kind":"recovery_placed","fields":{"checkpoint":1,"records":1700}}`,
		`{"v":1,"seq":11,"time":"2026-01-01T00:00:02.8Z","kind":"recovery_restored","fields":{"checkpoint":1}}`,
	}
	var evs []events.Event
	for _, s := range lines {
		e, err := events.DecodeLine([]byte(s), nil)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		evs = append(evs, e)
	}
	ls := Losses(evs)
	if len(ls) != 1 || ls[0].Rollback == nil {
		t.Fatalf("losses %+v, want one global rollback", ls)
	}
	l, rb := ls[0], ls[0].Rollback
	if rb.Checkpoint != 1 || rb.Records != 1700 || !slices.Equal(rb.Unusable, []uint64{2}) || !rb.CheckpointAt.Equal(evs[3].Time) {
		t.Errorf("rollback %+v, want to checkpoint 1 (at %v), 1700 records, 2 unusable", *rb, evs[3].Time)
	}
	if !l.Start.Before(rb.CheckpointAt) || !l.Done.Equal(evs[10].Time) || l.Fault != "kill" {
		t.Errorf("window %v..%v, done %v, fault %q", l.Start, l.End, l.Done, l.Fault)
	}
	if text := Text(l, 100); !strings.Contains(text, "global checkpoint 1") || !strings.Contains(text, "global checkpoint 2 found damaged") {
		t.Errorf("the text does not say which checkpoint was used and which was damaged:\n%s", text)
	}
}

// TestAParallelRecoveryDrawsItsNewInstances: with --recover parallel the
// lost count#0's key groups go to count#0 again and two new instances,
// which get lanes of their own, and every replay of the recovery is in
// the loss, but not the re-sends of the rescale that merges them back
// afterwards.
func TestAParallelRecoveryDrawsItsNewInstances(t *testing.T) {
	l, evs := oneLoss(t, "spate-parallel.jsonl")
	var split events.RecoverySplitFields
	var rescales int
	var want []Replay
	for _, e := range evs {
		switch f := e.Fields.(type) {
		case events.RecoverySplitFields:
			split = f
		case events.RescalePlannedFields:
			rescales++
		case events.ReplayFields:
			if rescales < 2 {
				want = append(want, Replay{From: e.Instance, To: f.To, Records: f.Records, At: e.Time})
			}
		}
	}
	if len(split.Parts) == 0 || rescales < 2 {
		t.Fatalf("the recording has no parallel recovery and merge: split %+v, %d rescales", split, rescales)
	}
	if !slices.Equal(l.Split, split.Parts) {
		t.Errorf("split %v, the event says %v", l.Split, split.Parts)
	}
	for _, part := range split.Parts {
		id, _, _ := strings.Cut(part, " ")
		if l.Lane(id) == nil {
			t.Errorf("no lane for %s", id)
		}
	}
	if !slices.Equal(l.Replays, want) {
		t.Errorf("replays %+v, want the %d before the merge: %+v", l.Replays, len(want), want)
	}
	// Lanes stay in the job's order: the new counts among the counts.
	var ops []string
	for _, ln := range l.Lanes {
		op, _, _ := strings.Cut(ln.Instance, "#")
		if len(ops) == 0 || ops[len(ops)-1] != op {
			ops = append(ops, op)
		}
	}
	if !slices.Equal(ops, []string{"source", "count", "rollup", "sink"}) {
		t.Errorf("lanes by operator %v", ops)
	}
}

func TestLossesAreTheSameForTheSameEvents(t *testing.T) {
	for _, name := range runs {
		evs := readEvents(t, name)
		a, b := Losses(evs), Losses(evs)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two folds of one run differ", name)
		}
	}
}
