package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"spate/events"
	"spate/wire"
)

// bin is the spate binary under test, built once in TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "spate-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin = filepath.Join(dir, "spate")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// spate runs the binary to completion and returns its exit code and output.
func spate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("spate %v: %v", args, err)
	}
	return code, stdout.String(), stderr.String()
}

// waitFor polls cond until it holds or the deadline passes; on timeout it
// reports what cond last said.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, s := cond()
		if ok {
			return
		}
		last = s
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s; last saw: %s", timeout, what, last)
}

func runEvents(t *testing.T, dir string) []events.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil
	}
	var out []events.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e events.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

func findEvent(evs []events.Event, kind events.Kind, node string) *events.Event {
	for i := range evs {
		if evs[i].Kind == kind && (node == "" || evs[i].Node == node) {
			return &evs[i]
		}
	}
	return nil
}

// startUp starts `spate up` in the background.
func startUp(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	// A generous failure-detection timeout: on a loaded 2-core machine a
	// live node can miss heartbeats for a second; kills are still seen at
	// once, as the node's connection closes.
	cmd := exec.Command(bin, append([]string{"up", "--headless", "--timeout", "10s"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out
}

// mustVerify fails the test unless `spate verify` passes on the run in dir.
func mustVerify(t *testing.T, dir, when string) {
	t.Helper()
	if code, out, errOut := spate(t, "verify", "--data", dir); code != 0 {
		t.Fatalf("verify %s: exit %d: %s%s", when, code, out, errOut)
	}
}

// runToken reads a run's cluster token.
func runToken(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// coordAddr waits for a run's coordinator address in its run.json.
func coordAddr(t *testing.T, dir string) string {
	t.Helper()
	var addr string
	waitFor(t, 30*time.Second, "run.json", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(dir, "run.json"))
		var ri struct{ Coord string }
		if err != nil || json.Unmarshal(b, &ri) != nil {
			return false, fmt.Sprint(err)
		}
		addr = ri.Coord
		return addr != "", "no coordinator address"
	})
	return addr
}

// startRaw starts the binary with exactly args, in the background.
func startRaw(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestUpRunsAndVerifies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	copyFile := filepath.Join(t.TempDir(), "copy.jsonl")
	code, out, errOut := spate(t, "up", "--headless", "--timeout", "10s", "--nodes", "3", "--duration", "3s", "--rate", "50000", "--data", dir,
		"--events", copyFile)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s\n%s", code, out, errOut)
	}
	// --events FILE: a second copy of the events log, as it always was.
	if a, err := os.ReadFile(copyFile); err != nil || len(a) == 0 {
		t.Errorf("--events %s: %v, %d bytes", copyFile, err, len(a))
	}
	for _, want := range []string{"node_joined", "instance_placed", "job_started", "window_fired", "throughput", "run_finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("headless output has no %s line", want)
		}
	}
	for _, f := range []string{"run.json", "events.jsonl", "output", "token"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
	code, out, errOut = spate(t, "verify", "--data", dir)
	if code != 0 || !strings.HasPrefix(out, "verify: ") || !strings.Contains(out, " 0 missing, 0 duplicated, 0 wrong") {
		t.Fatalf("verify: exit %d: %s%s", code, out, errOut)
	}
	code, out, _ = spate(t, "verify", "--data", dir, "--json")
	var rep struct{ Windows, Missing, Duplicated, Wrong *int }
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Windows == nil || *rep.Windows == 0 || rep.Missing == nil || *rep.Missing != 0 {
		t.Fatalf("verify --json: exit %d: %s", code, out)
	}
}

// TestHeadlessEventsPrintsTheChosenKinds: --events KIND,... prints the
// events of those kinds and nothing else (no summary), and writes no file
// of that name; events.jsonl has every event as ever.
func TestHeadlessEventsPrintsTheChosenKinds(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	cmd := exec.Command(bin, "up", "--headless", "--timeout", "10s", "--nodes", "2", "--duration", "2s", "--rate", "20000",
		"--data", dir, "--events", "node_joined,instance_*")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var kinds []string
	for _, l := range lines {
		if strings.HasPrefix(l, "report: ") { // the report's line, as every finished up writes
			continue
		}
		f := strings.Fields(l)
		if len(f) < 2 || (f[1] != "node_joined" && !strings.HasPrefix(f[1], "instance_")) {
			t.Errorf("a line of another kind: %q", l)
			continue
		}
		kinds = append(kinds, f[1])
	}
	if !slices.Contains(kinds, "node_joined") || !slices.Contains(kinds, "instance_placed") || !slices.Contains(kinds, "instance_done") {
		t.Errorf("printed %q", kinds)
	}
	if _, err := os.Stat(filepath.Join(tmp, "node_joined,instance_*")); err == nil {
		t.Error("--events KINDS wrote a file of that name")
	}
	evs := runEvents(t, dir)
	if findEvent(evs, events.Checkpoint, "") == nil || findEvent(evs, events.RunFinished, "") == nil {
		t.Errorf("events.jsonl lacks events: %d of them", len(evs))
	}
}

func TestKilledWorkerWithoutFaultToleranceIsDetected(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process kill test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out := startUp(t, "--ft", "none", "--nodes", "3", "--duration", "6s", "--rate", "50000", "--data", dir)
	var victim *events.Event
	waitFor(t, 30*time.Second, "a window to fire", func() (bool, string) {
		evs := runEvents(t, dir)
		victim = findEvent(evs, events.NodeJoined, "n3")
		return victim != nil && findEvent(evs, events.WindowFired, "") != nil, fmt.Sprintf("%d events", len(evs))
	})
	pid := victim.Fields.(events.NodeJoinedFields).PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "node_lost for n3", func() (bool, string) {
		return findEvent(runEvents(t, dir), events.NodeLost, "n3") != nil, "no node_lost yet"
	})
	if err := cmd.Wait(); err != nil {
		t.Fatalf("up after a kill: %v\n%s", err, out)
	}
	// Without fault tolerance, verify must report what n3 took with it.
	code, vout, verr := spate(t, "verify", "--data", dir)
	if code != 1 || !strings.Contains(vout, "missing") {
		t.Fatalf("verify after losing n3: exit %d (want 1): %s%s", code, vout, verr)
	}
}

func TestInterruptDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process drain test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out := startUp(t, "--nodes", "2", "--rate", "50000", "--data", dir)
	waitFor(t, 30*time.Second, "a window to fire", func() (bool, string) {
		evs := runEvents(t, dir)
		return findEvent(evs, events.WindowFired, "") != nil, fmt.Sprintf("%d events", len(evs))
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("up after Ctrl-C: %v\n%s", err, out)
	}
	mustVerify(t, dir, "after Ctrl-C")
}

func TestMalformedFrameClosesOneStream(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process wire test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out := startUp(t, "--nodes", "2", "--duration", "5s", "--rate", "20000", "--data", dir)
	var joined *events.Event
	waitFor(t, 30*time.Second, "the job to start", func() (bool, string) {
		evs := runEvents(t, dir)
		joined = findEvent(evs, events.NodeJoined, "n2")
		return joined != nil && findEvent(evs, events.JobStarted, "") != nil, fmt.Sprintf("%d events", len(evs))
	})
	conn, err := net.Dial("tcp", joined.Fields.(events.NodeJoinedFields).Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A peer with the right token that then speaks garbage on the wire.
	if _, err := wire.ClientHandshake(conn, wire.Hello{Token: runToken(t, dir), Role: wire.RolePeer, Node: "n9"}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	mustVerify(t, dir, "after a malformed peer")
}

func TestWrongTokenRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process token test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out := startUp(t, "--nodes", "2", "--duration", "3s", "--rate", "20000", "--data", dir)
	addr := coordAddr(t, dir)
	code, _, errOut := spate(t, "node", "--join", addr, "--token", "wrong")
	if code == 0 || !strings.Contains(errOut, "bad token") {
		t.Fatalf("node with a wrong token: exit %d: %s", code, errOut)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	if findEvent(runEvents(t, dir), events.NodeRefused, "") == nil {
		t.Error("no node_refused event")
	}
	mustVerify(t, dir, "")
}

func TestBadInputIsOneLineExit2(t *testing.T) {
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad.csv")
	if err := os.WriteFile(bad, []byte("t,k\n1,a\n2,b\nxyz,c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"up", "--nodez", "3"}, "nodez"},
		{"bad ft", []string{"up", "--ft", "maybe"}, "--ft"},
		{"bad source", []string{"up", "--source", "gen:nope", "--data", filepath.Join(tmp, "r1")}, "gen:nope"},
		{"missing trace", []string{"up", "--source", "trace:" + filepath.Join(tmp, "none.csv") + "?time=t&key=k", "--data", filepath.Join(tmp, "r2")}, "none.csv"},
		{"malformed trace line", []string{"up", "--source", "trace:" + bad + "?time=t&key=k", "--data", filepath.Join(tmp, "r3")}, "bad.csv:4:"},
		{"bad cost", []string{"up", "--cost", "count=fast"}, "--cost"},
		{"cost of a source", []string{"up", "--cost", "source=1ms"}, "--cost"},
		{"bad backup size", []string{"up", "--backup-mem", "lots"}, "--backup-mem"},
		{"backup size too small", []string{"up", "--backup-mem", "4KiB"}, "--backup-mem"},
		{"bad recovery placement", []string{"up", "--recover-on", "elsewhere"}, "--recover-on"},
		{"bad backup mode", []string{"up", "--backup-full", "drop"}, "--backup-full"},
		{"verify without a run", []string{"verify", "--data", tmp}, "run.json"},
		{"unknown command", []string{"frobnicate"}, "frobnicate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := spate(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errOut)
			}
			first := strings.SplitN(strings.TrimSpace(errOut), "\n", 2)[0]
			if !strings.Contains(first, tc.want) {
				t.Fatalf("first line %q does not name %q", first, tc.want)
			}
			if strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine ") {
				t.Fatalf("panic: %s", errOut)
			}
		})
	}
}

func TestRealTracesRunAndVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("replays real traces")
	}
	load := filepath.Join("..", "shared", "traces", "load")
	if _, err := os.Stat(load); err != nil {
		t.Skip("no ../shared/traces")
	}
	cases := []struct{ name, source string }{
		{"nasa log", "trace:" + filepath.Join(load, "nasa_19950801.tsv.gz") + "?time=time&key=host&value=bytes"},
		{"azure", "trace:" + filepath.Join(load, "AzureLLMInferenceTrace_conv.csv") + "?time=TIMESTAMP&key=ContextTokens&value=GeneratedTokens"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			// A finite trace ends the run by itself.
			code, out, errOut := spate(t, "up", "--headless", "--timeout", "10s", "--nodes", "2", "--rate", "0", "--window", "60s", "--source", tc.source, "--data", dir)
			if code != 0 {
				t.Fatalf("up: exit %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(out, "source_ended") {
				t.Error("no source_ended line")
			}
			mustVerify(t, dir, "")
		})
	}
}

func TestNodeJoinsWithToken(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process join test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out := startUp(t, "--nodes", "2", "--local", "1", "--duration", "3s", "--rate", "20000", "--data", dir)
	addr := coordAddr(t, dir)
	joiner := exec.Command(bin, "node", "--join", addr, "--token", runToken(t, dir))
	var jout bytes.Buffer
	joiner.Stdout, joiner.Stderr = &jout, &jout
	if err := joiner.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	if err := joiner.Wait(); err != nil {
		t.Fatalf("joined node: %v\n%s", err, jout.String())
	}
	if e := findEvent(runEvents(t, dir), events.NodeJoined, "n2"); e == nil {
		t.Fatal("the joining node was not named n2")
	}
	mustVerify(t, dir, "")
}

func TestDamagedRunDirectoryIsAClearError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if code, out, errOut := spate(t, "up", "--headless", "--timeout", "10s", "--nodes", "2", "--duration", "1s", "--interval", "200ms", "--rate", "20000", "--data", dir); code != 0 {
		t.Fatalf("up: exit %d\n%s%s", code, out, errOut)
	}
	manifest := filepath.Join(dir, "checkpoints", "MANIFEST.json")
	good, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		damage func()
		want   string
	}{
		{"manifest of another run", func() {
			os.WriteFile(manifest, []byte(`{"run":"20200101-000000-abcdef","job":"other","instances":{}}`), 0o644)
		}, "belongs to run 20200101-000000-abcdef"},
		{"manifest not JSON", func() { os.WriteFile(manifest, []byte("{"), 0o644) }, "MANIFEST.json"},
		{"run.json missing", func() { os.Rename(filepath.Join(dir, "run.json"), filepath.Join(dir, "run.json.bak")) }, "run.json"},
		{"run.json not JSON", func() { os.WriteFile(filepath.Join(dir, "run.json"), []byte("[1,"), 0o644) }, "run.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.damage()
			code, out, errOut := spate(t, "verify", "--data", dir)
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "panic") {
				t.Fatalf("verify: exit %d (want 2), stderr %q (want %q), stdout %q", code, errOut, tc.want, out)
			}
			// Undo for the next case.
			os.WriteFile(manifest, good, 0o644)
			os.Rename(filepath.Join(dir, "run.json.bak"), filepath.Join(dir, "run.json"))
		})
	}
}
