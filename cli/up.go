package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"spate/chaos"
	"spate/control"
	"spate/coord"
	"spate/events"
	"spate/internal/breaks"
	"spate/metrics"
	"spate/report"
	"spate/tui"
)

// upFlags are the flags of `spate up`, as coord.ParseUp defines them.
func upFlags() []goFlag {
	return readGoFlags(func(w io.Writer) { _, _ = coord.ParseUp([]string{"-h"}, w) })
}

func (a *app) upCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "up [flags]",
		Short: "start a cluster and run a job",
		Long: `Up starts a cluster on this machine (the coordinator and --nodes worker
processes), runs the job until --duration, the end of a finite source,
Ctrl-C or q, then drains it: sources stop, a final watermark fires every
open window, sinks flush. On a terminal it opens the dashboard; elsewhere,
or with --headless, it prints the run: every lifecycle event, one
throughput line a second, and the checkpoints and fired windows of each
second summed on one line. --quiet keeps the lifecycle events and a final
summary; --events KIND,... (or --show KIND,...) prints exactly the events
of those kinds, rescale_* for a prefix. --events FILE, as before, writes a
second copy of the events log: a value whose words are all event kinds
is the kinds, any other a file (./checkpoint for a file of that name).

The run directory (--data, by default ./spate-data/RUN-ID) holds run.json,
events.jsonl, the checkpoints and the output; check it with spate verify.`,
		Example: `  spate up                                             # the dashboard, 4 nodes, windowcount on gen:diurnal
  spate up --headless --nodes 3 --duration 20s --data /tmp/run1
  spate up --headless --quiet --ft global --interval 2s --duration 30s
  spate up --headless --events fault_started,recovery_done --script examples/teaching.yaml
  spate up --headless --events rescale_*,checkpoint --autoscale --duration 1m`,
		GroupID:            "run",
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true,
		RunE:               a.runUp,
	}
	addGoFlags(c.Flags(), upFlags())
	c.Flags().Bool("quiet", false, "headless: print only the lifecycle events (nodes, faults, recoveries, rescales, the drain) and a final summary")
	c.Flags().String("show", "", "headless: print only the events of these kinds, comma separated, e.g. checkpoint,recovery_done (rescale_* for a prefix)")
	c.ValidArgsFunction = flagCompletion(c, upValues)
	return c
}

// upValues are the completions of some flags' values.
var upValues = map[string][]string{
	"ft":          {"spate", "global", "none"},
	"interval":    {"auto", "500ms", "1s", "5s"},
	"source":      {"gen:diurnal", "gen:constant", "trace:", "rate:"},
	"rescale":     {"eds", "restart"},
	"recover-on":  {"survivors", "respawned"},
	"recover":     {"single", "parallel"},
	"backup-full": {"spill", "block"},
	"flush":       {"5ms", "20ms", "100ms"},
	"store":       {"dir", "coord", "s3://"},
	"job":         {"windowcount"},
	"show":        kindNames(),
	"failures":    {"poisson:", "weibull:", "lanl:", "fta:"},
	"break":       breakValues(),
}

// breakValues are --break's completions: list and every variant's name.
func breakValues() []string {
	out := []string{"list"}
	for _, in := range breaks.List() {
		out = append(out, in.Name)
	}
	return out
}

// parseGoArgs checks args against cmd's flags, as the engine will parse
// them: a mistake is one line naming the flag; positional words are
// refused unless positional says how many are fine.
func parseGoArgs(cmd *cobra.Command, args []string, positional int) error {
	fs := cmd.Flags()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return flagError(cmd, err)
	}
	if n := fs.NArg(); n > positional {
		return usagef("%s: unexpected argument %q", cmd.CommandPath(), fs.Arg(positional))
	}
	return nil
}

