package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"spate/chaos"
	"spate/control"
)

// forkFlags are `spate sim --fork-at T --add ACTION`: what if a fault had
// come at T.
type forkFlags struct {
	at  *time.Duration
	add *string
}

func newForkFlags(fs *flag.FlagSet) *forkFlags {
	return &forkFlags{
		at:  fs.Duration("fork-at", 0, "with --seed S or --schedule FILE, in the exact mode: run it, then again with the fault of --add at this job time, and print the two side by side"),
		add: fs.String("add", "", "with --fork-at: the fault to add, as the dashboard's ':' prompt takes it (\"kill count#1\", \"partition n2\", \"scale count 3\")"),
	}
}

func (ff *forkFlags) on(set map[string]bool) bool { return set["fork-at"] || set["add"] }

// forkPad is the fork file's length: the same in both runs.
const forkPad = 256

// Fork is the answer of --fork-at: the run as it was and as it would
// have been.
type Fork struct {
	At        time.Duration `json:"at_ns"`
	Added     string        `json:"added"`
	Base      ForkRun       `json:"base"`
	Fork      ForkRun       `json:"fork"`
	Same      int           `json:"same_events"` // events the two logs share from the start
	DivergeMs float64       `json:"diverge_ms"`  // job time of the first event that differs (-1: none)
}

// ForkRun is one side of a fork.
type ForkRun struct {
	Result     Result  `json:"result"`
	Recoveries int     `json:"recoveries"`
	Replayed   int64   `json:"records_replayed"`
	LagP99Ms   float64 `json:"output_lag_p99_ms"`
	Checkpts   int     `json:"checkpoints"`
}

// run is --fork-at: the seed's (or the file's) schedule, then the same
// with the added step, both in the exact mode.
func (ff *forkFlags) run(ctx context.Context, seed uint64, path string, cfg Config, set map[string]bool, root string, host *exactHost, stdout, stderr io.Writer) int {
	bad := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "spate sim: "+format+"\n", args...)
		return 2
	}
	switch {
	case !set["fork-at"] || !set["add"]:
		return bad("--fork-at and --add go together (--fork-at 4s --add \"kill count#1\")")
	case *ff.at <= 0:
		return bad("--fork-at: %v is not a positive job time", *ff.at)
	case host == nil:
		return bad("--fork-at: only in the exact mode (the two runs must share everything before the fork): drop --native")
	case seed == 0 && path == "":
		return bad("--fork-at: needs --seed S or --schedule FILE")
	case set["shrink"] || set["print-schedule"] || set["schedule-out"]:
		return bad("--fork-at: not with --shrink, --print-schedule or --schedule-out")
	}
	a, err := control.ParseCommand(*ff.add)
	if err != nil {
		return bad("--add: %v", err)
	}
	var base ScheduleFile
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return bad("--schedule: %v", err)
		}
		if base, err = ParseSchedule(path, data); err != nil {
			return bad("%v", err)
		}
	} else {
		base = ScheduleOf(seed, cfg)
	}
	base = base.Resolved(cfg)
	if d := base.Apply(cfg).Duration; *ff.at >= d {
		return bad("--fork-at: %v is not before the drain at %v", *ff.at, d)
	}
	// Both runs get the same schedule, with a fork step at the time, and
	// a fork file of the same length: the run as it was reads "noop"
	// there, the other the fault. Everything a run reads before the fork
	// is then the same, down to the bytes allocated, and so is the run.
	i, _ := slices.BinarySearchFunc(base.Steps, *ff.at, func(s Step, t time.Duration) int {
		if s.At <= t {
			return -1
		}
		return 1
	})
	base.Steps = slices.Insert(slices.Clone(base.Steps), i, Step{At: *ff.at, Action: control.Action{Verb: "fork"}})
	out := Fork{At: *ff.at, Added: a.String()}
	if len(*ff.add) > forkPad-1 {
		return bad("--add: longer than %d characters", forkPad-1)
	}
	pad := func(line string) string { return fmt.Sprintf("%-*s\n", forkPad-1, line) }
	baseDir, forkDir := filepath.Join(root, "base"), filepath.Join(root, "fork")
	out.Base = forkSide(host.runFile(ctx, base, cfg, baseDir, pad("noop")))
	out.Fork = forkSide(host.runFile(ctx, base, cfg, forkDir, pad(*ff.add)))
	out.Same, out.DivergeMs = common(filepath.Join(baseDir, "events.jsonl"), filepath.Join(forkDir, "events.jsonl"))
	// Each run directory keeps its schedule with the fork step resolved:
	// none in the run as it was, the fault in the other, so that either
	// can be run again or forked again without the fork file.
	for _, side := range []struct {
		r   *ForkRun
		add *control.Action
	}{{&out.Base, nil}, {&out.Fork, &a}} {
		g := base
		g.Steps = nil
		for _, st := range base.Steps {
			if st.Action.Verb == "fork" {
				if side.add == nil {
					continue
				}
				st.Action = *side.add
			}
			g.Steps = append(g.Steps, st)
		}
		if side.r.Result.Err == "" {
			text := g.Resolved(cfg).Format(fmt.Sprintf("seed %d forked at %v with %q (spate sim --fork-at); spate sim --schedule FILE runs it, its interleaving before the fork not necessarily as in this run", base.Seed, *ff.at, a.String()))
			if side.add == nil {
				text = g.Resolved(cfg).Format(fmt.Sprintf("seed %d as it was, the base of a fork at %v (spate sim --fork-at)", base.Seed, *ff.at))
			}
			_ = os.WriteFile(filepath.Join(side.r.Result.Dir, "schedule.yaml"), []byte(text), 0o644)
		}
	}
	if ctx.Err() != nil {
		return 2
	}
	if set["json"] {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		printFork(stdout, out, baseDir, forkDir)
	}
	if out.Base.Result.Err != "" || out.Fork.Result.Err != "" {
		return 1
	}
	return 0
}

