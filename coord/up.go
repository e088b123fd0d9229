package coord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"spate/chaos"
	"spate/control"
	"spate/events"
	"spate/tui"
)

// UpMain is `spate up`; it returns the exit code. On a terminal (and
// without --headless) the dashboard owns the screen and the event lines go
// to the run directory only; otherwise the events are printed.
func UpMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := ParseUp(args, stderr)
	if err != nil {
		if !errors.Is(err, ErrUsage) || err.Error() != ErrUsage.Error() {
			fmt.Fprintln(stderr, "spate up:", trimUsage(err))
		}
		return 2
	}
	var script *chaos.Scenario
	if cfg.Script != "" {
		if script, err = readScenario(cfg.Script); err != nil {
			fmt.Fprintln(stderr, "spate up:", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	useTUI := !cfg.Headless && isTerminal(stdout)
	opt := Options{Out: stdout}
	started := make(chan string, 1)
	opt.Started = func(dir string) { started <- dir }
	var evc chan events.Event
	if useTUI {
		opt.Out = io.Discard
		evc = make(chan events.Event, 8192)
		opt.Observe = func(e events.Event) {
			select {
			case evc <- e:
			default: // the dashboard's pump counts its own drops; never block the run
			}
		}
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
		dir, err := Up(upCtx, cfg, opt)
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
		return upExit(r.err, stderr)
	}
	if script != nil {
		out := stdout
		if useTUI {
			out = io.Discard
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
	if r.err == nil && useTUI {
		fmt.Fprintf(stdout, "run finished; data in %s; check it with: spate verify --data %s\n", r.dir, r.dir)
	}
	return upExit(r.err, stderr)
}

func upExit(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "spate up:", trimUsage(err))
	if errors.Is(err, ErrUsage) {
		return 2
	}
	return 1
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// readScenario reads and parses a scenario file.
func readScenario(path string) (*chaos.Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return chaos.Parse(path, b)
}

// trimUsage drops the "usage: " marker from an error's text.
func trimUsage(err error) string {
	s := err.Error()
	const p = "usage: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// ChaosRunMain is `spate chaos run FILE.yaml [--data DIR]`: a headless
// scripted run with a verdict. Exit 0 pass, 1 a check failed, 2 could not
// run.
func ChaosRunMain(args []string, stdout, stderr io.Writer) int {
	a, err := parseCLI("spate chaos run", args)
	if err == nil && (len(a.words) != 1 || len(a.args) > 0) {
		err = errors.New("usage: spate chaos run FILE.yaml [--data DIR]")
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	sc, err := readScenario(a.words[0])
	if err != nil {
		fmt.Fprintln(stderr, "spate chaos run:", err)
		return 2
	}
	extra := []string{"--headless"}
	if a.data != "" {
		extra = append(extra, "--data", a.data)
	}
	cfg, err := ParseUp(append(append([]string(nil), sc.Cluster...), extra...), io.Discard)
	if err != nil {
		fmt.Fprintln(stderr, "spate chaos run:", clusterError(sc, err))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := func(ctx context.Context, _ []string) (string, func() error, error) {
		started := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			_, err := Up(ctx, cfg, Options{Started: func(dir string) { started <- dir }})
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
		rep, err := VerifyRun(dir)
		return chaos.Verify{Windows: rep.Windows, Lost: rep.Missing, Duplicated: rep.Duplicated, Wrong: rep.Wrong}, err
	}
	code, _, err := chaos.Run(ctx, sc, chaos.RunOptions{Start: start, Verify: verify, Out: stdout})
	if err != nil {
		fmt.Fprintln(stderr, "spate chaos run:", err)
	}
	return code
}

var flagName = regexp.MustCompile(`--([a-z]+)`)

// clusterError places an error of the cluster: block at its line.
func clusterError(sc *chaos.Scenario, err error) string {
	msg := trimUsage(err)
	if m := flagName.FindStringSubmatch(msg); m != nil {
		if line, ok := sc.ClusterLines[m[1]]; ok {
			return fmt.Sprintf("%s:%d: cluster.%s: %s", sc.File, line, m[1], msg)
		}
	}
	return fmt.Sprintf("%s: cluster: %s", sc.File, msg)
}
