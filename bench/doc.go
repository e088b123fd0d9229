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
package bench
