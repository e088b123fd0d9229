// Package bench is `spate bench`: side-by-side measurements of the
// configurations a claim compares. Each benchmark runs its configurations
// interleaved, round after round, in one process on the same input, and
// reports the median of each and their ratio, so that a noisy machine
// shifts both sides alike. Speed is measured here, never asserted in tests.
package bench
