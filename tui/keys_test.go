package tui

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"spate/control"
	"spate/events"
)

// recorder is a Controller that passes every call to a real control.Client
// and reports each action on a channel once the server has answered, so a
// test waits on the channel instead of sleeping.
type recorder struct {
	c    Controller
	acts chan control.Action
}

func (r *recorder) Act(ctx context.Context, a control.Action) (control.Result, error) {
	res, err := r.c.Act(ctx, a)
	r.acts <- a
	return res, err
}

func (r *recorder) Status(ctx context.Context) (control.Status, error) { return r.c.Status(ctx) }

// liveCluster serves a control.Fake over a real control.Listen server on
// loopback and returns a client for it.
func liveCluster(t *testing.T) (*control.Fake, *recorder) {
	t.Helper()
	fake := control.NewFake(control.Status{Run: "test", Job: "windowcount", FT: "spate", Phase: "running",
		Nodes: []control.Node{{ID: "n1", PID: 101, State: "alive"}, {ID: "n2", PID: 102, State: "alive"},
			{ID: "n3", PID: 103, State: "alive"}}})
	srv, err := control.Listen("127.0.0.1:0", "secret", fake)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cl := &control.Client{Base: "http://" + srv.Addr(), Token: "secret", HTTP: &http.Client{}}
	return fake, &recorder{c: cl, acts: make(chan control.Action, 16)}
}

// startOfRun is the recorded run up to the job's start: every node alive.
func startOfRun(tb testing.TB) []events.Event {
	var out []events.Event
	for _, e := range loadEvents(tb, "run-kill.jsonl") {
		if e.Seq <= 18 {
			out = append(out, e)
		}
	}
	return out
}

func waitAction(t *testing.T, rec *recorder) control.Action {
	t.Helper()
	select {
	case a := <-rec.acts:
		return a
	case <-time.After(20 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("no action reached the control API")
	}
	return control.Action{}
}

// TestKeysReachTheControlAPI presses the single keys and types commands in
// a real tea.Program and checks what the fake cluster received through the
// HTTP control API.
func TestKeysReachTheControlAPI(t *testing.T) {
	fake, rec := liveCluster(t)
	evs := make(chan events.Event)
	defer close(evs)
	tm := teatest.NewTestModel(t, New(Options{Events: evs, Control: rec, Now: fixedNow, Plain: true}),
		teatest.WithInitialTermSize(160, 48))
	// Events and keys go through the same message queue, in order.
	tm.Send(eventsMsg(startOfRun(t)))

	steps := []struct {
		name string
		do   func()
		want control.Action
	}{
		{"x kills the selected node", func() { tm.Type("jx") }, control.Action{Verb: "kill", Target: "n2"}},
		{"p pauses it", func() { tm.Type("p") }, control.Action{Verb: "pause", Target: "n2"}},
		{"p resumes it once paused", func() {
			tm.Send(eventsMsg{{Seq: 100, Time: clock, Kind: "node_paused", Node: "n2"}})
			tm.Type("p")
		}, control.Action{Verb: "resume", Target: "n2"}},
		{"i isolates it", func() { tm.Type("i") }, control.Action{Verb: "partition", Target: "n2", Args: map[string]string{"shape": "one"}}},
		{"h heals", func() { tm.Type("h") }, control.Action{Verb: "heal"}},
		{":scale count 4", func() { tm.Type(":scale count 4"); tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) },
			control.Action{Verb: "scale", Target: "count", Args: map[string]string{"n": "4"}}},
		{":interval count 5s", func() { tm.Type(":interval count 5s"); tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) },
			control.Action{Verb: "interval", Target: "count", Args: map[string]string{"interval": "5s"}}},
		{":partition majority", func() { tm.Type(":partition majority"); tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) },
			control.Action{Verb: "partition", Target: "majority"}},
		{":checkpoint", func() { tm.Type(":checkpoint"); tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) },
			control.Action{Verb: "checkpoint"}},
		{"x on the dataflow pane kills the instance's node", func() { tm.Type("2jjx") }, // count#0 on n3
			control.Action{Verb: "kill", Target: "n3"}},
	}
	for _, s := range steps {
		s.do()
		got := waitAction(t, rec)
		if !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: sent %#v, want %#v", s.name, got, s.want)
		}
		acts := fake.Actions()
		if len(acts) == 0 || !reflect.DeepEqual(acts[len(acts)-1], s.want) {
			t.Errorf("%s: the cluster received %v, want %v last", s.name, acts, s.want)
		}
	}

	// A refused action comes back as an error; the log shows it (checked
	// in TestActionResultInLog without a program in between).
	fake.Refuse("kill", "n9: no such node")
	tm.Type(":kill n9")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	if got := waitAction(t, rec); got.Target != "n9" {
		t.Errorf("sent %v, want kill n9", got)
	}
	if n := len(fake.Actions()); n != len(steps) {
		t.Errorf("the cluster recorded %d actions, want %d (a refused one is not done)", n, len(steps))
	}

	tm.Type("q")
	m := tm.FinalModel(t, teatest.WithFinalTimeout(20*time.Second)).(*model)
	log := logText(m)
	for _, want := range []string{"→ kill n2", "→ scale count n=4", "→ kill n9"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

func logText(m *model) string {
	var b strings.Builder
	for _, le := range m.s.log {
		b.WriteString(le.E.Line() + "\n")
	}
	return b.String()
}

// TestQuitFromAnywhere: q quits from the panes, the help and a detail
// screen; ctrl-c quits while typing a filter or a command.
func TestQuitFromAnywhere(t *testing.T) {
	cases := []struct {
		name string
		keys []tea.KeyMsg
	}{
		{"q", []tea.KeyMsg{keyMsg("q")}},
		{"q in help", []tea.KeyMsg{keyMsg("?"), keyMsg("q")}},
		{"q in a detail", []tea.KeyMsg{keyMsg("enter"), keyMsg("q")}},
		{"ctrl-c in a filter", []tea.KeyMsg{keyMsg("/"), keyMsg("q"), keyMsg("ctrl+c")}},
		{"ctrl-c in a command", []tea.KeyMsg{keyMsg(":"), keyMsg("k"), keyMsg("ctrl+c")}},
		{":q", []tea.KeyMsg{keyMsg(":"), keyMsg("q"), keyMsg("enter")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs := make(chan events.Event)
			defer close(evs)
			tm := teatest.NewTestModel(t, New(Options{Events: evs, Now: fixedNow, Plain: true}),
				teatest.WithInitialTermSize(80, 24))
			tm.Send(eventsMsg(startOfRun(t)))
			for _, k := range c.keys {
				tm.Send(k)
			}
			tm.WaitFinished(t, teatest.WithFinalTimeout(20*time.Second))
		})
	}
}

// fakeCtl is an in-memory Controller for model-level tests.
type fakeCtl struct {
	mu   sync.Mutex
	acts []control.Action
	err  error
}

func (f *fakeCtl) Act(_ context.Context, a control.Action) (control.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acts = append(f.acts, a)
	if f.err != nil {
		return control.Result{}, f.err
	}
	return control.Result{OK: true, Text: "done: " + a.String()}, nil
}

func (f *fakeCtl) Status(context.Context) (control.Status, error) { return control.Status{}, nil }

// run executes cmd and every command it leads to that is an action or a
// status call, feeding the messages back to m: a synchronous tea loop.
func run(m *model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			run(m, c)
		}
	case actionMsg, statusMsg:
		_, next := m.Update(msg)
		run(m, next)
	}
}

