//go:build race

// Package race says whether the binary was built with the race detector.
package race

// Enabled is true in a build with -race.
const Enabled = true
