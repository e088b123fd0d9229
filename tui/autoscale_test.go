package tui

import (
	"strings"
	"testing"
	"time"

	"spate/events"
)

// An auto-scaler change refused by the rules of spate scale shows why on
// the dashboard, not only in the event's text.
func TestARefusedAutoscaleShowsWhy(t *testing.T) {
	s := newState()
	s.apply(events.Event{Kind: events.Autoscale, Time: time.Unix(0, 0), Fields: events.AutoscaleFields{Op: "count", From: 2, To: 3,
		Reason: "input 3k/s > 2 × 1.7k/s", Deferred: true, Refused: "a rescale needs --ft spate (this run has --ft global)"}})
	if len(s.autoscales) != 1 || !strings.Contains(s.autoscales[0].Reason, "refused: a rescale needs --ft spate") {
		t.Fatalf("autoscales %+v: want the refusal in the row", s.autoscales)
	}
}
