// Package metrics serves a running cluster's figures to Prometheus
// (`spate up --metrics ADDR`). It is a consumer of the event stream, like
// the dashboard: an Exporter folds each event into collectors (Observe
// fits coord.Options.Observe), and Serve exposes them over HTTP at
// /metrics. Nothing here reaches into the coordinator; what the events do
// not carry, it cannot show. It reads the events' payload types
// (events.ThroughputFields, ...), switching on the kind.
//
// What it exports (every name prefixed spate_). A task is an operator's
// instance; its series carry the labels task="count#0" and
// operator="count" (never instance or job, which Prometheus sets on every
// target itself). Rates are for rate() to make from the counters.
//
//	records_read_total, results_written_total     counters (the sources' input, the sinks' output)
//	output_lag_seconds                            gauge, from the throughput events
//	task_input_records_total{task,operator}       counters, summed from each task's sampled rate
//	task_output_records_total{task,operator}      (its rate times the time since its last sample)
//	task_backlog{task,operator}                   gauge: queued input batches
//	checkpoints_total{kind}                        full, delta or global
//	checkpoint_duration_seconds{kind}              histogram: capture to durable
//	checkpoint_capture_seconds                     histogram: the instance's stall
//	checkpoint_stored_bytes{kind}                  histogram; its _sum is the bytes stored
//	backup_held_bytes{task,operator}, backup_spilling{task,operator}, backup_full_pauses_total{task,operator}
//	checkpoint_interval_seconds{task,operator}     the tuner's latest decision
//	nodes_lost_total, recoveries_started_total, recoveries_done_total,
//	recoveries_in_progress, recovery_duration_seconds (histogram)
//	faults_active, rescales_total
//
// Changed for issue 43, for whoever scrapes by the old names: the label
// instance became task (with operator beside it); the gauges
// input_records_per_second and output_results_per_second are gone
// (rate(spate_records_read_total[1m]) and rate(spate_results_written_total[1m]));
// instance_input_records_per_second became the counter
// task_input_records_total (rate() it), joined by task_output_records_total;
// instance_backlog became task_backlog; checkpoint_stored_bytes_total is
// gone (it repeated checkpoint_stored_bytes_sum). A test lints the names
// with promlint, the linter of `promtool check metrics`, and runs promtool
// itself where it is installed.
//
// An Exporter is safe for concurrent use: the collectors are.
package metrics
