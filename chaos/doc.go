// Package chaos breaks a running cluster on purpose and says whether it
// survived: fault kinds and targets, scenario files, their schedule, the
// runner, the checks and the reports.
//
// The pure parts and their drivers:
//
//	Parse(file, data)         scenario file -> *Scenario (or one-line *Error)
//	Plan(sc, runFor)          *Scenario -> []Step (pure, deterministic by seed)
//	Evaluate(checks, ev)      Evidence -> []CheckResult (pure)
//	BuildReport(dir, sc, v)   run directory + verify -> *Report (reads only)
//	WriteReport / WriteHTML   *Report -> report.json, report.html
//	RunReport / WriteRunReport  any finished run's directory + verify -> *Report
//	                          (the scenario's checks when it had one; `spate report`)
//	Run(ctx, sc, opt)         the driver: start, act on time, heal, verify, report
//
// chaos imports control, events, netfault (the link fault layer, a
// leaf) and spacetime (the diagrams of report.html), never coord or node: Run reaches the cluster through the hooks of
// RunOptions (Start, Verify; KillCoordinator, ResumeCoordinator and
// AwaitNodes for a scenario that kills the coordinator) and its control
// API, and BuildReport reads run.json with its own small struct.
//
// # Scenario files
//
// A scenario is one YAML document:
//
//	name: teaching demo              # required
//	description: one line            # optional
//	cluster:                         # optional: the flags of `spate up`
//	  nodes: 4
//	  duration: 60s
//	schedule:                        # required (schedule: [] for none)
//	  - at: 10s
//	    fault: kill
//	    target: one
//	checks:                          # optional: default [exactly_once]
//	  - exactly_once
//	  - max_recovery: 5s
//
// cluster: takes the flags of `spate up` by name: nodes, local, keys, seed
// (whole numbers); rate, speedup (numbers); duration, window, lateness,
// timeout, heartbeat, coord-timeout (durations); job, source, ft (spate,
// global, none), interval (auto or a duration), events, listen (strings);
// parallelism ({count: 4} or "count=4,sink=2"). data, headless, script
// and resume are set by `spate chaos run`, not by the file. Scenario.Cluster holds them as
// "--name=value" arguments in file order, for coord.ParseUp, which makes
// the final checks (Scenario.ClusterLines places its errors). Targets are
// checked against nodes (default 4) and the windowcount job's operators
// (source, count, rollup, sink; parallelism 2 unless set).
//
// Each schedule entry is one of:
//
//	at: D, fault: ...                      once, D after the job started
//	every: D, [at: FIRST], [until: END],   at FIRST (default D), FIRST+D, ...
//	  fault: ...                           before END or the run's end
//	random:                                faults at random times:
//	  seed: N                              required; the same seed, the same plan
//	  mean: D                              required; mean time between faults
//	                                       (exponential inter-arrival times)
//	  faults: [kill, pause, ...]           required; drawn uniformly from
//	                                       kill, restart, pause, partition, link, store,
//	                                       corrupt (store corrupt=true), scale
//	  burst: N, gap: D                     each draw makes 1 to N faults (1), the
//	                                       next up to D after the one before (500ms)
//	  for: D                               how long each lasting fault lasts (3s)
//	  target: T                            (one); partitions and store faults
//	                                       have none; never the coordinator
//	  from: D, until: D                    the window (the whole run)
//
// A random partition draws its shape (one, majority, bridge); a random
// link fault is latency 100ms with jitter 20ms; a random store fault is
// slow: 200ms; a random corrupt damages the target's newest checkpoint
// files; a random scale draws count or rollup and 1 to 4 instances. An every: or random: entry needs an end: until: or
// cluster: duration. A schedule makes at most MaxSteps steps.
//
// Faults and their fields (D a Go duration: 500ms, 5s, 2m; every duration
// must be positive, but at: and from: may be 0):
//
//	kill       target                  SIGKILL the node(s)
//	kill       target: coordinator,    SIGKILL the coordinator; a new one
//	           [resume_after: D]       (spate up --resume) D later
//	restart    target                  kill and start again
//	pause      target, [for: D]        SIGSTOP; SIGCONT after for:
//	resume     target                  SIGCONT
//	partition  shape: one|majority|bridge [target] | groups: [[n1,n2],[n3,n4]]
//	           [oneway: true] [for: D]
//	link       target, and at least one of latency: D, jitter: D,
//	           bandwidth: RATE (1MB/s, 512KiB/s), stall: true, reset: true;
//	           [for: D]
//	store      [target], exactly one of slow: D, fail: true, corrupt: true;
//	           [for: D]; [file: newest|base|fallback] damages that file
//	           of each instance (of the target's alone when the target is
//	           an instance): the newest file (what corrupt: true damages),
//	           the base of the latest restorable checkpoint's chain, or
//	           the fallback checkpoint's own file; corrupt: is implied.
//	           Each damage changes a byte no earlier damage changed
//	heal       [target]                lift every fault (on target)
//
// Targets: a node (n1, n2, ...), one, minority, majority, all, an operator
// instance (count/1 or count#1) or an operator (count: the node hosting an
// instance of it). The cluster resolves them when the action arrives.
// The coordinator (coordinator, or coord as `spate chaos pause coord`
// spells it; the action's target is coord) is a target of kill alone, and
// of no random: entry.
//
// # Killing the coordinator
//
// `kill coordinator` cannot go through the control API: that is the
// coordinator, killing itself. The runner does it (RunOptions.
// KillCoordinator: `spate chaos run` runs the coordinator as a child
// process for such a scenario, and sends it SIGKILL). The nodes keep
// their instances and wait --coord-timeout (cluster: coord-timeout) for a
// coordinator. With resume_after: D the runner starts a new one D after
// the kill (RunOptions.ResumeCoordinator, `spate up --resume DIR`): the
// nodes rejoin it and every instance is restored from its checkpoints.
// The runner removes the dead coordinator's control address (a live one
// removes its own when it stops), dials the new one's before the next
// step, and waits for the new coordinator, not the dead one, to finish
// before it verifies. A step due while no coordinator runs is logged as
// refused; a resume due after the last step, or after the cluster's
// duration, still comes, and the final heal after it. In an every: entry
// resume_after must be shorter than every:.
//
// Without resume_after, or when the new coordinator cannot start or ends
// before its control API is up, the run cannot finish: the later steps
// are not sent (a note says how many), the runner waits for the nodes to
// exit (RunOptions.AwaitNodes: each gives up after --coord-timeout),
// nothing is verified (the job never ended), and every check fails with
// "not met: the run did not finish: the coordinator was killed at 5.0s
// and never resumed". A scenario that kills the coordinator for good must
// say expect: fail; Parse refuses it otherwise, since it could never pass.
//
// Every bad input (unknown field or key, unknown fault, check or target,
// a bad duration, bandwidth or number, a missing field, a wrong type, a
// YAML syntax error) is an *Error on one line:
//
//	FILE:LINE: FIELD: what is wrong
//	demo.yaml:14: schedule[2].latency: "50" is not a duration (want e.g. 500ms, 5s, 2m)
//
// # From steps to actions
//
// A step is a control.Action: Verb the fault, Target the target, Args
// every other field as written ("for": "5s", "shape": "majority",
// "latency": "50ms", "bandwidth": "1MB/s", booleans as "true", groups as
// "n1,n2|n3,n4"; resume_after as written). The cluster lifts a fault with
// for: itself; the runner only sends each action at its time (Step.At
// after the job started; a kill of the coordinator it carries out itself)
// and,
// at the cluster's duration (or after the last step when it has none),
// one plain heal, so that the drain and the checks run on a healed
// cluster. An action the cluster refuses is logged in the report
// (Report.Actions, OK false) and the run goes on.
//
// # Checks and the verdict
//
//	exactly_once        verify found 0 lost, 0 duplicated, 0 wrong results
//	all_recovered       every instance lost was recovered before the end
//	                    (an instance lost again during its recovery: by
//	                    the recovery that follows, timed from the first
//	                    detection)
//	max_recovery: D     the longest recovery (detection to caught up) <= D;
//	                    fails if an instance never recovered
//	max_lag: D          the largest output-lag sample <= D (paced runs only:
//	                    no samples fails)
//	max_checkpoint: D   p99 of the checkpoints' total time <= D
//	min_throughput: N   records read per second of job time >= N
//
// The verdict is "pass" when every check passes; a run that did not
// finish (a coordinator killed and not followed) fails every check. Run
// returns, and `spate chaos run` exits with, ExitPass (0), ExitFail (1: a
// check failed) or ExitNotRun (2: a bad scenario, or the cluster could not
// be started, reached, or verified, or a new coordinator's control API
// never came up).
//
// # The report
//
// report.json (Report; times *_ms are milliseconds since the job started):
//
//	scenario, file, run, dir, ft
//	verdict                    "pass" | "fail"
//	windows, lost, duplicated, wrong   from verify (lost: expected results never written)
//	lost_instances             instances the run ended without (run_finished)
//	records, job_started, finished, duration_ms
//	checks[]                   {name, pass, detail: observed vs limit}
//	faults[]                   {id, verb, target, nodes, args, start, end,
//	                            start_ms, end_ms, open}: from fault_started and
//	                            fault_ended events; open: no end, counted to
//	                            the run's end; a killed coordinator is id 0,
//	                            verb kill, target coord, from the kill until
//	                            the new one's control API answered (open if
//	                            none did), from the runner
//	actions[]                  {at_ms, plan_ms, action, ok, text}: what the runner
//	                            sent or did ("kill coord resume_after=2s",
//	                            "resume coord")
//	recoveries[]               {instance ("job" for a global rollback), from, to,
//	                            reason, checkpoint, fellback, replayed,
//	                            detected_ms, done, total_ms, phases[]}
//	                            phases {name, start_ms, end_ms}: detect (the
//	                            fault on the lost node to node_lost), place
//	                            (to recovery_placed), restore (to
//	                            recovery_restored), catch_up (to
//	                            recovery_done); unrecovered when it never was
//	checkpoints                {count, full, delta, global, raw_bytes,
//	                            stored_bytes, capture_us, persist_us,
//	                            total_us: {p50, p99, max}}
//	throughput                 {samples, mean_in_rps, max_in_rps,
//	                            mean_out_rps, records_per_s}
//	latency                    {samples, p50_ms, p99_ms, max_ms} of run.json's lag_ms
//	notes[]                    error events, a cut-short events.jsonl, the runner's remarks
//	limits[]                   {check, value, unit}: the checks' limits as the charts draw them
//	rescales[]                 {id, op, from, to, mode, planned_ms, done_ms, pause_ms, bytes,
//	                            steps[]: {name, ms, instance, range, bytes}}
//	series                     {throughput[], lag[], checkpoints[] (with keys, raw_bytes,
//	                            bytes), backup[]: {ms, instance, kind, held_bytes, ...},
//	                            intervals[]: {ms, instance, interval_ms, ...}}: what the HTML draws
//
// report.html is one self-contained page (inline CSS and SVG from the
// plot package, no script, nothing fetched): the verdict and what the
// oracle checked, the checks, throughput and output lag over time with
// the fault windows shaded, rescales marked and the checks' limits drawn,
// the recovery timeline and each recovery zoomed on its own axis with its
// phases, the first three losses of a node as space-time diagrams (a
// lane per instance with its checkpoints, the fault, each restore and
// the replay arrows with their records, or the global rollback; the
// model is spacetime's, report.json leaves it out), a checkpoint Gantt
// per instance (capture and persist) and the
// checkpoints' durations and sizes, the upstream backups' bytes with
// spills and pauses, the interval decisions, the rescale steps, and the
// faults and actions. Each section opens with a sentence or two saying
// what it shows and how to read it.
//
// Run's goroutine owns its state; the report functions are safe to call
// concurrently on different reports.
package chaos
