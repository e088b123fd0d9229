// Package benchutil holds what the packages' benchmarks share: emptying
// the caches before a measured step, and the process's CPU time, which
// on a shared machine says more than the wall time.
package benchutil

import (
	"spate/internal/cputime"
	"time"
)

// evictBuf is larger than the caches.
var evictBuf = make([]byte, 128<<20)

// Evict reads and writes a buffer larger than the caches: what they held
// is gone, as it is in a worker between the writes of a second and its
// checkpoint, which the rest of its work runs between.
func Evict() {
	var x byte
	for i := 0; i < len(evictBuf); i += 64 {
		x += evictBuf[i]
		evictBuf[i] = x
	}
}

// CPUTime is the CPU time the process has used: on a shared machine a
// benchmark's wall time counts the time others took.
func CPUTime() time.Duration { return cputime.Process() }
