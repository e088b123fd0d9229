package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"spate/control"
	"spate/events"
	"spate/spacetime"
)

// mode is what the keyboard is doing.
type mode int

const (
	modeNormal  mode = iota
	modeFilter       // typing a / filter
	modeCommand      // typing a : command
	modeHelp         // the ? screen
	modeDetail       // enter on a row
	modeFork         // spate view: the menu of faults to fork the run with (w)
	modeForkOut      // spate view: a finished fork's output
)

// model is the one top-level model. Update changes it and returns commands
// for anything slow (control API calls, the next batch of events); it never
// does I/O itself. The panes are plain structs that render strings from it.
type model struct {
	opt  Options
	ctl  Controller
	now  func() time.Time
	keys keyMap
	st   styles
	s    *state
	pump *pump

	w, h    int
	pane    int
	sel     []int // selected row per pane; -1 none (the log follows)
	mode    mode
	input   textinput.Model
	filter  string
	scroll  int // detail and help scroll
	flash   string
	flashOK bool

	dropped uint64 // by the pump
	ended   bool   // the event stream is closed
	acts    int    // actions sent

	rp   *player // spate view: the transport of a recording; nil when live
	tour *tour   // spate tour: the lesson's progress; nil without one
	fork *forker // spate view: forking a simulated run (fork.go); nil when live

	logView   []int // filtered log indexes, cached
	logKey    string
	logLen    uint64
	lastFrame time.Duration

	// The losses for the spacetime pane, cached for a state and a count
	// of events applied (see losses).
	lossesCache []spacetime.Loss
	lossesOf    *state
	lossesAt    uint64
}

// Messages.
type (
	statusMsg struct {
		st  control.Status
		err error
	}
	actionMsg struct {
		n   int
		a   control.Action
		res control.Result
		err error
	}
)

func newInput() textinput.Model {
	ti := textinput.New()
	ti.Prompt = ""
	ti.CharLimit = 256
	ti.Cursor.SetMode(cursor.CursorStatic) // no blink ticks
	return ti
}

// Init starts the pump and asks for a first status snapshot.
func (m *model) Init() tea.Cmd {
	if m.rp != nil {
		return m.initView()
	}
	p, in := m.pump, m.opt.Events
	start := func() tea.Msg {
		go p.run(in)
		return nil
	}
	var first tea.Cmd
	if m.tour != nil {
		first = m.enterStep(0)
	}
	return tea.Batch(start, p.next(nil), m.statusCmd(), first)
}

func (m *model) statusCmd() tea.Cmd {
	ctl := m.ctl
	if ctl == nil {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actTimeout)
		defer cancel()
		st, err := ctl.Status(ctx)
		return statusMsg{st: st, err: err}
	}
}

// act sends a through the control API. The log shows the request at once
// and the result when it comes.
func (m *model) act(a control.Action) tea.Cmd {
	if m.rp != nil {
		text := "this is a recording: " + a.String() + " would change a cluster, and spate view only replays"
		m.note(text, true)
		m.flash, m.flashOK = text, false
		return nil
	}
	if m.ctl == nil {
		m.note("read-only: no control API to "+a.String(), true)
		return nil
	}
	m.acts++
	n := m.acts
	m.note("→ "+a.String(), false)
	m.flash, m.flashOK = "→ "+a.String()+" …", true
	ctl := m.ctl
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actTimeout)
		defer cancel()
		res, err := ctl.Act(ctx, a)
		return actionMsg{n: n, a: a, res: res, err: err}
	}
}

// note adds the dashboard's own line to the log.
func (m *model) note(text string, bad bool) {
	m.s.appendLog(logEntry{Local: true, Bad: bad, E: events.Event{Time: m.now(), Kind: kindNote, Text: text}})
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		return m, nil
	case batchMsg:
		for _, e := range msg.events {
			m.s.apply(e)
			if m.tour != nil {
				m.tour.seen[e.Kind]++
			}
		}
		m.dropped = msg.dropped
		if msg.closed {
			if !m.ended {
				m.ended = true
				m.note("event stream ended; the dashboard shows the final state (q quits)", false)
			}
			return m, nil
		}
		return m, m.pump.next(msg.events)
	case eventsMsg:
		for _, e := range msg {
			m.s.apply(e)
			if m.tour != nil {
				m.tour.seen[e.Kind]++
			}
		}
		return m, nil
	case statusMsg:
		if msg.err != nil {
			m.note("status: "+msg.err.Error(), true)
			return m, nil
		}
		m.s.seed(msg.st)
		return m, nil
	case actionMsg:
		if msg.err != nil {
			m.note(fmt.Sprintf("✗ %s: %v", msg.a, msg.err), true)
			m.flash, m.flashOK = fmt.Sprintf("✗ %s: %v", msg.a, msg.err), false
			if m.tour != nil && m.tour.refused(msg.a) {
				m.flash += " (p then n tries again)"
			}
			return m, nil
		}
		text := msg.res.Text
		if text == "" {
			text = "ok"
		}
		m.note(fmt.Sprintf("✓ %s: %s", msg.a, text), false)
		m.flash, m.flashOK = fmt.Sprintf("✓ %s: %s", msg.a, text), true
		return m, m.statusCmd()
	case tea.KeyMsg:
		return m.key(msg)
	case compareMsg:
		if m.tour != nil {
			return m, m.onComparison(msg)
		}
	case playTick:
		if m.rp != nil {
			return m, m.onTick()
		}
	case forkDone:
		if m.fork != nil {
			return m.onForkDone(msg)
		}
	}
	return m, nil
}

