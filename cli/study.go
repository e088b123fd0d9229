package cli

import (
	"fmt"
	"io"
	"spate/sim"

	"github.com/spf13/cobra"

	"spate/bench"
	"spate/node"
	"spate/traces"
	"spate/tuner"
)

// benchmark is one `spate bench NAME`.
type benchmark struct{ name, short, long, example string }

var benchmarks = []benchmark{
	{"throughput", "the cluster at --rate 0 against the oracle on the same input",
		"Throughput runs the cluster as fast as it goes and the in-process oracle on the same records, interleaved over rounds, and prints the medians and their ratio. Every cluster round is verified.",
		"  spate bench throughput\n  spate bench throughput --rounds 5 --duration 10s --json"},
	{"overhead", "the cost of fault tolerance: --ft none, spate and global interleaved",
		"Overhead runs --ft none, spate and global interleaved: throughput and CPU per record, the checkpoints each completed per second, declined and their time from trigger to complete, p99 output lag at a paced rate, and the size of a delta against a full checkpoint. Each ratio comes with its per-round values, a 95% interval and the rounds an interval narrower than --width needs; a ratio of configurations that checkpointed at different rates is flagged, and measured again at equal rates. --baseline BIN runs --ft spate by another build beside this one.",
		"  spate bench overhead\n  spate bench overhead --rounds 3 --duration 8s --keys 1000000\n  spate bench overhead --only none,spate --baseline /tmp/spate-main --rounds 10 --max-rounds 40 --latency=false"},
	{"recovery", "a worker killed at the same moment under spate and global, at one or more shapes",
		"Recovery kills a worker at the same moment under spate and global (the rounds' moments spread over a checkpoint interval), at a fraction of each shape's capacity measured first, at every shape asked for (--nodes N,... with --parallelism N,... for count), the configurations interleaved round by round. Per run and per shape it reports the time until the output lag is normal again and its phases, the records replayed, the instances restarted, the checkpoint each restored and how old its state was, and the output of the key groups the failure did not touch (their results per second during the recovery against before, and how late their windows came), read from the sinks' files as they grow, and how many of the machine's cores the nodes kept busy in the 3 s before the kill (the rest is the spare capacity a catch-up can use); global/spate of the medians and by round with a 95% interval, and which runs are not like for like. --store dir,coord,s3://BUCKET/PREFIX?endpoint=HOST:PORT runs every configuration with each checkpoint and output store (spate/dir, spate/coord, ...; an s3 store is an S3-compatible server you run, refused before any run if it does not answer) and adds the restore time, the checkpoints' persist time (p50, p90) and rate before the kill, the bytes the store moved over the network, and each store against dir under the same ft mode. --json carries every run.",
		"  spate bench recovery\n  spate bench recovery --keys 1000000 --rounds 5 --nodes 4,6 --parallelism 2,4\n  spate bench recovery --store dir,coord --rounds 2 --duration 12s\n  spate bench recovery --keys 1000000 --rate 600000 --parallelism count=4,rollup=4 --json"},
	{"resume", "the coordinator SIGKILLed and resumed by spate up --resume, under spate and global",
		"Resume runs spate up --headless as a child process, SIGKILLs that coordinator (its nodes live on and wait for another) --kill after its job started plus a phase that spreads the rounds' kills over a checkpoint interval, and --gap after its death runs spate up --headless --resume DIR to the end of the run. From the start of the --resume process it times: the run read (the first coord_resumed event), the control API answering, every node rejoined and reported, every instance restored, every instance caught up (recovery_done; none under global) and the output lag normal again. Per run it also says how many instances were restored of the plan's, whether every node rejoined with its own pid, and the verdict of the run's verification; per configuration (--ft spate,global, with --store dir,coord each store too), interleaved round by round, the medians and each round's values, whether every instance was restored within 2 s, and global/spate with a 95% interval. A run that did not resume or did not verify makes the exit code 1. --json carries every run.",
		"  spate bench resume\n  spate bench resume --rounds 5 --json\n  spate bench resume --rounds 2 --duration 12s --keys 100000 --rate 200000\n  spate bench resume --ft spate --store dir,coord"},
	{"scaling", "a live scale-out of count 2→4 under load, EDS against --rescale restart",
		"Scaling scales count from 2 to 4 instances under load, live (EDS) and by restart: the pause, the recovery after a kill right after it, and the steady-state overhead of sliced state.",
		"  spate bench scaling\n  spate bench scaling --rounds 3 --only eds,restart"},
	{"tuner", "the checkpoint-interval policies on the live cluster, with kills",
		"Tuner runs the NASA trace compressed in time with kills at the same moments under auto, young, fixed-1s and fixed-10s, and reports each policy's useful-throughput fraction and the model's prediction error.",
		"  spate bench tuner\n  spate bench tuner --rounds 3 --kills 3 --json"},
}

