package sim

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"spate/internal/cputime"
	"strings"
	"sync"
	"time"

	"spate/internal/breaks"
)

// Summary is what `spate sim --json` prints.
type Summary struct {
	Seeds        int      `json:"seeds"`
	Failed       int      `json:"failed"`
	Lost         int      `json:"lost"`
	Duplicated   int      `json:"duplicated"`
	Wrong        int      `json:"wrong"`
	FailingSeeds []uint64 `json:"failing_seeds"`
	JobSeconds   float64  `json:"job_s"`  // simulated job time, summed over the seeds
	WallSeconds  float64  `json:"wall_s"` // the whole command
	CPUSeconds   float64  `json:"cpu_s"`  // this process's CPU time, user and system
	// JobMinutesPerCPUMinute is the speed: simulated job time per CPU time.
	JobMinutesPerCPUMinute float64 `json:"job_min_per_cpu_min"`
	// Axes is, per configuration axis and value, how many seeds ran with
	// it and how many of them failed (the whole-product nemesis only).
	Axes      map[string]map[string]*AxisCount `json:"axes,omitempty"`
	Unchecked int                              `json:"not_checked"` // --ft none seeds checked only to finish
	Break     breaks.Set                       `json:"break,omitempty"`
	Results   []Result                         `json:"results,omitempty"`
}