func (m *model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	// A terminal delivers keys typed fast (or by tmux send-keys) as one
	// message of several runes; outside the input line each is a key.
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 && !k.Paste && m.mode != modeFilter && m.mode != modeCommand {
		var cmds []tea.Cmd
		for i, r := range k.Runes {
			if m.mode == modeFilter || m.mode == modeCommand {
				rest := tea.KeyMsg{Type: tea.KeyRunes, Runes: k.Runes[i:]}
				_, cmd := m.inputKey(rest)
				return m, tea.Batch(append(cmds, cmd)...)
			}
			_, cmd := m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: k.Alt})
			cmds = append(cmds, cmd)
		}
		return m, tea.Batch(cmds...)
	}
	if key.Matches(k, m.keys.ForceQuit) {
		return m, tea.Quit
	}
	switch m.mode {
	case modeFilter, modeCommand:
		return m.inputKey(k)
	case modeHelp, modeForkOut: // a page to scroll, any other key closes it
		switch {
		case key.Matches(k, m.keys.Quit):
			return m, tea.Quit
		case key.Matches(k, m.keys.Down):
			m.scroll++
		case key.Matches(k, m.keys.Up):
			m.scroll = max(m.scroll-1, 0)
		default:
			m.mode, m.scroll = modeNormal, 0
		}
		return m, nil
	case modeFork:
		return m, m.forkKey(k)
	case modeDetail:
		switch {
		case key.Matches(k, m.keys.Quit):
			return m, tea.Quit
		case key.Matches(k, m.keys.Back), key.Matches(k, m.keys.Enter):
			m.mode, m.scroll = modeNormal, 0
			return m, nil
		case key.Matches(k, m.keys.Down):
			m.scroll++
			return m, nil
		case key.Matches(k, m.keys.Up):
			m.scroll = max(m.scroll-1, 0)
			return m, nil
		}
		// Actions still work from a detail screen.
	}
	km := m.keys
	if m.rp != nil && m.mode != modeHelp {
		if cmd, ok := m.viewKey(k); ok {
			return m, cmd
		}
	}
	if m.tour != nil && m.mode != modeHelp {
		switch {
		case key.Matches(k, km.NextStep):
			return m, m.enterStep(m.tour.step + 1)
		case key.Matches(k, km.PrevStep):
			return m, m.enterStep(m.tour.step - 1)
		}
	}
	switch {
	case key.Matches(k, km.Quit):
		return m, tea.Quit
	case key.Matches(k, km.Help):
		m.mode, m.scroll = modeHelp, 0
	case key.Matches(k, km.NextPane):
		m.setPane((m.pane + 1) % len(panes))
	case key.Matches(k, km.Prev):
		m.setPane((m.pane + len(panes) - 1) % len(panes))
	case key.Matches(k, km.Pane):
		m.setPane((int(k.Runes[0]-'0') + 9) % 10) // 1..9, then 0
	case key.Matches(k, km.Down):
		m.move(1)
	case key.Matches(k, km.Up):
		m.move(-1)
	case key.Matches(k, km.PageDown):
		m.move(max(m.h-6, 1))
	case key.Matches(k, km.PageUp):
		m.move(-max(m.h-6, 1))
	case key.Matches(k, km.Top):
		m.sel[m.pane] = 0
	case key.Matches(k, km.Bottom):
		if m.pane == paneLog {
			m.sel[m.pane] = -1
		} else {
			m.sel[m.pane] = max(panes[m.pane].rows(m.view(m.pane))-1, 0)
		}
	case key.Matches(k, km.Enter):
		if panes[m.pane].rows(m.view(m.pane)) > 0 {
			if m.sel[m.pane] < 0 {
				m.sel[m.pane] = panes[m.pane].rows(m.view(m.pane)) - 1
			}
			m.mode, m.scroll = modeDetail, 0
		}
	case key.Matches(k, km.Back):
		switch {
		case m.filter != "":
			m.filter = ""
		case m.pane == paneLog:
			m.sel[paneLog] = -1
		}
		m.flash = ""
	case key.Matches(k, km.Filter):
		m.setPane(paneLog)
		m.mode = modeFilter
		m.input.SetValue(m.filter)
		m.input.CursorEnd()
		return m, m.input.Focus()
	case key.Matches(k, km.Command):
		m.mode = modeCommand
		m.input.SetValue("")
		return m, m.input.Focus()
	case key.Matches(k, km.Kill):
		return m, m.nodeAction("kill", nil)
	case key.Matches(k, km.Pause):
		verb := "pause"
		if n := m.selectedNode(); n != "" && m.s.nodes[n] != nil && m.s.nodes[n].State == "paused" {
			verb = "resume"
		}
		return m, m.nodeAction(verb, nil)
	case key.Matches(k, km.Isolate):
		return m, m.nodeAction("partition", map[string]string{"shape": "one"})
	case key.Matches(k, km.Heal):
		return m, m.act(control.Action{Verb: "heal"})
	}
	return m, nil
}

