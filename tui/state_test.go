package tui

import (
	"encoding/json"
	"testing"
	"time"

	"spate/events"
	"spate/job"
)

func applyAll(s *state, evs []events.Event) {
	for _, e := range evs {
		s.apply(e)
	}
}

func TestStateOfRecordedKill(t *testing.T) {
	s := newState()
	applyAll(s, loadEvents(t, "run-kill.jsonl"))
	if got := s.nodes["n2"].State; got != "dead" {
		t.Errorf("n2 is %s, want dead", got)
	}
	if s.phase != "finished" || s.job != "windowcount" || s.run != "20261130-051601-cad249" {
		t.Errorf("phase %q job %q run %q", s.phase, s.job, s.run)
	}
	if len(s.ckpts) != 72 {
		t.Errorf("%d checkpoints, want 72", len(s.ckpts))
	}
	if len(s.recoveries) != 1 {
		t.Fatalf("%d recoveries, want 1", len(s.recoveries))
	}
	r := s.recoveries[0]
	if !r.Completed || r.Node != "n2" || len(r.Insts) != 2 || r.Global {
		t.Errorf("recovery %+v", r)
	}
	if _, _, total := r.phaseTimes(); total != 109 {
		t.Errorf("recovery took %vms, want 109", total)
	}
	if got := s.insts["rollup#1"]; got.Node != "n3" || got.Gen != 2 {
		t.Errorf("rollup#1 on %s gen %d, want n3 gen 2", got.Node, got.Gen)
	}
	if len(s.faults) != 1 || !s.faults[0].Implicit || s.faults[0].End.IsZero() {
		t.Errorf("faults %+v: want one implicit, ended by the recovery", s.faults)
	}
	if iv := s.observedInterval("count#0"); iv < 900*time.Millisecond || iv > 1100*time.Millisecond {
		t.Errorf("observed interval of count#0 %v, want about 1s", iv)
	}
}

func TestStateOfGlobalRollback(t *testing.T) {
	s := newState()
	applyAll(s, loadEvents(t, "run-global.jsonl"))
	if len(s.recoveries) != 1 {
		t.Fatalf("%d recoveries, want 1", len(s.recoveries))
	}
	r := s.recoveries[0]
	if !r.Global || r.Ckpt != 4 || r.Records != 39058 || !r.Completed {
		t.Errorf("recovery %+v: want a completed global rollback to 4", r)
	}
	for _, c := range s.ckpts {
		if !c.Global {
			t.Errorf("checkpoint %+v is not global", c)
		}
	}
}

func TestStateOfFutureKinds(t *testing.T) {
	s := newState()
	evs := loadEvents(t, "run-kill.jsonl", "future.jsonl")
	var at int
	for i, e := range evs {
		if e.Kind == "node_paused" {
			at = i
		}
	}
	applyAll(s, evs[:at+1])
	if got := s.nodes["n3"].State; got != "paused" {
		t.Errorf("n3 is %s after node_paused", got)
	}
	end := len(evs)
	for i, e := range evs {
		if e.Kind == events.RunFinished {
			end = i
		}
	}
	applyAll(s, evs[at+1:end])
	if got := s.nodes["n4"].State; got != "alive" {
		t.Errorf("n4 is %s after the partition healed", got)
	}
	// Once the run has finished no node is alive in it.
	applyAll(s, evs[end:])
	if got := s.nodes["n4"].State; end < len(evs) && got != "stopped" {
		t.Errorf("n4 is %s after the run finished", got)
	}
	if len(s.rescales) != 1 || !s.rescales[0].Done || s.rescales[0].Moves != 2 || len(s.rescales[0].Phases) != 5 {
		t.Errorf("rescales %+v", s.rescales)
	}
	if len(s.autoscales) != 1 || len(s.tunerOrder) != 3 || s.tuner["count#0"].Interval != 900*time.Millisecond {
		t.Errorf("autoscales %v tuner %v", s.autoscales, s.tunerOrder)
	}
	if !s.nodes["n1"].HasMetrics || s.spills["count#1"] != 1 || s.pauses["count#1"] != 1 {
		t.Errorf("metrics, spills or backpressure pauses missing")
	}
	unknown := false
	for _, le := range s.log {
		if le.E.Kind == "mystery_kind" {
			unknown = true
		}
	}
	if !unknown {
		t.Error("an unknown kind did not reach the log")
	}
}

