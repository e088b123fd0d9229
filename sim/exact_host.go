//go:build !wasip1

package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"spate/sim/exact"
)

// exactHost runs seeds in the exact mode's guest, which it builds and
// compiles on its first run (saying so on stderr unless quiet, since a
// first build takes a while): bad input is answered before that.
type exactHost struct {
	brk    []string // --break, which a schedule file does not name
	stderr io.Writer
	quiet  bool
	once   sync.Once
	h      *exact.Host
	err    error
}

func newExactHost(_ context.Context, fs *flag.FlagSet, stderr io.Writer, quiet bool) (*exactHost, error) {
	x := &exactHost{stderr: stderr, quiet: quiet}
	if f := fs.Lookup("break"); f != nil && f.Value.String() != "" {
		x.brk = []string{"--break=" + f.Value.String()}
	}
	return x, nil
}

// ready builds and compiles the guest, once.
func (x *exactHost) ready(ctx context.Context) error {
	x.once.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			x.err = err
			return
		}
		src, err := exact.Source(wd)
		if err != nil {
			x.err = err
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		cache = filepath.Join(cache, "spate", "exact")
		t0 := time.Now()
		wasm, changed, err := exact.Build(ctx, src, cache)
		if err != nil {
			x.err = err
			return
		}
		if x.h, x.err = exact.New(ctx, wasm, cache); x.err == nil && changed && !x.quiet {
			fmt.Fprintf(x.stderr, "exact mode: built its guest (%s for wasip1, %.1f MB) and compiled it in %v; cached in %s\n",
				exact.GuestPackage, float64(len(wasm))/1e6, time.Since(t0).Round(100*time.Millisecond), cache)
		}
	})
	return x.err
}

func (x *exactHost) close(ctx context.Context) {
	if x.h != nil {
		_ = x.h.Close(ctx)
	}
}

// run runs seed in the guest with dir (Dir of some root and seed) as its
// run directory, and hashes the run's event log. It runs the seed's
// schedule file, as --schedule would: the guest reads the same bytes
// either way, so `spate sim --schedule DIR/schedule.yaml` gives the same
// run as the seed.
func (x *exactHost) run(ctx context.Context, seed uint64, cfg Config, dir string) Result {
	return x.runFile(ctx, ScheduleOf(seed, cfg), cfg, dir, "")
}

// keepSchedule writes the schedule a run ran into its run directory
// (schedule.yaml), which `spate sim --schedule` runs again and a fork
// starts from.
func keepSchedule(r *Result, f ScheduleFile) {
	if r.Err != "" && r.Windows == 0 {
		return
	}
	text := f.Format(fmt.Sprintf("the schedule of seed %d as it ran; spate sim --schedule FILE runs it again, exactly", f.Seed))
	if err := os.WriteFile(filepath.Join(r.Dir, "schedule.yaml"), []byte(text), 0o644); err != nil && r.Err == "" {
		r.Err = fmt.Sprintf("exact mode: %v", err)
	}
}

