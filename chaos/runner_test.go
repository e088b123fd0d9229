package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"spate/control"
	"spate/events"
)

// stepClock moves only when the runner waits: After(d) advances it by d
// and fires at once. So tests never sleep and every time is exact.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// healBackend is a control.Fake that says when the final heal came: the
// fake cluster then finishes.
type healBackend struct {
	*control.Fake
	once   sync.Once
	healed chan struct{}
}

func (h *healBackend) Act(ctx context.Context, a control.Action) (control.Result, error) {
	res, err := h.Fake.Act(ctx, a)
	if a.Verb == "heal" && a.Target == "" && a.Args == nil {
		h.once.Do(func() { close(h.healed) })
	}
	return res, err
}

// fakeCluster is a Start that serves a control.Fake from a fresh run
// directory; its wait returns once the final heal arrived, after writing a
// synthetic events.jsonl and run.json.
type fakeCluster struct {
	t        *testing.T
	fake     *control.Fake
	backend  *healBackend
	args     []string
	noJob    bool // never publish job_started; the cluster ends at once
	noCtl    bool // never write the control file
	startErr error
}

func newFakeCluster(t *testing.T) *fakeCluster {
	f := control.NewFake(control.Status{Run: "fake"})
	return &fakeCluster{t: t, fake: f, backend: &healBackend{Fake: f, healed: make(chan struct{})}}
}

func (fc *fakeCluster) start(ctx context.Context, args []string) (string, func() error, error) {
	t := fc.t
	fc.args = args
	if fc.startErr != nil {
		return "", nil, fc.startErr
	}
	dir := t.TempDir()
	srv, err := control.Listen("127.0.0.1:0", "secret", fc.backend)
	if err != nil {
		return "", nil, err
	}
	t.Cleanup(func() { srv.Close() })
	if !fc.noCtl {
		os.WriteFile(filepath.Join(dir, "token"), []byte("secret\n"), 0o600)
		os.WriteFile(filepath.Join(dir, control.AddrFile), []byte(srv.Addr()+"\n"), 0o644)
	}
	if fc.noJob || fc.noCtl {
		return dir, func() error { return errors.New("node n1 did not join") }, nil
	}
	fc.fake.Publish(events.Event{Seq: 1, Time: t0, Kind: events.RunStarted})
	fc.fake.Publish(events.Event{Seq: 2, Time: t0, Kind: events.JobStarted})
	wait := func() error {
		select {
		case <-fc.backend.healed:
		case <-ctx.Done():
			return ctx.Err()
		}
		writeFakeRun(dir, true)
		return nil
	}
	return dir, wait, nil
}

// writeFakeRun writes a synthetic run.json and events.jsonl into dir: a
// 30-second run with one kill of n2, finished or not (a dead coordinator
// never wrote its end).
func writeFakeRun(dir string, finished bool) {
	ri := map[string]any{"run": "fake", "job_started": t0, "config": map[string]any{"ft": "spate"}}
	evs := []events.Event{
		{Seq: 2, Time: t0, Kind: events.JobStarted},
		{Seq: 3, Time: t0.Add(10 * time.Second), Kind: events.FaultStarted, Fields: events.FaultStartedFields{ID: 1, Verb: "kill", Target: "n2", Nodes: []string{"n2"}}},
		{Seq: 4, Time: t0.Add(10 * time.Second), Kind: events.FaultEnded, Fields: events.FaultEndedFields{ID: 1}},
	}
	if finished {
		ri["finished"], ri["positions"], ri["lag_ms"] = t0.Add(30*time.Second), map[string]uint64{"0": 300000}, [][2]int64{{1000, 100}, {2000, 120}}
		evs = append(evs, events.Event{Seq: 5, Time: t0.Add(30 * time.Second), Kind: events.RunFinished})
	}
	b, _ := json.Marshal(ri)
	os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644)
	var ev bytes.Buffer
	for _, e := range evs {
		json.NewEncoder(&ev).Encode(e)
	}
	os.WriteFile(filepath.Join(dir, "events.jsonl"), ev.Bytes(), 0o644)
}

const runScenario = `name: runner test
cluster: {nodes: 4, duration: 30s, rate: 1000}
schedule:
  - {at: 20s, fault: partition, shape: majority, for: 5s}
  - {at: 5s, fault: link, target: n2, latency: 50ms}
  - {every: 10s, fault: pause, target: one, for: 2s}
  - {at: 10s, fault: kill, target: n2}
checks: [exactly_once, {max_lag: 1s}]
`

