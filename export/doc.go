// Package export turns a finished run's events into files that the tools
// researchers already use:
//
//	CSV(dir, out)        one CSV file per event kind, one column per field
//	                     of the kind's payload type (events/payloads.go),
//	                     present in a run's events or not, so that a kind's
//	                     columns are the same in every run (nested objects
//	                     flattened with dotted names, lists as JSON), for
//	                     pandas and R
//	Perfetto(dir, w)     Chrome trace-event JSON, for Perfetto and
//	                     chrome://tracing: a track per instance with its
//	                     checkpoints (capture inside) and recoveries (their
//	                     phases inside), a track of faults, one of rescales
//	                     and counters of throughput and output lag
//
// Both read only the run directory (run.json and events.jsonl, through
// chaos.BuildReport for the spans), write nothing else, and are
// deterministic for a given run.
package export
