package sim

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// scheduleFlags are the flags of `spate sim` that write, run and shrink
// a schedule file (schedule.go, shrink.go), kept apart from Main's own.
type scheduleFlags struct {
	// runFile runs a file once (natively or in the exact mode: Main's
	// choice); guest says this process is the exact mode's guest.
	runFile func(f ScheduleFile) Result
	guest   bool
	print   *bool
	out     *string
	file    *string
	shrink  *bool
	tries   *int
}

func newScheduleFlags(fs *flag.FlagSet) *scheduleFlags {
	return &scheduleFlags{
		print:  fs.Bool("print-schedule", false, "with --seed S: print the seed's configuration (its axes, its duration) and fault schedule as YAML, which --schedule runs, and exit"),
		out:    fs.String("schedule-out", "", "write what --print-schedule (or --shrink) prints to this file"),
		file:   fs.String("schedule", "", "run this schedule file (YAML: seed, duration, axes, schedule) as written: its configuration, its steps at their times, its seed seeding the rest"),
		shrink: fs.Bool("shrink", false, "with --seed S or --schedule FILE: search for the shortest schedule that still fails (faults removed, moved later, the run shortened) and print it as YAML"),
		tries:  fs.Int("tries", 1, "with --shrink or --schedule: a schedule counts as failing if it fails in at least 1 of this many runs (the interleaving varies from run to run)"),
	}
}

// on reports whether a flag of these was given: Main hands the command
// to run.
func (sf *scheduleFlags) on(set map[string]bool) bool {
	return set["print-schedule"] || set["schedule-out"] || set["schedule"] || set["shrink"] || set["tries"]
}

// run is `spate sim` with a schedule flag: print, run or shrink a
// schedule. cfg is Main's, seed its --seed (0: none), set the flags
// given.
func (sf *scheduleFlags) run(ctx context.Context, seed uint64, cfg Config, set map[string]bool, root string, stdout, stderr io.Writer) int {
	bad := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "spate sim: "+format+"\n", args...)
		return 2
	}
	given := func(names ...string) string {
		for _, n := range names {
			if set[n] {
				return n
			}
		}
		return ""
	}
	switch {
	case *sf.tries < 1:
		return bad("--tries: %d is not a positive number", *sf.tries)
	case set["tries"] && !*sf.shrink && *sf.file == "":
		return bad("--tries: only with --shrink or --schedule")
	case *sf.print && *sf.shrink:
		return bad("--print-schedule: --shrink prints its schedule itself")
	case given("json") != "":
		return bad("--json: not with --print-schedule, --schedule-out, --schedule or --shrink")
	case given("seeds", "from", "parallel") != "":
		return bad("--%s: not with --print-schedule, --schedule-out, --schedule or --shrink (one seed's schedule)", given("seeds", "from", "parallel"))
	}
	var f ScheduleFile
	var header []string
	if *sf.file != "" {
		if n := given("seed", "ft", "recover", "only", "narrow", "duration"); n != "" {
			return bad("--%s: not with --schedule (the file names the seed and the configuration)", n)
		}
		data, err := os.ReadFile(*sf.file)
		if err != nil {
			return bad("--schedule: %v", err)
		}
		if f, err = ParseSchedule(*sf.file, data); err != nil {
			return bad("%v", err)
		}
		f = f.Resolved(cfg)
		header = []string{fmt.Sprintf("%s, as spate sim reads it (every axis and the duration written out)", *sf.file)}
	} else {
		if seed == 0 {
			return bad("--print-schedule, --schedule-out and --shrink: need --seed S (or --schedule FILE)")
		}
		f = ScheduleOf(seed, cfg)
		header = []string{fmt.Sprintf("spate sim --seed %d: its configuration and fault schedule; run it with spate sim --schedule FILE", seed)}
	}
	emit := func(text string) int {
		fmt.Fprint(stdout, text)
		if *sf.out != "" {
			if err := os.WriteFile(*sf.out, []byte(text), 0o644); err != nil {
				fmt.Fprintln(stderr, "spate sim: --schedule-out:", err)
				return 2
			}
		}
		return 0
	}
	switch {
	case *sf.shrink:
		return sf.shrinkMain(ctx, f, cfg, sf.runFile, stdout, stderr, emit)
	case *sf.print || *sf.out != "":
		return emit(f.Format(header...))
	}
	if sf.guest {
		// The exact mode's guest: one run, its result as JSON.
		r := sf.runFile(f)
		b, _ := json.Marshal(Summary{Seeds: 1, Results: []Result{r}})
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	return sf.runFileMain(ctx, f, cfg, stdout)
}

// runFileMain runs f up to --tries times, until a run fails.
func (sf *scheduleFlags) runFileMain(ctx context.Context, f ScheduleFile, cfg Config, stdout io.Writer) int {
	run := f.Apply(cfg)
	fmt.Fprintf(stdout, "%s: seed %d [%s], %v, the schedule:\n", *sf.file, f.Seed, axesOf(run), run.Duration)
	for _, s := range run.Schedule {
		fmt.Fprintln(stdout, "   ", s)
	}
	for k := range *sf.tries {
		if ctx.Err() != nil {
			return 2
		}
		r := sf.runFile(f)
		label := "run:"
		if *sf.tries > 1 {
			label = fmt.Sprintf("run %d of %d:", k+1, *sf.tries)
		}
		fmt.Fprintln(stdout, label, r.Verdict())
		if r.Failed() {
			for _, s := range r.Steps {
				fmt.Fprintln(stdout, "   ", s)
			}
			return 1
		}
	}
	return 0
}

// shrinkMain is --shrink: the search on the cluster, its progress on
// stderr, the shortest failing schedule on stdout (and --schedule-out).
func (sf *scheduleFlags) shrinkMain(ctx context.Context, f ScheduleFile, cfg Config, run func(ScheduleFile) Result, stdout, stderr io.Writer, emit func(string) int) int {
	log := func(tried int, g ScheduleFile, failed bool, r Result) {
		v := "passes"
		if failed {
			v = "still fails: " + r.Verdict()
		}
		fmt.Fprintf(stderr, "shrink: schedule %d: %d steps, %v: %s\n", tried, len(g.Steps), g.Apply(cfg).Duration, v)
	}
	s := ShrinkRuns(ctx, f, *sf.tries, run, log)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "spate sim: interrupted; the shortest failing schedule so far follows")
	}
	if !s.Failed {
		fmt.Fprintf(stdout, "seed %d did not fail in %d run(s): nothing to shrink\n", f.Seed, s.Runs)
		return 0
	}
	times := "once"
	if *sf.tries > 1 {
		times = fmt.Sprintf("up to %d times", *sf.tries)
	}
	text := s.File.Format(
		fmt.Sprintf("spate sim --shrink: seed %d, %d steps in %v shrunk to %d in %v", f.Seed, len(f.Steps), f.Apply(cfg).Duration, len(s.File.Steps), s.File.Apply(cfg).Duration),
		fmt.Sprintf("the search took %d runs (%d schedules, each run %s)", s.Runs, s.Tried, times),
		"the failure it keeps: "+s.Kept.Verdict(),
		"run it with spate sim --schedule FILE")
	if code := emit(text); code != 0 {
		return code
	}
	if len(s.Kept.Steps) > 0 {
		fmt.Fprintln(stderr, "shrink: the kept run's steps, with the cluster's answers:")
		fmt.Fprintln(stderr, "   ", strings.Join(s.Kept.Steps, "\n    "))
	}
	return 1
}