func (a *app) benchCmd() *cobra.Command {
	var subs []*cobra.Command
	for _, b := range benchmarks {
		subs = append(subs, a.benchSub(b))
	}
	return group("bench NAME [flags]", "side-by-side benchmarks: throughput, overhead, recovery, resume, scaling, tuner",
		"Bench measures a claim side by side in one run: the configurations it compares are interleaved over rounds, and it reports medians and ratios (--json for a machine).",
		"  spate bench throughput\n  spate bench recovery --rounds 5 --json\n  spate bench scaling --data /tmp/bench-runs",
		"study", subs...)
}

// engine is a command whose engine parses its own arguments with the
// flag package and returns an exit code, like bench.Main and
// tuner.SimMain. A command of another package (spate report, export,
// view, ...) joins the command line as one of these:
//
//	a.engineCmd(engine{Use: "report [--data DIR]", Short: ..., Long: ...,
//		Example: ..., Main: report.Main})
//
// Its flags are read from Main's own -h listing (goflags.go), so its
// help, one-line errors and completion follow what Main defines.
type engine struct {
	Use, Short, Long, Example, GroupID string
	Main                               func(args []string, stdout, stderr io.Writer) int
	Values                             map[string][]string // completions of flag values
	Positional                         int                 // how many positional arguments Main takes
}

func (a *app) engineCmd(e engine) *cobra.Command {
	c := &cobra.Command{
		Use: e.Use, Short: e.Short, Long: e.Long, Example: e.Example, GroupID: e.GroupID,
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if helpRequested(args) {
				return cmd.Help()
			}
			if err := parseGoArgs(cmd, args, e.Positional); err != nil {
				return err
			}
			return code(e.Main(args, a.stdout, a.stderr))
		},
	}
	addGoFlags(c.Flags(), readGoFlags(func(w io.Writer) { e.Main([]string{"-h"}, io.Discard, w) }))
	c.ValidArgsFunction = flagCompletion(c, e.Values)
	return c
}

func (a *app) benchSub(b benchmark) *cobra.Command {
	name := b.name
	return a.engineCmd(engine{Use: name + " [flags]", Short: b.short, Long: b.long, Example: b.example,
		Main: func(args []string, stdout, stderr io.Writer) int {
			return bench.Main(append([]string{name}, args...), stdout, stderr)
		}})
}

func (a *app) simCmd() *cobra.Command {
	return a.engineCmd(engine{
		Use:   "sim [--seeds N] [--from S] [--seed S] [flags]",
		Short: "the seeded whole-cluster simulation: compound fault schedules, each checked by the oracle",
		Long: `Sim runs seeds of the whole-cluster simulation: the coordinator and every
node in this process on the in-memory transport, driven by a nemesis that
draws a compound fault schedule from each seed (kills, restarts,
isolations, damaged checkpoints, failing writes and rescales, two or three
close together, some around the drain), each run checked by the oracle. It
prints a verdict per failing seed with its schedule and a summary; exit 1
if a seed failed. --seed S runs one seed twice and says whether the
verdicts agree: the schedule is a function of the seed, the interleaving
is not (the sim package's doc says how deterministic a replay is).`,
		Example: `  spate sim --seeds 20
  spate sim --seeds 200 --from 1000 --json
  spate sim --seed 135 --data /tmp/seed-135
  spate sim --seeds 100 --recover parallel
  spate sim --seed 135 --print-schedule > seed-135.yaml
  spate sim --schedule seed-135.yaml
  spate sim --seed 135 --shrink --tries 3 --schedule-out shrunk.yaml`,
		GroupID: "study",
		Main:    sim.Main,
		Values:  map[string][]string{"ft": {"spate", "global"}, "recover": {"single", "parallel"}, "break": breakValues()},
	})
}

