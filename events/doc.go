// Package events is the typed event stream of a run.
//
// Every component reports what it does as an Event. The coordinator stamps
// each one with a sequence number and a time (from an injected clock) and
// publishes it on a Bus, which fans it out to subscribers: the JSON-lines
// log, the headless printer, later the TUI and the metrics.
//
// Telemetry never blocks the data path: a lossy subscriber whose buffer is
// full loses the event and counts it (Sub.Dropped). A must-deliver
// subscriber (the log) makes Publish wait for room, so it sees everything;
// only the coordinator's event loop publishes, never a data-path goroutine.
//
// # Kinds and payloads
//
// Every kind is a named constant (events.go) and has one payload type,
// KindFields (payloads.go): an event's Fields is a value of its kind's
// type, or nil for an event with nothing to say; no component makes a
// kind or a field ad hoc. Readers switch on the kind and assert the
// payload's type; a missing payload reads as the type's zero value.
//
// The JSON of an event is one line of events.jsonl (WriteJSONL,
// AppendLine): the schema version "v", seq, time, kind, node, instance,
// text and the payload as "fields". A payload's fields are declared in
// their JSON names' order, and the kinds with several shapes (a global
// checkpoint and an instance's, a restart rescale and a live one) write
// only their shape's fields (shapes.go), so the lines are byte for byte
// what the coordinator wrote before the payloads were typed, when they
// were maps. Adding a field or a kind keeps SchemaVersion; changing or
// removing one bumps it.
//
// Reading (Event.UnmarshalJSON, DecodeFields) decodes the fields by the
// kind into its type: a field the type does not have is skipped (a newer
// recording), a field of the wrong type is an error naming the kind and
// the field, and a kind this version does not know is kept whole as an
// Other, written back unchanged. A fast path (fast.go) decodes the
// payload types several times faster than encoding/json with the same
// result. CheckLine is the strict check the tests make of real runs.
//
// Bus is safe for concurrent use; so are the decoding functions.
package events
