package wire

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time of the calling thread, so benchmarks can
// report time on the CPU (ns/record-cpu) next to wall time, which a busy
// shared machine inflates. The caller must hold runtime.LockOSThread.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