func (a *app) tunerCmd() *cobra.Command {
	sim := a.engineCmd(engine{
		Use:   "sim [--load SOURCE] [--failures SOURCE] [flags]",
		Short: "the checkpoint-interval policies on a load and a failure trace",
		Long: `Sim replays a load (gen:NAME, rate:PATH, trace:...) and a failure process
(poisson:MTBF, weibull:SHAPE,SCALE, lanl:PATH, fta:PATH) under the
checkpoint-interval policies (fixed, Young, Daly, the load-aware model, the
online controller) and prints each one's efficiency. Deterministic by
--seed. The model is in tuner/MODEL.md. --calibrate RUN_DIR takes the
checkpoint cost, persist, capacity, detection and restore times from a
finished run's events.jsonl; a flag given explicitly wins over it.`,
		Example: `  spate tuner sim
  spate tuner sim --load rate:nasa.txt --failures lanl:failures.csv --plot sim.svg
  spate tuner sim --failures poisson:2h --ckpt-base 170ms --json
  spate tuner sim --calibrate /tmp/run1 --util 0.5`,
		Main:   tuner.SimMain,
		Values: map[string][]string{"load": {"gen:diurnal", "gen:constant", "rate:", "trace:"}, "failures": {"poisson:", "weibull:", "lanl:", "fta:"}},
	})
	return group("tuner sim [flags]", "tuner sim: the checkpoint-interval policies on a load and a failure trace",
		"Tuner holds the checkpoint-interval model's tools.",
		"  spate tuner sim\n  spate tuner sim --failures weibull:0.7,12h --json", "study", sim)
}

func (a *app) tracesCmd() *cobra.Command {
	show := &cobra.Command{
		Use:   "show FILE",
		Short: "a trace's summary and rate sparkline",
		Long:  "Show reads a load trace (a rate trace, a record trace, possibly compressed) and prints its summary and a sparkline of its rate. A failure trace (LANL, FTA) is named as one, with the --failures string to paste.",
		Example: `  spate traces show ../shared/traces/load/nasa_19950801.tsv.gz
  spate traces show rates.txt`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("spate traces show: want one FILE, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := traces.Show(a.stdout, args[0]); err != nil {
				return usagef("spate traces: %v", err)
			}
			return nil
		},
	}
	return group("traces show FILE", "traces show FILE: a trace's summary and rate sparkline",
		"Traces holds the tools for load traces.", "  spate traces show rates.txt", "study", show)
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "print the version",
		Long:    "Version prints the version of this binary (also spate --version).",
		Example: "  spate version\n  spate --version",
		GroupID: "other",
		Args:    noArgs,
		RunE:    func(*cobra.Command, []string) error { return a.printVersion() },
	}
}

func (a *app) printVersion() error {
	fmt.Fprintln(a.stdout, "spate", a.version)
	return nil
}

// nodeCmd is the hidden `spate node`: the worker process, started by up
// (or by hand with --join); its flags are node.Main's.
func (a *app) nodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "node --coord HOST:PORT --token TOKEN",
		Short:              "a worker process (started by up, or by hand with --join)",
		Example:            "  spate node --join 10.0.0.1:7400 --token $(cat spate-data/latest/token)",
		Hidden:             true,
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if helpRequested(args) {
				return cmd.Help()
			}
			return code(node.Main(args, a.stderr))
		},
	}
}
