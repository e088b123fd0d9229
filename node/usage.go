package node

import (
	"os"
	"runtime"
	"spate/internal/cputime"
	"strconv"
	"strings"
)

// processUsage returns the process's CPU time so far (user and system)
// and its resident memory: for the dashboard's cluster pane.
func processUsage() (cpuSeconds float64, rss int64) {
	cpuSeconds = cputime.Process().Seconds()
	if b, err := os.ReadFile("/proc/self/statm"); err == nil { // Linux: size resident ...
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return cpuSeconds, pages * int64(os.Getpagesize())
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return cpuSeconds, int64(ms.Sys)
}
