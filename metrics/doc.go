// Package metrics serves a running cluster's figures to Prometheus
// (`spate up --metrics ADDR`). It is a consumer of the event stream, like
// the dashboard: an Exporter folds each event into collectors (Observe
// fits coord.Options.Observe), and Serve exposes them over HTTP at
// /metrics. Nothing here reaches into the coordinator; what the events do
// not carry, it cannot show. It reads the events' payload types
// (events.ThroughputFields, ...), switching on the kind.
//
// What it exports (every name prefixed spate_):
//
//	records_read_total, results_written_total     counters (the sources' input, the sinks' output)
//	input_records_per_second, output_results_per_second
//	output_lag_seconds                            gauges, from the throughput events
//	instance_input_records_per_second{instance}, instance_backlog{instance}
//	checkpoints_total{kind}                        full, delta or global
//	checkpoint_duration_seconds{kind}              histogram: capture to durable
//	checkpoint_capture_seconds                     histogram: the instance's stall
//	checkpoint_stored_bytes{kind}                  histogram, and checkpoint_stored_bytes_total
//	backup_held_bytes{instance}, backup_spilling{instance}, backup_full_pauses_total{instance}
//	checkpoint_interval_seconds{instance}          the tuner's latest decision
//	nodes_lost_total, recoveries_started_total, recoveries_done_total,
//	recoveries_in_progress, recovery_duration_seconds (histogram)
//	faults_active, rescales_total
//
// An Exporter is safe for concurrent use: the collectors are.
package metrics
