package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"

	"github.com/spf13/cobra"

	"spate/chaos"
	"spate/coord"
)

func (a *app) chaosRunCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "run FILE.yaml [--data DIR] [--set KEY=VALUE...] [--junit FILE]",
		Short: "a headless scripted run with a verdict",
		Long: `Run starts the scenario's cluster headless, sends each fault of its
schedule at its time, heals at the end, verifies the output with the
oracle, evaluates the checks, and writes report.json and report.html in
the run directory. Exit 0 pass, 1 a check failed, 2 could not run; a
scenario with "expect: fail" turns the first two around.

--set KEY=VALUE overrides a field of the scenario's cluster: block (any
flag of spate up but data, headless and script); --set seed=N sets the
cluster's seed and the seed of every random: entry. --junit FILE writes
the checks as JUnit XML, one test case per check, for CI.`,
		Example: `  spate chaos run examples/teaching.yaml --data /tmp/demo
  spate chaos run examples/soak.yaml --set duration=90s --set seed=3
  spate chaos run examples/ftnone-kill.yaml --junit junit.xml`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usagef("spate chaos run: missing FILE.yaml, the scenario")
			case len(args) > 1:
				return usagef("spate chaos run: unexpected argument %q (one scenario file)", args[1])
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			data, _ := cmd.Flags().GetString("data")
			junit, _ := cmd.Flags().GetString("junit")
			sets, _ := cmd.Flags().GetStringArray("set")
			return code(a.chaosRun(args[0], data, junit, sets))
		},
	}
	c.Flags().String("data", "", "run directory (default ./spate-data/RUN-ID)")
	c.Flags().String("junit", "", "also write the checks to this file as JUnit XML")
	c.Flags().StringArray("set", nil, "override a cluster: field (or seed), KEY=VALUE; repeatable")
	_ = c.RegisterFlagCompletionFunc("set", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, k := range chaos.ClusterKeys() {
			out = append(out, k+"=")
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	})
	return c
}

// chaosRun is `spate chaos run FILE.yaml`; it returns the exit code.
func (a *app) chaosRun(file, data, junit string, sets []string) int {
	stdout, stderr := a.stdout, a.stderr
	var over []chaos.Override
	for _, kv := range sets {
		o, err := chaos.ParseOverride(kv)
		if err != nil {
			fmt.Fprintln(stderr, "spate chaos run:", err)
			return exitUsage
		}
		over = append(over, o)
	}
	sc, err := readScenario(file, over)
	if err != nil {
		fmt.Fprintln(stderr, "spate chaos run:", err)
		return exitUsage
	}
	extra := []string{"--headless"}
	if data != "" {
		extra = append(extra, "--data", data)
	}
	cfg, err := coord.ParseUp(append(append([]string(nil), sc.Cluster...), extra...), io.Discard)
	if err != nil {
		fmt.Fprintln(stderr, "spate chaos run:", clusterError(sc, err))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := func(ctx context.Context, _ []string) (string, func() error, error) {
		started := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			_, err := coord.Up(ctx, cfg, coord.Options{Started: func(dir string) { started <- dir }})
			done <- err
		}()
		select {
		case dir := <-started:
			return dir, func() error { return <-done }, nil
		case err := <-done:
			return "", nil, err
		}
	}
	verify := func(dir string) (chaos.Verify, error) {
		rep, err := coord.VerifyRun(dir)
		return chaos.Verify{Windows: rep.Windows, Lost: rep.Missing, Duplicated: rep.Duplicated, Wrong: rep.Wrong}, err
	}
	rc, _, err := chaos.Run(ctx, sc, chaos.RunOptions{Start: start, Verify: verify, Out: stdout, JUnit: junit})
	if err != nil {
		fmt.Fprintln(stderr, "spate chaos run:", oneLine(trimUsage(err)))
	}
	return rc
}

// readScenario reads and parses a scenario file, with overrides.
func readScenario(path string, over []chaos.Override) (*chaos.Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return chaos.ParseWith(path, b, over)
}

var flagName = regexp.MustCompile(`--([a-z-]+)`)

// clusterError places an error of the cluster: block at its line, or at
// the --set that gave the value.
func clusterError(sc *chaos.Scenario, err error) string {
	msg := trimUsage(err)
	if m := flagName.FindStringSubmatch(msg); m != nil {
		if v, ok := sc.Set[m[1]]; ok {
			return fmt.Sprintf("--set %s=%s: %s", m[1], v, msg)
		}
		if line, ok := sc.ClusterLines[m[1]]; ok {
			return fmt.Sprintf("%s:%d: cluster.%s: %s", sc.File, line, m[1], msg)
		}
	}
	var ee *chaos.Error
	if errors.As(err, &ee) {
		return ee.Error()
	}
	return fmt.Sprintf("%s: cluster: %s", sc.File, msg)
}
