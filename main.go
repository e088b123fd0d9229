// Command spate is a terminal-driven lab cluster for fault tolerance in
// distributed stream processing. See README.md.
package main

import (
	"fmt"
	"io"
	"os"

	"spate/bench"
	"spate/coord"
	"spate/node"
	"spate/tour"
	"spate/traces"
	"spate/tui"
	"spate/tuner"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `spate: a lab cluster for fault tolerance in stream processing

usage: spate COMMAND [flags]

  up        start a cluster and run a job (spate up --help for flags)
  verify    compare a run's output with the oracle
  status    nodes and instances of a running cluster [--json]
  chaos     VERB [TARGET] [--for D]: kill, pause, resume, heal, ... a running cluster
  scale     OP N: rescale an operator of a running cluster
  bench     side-by-side benchmarks: throughput, overhead, recovery
  tuner     sim: the checkpoint-interval policies on a load and a failure trace
  view      [--data DIR]: replay a finished run's events in the dashboard
  tour      [--headless]: a guided lesson on a live cluster
  traces    show FILE: a trace's summary and rate sparkline
  version   print the version
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "up":
		return coord.UpMain(rest, stdout, stderr)
	case "node":
		return node.Main(rest, stderr)
	case "verify":
		return coord.VerifyMain(rest, stdout, stderr)
	case "status":
		return coord.StatusMain(rest, stdout, stderr)
	case "chaos":
		if len(rest) == 0 {
			fmt.Fprintln(stderr, "usage: spate chaos run FILE.yaml | spate chaos kill|restart|pause|resume|partition|link|store|heal [TARGET] [KEY=VALUE...] [--for D] [--data DIR]")
			return 2
		}
		if rest[0] == "run" {
			return coord.ChaosRunMain(rest[1:], stdout, stderr)
		}
		return coord.ActMain("spate chaos "+rest[0], rest[0], rest[1:], stdout, stderr)
	case "scale":
		return coord.ActMain("spate scale", "scale", rest, stdout, stderr)
	case "tour":
		return tour.Main(rest, stdout, stderr)
	case "view":
		return tui.ViewMain(rest, stdout, stderr, coord.ResolveDataDir)
	case "bench":
		return bench.Main(rest, stdout, stderr)
	case "tuner":
		if len(rest) == 0 || rest[0] != "sim" {
			fmt.Fprintln(stderr, "usage: spate tuner sim --load SOURCE --failures SOURCE [--seed N] [--json] [--plot FILE]")
			return 2
		}
		return tuner.SimMain(rest[1:], stdout, stderr)
	case "traces":
		if len(rest) != 2 || rest[0] != "show" {
			fmt.Fprintln(stderr, "usage: spate traces show FILE")
			return 2
		}
		if err := traces.Show(stdout, rest[1]); err != nil {
			fmt.Fprintln(stderr, "spate traces:", err)
			return 2
		}
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, "spate", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "spate: unknown command %q\n%s", cmd, usage)
	return 2
}