// Main is `spate sim`; it returns the exit code: 0 every seed passed, 1
// one failed, 2 bad input.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("seeds", 10, "how many seeds to run")
	from := fs.Uint64("from", 1, "the first seed")
	one := fs.Uint64("seed", 0, "run this one seed twice and compare: in the exact mode (the default) the hashes of the two event logs, which must be equal; with --native the verdicts")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	par := fs.Int("parallel", 2, "seeds run at once")
	keep := fs.String("data", "", "keep each seed's run directory under this directory (default: a temporary one, removed)")
	quiet := fs.Bool("quiet", false, "no line on stderr as each seed finishes (its verdict, how many failed so far, about how long the rest takes)")
	cfg := DefaultConfig()
	cfg.Settle = 0 // the real clock: what outlives a seed leaks, and harms nothing
	fs.StringVar(&cfg.FT, "ft", cfg.FT, "fault tolerance: spate, global or none (pins the ft axis; --narrow: spate or global)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "job time of each seed until the drain")
	fs.StringVar(&cfg.Recover, "recover", "single", "how a lost keyed instance is restored: single or parallel (spate up --recover; pins the recover axis)")
	onlyArg := fs.String("only", "", "pin configuration axes, the others drawn per seed: axis=value,... (axes: "+axisHelp()+")")
	brk := fs.String("break", "", "run with one mechanism of the protocol deliberately wrong (list: the names and what each breaks)")
	narrowArg := fs.Bool("narrow", false, "the regressions' nemesis: no axes drawn (--ft and --recover as given, the in-memory store, the generator, no auto-scaler) and the narrower fault table")
	sched := newScheduleFlags(fs) // --print-schedule, --schedule-out, --schedule, --shrink, --tries: schedmain.go
	exactArg := fs.Bool("exact", false, "run each seed in the exact mode (the default with --seed): a wasip1 build of the simulation under wazero, on one thread and a virtual clock, so that the run is a function of the seed; it builds that guest with the go command on first use")
	nativeArg := fs.Bool("native", false, "run in this process, on its goroutines (the default with --seeds: faster, and the interleaving is not a function of the seed)")
	guest := fs.Bool("guest", false, "internal: this is the exact mode's guest; print every seed's result in --json")
	fork := newForkFlags(fs) // --fork-at, --add: fork.go
	fs.StringVar(&cfg.ForkFile, "fork-file", "", "internal: the file a fork step reads its fault from (--fork-at)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *brk == "list" {
		fmt.Fprint(stdout, breaks.Help())
		return 0
	}
	var err error
	if cfg.Break, err = breaks.Parse(*brk); err != nil {
		fmt.Fprintln(stderr, "spate sim:", err)
		return 2
	}
	only, err := ParseOnly(*onlyArg)
	if err != nil {
		fmt.Fprintln(stderr, "spate sim:", err)
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, ax := range []struct{ flag, axis, v string }{{"ft", "ft", cfg.FT}, {"recover", "recover", cfg.Recover}} {
		if !set[ax.flag] {
			continue
		}
		if p, ok := only[ax.axis]; ok && p != ax.v {
			fmt.Fprintf(stderr, "spate sim: --%s %s and --only %s=%s disagree\n", ax.flag, ax.v, ax.axis, p)
			return 2
		}
		only[ax.axis] = ax.v
	}
	cfg.Wide, cfg.Only = !*narrowArg, only
	if *narrowArg && *onlyArg != "" {
		fmt.Fprintln(stderr, "spate sim: --only pins axes of the whole-product nemesis; --narrow has none")
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "spate sim: unexpected argument %q\n", fs.Arg(0))
		return 2
	case *n < 1:
		fmt.Fprintf(stderr, "spate sim: --seeds: %d is not a positive number\n", *n)
		return 2
	case *par < 1:
		fmt.Fprintf(stderr, "spate sim: --parallel: %d is not a positive number\n", *par)
		return 2
	case cfg.FT != "spate" && cfg.FT != "global" && (cfg.FT != "none" || !cfg.Wide):
		fmt.Fprintf(stderr, "spate sim: --ft: %q is not spate, global or none (none: not with --narrow)\n", cfg.FT)
		return 2
	case cfg.Recover != "single" && cfg.Recover != "parallel":
		fmt.Fprintf(stderr, "spate sim: --recover: %q is not single or parallel\n", cfg.Recover)
		return 2
	case cfg.Duration < 3*time.Second:
		fmt.Fprintf(stderr, "spate sim: --duration: %v is shorter than 3s\n", cfg.Duration)
		return 2
	}
	root := *keep
	if root == "" {
		tmp, err := TempRoot()
		if err != nil {
			fmt.Fprintln(stderr, "spate sim:", err)
			return 2
		}
		defer os.RemoveAll(tmp)
		root = tmp
	}
	ctx, stop := interruptible()
	defer stop()
	t0, cpu0 := time.Now(), cpuSeconds()
	if *exactArg && *nativeArg {
		fmt.Fprintln(stderr, "spate sim: --exact and --native: choose one")
		return 2
	}
	// The exact mode is the default for one seed or one file; a batch of
	// seeds runs natively unless --exact. Printing a schedule runs none.
	exact := *exactArg || (*one != 0 || set["schedule"] || set["shrink"]) && !*nativeArg
	printOnly := (*sched.print || *sched.out != "") && !*sched.shrink
	var host *exactHost
	if exact && !printOnly && !*guest {
		var err error
		if host, err = newExactHost(ctx, fs, stderr, *quiet); err != nil {
			fmt.Fprintln(stderr, "spate sim:", err)
			return 2
		}
		defer host.close(ctx)
	}
	run := func(seed uint64) Result { return Run(ctx, seed, cfg, Dir(root, seed)) }
	sched.runFile = func(f ScheduleFile) Result { return Run(ctx, f.Seed, f.Apply(cfg), Dir(root, f.Seed)) }
	sched.guest = *guest
	if host != nil {
		run = func(seed uint64) Result { return host.run(ctx, seed, cfg, Dir(root, seed)) }
		sched.runFile = func(f ScheduleFile) Result { return host.runFile(ctx, f, cfg, Dir(root, f.Seed), "") }
	}
	if fork.on(set) {
		return fork.run(ctx, *one, *sched.file, cfg, set, root, host, stdout, stderr)
	}
	if sched.on(set) {
		return sched.run(ctx, *one, cfg, set, root, stdout, stderr)
	}
	if *one != 0 {
		if host != nil {
			return host.replay(ctx, *one, cfg, root, *keep != "", *asJSON, stdout)
		}
		return replay(ctx, *one, cfg, root, stdout)
	}
	seeds := make([]uint64, *n)
	for i := range seeds {
		seeds[i] = *from + uint64(i)
	}
	failed := 0
	results := runAll(ctx, seeds, run, *par, func(r Result, done int) {
		if r.Failed() {
			failed++
		}
		if !*quiet {
			fmt.Fprintln(stderr, progress(len(seeds), r, failed, time.Since(t0), done))
		}
		if r.Failed() && !*asJSON {
			fmt.Fprintln(stdout, r.Verdict())
			for _, s := range r.Steps {
				fmt.Fprintln(stdout, "   ", s)
			}
		}
	})
	sum := Summary{Seeds: len(results), Break: cfg.Break, FailingSeeds: []uint64{}, WallSeconds: time.Since(t0).Seconds(), CPUSeconds: cpuSeconds() - cpu0}
	if cfg.Wide {
		sum.Axes = countAxes(results)
	}
	for _, r := range results {
		if r.Unchecked {
			sum.Unchecked++
		}
		sum.JobSeconds += r.JobTime
		sum.Lost += r.Lost
		sum.Duplicated += r.Duplicated
		sum.Wrong += r.Wrong
		if r.Failed() {
			sum.Failed++
			sum.FailingSeeds = append(sum.FailingSeeds, r.Seed)
		}
		if r.Failed() || *guest {
			sum.Results = append(sum.Results, r)
		}
	}
	if sum.CPUSeconds > 0 {
		sum.JobMinutesPerCPUMinute = sum.JobSeconds / sum.CPUSeconds
	}
	if *asJSON {
		b, _ := json.MarshalIndent(sum, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		if !cfg.Break.Empty() {
			fmt.Fprintln(stdout, cfg.Break.Banner())
		}
		fmt.Fprintf(stdout, "sim: %d seeds, %d failed (%d lost, %d duplicated, %d wrong); %.0f s of job time in %.0f s (%.0f s of CPU: %.1f job-minutes per CPU-minute)\n",
			sum.Seeds, sum.Failed, sum.Lost, sum.Duplicated, sum.Wrong, sum.JobSeconds, sum.WallSeconds, sum.CPUSeconds, sum.JobMinutesPerCPUMinute)
		if sum.Axes != nil {
			fmt.Fprintf(stdout, "per axis value, seeds (failed); %d --ft none seeds not checked for exactly-once (a fault that loses state):\n", sum.Unchecked)
			for _, l := range axisLines(sum.Axes) {
				fmt.Fprintln(stdout, l)
			}
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "spate sim: interrupted")
		return 2
	}
	if sum.Failed > 0 {
		return 1
	}
	return 0
}

// progress is the line said as a seed finishes: how far the batch is, the
// seed's verdict, how many failed so far and about how long the rest takes
// at the pace so far. done counts r itself.
func progress(total int, r Result, failed int, elapsed time.Duration, done int) string {
	left := ""
	if done < total {
		rest := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
		left = fmt.Sprintf("; about %v left", rest.Round(time.Second))
	}
	return fmt.Sprintf("[%d/%d] %s; %d failed so far%s", done, total, r.Verdict(), failed, left)
}

// runAll runs seeds, par at a time, calling each as it finishes with how
// many have.
func runAll(ctx context.Context, seeds []uint64, run func(seed uint64) Result, par int, each func(r Result, done int)) []Result {
	out := make([]Result, 0, len(seeds))
	var mu sync.Mutex
	work := make(chan uint64)
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			for seed := range work {
				r := run(seed)
				mu.Lock()
				out = append(out, r)
				each(r, len(out))
				mu.Unlock()
			}
		})
	}
	for _, s := range seeds {
		if ctx.Err() != nil {
			break
		}
		work <- s
	}
	close(work)
	wg.Wait()
	return out
}

