package bench

import (
	"syscall"
	"time"

	"spate/coord"
)

// killNode SIGKILLs a node process and returns how long it took to die.
// A process inside a system call that cannot be interrupted (an fsync on a
// busy disk) dies only when the call returns, and keeps its sockets open
// until then: a recovery is timed from the death, not from the signal.
// Where there is no /proc to tell, the death is taken to be the signal.
func killNode(pid int) (time.Duration, error) {
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, err
	}
	for time.Since(start) < time.Minute {
		if dead, known := coord.ProcDead(pid); dead || !known {
			return time.Since(start), nil
		}
		time.Sleep(200 * time.Microsecond) // polling a process's state; nothing to wait on
	}
	return time.Since(start), nil
}
