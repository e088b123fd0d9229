// Package tui is spate's live dashboard: a Bubble Tea (v1) program that
// shows a running cluster from its event stream and acts on it only
// through the control API.
//
// # Contract
//
// The caller (spate up) gives Run a channel of events and a Controller
// (*control.Client satisfies it) and hands over the terminal:
//
//	err := tui.Run(ctx, tui.Options{
//		Events:  sub.C,            // an events.Bus subscription (lossy is fine)
//		Dropped: sub.Dropped,      // optional: the bus's own drop count
//		Control: client,           // nil: read-only
//		Title:   runID,
//		RunDir:  dir,
//	})
//
// Run returns when the user quits (q, ctrl-c, :q) or ctx ends (then nil).
// While it runs the terminal is in the alternate screen; anything else
// that writes to the terminal (logs) must go to the run directory. Closing
// Events is not the end: the dashboard keeps the final state until q.
//
// # Events in
//
// A pump goroutine drains Events into a bounded buffer and the model takes
// it as one message per frame (50 ms), so 10,000 events/s cost twenty
// Updates a second, not ten thousand. The pump never blocks the sender on
// the UI: when the buffer is full, frequent kinds (throughput, checkpoint,
// trim, metrics, window_fired, replay, interval, frame_error) are dropped
// first and lifecycle kinds keep a reserve; every drop is counted in the
// header ("dropped N", plus Options.Dropped).
//
// The panes read the payload types of package events (events.CheckpointFields
// for a checkpoint, ...), the same from the in-process bus and from a
// recording; an event without its payload folds as zero values. They
// read node_spawned and node_joined (pid, listen), node_suspect and
// node_lost (which open a recovery), node_exited, partition (smaller
// groups are "partitioned"), fault_started and fault_ended, instance_placed
// and instance_done, checkpoint (an instance's or a global one),
// checkpoint_fallback, recovery_placed (per instance, or without one a
// global rollback), recovery_restored, recovery_done, replay, trim,
// backup_spill, backup_full, the rescale_* steps, autoscale, interval,
// metrics (per node, and per instance for the dataflow pane),
// throughput, and the phase from run_started, job_started,
// drain_started and run_finished; node_paused and node_resumed, which the
// engine does not emit (a pause is a fault_started), by kind alone.
//
// The spacetime pane (0) draws a loss as package spacetime's space-time
// diagram, cut to the pane (never wrapped; enter shows all of it): j/k
// pick the loss, and 0 from the recovery pane picks the one selected
// there; in spate tour, once a comparison's recovery is over, the newest
// loss is drawn beside the second cluster's (Comparison.Loss). The state keeps what spacetime.Losses folds, bounded: the kinds
// it reads but checkpoints, without their text, and each instance's
// latest checkpoints, pinned at a node lost and at each end of a
// recovery so that a loss keeps them after newer ones; a checkpoint of a
// long recovery that was neither among the latest at the loss nor at an
// end is not drawn, and when the record is full the oldest replays go
// first (an old loss loses its arrows before its lanes).
//
// Every event, known or not, goes to the log pane. A node lost without a
// fault through the API (kill -9 by hand) counts as an implicit fault
// window, ended when its recovery completes.
//
// # Actions out
//
// Keys and the command line build control.Actions; each runs as a tea.Cmd
// (never in Update) with a 10 s timeout, and the log shows the request at
// once and the result or the refusal when it comes. x kill, p pause or
// resume (by the node's state), i partition shape=one, h heal; they hit
// the node selected in the cluster pane, or the node of the instance
// selected in the dataflow pane. The command line takes VERB [TARGET]
// [VALUE] [key=value ...]: scale's value is n, interval's is interval.
//
// # A recording: spate view
//
// View (and ViewMain, its command line) shows a finished run's
// events.jsonl through the same model: a recording and a live run are the
// same input. The model's state is always the fold of the recording's
// first pos events; the transport (space, ←/→, shift+←/→, [ ], + -, g G)
// moves pos and the header draws it as a bar. The model's clock is the
// recording's, so ages and charts read as they did live. Actions are
// refused with a line saying this is a recording.
//
// Over a simulated run (RunDir has spate sim's schedule.yaml), w forks
// it (fork.go): a menu of faults to add at the position, as job time
// (from job_started, as sim measures a step's at); the choice runs this
// executable's `sim --schedule DIR/schedule.yaml --fork-at T --add F
// --data DIR-fork-N --quiet` in a tea.Cmd, and its end shows the output
// over the pane and replaces the model with one over
// DIR-fork-N/fork/seed-S, just before the fork. The child ends with the
// view.
//
// Opening maps the file and indexes every line (start, time, and whether
// it is a fault, checkpoint, recovery or rescale, for the jump keys
// [ ] f r s c) without decoding it,
// on two goroutines; a background fold then decodes everything once and
// keeps a clone of the state every 16,384 events. A seek clones the
// snapshot at or before its target and folds what lies between (decoded
// on two goroutines by decodeEvent, a fast path that is json.Unmarshal
// for any input). A seek past the background fold does not wait for it:
// the index also gives each line a fold code (its kind, as far as the
// fold cares) and a key (its node and instance), and a skim (skim.go)
// decodes from the fold's latest snapshot only the events that can change
// the state at the target: the rare kinds, and of the steady ones the
// bounded suffixes and latest values the panes keep; the log and the
// counters are replayed on the index (and before each fault or recovery
// event, every instance's latest checkpoints, which the spacetime
// record pins). The state is the full fold's, field
// for field (TestSkimIsTheFold). A line that is not an event is
// FILE:LINE: found at open for a line cut short or not JSON, else by the
// background fold (a skim decodes only some lines), which then ends the
// viewer with the error.
//
// # A lesson: spate tour
//
// Options.Lesson (ParseLesson reads one from Markdown) shows a step of a
// guided tour in place of the side pane, stars the panes it talks about,
// shows the first, and sends its action through Control once; n and p
// step (p is no longer pause: :pause is). A step that waits for an event
// says so until one has come (after its action, if it has one).
// LessonHeadless prints the same steps with their live figures, and a
// comparison step's {diagrams} as both clusters' space-time diagrams side
// by side (spacetime.SideBySide, 78 columns).
//
// # Structure
//
// One top-level model (model.go, view.go); the state folded from events
// is pure (state.go); the panes are plain structs rendering strings from
// it (panes.go); one keymap (keys.go) generates the help and the footer;
// one styles.go, with adaptive colours for dark and light terminals and a
// glyph for every colour's meaning, so NO_COLOR (honoured through the
// renderer's colour profile) and Options.Plain lose nothing.
//
// The layout degrades in steps: 140x40 and up shows the pane, a side pane
// and the throughput and latency strip; 110x30 drops the strip; 60x16
// drops the side pane; 40x8 keeps one table and a status line; below that
// the dashboard says the size it needs. q works at every size.
//
// The model is not safe for concurrent use; the program owns it.
package tui
