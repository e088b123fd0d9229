package sim

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"spate/internal/race"
)

// The race detector's runtime aborts, now and then, on a check of its
// own ("ThreadSanitizer: CHECK failed: tsan_rtl.cpp ... kEpochLast"), the
// more often the more a process synchronises; the simulation's long tests
// synchronise hundreds of millions of times. Under -race, this package
// therefore runs as under -short (its unit tests and a few seeds, which
// still race-check the product's code under simulated interleavings), and
// TestTheLongTestsWithoutTheRaceDetector builds the package's test binary
// without the detector and runs it whole in a child process.

// childEnv marks the child, so that a child built with -race after all
// (GOFLAGS=-race) runs everything instead of spawning a child of its own.
const childEnv = "SPATE_SIM_NO_RACE_CHILD"

// raceParent is true in a test binary built with -race that is not that
// child: its long tests are left to the child.
var raceParent = race.Enabled && os.Getenv(childEnv) == ""

// long skips a long test under -short, and under -race, where the child
// built without the detector runs it.
func long(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	if raceParent {
		t.Skip("run by TestTheLongTestsWithoutTheRaceDetector, in a test binary built without -race")
	}
}

// TestTheLongTestsWithoutTheRaceDetector runs, under -race, this
// package's tests whole in a test binary built without the detector, with
// the sim flags this binary was given.
func TestTheLongTestsWithoutTheRaceDetector(t *testing.T) {
	if !raceParent {
		t.Skip("only under -race: without it the long tests run in this process")
	}
	if testing.Short() {
		t.Skip("the long tests")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			t.Skipf("no go toolchain to build the package without -race (%v): its long tests did not run", err)
		}
	}
	bin := filepath.Join(t.TempDir(), "sim.test")
	build := exec.Command(gobin, "test", "-c", "-o", bin, ".")
	build.Env = withoutRace(os.Environ())
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c (without -race): %v\n%s", err, out)
	}
	args := []string{"-test.timeout", childTimeout(t).String()}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" && f.Value.String() != "^TestTheLongTestsWithoutTheRaceDetector$" {
		args = append(args, "-test.run", f.Value.String())
	}
	flag.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "sim.") {
			args = append(args, fmt.Sprintf("-%s=%s", f.Name, f.Value))
		}
	})
	run := exec.Command(bin, args...)
	run.Env = append(os.Environ(), childEnv+"=1")
	run.Stdout, run.Stderr = os.Stdout, os.Stderr
	if err := run.Run(); err != nil {
		t.Fatalf("the package's tests without -race: %v (their output is above)", err)
	}
}

// withoutRace drops -race from GOFLAGS.
func withoutRace(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			var keep []string
			for _, f := range strings.Fields(v) {
				if f != "-race" && f != "-race=true" {
					keep = append(keep, f)
				}
			}
			kv = "GOFLAGS=" + strings.Join(keep, " ")
		}
		out = append(out, kv)
	}
	return out
}

// childTimeout leaves the child what remains of this test's deadline, less
// a margin to report its failure.
func childTimeout(t *testing.T) time.Duration {
	d, ok := t.Deadline()
	if !ok {
		return time.Hour
	}
	return max(time.Until(d)-30*time.Second, time.Minute)
}