// TestFieldsFromTheBus: an event straight from the in-process bus and the
// same event read back from events.jsonl fold into the same state: the
// payload is one type either way.
func TestFieldsFromTheBus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := []events.Event{
		{Kind: events.NodeJoined, Node: "n1", Time: now, Fields: events.NodeJoinedFields{PID: 42, Listen: "x"}},
		{Kind: events.InstancePlaced, Node: "n1", Instance: "count#0", Time: now,
			Fields: events.InstancePlacedFields{Op: "count", Ranges: []job.Range{{Lo: 0, Hi: 64}}}},
		{Kind: events.NodeLost, Node: "n1", Time: now, Fields: events.NodeLostFields{Instances: []job.InstanceID{"count#0"}, Reason: "EOF"}},
		{Kind: events.Checkpoint, Node: "n1", Instance: "count#0", Time: now,
			Fields: events.CheckpointFields{ID: 3, Full: true, TotalUs: 1500, Bytes: 10}},
		{Kind: events.RescaleDone, Time: now, Fields: events.RescaleDoneFields{Op: "count", From: 2, To: 3, Moves: 3}},
	}
	bus, read := newState(), newState()
	for _, e := range evs {
		bus.apply(e)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		read.apply(back)
	}
	for _, s := range []*state{bus, read} {
		if s.nodes["n1"].PID != 42 {
			t.Errorf("pid %d", s.nodes["n1"].PID)
		}
		if got := s.insts["count#0"].KeyGroups; got != "[0,64)" {
			t.Errorf("key groups %q", got)
		}
		if got := s.insts["count#0"].State; got != "lost" {
			t.Errorf("count#0 is %s, want lost", got)
		}
		if c := s.ckpts[0]; c.ID != 3 || !c.Full || c.Total != 1500*time.Microsecond || c.Stored != 10 {
			t.Errorf("checkpoint %+v", c)
		}
		if r := s.rescales[0]; r.Moves != 3 || r.From != 2 || r.To != 3 || !r.Done {
			t.Errorf("rescale %+v", r)
		}
	}
	// An event without its payload folds as zero values, never a panic.
	s := newState()
	s.apply(events.Event{Kind: events.Checkpoint, Instance: "x#0"})
	s.apply(events.Event{Kind: events.Partition})
	s.apply(events.Event{Kind: events.RescaleDone})
	if len(s.ckpts) != 1 || len(s.rescales) != 1 {
		t.Errorf("checkpoints %d, rescales %d", len(s.ckpts), len(s.rescales))
	}
}

func TestHistoriesAreBounded(t *testing.T) {
	s := newState()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 5*maxLog; i++ {
		s.apply(events.Event{Seq: uint64(i), Kind: events.Checkpoint, Instance: "count#0", Time: now.Add(time.Duration(i) * time.Millisecond)})
		s.apply(events.Event{Kind: events.Throughput, Time: now.Add(time.Duration(i) * time.Millisecond)})
	}
	if len(s.log) > maxLog || len(s.ckpts) > maxCkpts || len(s.tput) > maxTput {
		t.Errorf("log %d ckpts %d tput %d: past their bounds", len(s.log), len(s.ckpts), len(s.tput))
	}
	if last := s.log[len(s.log)-1].E.Kind; last != events.Throughput {
		t.Errorf("the log lost its newest entry: %s", last)
	}
}

// TestLogKeepsWhatMattersUnderAFlood: a flood of frequent events pushes
// out other frequent events, not node losses or the dashboard's own lines.
func TestLogKeepsWhatMattersUnderAFlood(t *testing.T) {
	s := newState()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.apply(events.Event{Kind: events.NodeLost, Node: "n2", Time: now})
	s.appendLog(logEntry{Local: true, E: events.Event{Kind: "tui", Text: "→ kill n2"}})
	for i := 0; i < 10*maxLog; i++ {
		s.apply(events.Event{Kind: events.Throughput, Time: now.Add(time.Duration(i) * time.Microsecond)})
	}
	var lost, note bool
	for _, le := range s.log {
		lost = lost || le.E.Kind == events.NodeLost
		note = note || le.Local
	}
	if !lost || !note || len(s.log) > maxLog {
		t.Errorf("after the flood: node_lost kept %v, note kept %v, %d lines", lost, note, len(s.log))
	}
	if len(s.tput) != 1 {
		t.Errorf("%d throughput samples within 20 ms, want 1 (the latest)", len(s.tput))
	}
}