// axisHelp lists the axes and their values for --only's help.
func axisHelp() string {
	var parts []string
	for _, a := range axes {
		parts = append(parts, a.name+"="+strings.Join(a.values, "|"))
	}
	return strings.Join(parts, " ")
}

// cpuSeconds is the CPU time this process has used, user and system.
func cpuSeconds() float64 { return cputime.Process().Seconds() }

// replay runs one seed twice and says whether the verdicts agree.
func replay(ctx context.Context, seed uint64, cfg Config, root string, stdout io.Writer) int {
	if a := axesOf(Resolve(seed, cfg)); a != nil {
		fmt.Fprintf(stdout, "seed %d: %s\n", seed, a)
	}
	fmt.Fprintf(stdout, "seed %d: the schedule\n", seed)
	for _, s := range Plan(seed, cfg) {
		fmt.Fprintln(stdout, "   ", s)
	}
	a := Run(ctx, seed, cfg, Dir(root, seed)+"-a")
	b := Run(ctx, seed, cfg, Dir(root, seed)+"-b")
	fmt.Fprintln(stdout, "first: ", a.Verdict())
	fmt.Fprintln(stdout, "second:", b.Verdict())
	if a.Failed() == b.Failed() {
		fmt.Fprintln(stdout, "the verdict was the same")
	} else {
		fmt.Fprintln(stdout, "the verdict was NOT the same: the interleaving, not the schedule, decided it")
	}
	if a.Failed() || b.Failed() {
		return 1
	}
	return 0
}
