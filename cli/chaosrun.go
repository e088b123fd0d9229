package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

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

A scenario that kills the coordinator ({fault: kill, target: coordinator,
resume_after: 2s}) runs it as a child process (spate up --headless ...
--data DIR; without --data, in a fresh directory under spate-data/),
sends it SIGKILL, and starts spate up --resume DIR after resume_after.

--set KEY=VALUE overrides a field of the scenario's cluster: block (any
flag of spate up but data, headless, script and resume); --set seed=N sets the
cluster's seed and the seed of every random: entry. A --set duration
shorter than the file's that drops at: steps of the schedule (due after
the new end) or truncates them (a for: past it) lists each, one line a
step, and the run is refused unless --allow-drop is given; every: and
random: entries end with the run, and a line says how many of their
steps remain. --junit FILE writes
the checks as JUnit XML, one test case per check, for CI.`,
		Example: `  spate chaos run examples/teaching.yaml --data /tmp/demo
  spate chaos run examples/soak.yaml --set duration=90s --set seed=3
  spate chaos run examples/compound/kill-coordinator.yaml
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
			allowDrop, _ := cmd.Flags().GetBool("allow-drop")
			return code(a.chaosRun(args[0], data, junit, sets, allowDrop))
		},
	}
	c.Flags().String("data", "", "run directory (default ./spate-data/RUN-ID)")
	c.Flags().String("junit", "", "also write the checks to this file as JUnit XML")
	c.Flags().StringArray("set", nil, "override a cluster: field (or seed), KEY=VALUE; repeatable")
	c.Flags().Bool("allow-drop", false, "run even if --set duration drops or truncates steps of the schedule (each is listed)")
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
func (a *app) chaosRun(file, data, junit string, sets []string, allowDrop bool) int {
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
	for _, line := range sc.Shortened() {
		fmt.Fprintf(stdout, "spate chaos run: --set duration=%v: %s\n", sc.Duration, line)
	}
	if cut := sc.Cut(); len(cut) > 0 {
		w := stderr
		if allowDrop {
			w = stdout
		}
		for _, line := range cut {
			fmt.Fprintf(w, "spate chaos run: --set duration=%v: %s\n", sc.Duration, line)
		}
		if !allowDrop {
			fmt.Fprintf(stderr, "spate chaos run: --set duration=%v cuts %d of the schedule's steps; give --allow-drop to run it so\n", sc.Duration, len(cut))
			return exitUsage
		}
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
	opts := chaos.RunOptions{Out: stdout, JUnit: junit}
	opts.Verify = func(dir string) (chaos.Verify, error) {
		rep, err := coord.VerifyRun(dir)
		return chaos.Verify{Windows: rep.Windows, Lost: rep.Missing, Duplicated: rep.Duplicated, Wrong: rep.Wrong}, err
	}
	if sc.KillsCoordinator() {
		cc, err := newCoordChildren(data, sc, stdout)
		if err != nil {
			fmt.Fprintln(stderr, "spate chaos run:", err)
			return chaos.ExitNotRun
		}
		defer cc.cleanup(stdout)
		opts.Start, opts.KillCoordinator, opts.ResumeCoordinator, opts.AwaitNodes = cc.start, cc.kill, cc.resume, cc.awaitNodes
	} else {
		opts.Start = inProcess(cfg)
	}
	rc, _, err := chaos.Run(ctx, sc, opts)
	if err != nil {
		fmt.Fprintln(stderr, "spate chaos run:", oneLine(trimUsage(err)))
	}
	return rc
}

// inProcess is the Start of a scenario that leaves the coordinator alone:
// coord.Up on a goroutine of this process.
func inProcess(cfg coord.Config) func(context.Context, []string) (string, func() error, error) {
	return func(ctx context.Context, _ []string) (string, func() error, error) {
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

// coordChildren runs the coordinators of a scenario that kills one
// (chaos.Scenario.KillsCoordinator) as child processes of this one, so
// that the kill is a real SIGKILL of a real process: first `spate up
// --headless CLUSTER... --data DIR`, then, for each resume, `spate up
// --headless --resume DIR`. Only one runs at a time. Safe for the runner's
// goroutine and cleanup, which do not overlap.
type coordChildren struct {
	exe  string
	dir  string // absolute
	args []string
	// coordTimeout is how long the nodes of a dead coordinator wait for
	// another (the cluster's --coord-timeout).
	coordTimeout time.Duration

	mu     sync.Mutex
	cur    *coordChild // the latest coordinator
	killed bool        // cur was killed: its nodes may be left
}

// coordChild is one coordinator process: err (its exit, with the last
// line it wrote to stderr) is written before done is closed.
type coordChild struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// coordGrace is how long a coordinator has to drain its nodes after a
// Ctrl-C before it is killed.
const coordGrace = 30 * time.Second

// defaultCoordTimeout is `spate up --coord-timeout`'s default.
const defaultCoordTimeout = 30 * time.Second

// newCoordChildren prepares the processes of sc's run in data, or, when
// no --data was given, in a fresh directory under spate-data/ (made the
// latest run, as `spate up` does), which it says.
func newCoordChildren(data string, sc *chaos.Scenario, out io.Writer) (*coordChildren, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the coordinator must run as a process of its own to be killed, and this binary cannot be found: %w", err)
	}
	dir := data
	if dir == "" {
		run := coord.NewRunID(time.Now())
		dir = filepath.Join(coord.DefaultRoot, run)
		if err := os.MkdirAll(coord.DefaultRoot, 0o755); err != nil {
			return nil, err
		}
		link := filepath.Join(coord.DefaultRoot, "latest")
		_ = os.Remove(link)
		_ = os.Symlink(run, link) // `spate status` and `spate chaos` find it
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cc := &coordChildren{exe: exe, dir: abs, coordTimeout: defaultCoordTimeout}
	if sc.CoordTimeout > 0 {
		cc.coordTimeout = sc.CoordTimeout
	}
	cc.args = append(append([]string{"up", "--headless"}, sc.Cluster...), "--data", abs)
	where := "in " + abs
	if data == "" {
		where = "in " + dir + " (no --data given)"
	}
	fmt.Fprintf(out, "chaos: the scenario kills the coordinator, so it runs as a process of its own, %s\n", where)
	return cc, nil
}

// run starts one coordinator process. Cancelling ctx sends it SIGTERM
// (it drains its nodes, as after a Ctrl-C), and SIGKILL coordGrace later.
func (cc *coordChildren) run(ctx context.Context, args []string) (*coordChild, error) {
	cmd := exec.CommandContext(ctx, cc.exe, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = coordGrace
	// The headless event lines are in events.jsonl; the runner reads that
	// and the control API. Its errors are kept for its exit's error.
	tail := &lastLine{}
	cmd.Stderr = tail
	// Its own process group, as the nodes have: a Ctrl-C at the terminal
	// reaches this process, which stops the coordinator through ctx.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &coordChild{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if err != nil && ctx.Err() != nil && cmd.ProcessState != nil && cmd.ProcessState.Success() {
			err = nil // it drained and stopped, as asked
		}
		if line := tail.String(); err != nil && line != "" {
			err = fmt.Errorf("%s (%v)", line, err)
		}
		ch.err = err
		close(ch.done)
	}()
	cc.mu.Lock()
	cc.cur, cc.killed = ch, false
	cc.mu.Unlock()
	return ch, nil
}

// wait is ch's end, for the runner.
func (ch *coordChild) wait() error {
	<-ch.done
	return ch.err
}

// start is RunOptions.Start: the first coordinator. The run directory is
// known before it exists; the runner waits for its control file.
func (cc *coordChildren) start(ctx context.Context, _ []string) (string, func() error, error) {
	ch, err := cc.run(ctx, cc.args)
	if err != nil {
		return "", nil, err
	}
	return cc.dir, ch.wait, nil
}

// kill is RunOptions.KillCoordinator: SIGKILL to the coordinator alone
// (its nodes live on, waiting for another), and its end.
func (cc *coordChildren) kill() error {
	cc.mu.Lock()
	ch := cc.cur
	cc.mu.Unlock()
	if ch == nil {
		return errors.New("no coordinator was started")
	}
	select {
	case <-ch.done:
		return fmt.Errorf("the coordinator had ended already: %v", ch.err)
	default:
	}
	if err := ch.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-ch.done
	cc.mu.Lock()
	cc.killed = true
	cc.mu.Unlock()
	return nil
}

// resume is RunOptions.ResumeCoordinator: `spate up --headless --resume
// DIR`, the run's configuration being its own.
func (cc *coordChildren) resume(ctx context.Context) (func() error, error) {
	ch, err := cc.run(ctx, []string{"up", "--headless", "--resume", cc.dir})
	if err != nil {
		return nil, err
	}
	return ch.wait, nil
}

// awaitNodes is RunOptions.AwaitNodes: it polls until no node process of
// the run is left, for at most the nodes' --coord-timeout and a margin.
func (cc *coordChildren) awaitNodes(ctx context.Context) error {
	deadline := time.Now().Add(cc.coordTimeout + 30*time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		left := coord.LiveNodes(cc.dir)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still running %v after the coordinator died", nodeNames(left), cc.coordTimeout+30*time.Second)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// cleanup, once the run is over, kills the node processes a dead
// coordinator left (the run cannot finish, a Ctrl-C came while no
// coordinator ran, or the last one failed): they would otherwise wait
// --coord-timeout for one.
func (cc *coordChildren) cleanup(out io.Writer) {
	cc.mu.Lock()
	ch := cc.cur
	cc.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch.done: // chaos.Run waits for its coordinators
	default: // a way out that did not: stop it as a Ctrl-C would
		if ch.cmd != nil {
			_ = ch.cmd.Process.Signal(syscall.SIGTERM)
		}
		<-ch.done
	}
	cc.mu.Lock()
	killed := cc.killed
	cc.mu.Unlock()
	if !killed && ch.err == nil { // it stopped its nodes
		return
	}
	left := coord.LiveNodes(cc.dir)
	for _, n := range left {
		_ = syscall.Kill(n.PID, syscall.SIGKILL)
	}
	if len(left) > 0 {
		fmt.Fprintf(out, "chaos: killed %s, left by the dead coordinator\n", nodeNames(left))
	}
}

func nodeNames(ns []coord.NodeProc) string {
	var b strings.Builder
	for i, n := range ns {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (pid %d)", n.Name, n.PID)
	}
	return b.String()
}

// lastLine is an io.Writer that keeps the last non-empty line written to
// it (bounded), for a child's error.
type lastLine struct {
	mu   sync.Mutex
	line []byte // the last complete non-empty line
	part []byte // what followed it, so far
}

const maxLine = 1 << 10

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			if len(bytes.TrimSpace(l.part)) > 0 {
				l.line = append(l.line[:0], l.part...)
			}
			l.part = l.part[:0]
			continue
		}
		if len(l.part) < maxLine {
			l.part = append(l.part, c)
		}
	}
	return len(p), nil
}

// String is the last non-empty line, a cut-short one included.
func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.TrimSpace(string(l.part)); s != "" {
		return s
	}
	return strings.TrimSpace(string(l.line))
}