func (m *model) nodeAction(verb string, args map[string]string) tea.Cmd {
	n := m.selectedNode()
	if n == "" {
		m.flash, m.flashOK = verb+": no node selected (pick one in the cluster pane)", false
		return nil
	}
	return m.act(control.Action{Verb: verb, Target: n, Args: args})
}

// selectedNode is the node the single-key actions hit: the row of the
// cluster pane, or the node of the instance selected in the dataflow pane.
func (m *model) selectedNode() string {
	if m.pane == paneDataflow {
		if i := m.sel[paneDataflow]; i >= 0 && i < len(m.s.instOrder) {
			return m.s.insts[m.s.instOrder[i]].Node
		}
	}
	i := m.sel[paneCluster]
	if i < 0 || i >= len(m.s.nodeOrder) {
		return ""
	}
	return m.s.nodeOrder[i]
}

func (m *model) inputKey(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.Type {
	case tea.KeyEsc:
		m.mode = modeNormal
		m.input.Blur()
		return m, nil
	case tea.KeyEnter:
		v := strings.TrimSpace(m.input.Value())
		m.input.Blur()
		was := m.mode
		m.mode = modeNormal
		if was == modeFilter {
			m.filter = v
			m.sel[paneLog] = -1
			return m, nil
		}
		if v == "" {
			return m, nil
		}
		a, err := parseCommand(v)
		if errors.Is(err, errQuit) {
			return m, tea.Quit
		}
		if err != nil {
			m.note(":"+v+": "+err.Error(), true)
			m.flash, m.flashOK = err.Error(), false
			return m, nil
		}
		return m, m.act(a)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	if m.mode == modeFilter {
		m.filter = m.input.Value() // live
	}
	return m, cmd
}

func (m *model) setPane(p int) {
	if p < 0 || p >= len(panes) {
		return
	}
	if m.pane == paneRecovery && p == paneSpacetime {
		// 0 from the recovery pane: the diagram of the recovery selected.
		if i := m.sel[paneRecovery]; i >= 0 && i < len(m.s.recoveries) {
			if j := lossOf(m.losses(), m.s.recoveries[len(m.s.recoveries)-1-i]); j >= 0 {
				m.sel[paneSpacetime] = j
			}
		}
	}
	m.pane = p
	if m.mode == modeDetail {
		m.mode = modeNormal
	}
}

func (m *model) move(d int) {
	n := panes[m.pane].rows(m.view(m.pane))
	if n == 0 {
		return
	}
	cur := m.sel[m.pane]
	if cur < 0 {
		cur = n // the log follows its end
	}
	cur += d
	m.sel[m.pane] = min(max(cur, 0), n-1)
}

// view is the render context of pane p.
func (m *model) view(p int) view {
	now := m.now()
	if e := m.s.ended; !e.IsZero() && now.After(e) {
		now = e // a finished run's panes and charts stop at its end
	}
	v := view{s: m.s, st: m.st, now: now, sel: m.sel[p], filter: m.filter, width: m.w}
	if p == paneSpacetime {
		v.losses = m.losses()
		v.cmp = m.comparedLoss()
	}
	if p == paneLog {
		v.log = m.filteredLog()
		if v.sel >= len(v.log) {
			v.sel = len(v.log) - 1
		}
	} else if n := panes[p].rows(v); v.sel >= n {
		v.sel = n - 1
	}
	return v
}

// filteredLog caches the filter's result until the log or the filter
// changes.
func (m *model) filteredLog() []int {
	n := m.s.logVer
	if m.logView == nil || m.logKey != m.filter || m.logLen != n {
		m.logView = filterLog(m.s, m.filter)
		m.logKey, m.logLen = m.filter, n
	}
	return m.logView
}

// eventsMsg hands the model events directly, bypassing the pump: for
// replays and tests.
type eventsMsg []events.Event
