package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"

	"spate/coord"
	"spate/internal/human"
	"spate/job"
	"spate/traces"
)

// Main is `spate bench NAME [flags]`; it returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: spate bench throughput|overhead|recovery|resume|scaling|tuner [--json] [flags]")
		return 2
	}
	switch args[0] {
	case "throughput":
		return throughputMain(args[1:], stdout, stderr)
	case "overhead":
		return overheadMain(args[1:], stdout, stderr)
	case "recovery":
		return recoveryMain(args[1:], stdout, stderr)
	case "resume":
		return resumeMain(args[1:], stdout, stderr)
	case "tuner":
		return tunerMain(args[1:], stdout, stderr)
	case "scaling":
		return scalingMain(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "spate bench: unknown benchmark %q (have throughput, overhead, recovery, resume, scaling, tuner)\n", args[0])
	return 2
}

// Throughput is the result of `spate bench throughput`.
type Throughput struct {
	Meta
	ClusterRPS float64   `json:"cluster_rps"`
	OracleRPS  float64   `json:"oracle_rps"`
	Ratio      float64   `json:"ratio"`
	Cluster    []float64 `json:"cluster_rounds"`
	Oracle     []float64 `json:"oracle_rounds"`
	Verified   bool      `json:"verified"` // every cluster round passed verify
}

func throughputMain(args []string, stdout, stderr io.Writer) (rc int) {
	fs := flag.NewFlagSet("bench throughput", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	rounds := fs.Int("rounds", 3, "rounds (each runs the cluster, then the oracle)")
	dur := fs.Duration("duration", 8*time.Second, "cluster run time per round")
	nodes := fs.Int("nodes", 4, "worker nodes")
	source := fs.String("source", "gen:diurnal", "input")
	s := newSession("throughput", fs, stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *rounds < 1 || *dur <= 0 || *nodes < 1 {
		fmt.Fprintln(stderr, "spate bench throughput: --rounds, --duration and --nodes must be positive")
		return 2
	}
	if err := s.start(repeat(*rounds, runWeight(*dur)+2)); err != nil {
		fmt.Fprintln(stderr, "spate bench:", err)
		return 2
	}
	defer func() { s.end(rc) }()
	res := Throughput{Verified: true}
	for i := range *rounds {
		cfg := coord.DefaultConfig()
		cfg.Nodes, cfg.Local, cfg.Rate, cfg.Duration, cfg.Source, cfg.Headless = *nodes, *nodes, 0, *dur, *source, true
		cfg.Data = filepath.Join(s.root, fmt.Sprintf("round-%d", i+1))
		if err := cfg.Validate(); err != nil {
			fmt.Fprintln(stderr, "spate bench:", err)
			return 2
		}
		s.step("round %d of %d: the cluster (%d nodes, %v at --rate 0), then the oracle", i+1, *rounds, *nodes, *dur)
		crps, ri, err := clusterRound(s.ctx, cfg)
		if s.interrupted() {
			return exitInterrupted
		}
		if err != nil {
			fmt.Fprintln(stderr, "spate bench: cluster round:", err)
			return 1
		}
		rep, err := coord.VerifyRun(cfg.Data)
		if err != nil || !rep.OK() {
			res.Verified = false
			fmt.Fprintf(stderr, "spate bench: round %d did not verify: %v %v\n", i+1, rep.String(), err)
		}
		orps, err := oracleRound(ri)
		if err != nil {
			fmt.Fprintln(stderr, "spate bench: oracle round:", err)
			return 1
		}
		res.Cluster = append(res.Cluster, crps)
		res.Oracle = append(res.Oracle, orps)
		if !*asJSON {
			fmt.Fprintf(stdout, "round %d: cluster %s records/s, oracle %s records/s\n", i+1, human.Count(crps), human.Count(orps))
		}
	}
	res.ClusterRPS, res.OracleRPS = median(res.Cluster), median(res.Oracle)
	res.Ratio = res.ClusterRPS / res.OracleRPS
	s.prog.finish(s.name)
	res.Meta = s.meta
	if *s.html != "" {
		p := panel{Title: "end-to-end records/s", Format: human.Count}
		p.add("cluster", res.Cluster)
		p.add("oracle (one process)", res.Oracle)
		if err := writeHTML(*s.html, "spate bench throughput", s.meta, []panel{p}); err != nil {
			fmt.Fprintln(stderr, "spate bench throughput:", err)
			return 2
		}
	}
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(res)
	} else {
		fmt.Fprintf(stdout, "throughput (%d nodes, %s, --rate 0, %v per round, %d rounds, medians):\n", *nodes, *source, *dur, *rounds)
		fmt.Fprintf(stdout, "  cluster  %s records/s end to end\n  oracle   %s records/s in one process\n  ratio    %.3f\n", human.Count(res.ClusterRPS), human.Count(res.OracleRPS), res.Ratio)
		if !res.Verified {
			fmt.Fprintln(stdout, "  WARNING: a cluster round failed verification")
		}
	}
	if !res.Verified {
		return 1
	}
	return 0
}

// clusterRound runs one cluster and returns its end-to-end rate: records
// read by the sources over the time from start to the last sink's drain.
func clusterRound(ctx context.Context, cfg coord.Config) (float64, *coord.RunInfo, error) {
	dir, err := coord.Up(ctx, cfg, coord.Options{})
	if err != nil {
		return 0, nil, err
	}
	ri, err := coord.ReadRunInfo(dir)
	if err != nil {
		return 0, nil, err
	}
	if ri.JobStart == nil || ri.Finished == nil {
		return 0, nil, fmt.Errorf("%s: run did not finish", dir)
	}
	var n uint64
	for _, v := range ri.Positions {
		n += v
	}
	return float64(n) / ri.Finished.Sub(*ri.JobStart).Seconds(), ri, nil
}

// oracleRound computes the same run's results in one process and returns
// its rate on the same records.
func oracleRound(ri *coord.RunInfo) (float64, error) {
	src, err := traces.Open(ri.Config.Source, ri.Config.SourceOptions())
	if err != nil {
		return 0, err
	}
	n := src.Partitions()
	readers := make([]job.Reader, n)
	limits := make([]uint64, n)
	var total uint64
	for p := range n {
		r, err := src.Open(p, 0)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		readers[p], limits[p] = r, ri.Positions[p]
		total += limits[p]
	}
	start := time.Now()
	if _, err := job.Oracle(&ri.Job, readers, limits); err != nil {
		return 0, err
	}
	return float64(total) / time.Since(start).Seconds(), nil
}

// runWeight is what progress expects a cluster run of duration d to take,
// in seconds: the run and its start and drain.
func runWeight(d time.Duration) float64 { return d.Seconds() + 2 }

// repeat is n copies of w.
func repeat(n int, w float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = w
	}
	return out
}

// median is the median of xs; 0 if there are none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
