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

// fakeCoord is one coordinator of a coordCluster: its own control API on
// its own address. Its wait returns when it is killed, or once the final
// heal came (it then writes the finished run).
type fakeCoord struct {
	backend  *healBackend
	addr     string
	killed   chan struct{}
	ended    chan struct{} // closed as its wait returns
	mu       sync.Mutex
	finished bool // its wait has returned
}

func (fc *fakeCoord) Actions() []string {
	var out []string
	for _, a := range fc.backend.Actions() {
		out = append(out, a.String())
	}
	return out
}

func (fc *fakeCoord) hasFinished() bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.finished
}

// coordCluster is the seams of a run whose coordinator the scenario
// kills: Start, KillCoordinator and ResumeCoordinator each record when
// they were called, on the test's clock.
type coordCluster struct {
	t     *testing.T
	clock *stepClock
	dir   string

	mu     sync.Mutex
	coords []*fakeCoord
	kills  []time.Time
	resume []time.Time
	// staleAddr: the dead coordinator's control address was still there
	// when its successor started.
	staleAddr bool
	awaited   int

	resumeErr  error // ResumeCoordinator fails with it
	resumeEnds error // the new coordinator ends at once with it, before its control API is up
	ending     *fakeCoord
}

func newCoordCluster(t *testing.T, clock *stepClock) *coordCluster {
	return &coordCluster{t: t, clock: clock, dir: t.TempDir()}
}