// withoutFlags drops the flags named in drop (and their values) from
// normalized args.
func withoutFlags(args []string, drop map[string]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			return append(out, args[i:]...)
		}
		if name, ok := strings.CutPrefix(w, "--"); ok {
			name, _, hasVal := strings.Cut(name, "=")
			if takesValue, ok := drop[name]; ok {
				if takesValue && !hasVal {
					i++
				}
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

func (a *app) runUp(cmd *cobra.Command, args []string) error {
	if helpRequested(args) {
		return cmd.Help()
	}
	if err := parseGoArgs(cmd, args, 0); err != nil {
		return err
	}
	if b, _ := cmd.Flags().GetString("break"); b == "list" {
		fmt.Fprint(a.stdout, breaks.Help())
		return nil
	}
	quiet, _ := cmd.Flags().GetBool("quiet")
	show, _ := cmd.Flags().GetString("show")
	ours := map[string]bool{"quiet": false, "show": true}
	evs, _ := cmd.Flags().GetString("events")
	kinds, err := eventsFlag(evs)
	if err != nil {
		return usagef("spate up: %v", err)
	}
	if kinds {
		if show != "" {
			return usagef("spate up: --events %s and --show %s: choose one", evs, show)
		}
		show, ours["events"] = evs, true // not the events log's file
	}
	mode, err := parseOutputMode(quiet, show)
	if err != nil {
		return usagef("spate up: %v", err)
	}
	cfg, err := coord.ParseUp(withoutFlags(args, ours), io.Discard)
	if err != nil {
		return usagef("spate up: %s", trimUsage(err))
	}
	return code(a.up(cfg, mode))
}

// eventsFlag says what --events VALUE is: the kinds headless up prints
// (kinds true), when every comma-separated word of it is an event kind or
// a prefix* of some, as --show takes them; or, as it has always been, the
// file of a second copy of the events log. A word that is neither a kind
// nor likely a file name (a list of words, or one close to a kind) is a
// mistake; a file named like a kind is ./NAME.
func eventsFlag(v string) (kinds bool, err error) {
	if v == "" || strings.ContainsAny(v, `/\.`) {
		return false, nil
	}
	known := kindNames()
	words := strings.Split(v, ",")
	for _, w := range words {
		w = strings.TrimSpace(w)
		if slices.Contains(known, w) {
			continue
		}
		if p, ok := strings.CutSuffix(w, "*"); ok && p != "" && slices.ContainsFunc(known, func(k string) bool { return strings.HasPrefix(k, p) }) {
			continue
		}
		if s := didYouMean(w, known, ""); len(words) > 1 || s != "" {
			return false, fmt.Errorf("--events %s: %q is not an event kind%s (a file of that name: --events ./%s)", v, w, s, v)
		}
		return false, nil
	}
	return true, nil
}

// up is `spate up` with a parsed configuration; it returns the exit code.
// On a terminal (and without --headless) the dashboard owns the screen
// and the event lines go to the run directory only; otherwise the events
// are printed through the output filter.
func (a *app) up(cfg coord.Config, mode outputMode) int {
	stdout, stderr := a.stdout, a.stderr
	var script *chaos.Scenario
	if cfg.Script != "" {
		var err error
		if script, err = readScenario(cfg.Script, nil); err != nil {
			fmt.Fprintln(stderr, "spate up:", err)
			return exitUsage
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	useTUI := !cfg.Headless && tui.IsTerminal(stdout)
	opt := coord.Options{}
	started := make(chan string, 1)
	opt.Started = func(dir string) { started <- dir }
	var evc chan events.Event
	var pr *printer
	if useTUI {
		evc = make(chan events.Event, 8192)
		opt.Observe = func(e events.Event) {
			select {
			case evc <- e:
			default: // the dashboard's pump counts its own drops; never block the run
			}
		}
	} else {
		pr = newPrinter(stdout, mode)
		opt.Observe = pr.Add
	}
	if cfg.Metrics != "" {
		exp := metrics.New()
		srv, err := metrics.Serve(ctx, cfg.Metrics, exp)
		if err != nil {
			fmt.Fprintf(stderr, "spate up: --metrics %s: %v\n", cfg.Metrics, err)
			return exitUsage
		}
		prev := opt.Observe
		opt.Observe = func(e events.Event) { prev(e); exp.Observe(e) }
		fmt.Fprintf(stderr, "spate up: Prometheus metrics at http://%s/metrics\n", srv.Addr())
	}
	upCtx, cancelUp := context.WithCancel(ctx)
	defer cancelUp()
	type result struct {
		dir string
		err error
	}
	done := make(chan result, 1)
	finished := make(chan struct{})
	go func() {
		dir, err := coord.Up(upCtx, cfg, opt)
		if evc != nil {
			close(evc)
		}
		close(finished)
		done <- result{dir, err}
	}()
	var dir string
	select {
	case dir = <-started:
	case r := <-done:
		if pr != nil {
			pr.Close()
		}
		return upExit(r.err, stderr)
	}
	if script != nil {
		out := stdout
		if useTUI {
			out = io.Discard
		} else {
			out = pr.Writer()
		}
		go func() {
			if _, err := chaos.Drive(upCtx, dir, script, finished, chaos.RunOptions{Out: out}); err != nil && upCtx.Err() == nil {
				fmt.Fprintln(out, "spate up: --script:", err)
			}
		}()
	}
	if useTUI {
		client, err := control.Dial(dir)
		if err == nil {
			err = tui.Run(ctx, tui.Options{Events: evc, Control: client, Now: time.Now, In: os.Stdin, Out: stdout,
				Title: filepath.Base(dir), RunDir: dir})
		}
		cancelUp() // q: the job drains
		if err != nil {
			fmt.Fprintln(stderr, "spate up: dashboard:", err)
		}
	}
	r := <-done
	if pr != nil {
		pr.Close()
		if r.err == nil {
			pr.Summary(r.dir)
		}
	}
	if r.err == nil && useTUI {
		fmt.Fprintf(stdout, "run finished; data in %s; check it with: spate verify --data %s\n", r.dir, r.dir)
	}
	if r.err == nil {
		// Every finished run gets its report; the exit code stays the
		// run's (spate verify and spate report say the verdict's).
		if rep, err := report.Write(r.dir); err != nil {
			fmt.Fprintln(stderr, "spate up: report:", err)
		} else {
			fmt.Fprintf(stdout, "report: %s (verdict %s)\n", filepath.Join(r.dir, "report.html"), rep.Verdict)
		}
	}
	return upExit(r.err, stderr)
}

func upExit(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "spate up:", trimUsage(err))
	if errors.Is(err, coord.ErrUsage) {
		return exitUsage
	}
	return exitFail
}

// trimUsage drops the "usage: " marker (coord.ErrUsage) from an error's
// text, and turns the flag package's words into ours.
func trimUsage(err error) string {
	s := strings.TrimPrefix(err.Error(), "usage: ")
	if name, ok := strings.CutPrefix(s, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	return s
}
