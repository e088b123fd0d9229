// Package cli is spate's command line: every command, its flags, its help
// (--help, -h, help COMMAND: synopsis, flags, examples, on stdout, exit 0),
// its one-line errors (exit 2, with a suggestion when a known name is
// close), shell completion (bash, zsh, fish; from the running cluster's
// status its node and instance names, its keyed operators and their
// parallelism) and the man page, all from one set of cobra definitions.
// main.go calls Main and nothing else.
//
// The engines stay where they are and are called as libraries:
// coord.ParseUp, coord.Up and coord.VerifyRun for up, chaos run and
// verify; the control API's client for status, chaos VERB and scale;
// bench.Main and tuner.SimMain, which parse their own flags. For those
// (and for ParseUp) the flag definitions are not copied: they are read
// from the engine's own -h listing (goflags.go), checked with pflag, and
// the original arguments are handed to the engine, so a flag means what
// its owner says and a new one appears in help and completion by itself.
// An engine's -h must therefore stay free of side effects.
//
// Headless up prints through a filter over the event stream
// (headless.go, fed by coord.Options.Observe): by default every
// lifecycle event, one throughput line a second and the checkpoints and
// fired windows of each second summed on one line; --quiet, the
// lifecycle events and a summary; --events KIND,... (or --show), exactly
// those kinds. --events keeps its old meaning, a file for a second copy
// of the events log, for any value that is not made of event kinds
// (eventsFlag). The kinds are events.Kinds(). events.jsonl always has
// every event.
//
// Exit codes: 0 ok, 1 a check failed or the cluster refused an action, 2
// bad input or could not run.
package cli
