package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"spate/coord"
	"spate/events"
)

// baselineBinary checks a --baseline flag's value: an executable file.
// It returns the file's absolute path.
func baselineBinary(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("--baseline %s: not an executable file", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("--baseline: %w", err)
	}
	return abs, nil
}

// upArgs are the arguments of `BIN up` that run cfg headless and quiet
// in cfg.Data.
func upArgs(cfg coord.Config) []string {
	return []string{"up", "--headless", "--quiet",
		"--nodes", strconv.Itoa(cfg.Nodes), "--ft", cfg.FT, "--interval", cfg.Interval,
		"--rate", strconv.FormatFloat(cfg.Rate, 'f', -1, 64), "--duration", cfg.Duration.String(),
		"--keys", strconv.Itoa(cfg.Keys), "--heartbeat", cfg.Heartbeat.String(), "--timeout", cfg.Timeout.String(),
		"--seed", strconv.FormatInt(cfg.Seed, 10), "--source", cfg.Source, "--data", cfg.Data}
}

// upFlagNames are the names of the flags in args (upArgs and the like).
func upFlagNames(args []string) []string {
	var out []string
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			out = append(out, name)
		}
	}
	return out
}

// helpFlag is a flag's line in a help listing: cobra's "      --flush
// duration" (and "  -h, --help"), or the flag package's "  -flush
// duration" of builds before the command line moved onto cobra.
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-[A-Za-z], )?--?([a-z][a-z0-9-]*)\b`)

// missingUpFlags runs `BIN up --help` and returns the flags of want that
// its listing lacks: a build older than a flag a benchmark passes would
// otherwise fail only when its first run starts, rounds later.
func missingUpFlags(ctx context.Context, bin string, want []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "up", "--help").CombinedOutput() // its exit code says nothing: the flag package's -h exits 2
	has := map[string]bool{}
	for _, m := range helpFlag.FindAllSubmatch(out, -1) {
		has[string(m[1])] = true
	}
	if len(has) == 0 {
		return nil, fmt.Errorf("--baseline %s: `%s up --help` lists no flags: not a spate binary?", bin, bin)
	}
	var missing []string
	for _, f := range want {
		if !has[f] && !slices.Contains(missing, f) {
			missing = append(missing, f)
		}
	}
	return missing, nil
}

// binaryRun runs cfg with another spate binary (a build of another
// commit), as `BIN up --headless` in a process of its own, so that a
// change is measured beside the code it changes, in one benchmark and on
// the same machine. env is added to the process's environment. What the
// run observed is read back from its run directory: run.json, the events
// and the report that its own up writes, with the verdict of its
// verification.
func binaryRun(ctx context.Context, bin string, cfg coord.Config, env []string) (*run, error) {
	args := upArgs(cfg)
	cmd, logf, err := upCommand(ctx, bin, args, cfg.Data, env)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		return nil, upFailed(bin, args, cfg.Data, err)
	}
	r := &run{}
	if err := readEvents(filepath.Join(cfg.Data, "events.jsonl"), r.observe); err != nil {
		return nil, err
	}
	return r, r.finishBinary(cfg.Data)
}

// upCommand is `BIN args...`, its output going to DATA.log, env added to
// its environment; Ctrl-C (ctx cancelled) drains the run, as it does one
// in this process.
func upCommand(ctx context.Context, bin string, args []string, data string, env []string) (*exec.Cmd, *os.File, error) {
	logf, err := os.Create(data + ".log")
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	return cmd, logf, nil
}

func upFailed(bin string, args []string, data string, err error) error {
	return fmt.Errorf("%s %s: %w (its output is in %s)", bin, strings.Join(args, " "), err, data+".log")
}

// finishBinary reads what a finished run of another binary left in its
// run directory beside the events r observed: run.json and the verdict
// of the verification its up made (report.json).
func (r *run) finishBinary(dir string) error {
	ri, n, rps, err := finishedRun(dir)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.info, r.rps = ri, rps
	if n > 0 {
		r.cpuPerRec = ri.NodeCPU * 1e6 / float64(n)
	}
	r.mu.Unlock()
	var rep struct {
		Verdict                 string
		Lost, Duplicated, Wrong int64
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		return fmt.Errorf("%s: the report of its verification: %w", dir, err)
	}
	r.verified = rep.Verdict == "pass" && rep.Lost == 0 && rep.Duplicated == 0 && rep.Wrong == 0
	if !r.verified {
		fmt.Fprintf(os.Stderr, "spate bench: %s did not verify: verdict %s, %d lost, %d duplicated, %d wrong\n", dir, rep.Verdict, rep.Lost, rep.Duplicated, rep.Wrong)
	}
	return nil
}

// eventPoll is how often a run of another binary has its events.jsonl
// read while it runs: a kill is due an interval or more after the
// checkpoint that times it, and timed by the event's own time, not by
// when it was read.
const eventPoll = 10 * time.Millisecond

// binaryRecoveryRun runs cfg with another spate binary as binaryRun
// does, with the kill of o, which this process carries out from outside:
// it reads the run's events.jsonl as BIN's coordinator writes it
// (eventTail) into the killPlan an in-process run uses, so that the
// victim's node is found (instance_placed's node, node_spawned's pid) and
// its kill timed (job_started; with an aligned kill, the victim's
// checkpoints and their total_us) as in this build's runs, and kills it
// with killNode. With o.tail the sinks' files are read as they grow, as
// in an in-process run. extra are arguments of up beyond upArgs(cfg).
// Events that lack what the kill needs are an error naming them; o.verify
// is not used (the run's own up verifies it).
func binaryRecoveryRun(ctx context.Context, bin string, cfg coord.Config, extra []string, o runOpts) (*run, error) {
	args := append(upArgs(cfg), extra...)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, logf, err := upCommand(runCtx, bin, args, cfg.Data, nil)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	if err := cmd.Start(); err != nil {
		return nil, upFailed(bin, args, cfg.Data, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	r := &run{}
	k := newKiller(r, o)
	groups := cfg.Spec().Groups
	var stopTail func()
	if o.tail > 0 {
		tail := newSinkTail(cfg.Data, groups)
		r.output = tail.log
		stop, done := make(chan struct{}), make(chan struct{})
		go tail.run(o.tail, stop, done)
		stopTail = func() { close(stop); <-done }
	}
	evPath := filepath.Join(cfg.Data, "events.jsonl")
	et := newEventTail(evPath)
	feed := func(e events.Event) {
		r.observe(e)
		k.observe(e)
	}
	tick := time.NewTicker(eventPoll) // reading a file another process appends to: nothing to wait on
	var runErr, tailErr error
	for running := true; running; {
		select {
		case runErr = <-exited:
			running = false
		case <-tick.C:
			if tailErr == nil {
				if tailErr = et.poll(feed); tailErr != nil {
					cancel() // the run drains; its events cannot be read
				}
			}
		}
	}
	tick.Stop()
	k.stop()
	if stopTail != nil {
		stopTail()
	}
	if tailErr == nil {
		tailErr = et.finish(feed)
	}
	switch {
	case tailErr != nil:
		return nil, fmt.Errorf("--baseline %s: %w", bin, tailErr)
	case runErr != nil && ctx.Err() == nil:
		return nil, upFailed(bin, args, cfg.Data, runErr)
	}
	if ctx.Err() == nil {
		if err := k.result(); err != nil {
			return nil, fmt.Errorf("--baseline %s: %s: %w", bin, evPath, err)
		}
	}
	if err := r.finishBinary(cfg.Data); err != nil {
		return nil, err
	}
	if g := r.info.Job.Groups; r.output != nil && g != groups {
		// The sinks' lines were sorted into key groups by this build's
		// count: the figures would be wrong, not rough.
		fmt.Fprintf(os.Stderr, "spate bench: %s: its job has %d key groups, this build's %d: its untouched key groups' output is not measured\n", cfg.Data, g, groups)
		r.output = nil
	}
	r.settleKill()
	return r, nil
}

// readEvents calls fn for each event of an events.jsonl file, in order.
func readEvents(path string, fn func(events.Event)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		fn(e)
	}
	return sc.Err()
}

// eventTail reads an events.jsonl as its writer appends to it: each poll
// decodes the lines completed since the last one, in order, and keeps
// the start of a line not yet ended for the next. A file not made yet is
// empty. An eventTail is not safe for concurrent use.
type eventTail struct {
	path    string
	off     int64
	line    int // lines read
	partial []byte
	buf     []byte
	names   events.Names
}

func newEventTail(path string) *eventTail {
	return &eventTail{path: path, buf: make([]byte, 256<<10), names: events.Names{}}
}

// poll calls fn for every event whose line was completed since the last
// poll. A line that is not an event is an error naming it (file:line).
func (t *eventTail) poll(fn func(events.Event)) error {
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	for {
		n, err := f.Read(t.buf)
		t.off += int64(n)
		if err := splitLines(&t.partial, t.buf[:n], func(line []byte) error { return t.decode(line, fn) }); err != nil {
			return err
		}
		if err == io.EOF || n == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// finish reads the rest once the writer is done: the lines since the
// last poll, and a last line not ended.
func (t *eventTail) finish(fn func(events.Event)) error {
	if err := t.poll(fn); err != nil {
		return err
	}
	if len(t.partial) == 0 {
		return nil
	}
	line := t.partial
	t.partial = nil
	return t.decode(line, fn)
}

func (t *eventTail) decode(line []byte, fn func(events.Event)) error {
	t.line++
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	e, err := events.DecodeLine(line, t.names)
	if err != nil {
		return fmt.Errorf("%s:%d: %w", t.path, t.line, err)
	}
	fn(e)
	return nil
}
