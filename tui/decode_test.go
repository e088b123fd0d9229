package tui

import (
	"encoding/json"
	"testing"
)

// TestIndexPeeksTimeAndKind: the index reads the time and the kind of the
// coordinator's lines, with the schema version or without, as decoding
// them would.
func TestIndexPeeksTimeAndKind(t *testing.T) {
	for _, e := range loadEvents(t, "run-kill.jsonl", "future.jsonl", "run-global.jsonl") {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range [][]byte{b, append([]byte(`{"v":1,`), b[1:]...)} {
			ns, class, err := peek(line)
			if err != nil || ns != e.Time.UnixNano() || class != classOf([]byte(e.Kind)) {
				t.Errorf("%s: peek %d %d %v", line, ns, class, err)
			}
		}
	}
}
