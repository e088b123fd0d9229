package coord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"spate/chaos"
	"spate/control"
	"spate/events"
	"spate/node"
	"spate/wire"
)

// memProc is an in-process node: the in-memory twin of a node process.
type memProc struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (p *memProc) Pid() int    { return os.Getpid() }
func (p *memProc) Wait() error { <-p.done; return p.err }
func (p *memProc) Kill() error { p.cancel(); return nil }
func (p *memProc) Signal(s os.Signal) error {
	if s == syscall.SIGKILL {
		return p.Kill()
	}
	return fmt.Errorf("signal %v: an in-process node cannot be paused", s)
}

// memCluster runs nodes as goroutines on an in-memory network.
type memCluster struct {
	mem   *wire.Mem
	mu    sync.Mutex
	procs map[string]*memProc
}

func newMemCluster() *memCluster {
	return &memCluster{mem: wire.NewMem(), procs: map[string]*memProc{}}
}

func (m *memCluster) spawn(name, addr, token, logPath string) (Process, error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &memProc{cancel: cancel, done: make(chan struct{})}
	cfg := node.DefaultConfig()
	cfg.Name, cfg.Coord, cfg.Token, cfg.Transport, cfg.Listen = name, addr, token, m.mem, ""
	go func() {
		defer close(p.done)
		p.err = node.Run(ctx, cfg)
	}()
	m.mu.Lock()
	m.procs[name] = p
	m.mu.Unlock()
	return p, nil
}

func (m *memCluster) kill(name string) {
	m.mu.Lock()
	p := m.procs[name]
	m.mu.Unlock()
	p.Kill()
}

func testConfig(t *testing.T) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Nodes, cfg.Local = 3, 3
	cfg.Source = "gen:constant"
	cfg.Rate = 20000
	cfg.Keys = 500
	cfg.Duration = 1500 * time.Millisecond
	cfg.Window = 100 * time.Millisecond
	cfg.Listen = ":0"
	cfg.Timeout = 10 * time.Second // a loaded test machine can starve a live node for a second
	cfg.Data = filepath.Join(t.TempDir(), "run")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func readEvents(t *testing.T, dir string) []events.Event {
	t.Helper()
	evs, _, err := chaos.ReadEvents(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatalf("events.jsonl: %v", err)
	}
	return evs
}

func hasEvent(evs []events.Event, kind events.Kind, substr string) bool {
	for _, e := range evs {
		if e.Kind == kind && strings.Contains(e.Text, substr) {
			return true
		}
	}
	return false
}

func TestInMemoryClusterRunsAndVerifies(t *testing.T) {
	mc := newMemCluster()
	cfg := testConfig(t)
	dir, err := Up(context.Background(), cfg, Options{Transport: mc.mem, Spawn: mc.spawn})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Windows == 0 {
		dumpEvents(t, dir)
		t.Fatalf("%s %+v", rep, rep.Diffs)
	}
	evs := readEvents(t, dir)
	for _, k := range []events.Kind{events.NodeJoined, events.InstancePlaced, events.JobStarted, events.DrainStarted, events.RunFinished} {
		if !hasEvent(evs, k, "") {
			t.Errorf("no %s event", k)
		}
	}
	ri, err := ReadRunInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ri.Complete || len(ri.Positions) != 2 {
		dumpEvents(t, dir)
		t.Fatalf("run.json positions %v complete %v", ri.Positions, ri.Complete)
	}
}

func TestWrongTokenIsRefusedAndChangesNothing(t *testing.T) {
	mc := newMemCluster()
	cfg := testConfig(t)
	intruder := make(chan error, 1)
	spawn := func(name, addr, token, logPath string) (Process, error) {
		if name == "n1" {
			go func() {
				conn, err := mc.mem.Dial(context.Background(), addr)
				if err != nil {
					intruder <- err
					return
				}
				defer conn.Close()
				// The join as a node makes it (wire/SPEC.md, "Connection
				// handshake"), with a token that is not the run's.
				_, err = wire.JoinClient(conn, wire.Hello{Role: wire.RoleNode, Node: "n9"}, "not-the-token",
					func() ([]byte, error) { return nil, errors.New("no request: the proof failed first") }, 5*time.Second)
				intruder <- err
			}()
		}
		return mc.spawn(name, addr, token, logPath)
	}
	dir, err := Up(context.Background(), cfg, Options{Transport: mc.mem, Spawn: spawn})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-intruder; err == nil || !strings.Contains(err.Error(), "bad token") {
		t.Fatalf("intruder join: %v, want it refused for a bad token", err)
	}
	if !hasEvent(readEvents(t, dir), events.NodeRefused, "bad token") {
		t.Error("no node_refused event naming the bad token")
	}
	rep, err := VerifyRun(dir)
	if err != nil || !rep.OK() {
		dumpEvents(t, dir)
		t.Fatalf("verify after the intrusion: %v %v", rep, err)
	}
}

func TestKilledNodeWithoutFaultToleranceLosesItsWindows(t *testing.T) {
	cfg := testConfig(t)
	cfg.FT = "none"
	cfg.Duration = 3 * time.Second
	dir := killAfter(t, cfg, "n3", events.WindowFired)
	if !hasEvent(readEvents(t, dir), events.NodeLost, "n3") {
		t.Fatal("no node_lost event for n3")
	}
	// Without recovery, verify must notice what is missing.
	rep, err := VerifyRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatalf("verify passed although n3's instances were lost: %s", rep)
	}
	// The kill can cut a sink's last write short: that is lost output,
	// not bad input.
	files, _ := filepath.Glob(filepath.Join(dir, "output", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no output files")
	}
	f, err := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"op":"count","ke`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	torn, err := VerifyRun(dir)
	if err != nil {
		t.Fatalf("verify refused a torn last line: %v", err)
	}
	if torn.Torn != 1 || torn.Missing != rep.Missing || torn.Wrong != rep.Wrong || torn.Duplicated != rep.Duplicated {
		t.Fatalf("with a torn last line: %+v, want %+v and one torn file", torn, rep)
	}
}

