// Package bench is `spate bench`: side-by-side measurements of the
// configurations a claim compares. Each benchmark runs its configurations
// interleaved, round after round, in one process on the same input, and
// reports the median of each and their ratio, so that a noisy machine
// shifts both sides alike. Speed is measured here, never asserted in tests.
//
// Every benchmark shares a session (session.go): progress lines on
// stderr ("[k/N] what, ETA"), Ctrl-C that drains the run in progress and
// stops (exit 130), temporary run directories removed unless --keep or a
// failure, a JSON that carries each round's raw values, the configuration
// and the provenance (Meta), and an optional --html page of the rounds.
//
// `bench recovery` kills the node hosting one instance (count#0) at the
// same moment under --ft spate (local recovery) and --ft global (a
// rollback of the whole job), at every shape asked for: each --nodes
// count with each count parallelism (--parallelism 2,4; OP=N pairs set
// the other operators in every shape). A round runs every shape under
// both configurations, their order alternating between rounds, so drift
// on the machine meets every shape and both sides. Per run it reports
// what the recovery did, so that a ratio is read as like for like or
// not: the instances the killed node hosted and those restarted, the
// checkpoint each restored (its chain of files, how old its state was at
// the kill, whether it was the latest), the records replayed, the nodes
// lost from the kill on, and the time from the death to normal output
// lag with its phases, and the cores the nodes kept busy in the 3 s
// before the kill (their CPU metrics: what the machine has beyond it is
// all a catch-up can use). Per shape: medians, global/spate of the medians
// and by round with 95 % intervals of the rounds' mean and of their
// geometric mean (a ratio is multiplicative: one round whose spate run
// was short does not carry it), and the runs that differ in more than
// the recovery (a second node taken for lost, a fallback, no return to
// normal lag, a failed verification).
//
// With --baseline BIN a configuration base runs --ft spate (single
// recovery) with another spate binary (a build of another commit), as
// `BIN up --headless` in a process of its own (binary.go), in every
// round and shape, interleaved with the others, at the settings of that
// round's spate run (rate, keys, parallelism, nodes, interval, flush,
// window, heartbeat, seed, source, duration) and with the same kill.
// This process carries the kill out from outside: it reads the run's
// events.jsonl as BIN's coordinator writes it, into the same plan an
// in-process run's events go to, so that the victim's node is the one
// its instance_placed event names, the pid the one that node's
// node_spawned event gives, and an aligned kill comes as the victim's
// checkpoint events (their time and total_us) say; events that lack
// one of these are an error naming it. The sinks' files are read as
// they grow, as in the other runs, and the rest from the run directory
// when BIN is done (run.json, events.jsonl, and the verdict of the
// verification BIN's up made, report.json), so that base has every
// figure spate has. Per shape it adds base/spate of the recovery times,
// of the medians and by round with a 95 % interval of the rounds' mean
// (above 1: this build recovers faster). BIN's up must take every flag
// a base run passes (checked before any run), and --baseline is not
// taken with --store.
//
// With --store LIST every store of the list (dir, coord, s3://...) is a
// configuration axis beside the ft modes, interleaved the same way
// (storebench.go): spate/dir, spate/coord, global/dir, ... Per run, and
// per configuration over the runs, it adds the restore time (from the
// loss detected to the last restore), the persist time of the instances'
// checkpoints in the steady stretch before the kill (p50, p90; under
// global, whose checkpoint events carry no persist time, the global
// checkpoints' time from trigger to complete), the checkpoints
// completed per second there, and the bytes that crossed the network
// for the store: the coordinator store's own count in run.json for
// coord, the node processes' store_traffic events for s3, none for dir.
// Each store is compared with dir under the same ft mode, and
// global/spate is reported at each store. An s3 store must answer
// before any run starts. With coord the sinks' output is read from the
// segments the coordinator keeps, which a sink stores at its
// checkpoints: the untouched key groups' output is then seen once an
// interval; with s3 it is not measured (it is not in the run directory).
//
// `bench resume` (resume.go) kills the coordinator instead: each run is
// `spate up --headless` in a child process of the running binary,
// SIGKILLed alone (its nodes live on and wait --coord-timeout for
// another) --kill plus a phase after its job started, timed by the
// job_started event of the events.jsonl it writes, the rounds' phases
// spread over one checkpoint interval; --gap after its death `spate up
// --headless --resume DIR` takes the run on to its end. The phases are
// timed from the moment just before this process started the --resume
// process (exec.Cmd.Start: fork and exec are in them): the run read and
// listening (coord_resumed "started"), the control API answering a
// status request (asked every 5 ms: the request goes through the
// coordinator's event loop), every node rejoined and reported
// (coord_resumed "rejoined"), every instance being restored restored
// (the last recovery_restored; under global the rollback's one) and
// caught up (the last recovery_done; a global rollback has none). Per
// run it also says how many instances were restored of the plan's
// (instance_placed before the kill), whether every node rejoined with
// the pid it had (none missing, none respawned), and the verdict of the
// verification the resumed up made (its report.json). Per configuration
// (--ft, and --store dir,coord) the medians over the runs measured, each
// round's values, the rounds whose every instance was restored within
// 2 s, and global/spate of the time to every instance restored, of the
// medians and by round with a 95 % interval. A run whose job had not
// started at the kill is named and not measured; a run that ended before
// its kill, or whose job had started and did not resume or verify, makes
// the exit code 1.
//
// The output of the key groups the failure did not touch (count's key
// groups whose count and sink instances were elsewhere) is measured at
// the sinks' files, read every --tail while the run goes on (sinktail.go):
// per key group, the new results (a result written again after a restore
// is not new) and when they were seen. Two figures come from it: their
// results per second from the kill over the recovery rounded up to
// whole windows, against before the kill (a key group writes once a
// window, so a span of less than a window would count a firing or none
// by chance; a stall caught up within the span does not show in it), and
// how much later than its key group's usual each window due around the
// recovery was written, beside the same figure before the kill (the
// jitter of the measure: the reader runs in this process and sees a
// file late when the cluster starves it of CPU). Rollup's results are not
// counted: each rollup window waits for every count instance's
// watermark, so they stall in any recovery.
package bench