// forkSide reads a run's report for the figures the fork compares.
func forkSide(r Result) ForkRun {
	side := ForkRun{Result: r}
	if r.Err != "" {
		return side
	}
	rep, err := chaos.BuildReport(r.Dir, nil, chaos.Verify{Windows: r.Windows, Lost: r.Lost, Duplicated: r.Duplicated, Wrong: r.Wrong})
	if err != nil {
		return side
	}
	side.Recoveries = len(rep.Recoveries)
	for _, rc := range rep.Recoveries {
		side.Replayed += rc.Replayed
	}
	side.LagP99Ms = rep.Latency.P99Ms
	side.Checkpts = rep.Checkpoints.Count
	return side
}

// common counts the lines two event logs share from their start, and
// the job time (from the first event) of the first one that differs.
func common(a, b string) (int, float64) {
	la, lb := lines(a), lines(b)
	n := 0
	for n < len(la) && n < len(lb) && bytes.Equal(la[n], lb[n]) {
		n++
	}
	if n == len(la) && n == len(lb) {
		return n, -1
	}
	first := eventTime(la, 0)
	var at time.Time
	if n < len(lb) {
		at = eventTime(lb, n)
	} else {
		at = eventTime(la, n)
	}
	return n, float64(at.Sub(first)) / 1e6
}

func lines(path string) [][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		out = append(out, slices.Clone(sc.Bytes()))
	}
	return out
}

func eventTime(ls [][]byte, i int) time.Time {
	if i >= len(ls) {
		return time.Time{}
	}
	var e struct {
		Time time.Time `json:"time"`
	}
	_ = json.Unmarshal(ls[i], &e)
	return e.Time
}

func printFork(w io.Writer, f Fork, baseDir, forkDir string) {
	fmt.Fprintf(w, "what if %q at %v:\n", f.Added, f.At)
	row := func(name string, a, b any) { fmt.Fprintf(w, "  %-22s %-28v %v\n", name, a, b) }
	verdict := func(r Result) string {
		if r.Err != "" {
			return "did not finish"
		}
		return fmt.Sprintf("%d/%d/%d", r.Lost, r.Duplicated, r.Wrong)
	}
	row("", "as it was", "with the fault")
	row("lost/duplicated/wrong", verdict(f.Base.Result), verdict(f.Fork.Result))
	row("recoveries", f.Base.Recoveries, f.Fork.Recoveries)
	row("records replayed", f.Base.Replayed, f.Fork.Replayed)
	row("output lag p99", fmt.Sprintf("%.0f ms", f.Base.LagP99Ms), fmt.Sprintf("%.0f ms", f.Fork.LagP99Ms))
	row("checkpoints", f.Base.Checkpts, f.Fork.Checkpts)
	row("job time", fmt.Sprintf("%.1f s", f.Base.Result.JobTime), fmt.Sprintf("%.1f s", f.Fork.Result.JobTime))
	if f.DivergeMs < 0 {
		fmt.Fprintf(w, "  the two event logs are identical (%d events): the fault changed nothing the log records\n", f.Same)
	} else {
		fmt.Fprintf(w, "  the two event logs share their first %d events and part at %.3f s of job time\n", f.Same, f.DivergeMs/1000)
	}
	fmt.Fprintf(w, "  run directories: %s and %s\n", baseDir, forkDir)
}
