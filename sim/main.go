package sim

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
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
	Results      []Result `json:"results,omitempty"`
}

// Main is `spate sim`; it returns the exit code: 0 every seed passed, 1
// one failed, 2 bad input.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("seeds", 10, "how many seeds to run")
	from := fs.Uint64("from", 1, "the first seed")
	one := fs.Uint64("seed", 0, "replay this one seed (twice: says whether the verdict was the same)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	par := fs.Int("parallel", 2, "seeds run at once")
	keep := fs.String("data", "", "keep each seed's run directory under this directory (default: a temporary one, removed)")
	quiet := fs.Bool("quiet", false, "no line on stderr as each seed finishes (its verdict, how many failed so far, about how long the rest takes)")
	cfg := DefaultConfig()
	fs.StringVar(&cfg.FT, "ft", cfg.FT, "fault tolerance: spate or global")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "job time of each seed until the drain")
	fs.StringVar(&cfg.Recover, "recover", "single", "how a lost keyed instance is restored: single or parallel (spate up --recover)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
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
	case cfg.FT != "spate" && cfg.FT != "global":
		fmt.Fprintf(stderr, "spate sim: --ft: %q is not spate or global\n", cfg.FT)
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t0 := time.Now()
	if *one != 0 {
		return replay(ctx, *one, cfg, root, stdout)
	}
	seeds := make([]uint64, *n)
	for i := range seeds {
		seeds[i] = *from + uint64(i)
	}
	failed := 0
	results := runAll(ctx, seeds, cfg, root, *par, func(r Result, done int) {
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
	sum := Summary{Seeds: len(results), FailingSeeds: []uint64{}, WallSeconds: time.Since(t0).Seconds()}
	for _, r := range results {
		sum.JobSeconds += r.JobTime
		sum.Lost += r.Lost
		sum.Duplicated += r.Duplicated
		sum.Wrong += r.Wrong
		if r.Failed() {
			sum.Failed++
			sum.FailingSeeds = append(sum.FailingSeeds, r.Seed)
			sum.Results = append(sum.Results, r)
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(sum, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, "sim: %d seeds, %d failed (%d lost, %d duplicated, %d wrong); %.0f s of job time in %.0f s\n",
			sum.Seeds, sum.Failed, sum.Lost, sum.Duplicated, sum.Wrong, sum.JobSeconds, sum.WallSeconds)
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
func runAll(ctx context.Context, seeds []uint64, cfg Config, root string, par int, each func(r Result, done int)) []Result {
	out := make([]Result, 0, len(seeds))
	var mu sync.Mutex
	work := make(chan uint64)
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			for seed := range work {
				r := Run(ctx, seed, cfg, Dir(root, seed))
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

// replay runs one seed twice and says whether the verdicts agree.
func replay(ctx context.Context, seed uint64, cfg Config, root string, stdout io.Writer) int {
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
