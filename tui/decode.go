package tui

import (
	"spate/events"
)

// decodeEvent decodes one events.jsonl line as json.Unmarshal does, by
// events.DecodeLine's fast path.
func decodeEvent(line []byte) (events.Event, error) { return events.DecodeLine(line, nil) }