// TestActionResultInLog: the request shows in the log at once, the result
// (or the refusal) when it comes, and in the footer.
func TestActionResultInLog(t *testing.T) {
	ctl := &fakeCtl{}
	m := newModel(Options{Control: ctl, Now: fixedNow, Plain: true})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(eventsMsg(startOfRun(t)))
	_, cmd := m.Update(keyMsg("x"))
	if !strings.Contains(m.View(), "→ kill n1") {
		t.Errorf("the footer does not show the request at once:\n%s", m.View())
	}
	if !strings.Contains(logText(m), "→ kill n1") {
		t.Errorf("the log does not show the request at once")
	}
	run(m, cmd)
	if !strings.Contains(logText(m), "✓ kill n1: done: kill n1") {
		t.Errorf("the log lacks the result:\n%s", logText(m))
	}
	ctl.err = errTest("n1: already dead")
	_, cmd = m.Update(keyMsg("x"))
	run(m, cmd)
	if !strings.Contains(logText(m), "✗ kill n1: n1: already dead") {
		t.Errorf("the log lacks the refusal:\n%s", logText(m))
	}
	if v := m.View(); !strings.Contains(v, "✗ kill n1") {
		t.Errorf("the footer lacks the refusal:\n%s", v)
	}
	// A bad command line is refused before it reaches the cluster.
	press(m, ":", "s", "c", "a", "l", "e", " ", "x", "enter")
	if len(ctl.acts) != 2 {
		t.Errorf("a bad command reached the cluster: %v", ctl.acts)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

// TestKeysTypedAtOnce: a terminal hands over fast typing as one message of
// several runes; it acts as the keys one by one.
func TestKeysTypedAtOnce(t *testing.T) {
	ctl := &fakeCtl{}
	m := newModel(Options{Control: ctl, Now: fixedNow, Plain: true})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(eventsMsg(startOfRun(t)))
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jx")})
	run(m, cmd)
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(":scale count 4")})
	run(m, cmd)
	_, cmd = m.Update(keyMsg("enter"))
	run(m, cmd)
	want := []control.Action{{Verb: "kill", Target: "n2"}, {Verb: "scale", Target: "count", Args: map[string]string{"n": "4"}}}
	if !reflect.DeepEqual(ctl.acts, want) {
		t.Errorf("actions %v, want %v", ctl.acts, want)
	}
}