// serve starts one coordinator: a control API, its address in the run
// directory (unless silent), and its wait.
func (cc *coordCluster) serve(ctx context.Context, silent bool, endWith error) (*fakeCoord, func() error) {
	t := cc.t
	f := control.NewFake(control.Status{Run: "fake"})
	fc := &fakeCoord{backend: &healBackend{Fake: f, healed: make(chan struct{})}, killed: make(chan struct{}), ended: make(chan struct{})}
	srv, err := control.Listen("127.0.0.1:0", "secret", fc.backend)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	fc.addr = srv.Addr()
	f.Publish(events.Event{Seq: 1, Time: t0, Kind: events.RunStarted})
	f.Publish(events.Event{Seq: 2, Time: t0, Kind: events.JobStarted})
	if !silent {
		if err := os.WriteFile(filepath.Join(cc.dir, control.AddrFile), []byte(fc.addr+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cc.mu.Lock()
	cc.coords = append(cc.coords, fc)
	cc.mu.Unlock()
	wait := func() error {
		defer func() {
			fc.mu.Lock()
			fc.finished = true
			fc.mu.Unlock()
			close(fc.ended)
		}()
		if endWith != nil {
			return endWith
		}
		select {
		case <-fc.killed:
			return errors.New("signal: killed")
		case <-fc.backend.healed:
			writeFakeRun(cc.dir, true)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fc, wait
}

func (cc *coordCluster) start(ctx context.Context, _ []string) (string, func() error, error) {
	os.WriteFile(filepath.Join(cc.dir, "token"), []byte("secret\n"), 0o600)
	writeFakeRun(cc.dir, false) // run.json is there from the start
	_, wait := cc.serve(ctx, false, nil)
	return cc.dir, wait, nil
}

func (cc *coordCluster) kill() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.kills = append(cc.kills, cc.clock.Now())
	close(cc.coords[len(cc.coords)-1].killed)
	return nil
}

func (cc *coordCluster) resumeCoord(ctx context.Context) (func() error, error) {
	cc.mu.Lock()
	cc.resume = append(cc.resume, cc.clock.Now())
	if _, err := os.Stat(filepath.Join(cc.dir, control.AddrFile)); err == nil {
		cc.staleAddr = true
	}
	cc.mu.Unlock()
	if cc.resumeErr != nil {
		return nil, cc.resumeErr
	}
	fc, wait := cc.serve(ctx, cc.resumeEnds != nil, cc.resumeEnds)
	if cc.resumeEnds != nil {
		cc.mu.Lock()
		cc.ending = fc
		cc.mu.Unlock()
	}
	return wait, nil
}

// after is the test clock's After, but for a new coordinator that ends
// before its control API is up: its process is gone before the runner's
// first poll, so time stands still once it has ended (the runner must
// see the end, not a timeout however fast the fake clock runs).
func (cc *coordCluster) after(d time.Duration) <-chan time.Time {
	cc.mu.Lock()
	fc := cc.ending
	cc.mu.Unlock()
	if fc != nil {
		<-fc.ended
		return nil
	}
	return cc.clock.After(d)
}

func (cc *coordCluster) awaitNodes(context.Context) error {
	cc.mu.Lock()
	cc.awaited++
	cc.mu.Unlock()
	return nil
}

// run runs sc on cc; verify is called (and may fail the test) for Verify.
func (cc *coordCluster) run(sc *Scenario, verify func() Verify) (int, *Report, error, string) {
	cc.t.Helper()
	var out bytes.Buffer
	code, dir, err := Run(context.Background(), sc, RunOptions{
		Start:             cc.start,
		Verify:            func(string) (Verify, error) { return verify(), nil },
		KillCoordinator:   cc.kill,
		ResumeCoordinator: cc.resumeCoord,
		AwaitNodes:        cc.awaitNodes,
		Now:               cc.clock.Now,
		After:             cc.after,
		Out:               &out,
	})
	if err != nil {
		return code, nil, err, out.String()
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "report.json"))
	if rerr != nil {
		cc.t.Fatalf("%v\n%s", rerr, out.String())
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		cc.t.Fatal(err)
	}
	return code, &r, nil, out.String()
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// TestRunKillsAndResumesTheCoordinator: the kill and the resume happen at
// their times, a step due in between is refused, the later steps and the
// heal go to the new coordinator's control API (dialled again at its new
// address, the dead one's removed), and verify waits for the new
// coordinator's end, not the dead one's.
func TestRunKillsAndResumesTheCoordinator(t *testing.T) {
	sc := mustParse(t, `name: coordinator killed and resumed
cluster: {nodes: 3, duration: 20s}
schedule:
  - {at: 3s, fault: link, target: n2, latency: 50ms}
  - {at: 5s, fault: kill, target: coordinator, resume_after: 2s}
  - {at: 6s, fault: pause, target: n1, for: 1s}
  - {at: 10s, fault: kill, target: n2}
checks: [exactly_once]
`)
	clock := newStepClock()
	cc := newCoordCluster(t, clock)
	start := clock.Now() // the job starts at once: the fake publishes job_started first
	var verifiedAfter []bool
	code, r, err, out := cc.run(sc, func() Verify {
		verifiedAfter = []bool{cc.coords[0].hasFinished(), cc.coords[1].hasFinished()}
		return Verify{Windows: 300}
	})
	if err != nil || code != ExitPass {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if want := []time.Time{start.Add(5 * time.Second)}; !reflect.DeepEqual(cc.kills, want) {
		t.Errorf("killed at %v, want %v", cc.kills, want)
	}
	if want := []time.Time{start.Add(7 * time.Second)}; !reflect.DeepEqual(cc.resume, want) {
		t.Errorf("resumed at %v, want %v", cc.resume, want)
	}
	if cc.staleAddr {
		t.Error("the dead coordinator's control address was still in the run directory at the resume")
	}
	if len(cc.coords) != 2 {
		t.Fatalf("%d coordinators, want 2", len(cc.coords))
	}
	if got, want := cc.coords[0].Actions(), []string{"link n2 latency=50ms"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the first coordinator got %q, want %q", got, want)
	}
	if got, want := cc.coords[1].Actions(), []string{"kill n2", "heal"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the new coordinator got %q, want %q", got, want)
	}
	if !reflect.DeepEqual(verifiedAfter, []bool{true, true}) {
		t.Errorf("verified with the coordinators finished %v, want both", verifiedAfter)
	}
	type logged struct {
		at, plan float64
		action   string
		ok       bool
	}
	var got []logged
	for _, a := range r.Actions {
		got = append(got, logged{a.AtMs, a.PlanMs, a.Action, a.OK})
	}
	want := []logged{
		{3000, 3000, "link n2 latency=50ms", true},
		{5000, 5000, "kill coord resume_after=2s", true},
		{6000, 6000, "pause n1 for=1s", false},
		{7000, 7000, "resume coord", true},
		{10000, 10000, "kill n2", true},
		{20000, 20000, "heal", true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("actions\n %+v\nwant\n %+v", got, want)
	}
	if txt := r.Actions[2].Text; !strings.Contains(txt, "no coordinator to send it to: the coordinator was killed at 5.0s; a new one starts at 7.0s") {
		t.Errorf("the refused pause says %q", txt)
	}
	var span *FaultSpan
	for i, f := range r.Faults {
		if f.Target == Coord {
			span = &r.Faults[i]
		}
	}
	if span == nil || span.Verb != "kill" || span.StartMs != 5000 || span.EndMs != 7000 || span.Open {
		t.Errorf("the coordinator's downtime in the report: %+v", span)
	}
	if r.Verdict != VerdictPass {
		t.Errorf("verdict %s", r.Verdict)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "killed") {
			t.Errorf("the kill's own exit is noted as an error: %q", n)
		}
	}
	for _, line := range []string{"5.0s kill coord resume_after=2s: ok: SIGKILL: the coordinator is dead; a new one (spate up --resume) in 2s",
		"7.0s resume coord: ok: a new coordinator (spate up --resume) goes on with the run"} {
		if !strings.Contains(out, line) {
			t.Errorf("progress lacks %q:\n%s", line, out)
		}
	}
}

// TestRunResumesAfterTheSchedule: a resume due after the run's duration
// still comes, and the final heal after it, to the new coordinator.
func TestRunResumesAfterTheSchedule(t *testing.T) {
	sc := mustParse(t, "name: late resume\ncluster: {duration: 10s}\nschedule:\n  - {at: 9s, fault: kill, target: coord, resume_after: 5s}\n")
	clock := newStepClock()
	cc := newCoordCluster(t, clock)
	code, r, err, out := cc.run(sc, func() Verify { return Verify{Windows: 10} })
	if err != nil || code != ExitPass {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	var got []string
	for _, a := range r.Actions {
		got = append(got, a.Action)
	}
	if want := []string{"kill coord resume_after=5s", "resume coord", "heal"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("actions %q, want %q", got, want)
	}
	if heal := r.Actions[2]; heal.AtMs != 14000 || heal.PlanMs != 10000 {
		t.Errorf("the heal: %+v, want sent at 14s (planned 10s)", heal)
	}
	if got := cc.coords[1].Actions(); !reflect.DeepEqual(got, []string{"heal"}) {
		t.Errorf("the new coordinator got %q", got)
	}
}

// TestRunCoordinatorNeverResumed: with no resume_after the run cannot
// finish: the later steps are not sent, the nodes are waited for,
// nothing is verified, every check fails saying why, and a scenario that
// expects it passes.
func TestRunCoordinatorNeverResumed(t *testing.T) {
	sc := mustParse(t, `name: coordinator killed for good
expect: fail
cluster: {duration: 20s}
schedule:
  - {at: 5s, fault: kill, target: coordinator}
  - {at: 8s, fault: link, target: n2, latency: 50ms}
checks: [exactly_once, all_recovered]
`)
	clock := newStepClock()
	cc := newCoordCluster(t, clock)
	code, r, err, out := cc.run(sc, func() Verify {
		t.Error("verify called on a run that did not finish")
		return Verify{}
	})
	if err != nil || code != ExitPass {
		t.Fatalf("exit %d, %v (want 0: the scenario expects to fail)\n%s", code, err, out)
	}
	if len(cc.resume) != 0 || len(cc.coords) != 1 || cc.awaited != 1 {
		t.Errorf("%d resumes, %d coordinators, nodes awaited %d times; want 0, 1, 1", len(cc.resume), len(cc.coords), cc.awaited)
	}
	if got := cc.coords[0].Actions(); len(got) != 0 {
		t.Errorf("sent %q", got)
	}
	if r.Verdict != VerdictFail || len(r.Checks) != 2 {
		t.Fatalf("verdict %s, checks %+v", r.Verdict, r.Checks)
	}
	for _, c := range r.Checks {
		if c.Pass || c.Detail != "not met: the run did not finish: the coordinator was killed at 5.0s and never resumed" {
			t.Errorf("check %+v", c)
		}
	}
	if len(r.Actions) != 1 || !r.Actions[0].OK || !strings.Contains(r.Actions[0].Text, "never resumed") {
		t.Errorf("actions %+v", r.Actions)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"the step after it was not sent", "its output was not verified"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	var span *FaultSpan
	for i := range r.Faults {
		if r.Faults[i].Target == Coord {
			span = &r.Faults[i]
		}
	}
	if span == nil || !span.Open || span.StartMs != 5000 {
		t.Errorf("the coordinator's downtime: %+v", span)
	}
	if !strings.Contains(out, "chaos: verdict fail: the run did not finish (the coordinator was killed at 5.0s and never resumed)") {
		t.Errorf("progress:\n%s", out)
	}
}

// TestRunResumeThatFails: a new coordinator that ends before its control
// API is up, or that cannot start, leaves a run that cannot finish.
func TestRunResumeThatFails(t *testing.T) {
	sc := mustParse(t, "name: x\ncluster: {duration: 20s}\nschedule:\n  - {at: 5s, fault: kill, target: coord, resume_after: 1s}\n  - {at: 9s, fault: kill, target: n1}\n")
	for _, tc := range []struct {
		name           string
		startErr, ends error
		want           string
	}{
		{"ends", nil, errors.New("spate up: the run is --ft none: it cannot resume (exit status 2)"),
			"not met: the run did not finish: the coordinator was killed at 5.0s; its successor, started at 6.0s, ended before its control API was up: spate up: the run is --ft none: it cannot resume (exit status 2)"},
		{"cannot start", errors.New("no binary"), nil,
			"not met: the run did not finish: the coordinator was killed at 5.0s; its successor could not start at 6.0s: no binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := newCoordCluster(t, newStepClock())
			cc.resumeErr, cc.resumeEnds = tc.startErr, tc.ends
			code, r, err, out := cc.run(sc, func() Verify {
				t.Error("verify called on a run that did not finish")
				return Verify{}
			})
			if err != nil || code != ExitFail {
				t.Fatalf("exit %d, %v\n%s", code, err, out)
			}
			if len(r.Checks) != 1 || r.Checks[0].Detail != tc.want {
				t.Errorf("checks %+v\nwant detail %q", r.Checks, tc.want)
			}
			if n := len(r.Actions); n != 2 || r.Actions[1].Action != "resume coord" || r.Actions[1].OK {
				t.Errorf("actions %+v", r.Actions)
			}
		})
	}
}

// TestRunRefusesAKillOfTheCoordinatorWithoutItsSeams: before anything
// starts.
func TestRunRefusesAKillOfTheCoordinatorWithoutItsSeams(t *testing.T) {
	sc := mustParse(t, "name: x\ncluster: {duration: 20s}\nschedule:\n  - {at: 5s, fault: kill, target: coord, resume_after: 1s}\n")
	started := false
	start := func(context.Context, []string) (string, func() error, error) {
		started = true
		return "", nil, errors.New("started")
	}
	verify := func(string) (Verify, error) { return Verify{}, nil }
	for _, tc := range []struct {
		name string
		opt  RunOptions
		want string
	}{
		{"no kill", RunOptions{Start: start, Verify: verify}, "RunOptions needs KillCoordinator"},
		{"no resume", RunOptions{Start: start, Verify: verify, KillCoordinator: func() error { return nil }}, "RunOptions needs ResumeCoordinator"},
	} {
		code, _, err := Run(context.Background(), sc, tc.opt)
		if code != ExitNotRun || err == nil || !strings.Contains(err.Error(), tc.want) || started {
			t.Errorf("%s: exit %d, %v, started %v", tc.name, code, err, started)
		}
	}
}

// TestDriveRefusesToKillItsOwnCoordinator: `spate up --script` runs the
// schedule inside the coordinator; the kill is refused, the rest sent.
func TestDriveRefusesToKillItsOwnCoordinator(t *testing.T) {
	sc := mustParse(t, "name: x\ncluster: {duration: 20s}\nschedule:\n  - {at: 5s, fault: kill, target: coord, resume_after: 1s}\n  - {at: 6s, fault: kill, target: n1}\n")
	fc := newFakeCluster(t)
	dir, wait, err := fc.start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	clock := newStepClock()
	logs, err := Drive(context.Background(), dir, sc, done, RunOptions{Now: clock.Now, After: clock.After})
	<-done // the fake cluster writes its run into dir once healed: before the test's cleanup removes dir
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 3 || logs[0].OK || !strings.Contains(logs[0].Text, "only spate chaos run can kill it") || !logs[1].OK || logs[2].Action != "heal" {
		t.Errorf("logs %+v", logs)
	}
}