func runWith(t *testing.T, fc *fakeCluster, sc *Scenario, v Verify, verr error) (int, string, error, *bytes.Buffer) {
	t.Helper()
	clock := &stepClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	code, dir, err := Run(context.Background(), sc, RunOptions{
		Start:  fc.start,
		Verify: func(string) (Verify, error) { return v, verr },
		Now:    clock.Now,
		After:  clock.After,
		Out:    &out,
	})
	return code, dir, err, &out
}

func TestRunSendsThePlan(t *testing.T) {
	sc := mustParse(t, runScenario)
	fc := newFakeCluster(t)
	fc.fake.Refuse("partition", "no partition today")
	code, dir, err, out := runWith(t, fc, sc, Verify{Windows: 300}, nil)
	if err != nil || code != ExitPass {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if !reflect.DeepEqual(fc.args, sc.Cluster) {
		t.Errorf("started with %q, want %q", fc.args, sc.Cluster)
	}
	var got []string
	for _, a := range fc.fake.Actions() {
		got = append(got, a.String())
	}
	// In time order; the refused partition is not among the done actions;
	// heal last.
	want := []string{
		"link n2 latency=50ms",
		"pause one for=2s", // 10s: the every: entry comes before the kill in the file
		"kill n2",
		"pause one for=2s", // 20s
		"heal",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("actions\n %q\nwant\n %q", got, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictPass || len(r.Actions) != 6 || len(r.Faults) != 1 || r.Windows != 300 {
		t.Errorf("report: verdict %s, %d actions, %d faults", r.Verdict, len(r.Actions), len(r.Faults))
	}
	for _, a := range r.Actions {
		// The fake clock moves only when the runner waits, so each
		// action went out exactly when planned.
		if a.AtMs != a.PlanMs {
			t.Errorf("%s sent at %vms, planned %vms", a.Action, a.AtMs, a.PlanMs)
		}
		if strings.HasPrefix(a.Action, "partition") != !a.OK {
			t.Errorf("%+v", a)
		}
	}
	if last := r.Actions[len(r.Actions)-1]; last.Action != "heal" || last.PlanMs != 30000 {
		t.Errorf("final heal %+v", last)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(out.String(), "refused: no partition today") || !strings.Contains(out.String(), "verdict pass") {
		t.Errorf("progress:\n%s", out)
	}
}

func TestRunCheckFails(t *testing.T) {
	fc := newFakeCluster(t)
	code, dir, err, out := runWith(t, fc, mustParse(t, runScenario), Verify{Windows: 300, Lost: 7}, nil)
	if err != nil || code != ExitFail || dir == "" {
		t.Fatalf("exit %d, %v", code, err)
	}
	if !strings.Contains(out.String(), "FAIL exactly_once: 7 lost") {
		t.Errorf("progress:\n%s", out)
	}
}

func TestRunCannotRun(t *testing.T) {
	sc := mustParse(t, runScenario)
	t.Run("start fails", func(t *testing.T) {
		fc := newFakeCluster(t)
		fc.startErr = errors.New("no binary")
		code, _, err, _ := runWith(t, fc, sc, Verify{}, nil)
		if code != ExitNotRun || err == nil || !strings.Contains(err.Error(), "no binary") {
			t.Errorf("exit %d, %v", code, err)
		}
	})
	t.Run("cluster ends before the job starts", func(t *testing.T) {
		fc := newFakeCluster(t)
		fc.noJob = true
		code, _, err, _ := runWith(t, fc, sc, Verify{}, nil)
		if code != ExitNotRun || err == nil || !strings.Contains(err.Error(), "did not join") {
			t.Errorf("exit %d, %v", code, err)
		}
		if n := len(fc.fake.Actions()); n != 0 {
			t.Errorf("%d actions sent", n)
		}
	})
	t.Run("no control file", func(t *testing.T) {
		fc := newFakeCluster(t)
		fc.noCtl = true
		code, _, err, _ := runWith(t, fc, sc, Verify{}, nil)
		if code != ExitNotRun || err == nil {
			t.Errorf("exit %d, %v", code, err)
		}
	})
	t.Run("verify fails", func(t *testing.T) {
		fc := newFakeCluster(t)
		code, _, err, _ := runWith(t, fc, sc, Verify{}, errors.New("no output"))
		if code != ExitNotRun || err == nil || !strings.Contains(err.Error(), "no output") {
			t.Errorf("exit %d, %v", code, err)
		}
	})
	t.Run("no hooks", func(t *testing.T) {
		if code, _, err := Run(context.Background(), sc, RunOptions{}); code != ExitNotRun || err == nil {
			t.Errorf("exit %d, %v", code, err)
		}
	})
}
