package tuner

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func cpu() time.Duration {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

func TestScratchTime(t *testing.T) {
	if os.Getenv("TIMEPOL") == "" {
		t.Skip()
	}
	c0 := cpu()
	ld, _ := ReadLoad("rate:../../shared/traces/load/nasa_http_1995_per_second.tbz2", LoadOptions{Scale: 1000})
	t.Log("load cpu", cpu()-c0)
	fl, _ := OpenFailures("poisson:74d")
	cfg := DefaultConfig()
	cfg.PriorMTBF = fl.MTBF()
	sc := Scenario{Load: ld.Counts, Instances: 8, Keys: 10000, Zipf: 1.1, Capacity: ld.Mean() / 0.5,
		Base: 100 * time.Millisecond, PerKey: 2e-6, CostNoise: 0.2, Detect: time.Second, Restart: time.Second,
		LoadBase: 200 * time.Millisecond, LoadPerKey: 5e-6, Persist: 500 * time.Millisecond, Failures: fl, Seed: 1,
		Min: time.Second, Max: 6 * time.Hour, Online: cfg}
	sim, _ := NewSim(sc)
	for _, p := range strings.Split(os.Getenv("TIMEPOL"), ",") {
		c0 := cpu()
		sim.Run(p)
		t.Log(p, "cpu", cpu()-c0)
	}
}
