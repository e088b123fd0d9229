package tui

import (
	"testing"

	"spate/events"
)

func TestPumpDeliversEverythingInOrder(t *testing.T) {
	p := newPump(0, 1000)
	in := make(chan events.Event, 500)
	for i := 1; i <= 500; i++ {
		in <- events.Event{Seq: uint64(i), Kind: events.Throughput}
	}
	close(in)
	go p.run(in)
	var got []uint64
	var recycled []events.Event
	for {
		msg, ok := p.next(recycled)().(batchMsg)
		if !ok {
			t.Fatal("next returned no batch")
		}
		for _, e := range msg.events {
			got = append(got, e.Seq)
		}
		recycled = msg.events
		if msg.closed {
			if msg.dropped != 0 {
				t.Errorf("dropped %d with room to spare", msg.dropped)
			}
			break
		}
	}
	if len(got) != 500 {
		t.Fatalf("got %d events, want 500", len(got))
	}
	for i, s := range got {
		if s != uint64(i+1) {
			t.Fatalf("event %d has seq %d: out of order", i, s)
		}
	}
}

// TestPumpDropsFrequentFirst: when the buffer is full, frequent events are
// dropped and counted; lifecycle events still fit in their reserve.
func TestPumpDropsFrequentFirst(t *testing.T) {
	p := newPump(0, 40) // reserve: 10
	for i := 0; i < 60; i++ {
		p.put(events.Event{Kind: events.Throughput})
	}
	for i := 0; i < 15; i++ {
		p.put(events.Event{Kind: events.NodeLost})
	}
	msg := p.next(nil)().(batchMsg)
	lost := 0
	for _, e := range msg.events {
		if e.Kind == events.NodeLost {
			lost++
		}
	}
	if len(msg.events) != 50 || lost != 10 {
		t.Errorf("kept %d events (%d node_lost), want 50 (10)", len(msg.events), lost)
	}
	if msg.dropped != 25 {
		t.Errorf("dropped %d, want 25", msg.dropped)
	}
}

func TestPumpStop(t *testing.T) {
	p := newPump(0, 10)
	in := make(chan events.Event)
	done := make(chan struct{})
	go func() { p.run(in); close(done) }()
	got := make(chan any)
	go func() { got <- p.next(nil)() }()
	p.stop()
	if msg := <-got; msg != nil {
		t.Errorf("next after stop = %v, want nil", msg)
	}
	<-done
}
