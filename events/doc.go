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
// Bus is safe for concurrent use.
package events