// runFile runs the schedule file f (resolved against cfg: every axis and
// the duration written out) in the guest with dir as its run directory.
// fork, if not empty, is the fork file's content (--fork-at). The guest
// sees dir as /run/seed-S, and the file (and the fork file) in a
// directory of their own as /sched: the same file gives the guest the
// same bytes, wherever the run directory is.
func (x *exactHost) runFile(ctx context.Context, f ScheduleFile, cfg Config, dir, fork string) Result {
	res := Result{Seed: f.Seed, Dir: dir}
	fail := func(err error) Result {
		res.Err = fmt.Sprintf("exact mode: %v", err)
		return res
	}
	if err := x.ready(ctx); err != nil {
		return fail(err)
	}
	sched, err := os.MkdirTemp("", "spate-exact-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(sched)
	if err := os.WriteFile(filepath.Join(sched, "schedule.yaml"), []byte(f.Resolved(cfg).Format()), 0o644); err != nil {
		return fail(err)
	}
	args := append([]string{"--native", "--guest", "--quiet", "--data=/run", "--schedule=/sched/schedule.yaml"}, x.brk...)
	if fork != "" {
		if err := os.WriteFile(filepath.Join(sched, "fork.txt"), []byte(fork), 0o644); err != nil {
			return fail(err)
		}
		args = append(args, "--fork-file=/sched/fork.txt")
	}
	guestDir := Dir("/run", f.Seed)
	var out, errOut bytes.Buffer
	st, err := x.h.Run(ctx, exact.Spec{Args: args, Seed: f.Seed, Stdout: &out, Stderr: &errOut,
		Mounts: []exact.Mount{{Host: dir, Guest: guestDir}, {Host: sched, Guest: "/sched"}}})
	if err != nil {
		return fail(err)
	}
	var sum Summary
	if jerr := json.Unmarshal(out.Bytes(), &sum); jerr != nil || len(sum.Results) != 1 {
		res.Err = fmt.Sprintf("exact mode: the guest exited %d without a result: %s", st.Exit, lastLine(errOut.String()))
		return res
	}
	res = sum.Results[0]
	res.Dir = dir
	if err := remount(dir, guestDir); err != nil {
		return fail(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "events.jsonl")); err == nil {
		sum := sha256.Sum256(b)
		res.Hash = fmt.Sprintf("%x", sum)
	}
	keepSchedule(&res, f.Resolved(cfg))
	return res
}

// remount writes the run directory's host path where its run.json names
// it as the guest saw it (a trace source's file), so that verify, report
// and view read it like any other run. The event log keeps the guest's
// paths: it is the same on every machine.
func remount(dir, guestDir string) error {
	p := filepath.Join(dir, "run.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	host, _ := json.Marshal(dir)
	b = bytes.ReplaceAll(b, []byte(guestDir), bytes.Trim(host, `"`))
	return os.WriteFile(p, b, 0o644)
}

func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}

// exactReplay is --seed's answer in the exact mode.
type exactReplay struct {
	Seed      uint64  `json:"seed"`
	Axes      Axes    `json:"axes,omitempty"`
	Steps     []Step  `json:"schedule"`
	First     Result  `json:"first"`
	Second    Result  `json:"second"`
	Hash      string  `json:"hash"`
	Identical bool    `json:"identical"`
	Guest     string  `json:"guest"` // the guest's sha256, first 8 bytes
	CPU       float64 `json:"cpu_s"` // this process's CPU time for both runs
}

// replay runs seed twice in the guest, the first into the run directory
// --data names (kept: root itself) or one under a temporary root, and says
// whether the two event logs are the same.
func (x *exactHost) replay(ctx context.Context, seed uint64, cfg Config, root string, kept, asJSON bool, stdout io.Writer) int {
	if err := x.ready(ctx); err != nil {
		fmt.Fprintln(x.stderr, "spate sim:", err)
		return 2
	}
	rep := exactReplay{Seed: seed, Axes: axesOf(Resolve(seed, cfg)), Steps: Plan(seed, cfg), Guest: x.h.Hash}
	tmp, err := os.MkdirTemp("", "spate-exact-")
	if err != nil {
		fmt.Fprintln(stdout, "spate sim:", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	cpu0 := cpuSeconds()
	first := Dir(root, seed)
	if kept {
		first = root // --data DIR is the run directory itself
	}
	rep.First = x.run(ctx, seed, cfg, first)
	rep.Second = x.run(ctx, seed, cfg, Dir(tmp, seed))
	rep.Second.Dir = ""
	rep.CPU = cpuSeconds() - cpu0
	rep.Hash = rep.First.Hash
	rep.Identical = rep.First.Hash != "" && rep.First.Hash == rep.Second.Hash
	if asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		if rep.Axes != nil {
			fmt.Fprintf(stdout, "seed %d: %s\n", seed, rep.Axes)
		}
		fmt.Fprintf(stdout, "seed %d: the schedule\n", seed)
		for _, s := range rep.Steps {
			fmt.Fprintln(stdout, "   ", s)
		}
		fmt.Fprintln(stdout, "first: ", rep.First.Verdict())
		fmt.Fprintln(stdout, "second:", rep.Second.Verdict())
		if rep.Identical {
			fmt.Fprintf(stdout, "the two runs were identical, event for event: sha256 %s (exact mode, guest %s; %.0f s of job time each, %.1f s of CPU for both)\n",
				rep.Hash, rep.Guest, rep.First.JobTime, rep.CPU)
		} else {
			fmt.Fprintf(stdout, "the two runs were NOT identical: sha256 %s and %s (guest %s): the exact mode is broken, a bug to report\n",
				rep.First.Hash, rep.Second.Hash, rep.Guest)
		}
		if kept {
			fmt.Fprintf(stdout, "its run directory: %s (spate verify, report, export and view read it)\n", rep.First.Dir)
		}
	}
	switch {
	case !rep.Identical:
		return 2
	case rep.First.Failed():
		return 1
	}
	return 0
}
