package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"spate/chaos"
	"spate/coord"
	"spate/events"
)

// TestMain lets the test binary stand in for the processes `spate chaos
// run` starts when a scenario kills the coordinator (fakeProcess).
func TestMain(m *testing.M) {
	if rec := os.Getenv("SPATE_CLI_FAKE"); rec != "" {
		fakeProcess(rec)
	}
	os.Exit(m.Run())
}

// fakeProcess is a coordinator or a node of the tests below: it appends
// its arguments to the file rec, then lives until SIGTERM (which it
// writes down) or SIGKILL. With SPATE_CLI_FAKE_FAIL it fails at once, as
// a coordinator that cannot resume would.
func fakeProcess(rec string) {
	f, err := os.OpenFile(rec, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(3)
	}
	fmt.Fprintln(f, strings.Join(os.Args[1:], " "))
	if msg := os.Getenv("SPATE_CLI_FAKE_FAIL"); msg != "" {
		fmt.Fprintln(os.Stderr, "some output")
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(2)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	select {
	case <-sig:
		fmt.Fprintln(f, "SIGTERM")
	case <-time.After(2 * time.Minute): // a leaked process goes away
	}
	f.Close()
	os.Exit(0)
}

// waitLines polls the file rec until it has n lines.
func waitLines(t *testing.T, rec string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var lines []string
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(rec)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(b) > 0 && len(lines) >= n {
			return lines
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: %d lines after 30s, want %d: %q", rec, len(lines), n, lines)
	return nil
}

// waitEnd waits (generously) for a child's wait to return.
func waitEnd(t *testing.T, what string, wait func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not end", what)
		return nil
	}
}

func fakeChildren(t *testing.T, rec string) *coordChildren {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SPATE_CLI_FAKE", rec)
	dir := filepath.Join(t.TempDir(), "run")
	sc, err := chaos.Parse("k.yaml", []byte("name: k\ncluster: {nodes: 3, duration: 10s, coord-timeout: 5s}\nschedule:\n  - {at: 2s, fault: kill, target: coord, resume_after: 1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cc, err := newCoordChildren(dir, sc, &out)
	if err != nil {
		t.Fatal(err)
	}
	cc.exe = exe
	if cc.coordTimeout != 5*time.Second || !strings.Contains(out.String(), "runs as a process of its own, in "+dir) {
		t.Errorf("coord-timeout %v; said %q", cc.coordTimeout, out.String())
	}
	return cc
}

// TestCoordinatorChildKilledAndResumed: the first coordinator is `spate
// up --headless CLUSTER... --data DIR`, the kill is a SIGKILL to it and
// returns once it is dead, the resume is `spate up --headless --resume
// DIR`, and cancelling the run's context (a Ctrl-C) stops that one with
// SIGTERM, so that it drains its nodes.
func TestCoordinatorChildKilledAndResumed(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec")
	cc := fakeChildren(t, rec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, wait, err := cc.start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dir != cc.dir || !filepath.IsAbs(dir) {
		t.Errorf("run directory %q, want %q (absolute)", dir, cc.dir)
	}
	lines := waitLines(t, rec, 1)
	if want := "up --headless --nodes=3 --duration=10s --coord-timeout=5s --data " + dir; lines[0] != want {
		t.Errorf("first coordinator: %q\nwant %q", lines[0], want)
	}
	if err := cc.kill(); err != nil {
		t.Fatal(err)
	}
	// kill returns once it is dead: its wait has returned by now.
	select {
	case <-cc.cur.done:
	default:
		t.Fatal("kill returned before the coordinator was dead")
	}
	if err := wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the killed coordinator's end: %v", err)
	}
	if err := cc.kill(); err == nil || !strings.Contains(err.Error(), "ended already") {
		t.Errorf("a second kill: %v", err)
	}
	rwait, err := cc.resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lines = waitLines(t, rec, 2)
	if want := "up --headless --resume " + dir; lines[1] != want {
		t.Errorf("new coordinator: %q, want %q", lines[1], want)
	}
	cancel()
	if err := waitEnd(t, "the resumed coordinator", rwait); err != nil {
		t.Errorf("stopped by SIGTERM, it ended with %v", err)
	}
	if lines := waitLines(t, rec, 3); lines[2] != "SIGTERM" {
		t.Errorf("the resumed coordinator was not stopped by SIGTERM: %q", lines)
	}
}

// TestCoordinatorChildThatFailsSaysWhy: a coordinator's exit error ends
// with the last line it wrote to stderr.
func TestCoordinatorChildThatFailsSaysWhy(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec")
	cc := fakeChildren(t, rec)
	t.Setenv("SPATE_CLI_FAKE_FAIL", "spate up: the run is --ft none: it cannot resume")
	wait, err := cc.resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = waitEnd(t, "the failing coordinator", wait)
	if err == nil || err.Error() != "spate up: the run is --ft none: it cannot resume (exit status 2)" {
		t.Errorf("its end: %v", err)
	}
}

// TestNodesLeftByADeadCoordinator: the run's node processes are found
// from its node_spawned events, only while /proc shows them as its nodes;
// awaitNodes returns once they are gone, and cleanup kills those left.
func TestNodesLeftByADeadCoordinator(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	rec := filepath.Join(t.TempDir(), "rec")
	cc := fakeChildren(t, rec)
	if err := os.MkdirAll(cc.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const addr = "127.0.0.1:4242"
	node := func(name, coord string) *exec.Cmd {
		cmd := exec.Command(cc.exe, "node", "--name", name, "--coord", coord)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	n1, n2 := node("n1", addr), node("n2", addr)
	other := node("n3", "127.0.0.1:9") // another run's node
	waitLines(t, rec, 3)
	if err := os.WriteFile(filepath.Join(cc.dir, "run.json"), []byte(`{"run":"r","coord":"`+addr+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var ev bytes.Buffer
	for i, n := range []struct {
		name string
		pid  int
	}{{"n1", n1.Process.Pid}, {"n2", n2.Process.Pid}, {"n3", other.Process.Pid}, {"n4", os.Getpid()}} {
		json.NewEncoder(&ev).Encode(events.Event{Seq: uint64(i + 1), Kind: events.NodeSpawned, Node: n.name, Fields: events.NodeSpawnedFields{PID: n.pid}})
	}
	if err := os.WriteFile(filepath.Join(cc.dir, "events.jsonl"), ev.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got := nodeNames(coord.LiveNodes(cc.dir))
	if want := fmt.Sprintf("n1 (pid %d), n2 (pid %d)", n1.Process.Pid, n2.Process.Pid); got != want {
		t.Fatalf("the run's nodes: %q, want %q", got, want)
	}

	// n1 exits on its own (as after --coord-timeout): awaitNodes still
	// waits for n2; cleanup kills it.
	_ = n1.Process.Signal(syscall.SIGTERM)
	_ = n1.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	awaited := make(chan error, 1)
	go func() { awaited <- cc.awaitNodes(ctx) }()
	cancel()
	if err := <-awaited; err != context.Canceled {
		t.Errorf("awaitNodes with n2 alive, cancelled: %v", err)
	}
	cc.cur = &coordChild{done: make(chan struct{})}
	close(cc.cur.done)
	cc.killed = true
	var out bytes.Buffer
	cc.cleanup(&out)
	if err := waitEnd(t, "n2", n2.Wait); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("n2 after cleanup: %v", err)
	}
	if !strings.Contains(out.String(), "killed n2 (pid") {
		t.Errorf("cleanup said %q", out.String())
	}
	if err := cc.awaitNodes(context.Background()); err != nil {
		t.Errorf("awaitNodes with every node gone: %v", err)
	}
	if dead, known := coord.ProcDead(other.Process.Pid); dead || !known {
		t.Error("another run's node was touched")
	}
}

func TestLastLineKeepsTheLastLine(t *testing.T) {
	var l lastLine
	fmt.Fprint(&l, "first\nsecond\n\n  \n")
	if got := l.String(); got != "second" {
		t.Errorf("%q", got)
	}
	fmt.Fprint(&l, "third, cut sh")
	if got := l.String(); got != "third, cut sh" {
		t.Errorf("%q", got)
	}
	l.Write(bytes.Repeat([]byte("x"), 5000))
	if got := l.String(); len(got) != maxLine {
		t.Errorf("%d bytes kept", len(got))
	}
}

// TestChaosRunRefusesADurationThatDropsSteps: --set duration=15s on the
// teaching demo (30 s, steps at 17 s and 24 s) names each step it drops,
// one line a step, and exits 2 without starting a cluster.
func TestChaosRunRefusesADurationThatDropsSteps(t *testing.T) {
	code, out, errOut := spate("chaos", "run", "../examples/teaching.yaml", "--set", "duration=15s", "--data", filepath.Join(t.TempDir(), "run"))
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{"dropped: partition", "at 17s", "dropped: pause", "at 24s", "--allow-drop"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("no %q in\n%s", want, errOut)
		}
	}
	if n := strings.Count(errOut, "dropped: "); n != 2 {
		t.Errorf("%d dropped lines, want 2:\n%s", n, errOut)
	}
	if strings.Contains(out, "steps over") {
		t.Errorf("the run started:\n%s", out)
	}
}
