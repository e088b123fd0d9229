package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"spate/coord"
	"spate/events"
)

// binaryRun runs cfg with another spate binary (a build of another
// commit), as `BIN up --headless` in a process of its own, so that a
// change is measured beside the code it changes, in one benchmark and on
// the same machine. env is added to the process's environment. What the
// run observed is read back from its run directory: run.json, the events
// and the report that its own up writes, with the verdict of its
// verification.
func binaryRun(ctx context.Context, bin string, cfg coord.Config, env []string) (*run, error) {
	args := []string{"up", "--headless", "--quiet",
		"--nodes", strconv.Itoa(cfg.Nodes), "--ft", cfg.FT, "--interval", cfg.Interval,
		"--rate", strconv.FormatFloat(cfg.Rate, 'f', -1, 64), "--duration", cfg.Duration.String(),
		"--keys", strconv.Itoa(cfg.Keys), "--heartbeat", cfg.Heartbeat.String(), "--timeout", cfg.Timeout.String(),
		"--seed", strconv.FormatInt(cfg.Seed, 10), "--source", cfg.Source, "--data", cfg.Data}
	logPath := cfg.Data + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	// Ctrl-C drains the run, as it does one in this process.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%s %s: %w (its output is in %s)", bin, strings.Join(args, " "), err, logPath)
	}
	ri, n, rps, err := finishedRun(cfg.Data)
	if err != nil {
		return nil, err
	}
	r := &run{info: ri, rps: rps}
	if n > 0 {
		r.cpuPerRec = ri.NodeCPU * 1e6 / float64(n)
	}
	if err := readEvents(filepath.Join(cfg.Data, "events.jsonl"), r.observe); err != nil {
		return nil, err
	}
	var rep struct {
		Verdict                 string
		Lost, Duplicated, Wrong int64
	}
	b, err := os.ReadFile(filepath.Join(cfg.Data, "report.json"))
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the report of its verification: %w", cfg.Data, err)
	}
	r.verified = rep.Verdict == "pass" && rep.Lost == 0 && rep.Duplicated == 0 && rep.Wrong == 0
	if !r.verified {
		fmt.Fprintf(os.Stderr, "spate bench: %s did not verify: verdict %s, %d lost, %d duplicated, %d wrong\n", cfg.Data, rep.Verdict, rep.Lost, rep.Duplicated, rep.Wrong)
	}
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
