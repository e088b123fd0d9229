package tui

import (
	"encoding/json"
	"testing"

	"spate/events"
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

// TestTimeCacheIsParseTime: the index's times read with its cache of the
// second are events.ParseTime's, line after line, whatever came before.
func TestTimeCacheIsParseTime(t *testing.T) {
	var tc timeCache
	for _, s := range []string{"2026-11-30T05:16:01.296981097Z", "2026-11-30T05:16:01.3Z", "2026-11-30T05:16:01Z",
		"2026-11-30T05:16:01.29698109Z", "2026-11-30T05:16:02.000000001Z", "2026-11-30T05:16:02.x1Z",
		"2026-11-30T05:16:02.1234567890Z", "2026-11-30T05:16:02.Z", "2026-04-31T05:16:02.1Z", "2026-11-30T05:16:02.5+01:00",
		"2026-11-30T05:16:02.5Z"} {
		want, wok := events.ParseTime([]byte(s))
		got, ok := tc.parse([]byte(s))
		if ok != wok || (ok && got != want) {
			t.Errorf("%s: %d %v, want %d %v", s, got, ok, want, wok)
		}
	}
}
