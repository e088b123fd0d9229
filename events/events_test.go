package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestBusStampsAndFansOut(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := NewBus(func() time.Time { return now })
	log := b.Subscribe(8, false)
	lossy := b.Subscribe(1, true)
	for i := range 3 {
		e := b.Publish(Event{Kind: NodeJoined, Node: "n1", Text: "joined"})
		if e.Seq != uint64(i+1) || !e.Time.Equal(now) {
			t.Fatalf("event %d stamped seq %d time %v", i, e.Seq, e.Time)
		}
	}
	b.Close()
	var n int
	for range log.C {
		n++
	}
	if n != 3 {
		t.Fatalf("must-deliver subscriber got %d events, want 3", n)
	}
	if got := len(lossy.C); got != 1 || lossy.Dropped() != 2 {
		t.Fatalf("lossy subscriber holds %d and dropped %d, want 1 and 2", got, lossy.Dropped())
	}
	// Publishing after Close is harmless.
	b.Publish(Event{Kind: Error})
}

func TestWriteJSONLAndLine(t *testing.T) {
	b := NewBus(func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) })
	s := b.Subscribe(4, false)
	b.Publish(Event{Kind: NodeLost, Node: "n3", Instance: "count#0", Text: "lost", Fields: map[string]any{"pid": 7}})
	b.Close()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, s); err != nil {
		t.Fatal(err)
	}
	var e Event
	if err := json.Unmarshal(buf.Bytes(), &e); err != nil || e.Kind != NodeLost || e.Fields["pid"].(float64) != 7 {
		t.Fatalf("round trip: %v %+v", err, e)
	}
	if line := e.Line(); !strings.Contains(line, "[n3/count#0] lost") || !strings.HasPrefix(line, "12:00:00.000 node_lost") {
		t.Fatalf("line %q", line)
	}
}
