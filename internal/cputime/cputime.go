//go:build !wasip1

package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time this process has used, user and system, or 0
// if it cannot be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
