package bench

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"
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
	stat := "/proc/" + strconv.Itoa(pid) + "/stat"
	for time.Since(start) < time.Minute {
		if dead, known := procDead(stat); dead || !known {
			return time.Since(start), nil
		}
		time.Sleep(200 * time.Microsecond) // polling a process's state; nothing to wait on
	}
	return time.Since(start), nil
}

// procDead reads a /proc/PID/stat: the process is dead once it is a zombie
// (Z), dead (X) or gone. known is false where the file cannot be read for
// another reason (no /proc).
func procDead(stat string) (dead, known bool) {
	b, err := os.ReadFile(stat)
	if errors.Is(err, fs.ErrNotExist) {
		_, perr := os.Stat("/proc/self/stat")
		return perr == nil, perr == nil
	}
	if err != nil {
		return false, false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false, false
	}
	s := b[i+2]
	return s == 'Z' || s == 'X', true
}
