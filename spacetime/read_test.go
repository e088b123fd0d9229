package spacetime

import (
	"bytes"
	"os"
	"testing"

	"spate/events"
)

// The recorded runs in testdata: examples/ftnone-kill.yaml (count's node
// killed 5 s in) with --set rate=5000 and --set ft=spate, ft=global,
// ft=global with --set interval=1500ms, and ft=spate with --set
// recover=parallel; the metrics events, which nothing here reads, are
// left out to keep the files small.
var runs = []string{"spate.jsonl", "global.jsonl", "global-short-interval.jsonl", "spate-parallel.jsonl"}

// readEvents decodes a recorded events.jsonl from testdata.
func readEvents(t *testing.T, name string) []events.Event {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Event
	names := events.Names{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := events.DecodeLine(line, names)
		if err != nil {
			t.Fatalf("testdata/%s:%d: %v", name, i+1, err)
		}
		out = append(out, e)
	}
	return out
}

// oneLoss is the single loss of a recorded run.
func oneLoss(t *testing.T, name string) (Loss, []events.Event) {
	t.Helper()
	evs := readEvents(t, name)
	ls := Losses(evs)
	if len(ls) != 1 {
		t.Fatalf("%s: %d losses, want 1", name, len(ls))
	}
	return ls[0], evs
}