// killAfter runs a cluster and kills node victim once an event of kind
// after has been emitted; it returns the run directory.
func killAfter(t *testing.T, cfg Config, victim string, after events.Kind) string {
	t.Helper()
	mc := newMemCluster()
	return killAfterWith(t, cfg, Options{Transport: mc.mem, Spawn: mc.spawn}, mc, victim, after)
}

func TestFaultToleranceRecoversAKilledNode(t *testing.T) {
	for _, ft := range []string{"spate", "global"} {
		t.Run(ft, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.FT = ft
			cfg.Duration = 4 * time.Second
			cfg.Interval = "300ms"
			dir := killAfter(t, cfg, "n3", events.Checkpoint)
			evs := readEvents(t, dir)
			if !hasEvent(evs, events.NodeLost, "n3") || !hasEvent(evs, events.RecoveryRestored, "") {
				dumpEvents(t, dir)
				t.Fatal("no loss and restore events")
			}
			rep, err := VerifyRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.Windows == 0 {
				dumpEvents(t, dir)
				t.Fatalf("%s %+v", rep, rep.Diffs)
			}
		})
	}
}

// dumpEvents logs a run's events: what a failed test saw.
func dumpEvents(t *testing.T, dir string) {
	t.Helper()
	for _, e := range readEvents(t, dir) {
		t.Log(e.Line())
	}
}

// TestBackupPastItsLimit runs the job with upstream backups far smaller
// than what two checkpoint intervals of count's output need: with
// --backup-full block the instances pause their input (and say so) until
// trims make room, with spill they spill to disk; either way every result
// is exactly once.
func TestBackupPastItsLimit(t *testing.T) {
	for _, mode := range []string{"block", "spill"} {
		// On virtual time: the sources read at the rate asked whatever the
		// machine's load (on a loaded machine the backup did not pass its
		// limit before the drain, and the test failed).
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig(t)
				// Trims free what precedes the previous complete checkpoint,
				// so nothing is trimmed before the second checkpoint: at 3 s
				// intervals a backup holds the whole run's output until the
				// drain, several MiB even at a fraction of the rate.
				cfg.Keys, cfg.Rate, cfg.Duration = 50000, 80000, 5*time.Second
				cfg.Interval = "3s"
				cfg.BackupMem, cfg.BackupFull = 1<<20, mode
				mc := newMemCluster()
				// No control server: its listener, on a real socket, would
				// keep the bubble's clock from moving.
				dir, err := Up(context.Background(), cfg, Options{Transport: mc.mem, Spawn: mc.spawn, Control: func(control.Backend) {}})
				if err != nil {
					t.Fatal(err)
				}
				evs := readEvents(t, dir)
				want := map[string]string{"block": "backup_full", "spill": "backup_spill"}[mode]
				if !hasEvent(evs, events.Kind(want), "") {
					dumpEvents(t, dir)
					t.Fatalf("no %s event with a 1 MiB backup limit", want)
				}
				if mode == "block" && hasEvent(evs, "backup_spill", "") {
					t.Error("a backup spilled although --backup-full is block")
				}
				rep, err := VerifyRun(dir)
				if err != nil || !rep.OK() || rep.Windows == 0 {
					dumpEvents(t, dir)
					t.Fatalf("verify: %v %+v %v", rep, rep.Diffs, err)
				}
			})
		})
	}
}

// TestHealTargetLiftsOnlyItsFaults: `heal n2` lifts the faults on n2 and
// leaves the others; `heal` lifts the rest.
func TestHealTargetLiftsOnlyItsFaults(t *testing.T) {
	mc := newMemCluster()
	cfg := testConfig(t)
	cfg.Duration = 0
	backends := make(chan control.Backend, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Up(ctx, cfg, Options{Transport: mc.mem, Spawn: mc.spawn, Control: func(b control.Backend) { backends <- b }})
		done <- err
	}()
	b := <-backends
	t.Cleanup(func() { cancel(); <-done })
	act := func(a control.Action) control.Result {
		t.Helper()
		r, err := b.Act(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		return r
	}
	waitFor(t, func() error {
		if st, err := b.Status(ctx); err != nil || st.Phase != "running" {
			return fmt.Errorf("phase %q (%v)", st.Phase, err)
		}
		return nil
	})
	act(control.Action{Verb: "link", Target: "n1", Args: map[string]string{"latency": "5ms"}})
	act(control.Action{Verb: "link", Target: "n2", Args: map[string]string{"latency": "5ms"}})
	if r := act(control.Action{Verb: "heal", Target: "n2"}); !strings.Contains(r.Text, "healed 1 faults on n2") {
		t.Fatalf("heal n2: %q, want one fault lifted on n2", r.Text)
	}
	if r := act(control.Action{Verb: "heal"}); !strings.Contains(r.Text, "healed 1 faults") {
		t.Fatalf("heal: %q, want the fault on n1 lifted", r.Text)
	}
}

// waitFor polls cond until it returns nil, for at most a minute, and
// fails with the last thing it said.
func waitFor(t *testing.T, cond func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err = cond(); err == nil {
			return
		}
	}
	t.Fatalf("gave up waiting: %v", err)
}
