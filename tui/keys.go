package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// keyMap is the one keymap: Update matches against it and the help screen
// (?) and the footer are generated from it, so they cannot disagree.
type keyMap struct {
	Quit, ForceQuit  key.Binding
	Help             key.Binding
	NextPane, Prev   key.Binding
	Pane             key.Binding // 1..9 and 0, matched by digit
	Up, Down         key.Binding
	Top, Bottom      key.Binding
	PageUp, PageDown key.Binding
	Enter, Back      key.Binding
	Filter, Command  key.Binding
	Kill, Pause      key.Binding
	Isolate, Heal    key.Binding

	// The transport of spate view (recording set).
	Play                           key.Binding
	StepBack, StepFwd              key.Binding
	SecBack, SecFwd                key.Binding
	PrevMark, NextMark             key.Binding
	NextFault, PrevFault           key.Binding
	NextRecovery, PrevRecovery     key.Binding
	NextRescale, PrevRescale       key.Binding
	NextCheckpoint, PrevCheckpoint key.Binding
	Slower, Faster                 key.Binding
	Start, End                     key.Binding
	Fork                           key.Binding
	recording                      bool

	// The lesson of spate tour (tour set).
	NextStep, PrevStep key.Binding
	tour               bool
}

// keyIs matches k against b.
func keyIs(k tea.KeyMsg, b key.Binding) bool { return key.Matches(k, b) }

func defaultKeys() keyMap {
	return keyMap{
		Quit:           key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit:      key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Help:           key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		NextPane:       key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "pane")),
		Prev:           key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Pane:           key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6", "7", "8", "9", "0"), key.WithHelp("1-9 0", "go to pane")),
		Up:             key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:           key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		Top:            key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "first row")),
		Bottom:         key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "last row")),
		PageUp:         key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown:       key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Enter:          key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		Back:           key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Filter:         key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Command:        key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "command")),
		Kill:           key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "kill")),
		Pause:          key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
		Isolate:        key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "isolate")),
		Heal:           key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "heal")),
		Play:           key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "play")),
		StepBack:       key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "back one event")),
		StepFwd:        key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "step")),
		SecBack:        key.NewBinding(key.WithKeys("shift+left"), key.WithHelp("shift+←", "back one second")),
		SecFwd:         key.NewBinding(key.WithKeys("shift+right"), key.WithHelp("shift+→", "on one second")),
		PrevMark:       key.NewBinding(key.WithKeys("["), key.WithHelp("[", "previous fault, recovery or rescale")),
		NextMark:       key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "jump")),
		NextFault:      key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "next fault")),
		PrevFault:      key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "previous fault")),
		NextRecovery:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "next recovery")),
		PrevRecovery:   key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "previous recovery")),
		NextRescale:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "next rescale")),
		PrevRescale:    key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "previous rescale")),
		NextCheckpoint: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "next checkpoint")),
		PrevCheckpoint: key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "previous checkpoint")),
		Slower:         key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "slower")),
		Faster:         key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
		Start:          key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "start")),
		End:            key.NewBinding(key.WithKeys("G"), key.WithHelp("G", "end")),
		Fork:           key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "what if: fork")),
		NextStep:       key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "next step")),
		PrevStep:       key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "previous step")),
	}
}

// longHelp is what the help screen says of a key, where the footer's word
// is not enough.
var longHelp = map[string]string{
	"ctrl+c": "quit, from anywhere (also while typing)",
	"q":      "quit (types a q while typing a filter or command)",
	"?":      "this help",
	"tab":    "next pane",
	"1-9 0":  "go to pane 1 cluster, 2 dataflow, 3 checkpoints, 4 backup, 5 scaling, 6 tuner, 7 recovery, 8 charts, 9 log, 0 spacetime (the diagram of a loss; from 7, of the one selected)",
	"G":      "last row (the log follows new events again)",
	"enter":  "details of the selected row",
	"esc":    "back; clear the filter; the log follows again",
	"/":      "filter the event log (every word must match)",
	":":      "command line (below)",
	"x":      "kill the selected node (the cluster pane's row)",
	"p":      "pause the selected node, or resume it if paused",
	"i":      "isolate the selected node (partition shape=one)",
	"h":      "heal: end every fault",
}

// viewHelp is longHelp for spate view, where some keys mean more.
var viewHelp = map[string]string{
	"space": "play or pause the recording",
	"→":     "on one event",
	"]":     "next fault, recovery or rescale (not checkpoints: c)",
	"f":     "next fault: a fault begins or a node is lost (F: previous)",
	"r":     "next step of a recovery: placed, restored, caught up (R: previous)",
	"s":     "next step of a rescale: planned, re-routed, done (S: previous)",
	"c":     "next checkpoint (C: previous)",
	"+":     "faster (up to 16x)",
	"-":     "slower (down to 0.25x)",
	"g":     "the start of the recording (home: first row)",
	"G":     "the end of the recording (end: last row)",
	"w":     "what if: fork a simulated run here with a fault (a menu; runs spate sim --fork-at, then opens the forked run)",
}

// helpGroup is one column of the help screen.
type helpGroup struct {
	Title string
	Keys  []key.Binding
}

func (k keyMap) groups() []helpGroup {
	if k.recording {
		top, bottom := k.Top, k.Bottom
		top.SetKeys("home")
		top.SetHelp("home", "first row")
		bottom.SetKeys("end")
		bottom.SetHelp("end", "last row")
		return []helpGroup{
			{"transport (a recording)", []key.Binding{k.Play, k.StepFwd, k.StepBack, k.SecFwd, k.SecBack, k.Faster, k.Slower, k.Start, k.End}},
			{"jump to", []key.Binding{k.NextMark, k.PrevMark, k.NextFault, k.NextRecovery, k.NextRescale, k.NextCheckpoint}},
			{"move", []key.Binding{k.NextPane, k.Prev, k.Pane, k.Up, k.Down, top, bottom, k.PageUp, k.PageDown, k.Enter, k.Back}},
			{"other", []key.Binding{k.Fork, k.Filter, k.Command, k.Help, k.Quit, k.ForceQuit}},
		}
	}
	if k.tour {
		pause := k.Pause
		pause.SetKeys()
		pause.SetHelp(":pause", "pause a node (p is the previous step)")
		return []helpGroup{
			{"the lesson", []key.Binding{k.NextStep, k.PrevStep}},
			{"move", []key.Binding{k.NextPane, k.Prev, k.Pane, k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Enter, k.Back}},
			{"act on the cluster", []key.Binding{k.Kill, pause, k.Isolate, k.Heal, k.Command}},
			{"other", []key.Binding{k.Filter, k.Help, k.Quit, k.ForceQuit}},
		}
	}
	return []helpGroup{
		{"move", []key.Binding{k.NextPane, k.Prev, k.Pane, k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Enter, k.Back}},
		{"act on the cluster", []key.Binding{k.Kill, k.Pause, k.Isolate, k.Heal, k.Command}},
		{"other", []key.Binding{k.Filter, k.Help, k.Quit, k.ForceQuit}},
	}
}

// short is the footer's hint line.
func (k keyMap) short() []key.Binding {
	if k.tour {
		return []key.Binding{k.NextStep, k.PrevStep, k.Help, k.NextPane, k.Enter, k.Kill, k.Command, k.Quit}
	}
	if k.recording {
		step := k.StepFwd
		step.SetHelp("←/→", "step")
		jump := k.NextMark
		jump.SetHelp("[/] f r s c", "jump")
		speed := k.Faster
		speed.SetHelp("+/-", "speed")
		return []key.Binding{k.Play, step, jump, speed, k.Help, k.NextPane, k.Enter, k.Filter, k.Quit}
	}
	return []key.Binding{k.Help, k.NextPane, k.Enter, k.Filter, k.Command, k.Kill, k.Pause, k.Isolate, k.Heal, k.Quit}
}

// commandHelp lists the command line's forms for the help screen.
var commandHelp = []string{
	":kill n2           kill a node (also restart, pause, resume)",
	":partition majority  partition (one, minority, majority, all, a node)",
	":heal              end every fault",
	":scale count 4     rescale an operator",
	":interval count 5s set an operator's checkpoint interval (or auto)",
	":checkpoint        checkpoint now",
	":VERB TARGET k=v   any other action, as spate chaos takes it",
	":q                 quit",
}

// helpText renders the help screen from the keymap.
func (k keyMap) helpText(st styles) []string {
	var lines []string
	for _, g := range k.groups() {
		lines = append(lines, st.title.Render(g.Title))
		for _, b := range g.Keys {
			h := b.Help()
			desc := h.Desc
			if l, ok := longHelp[h.Key]; ok {
				desc = l
			}
			if l, ok := viewHelp[h.Key]; ok && k.recording {
				desc = l
			}
			lines = append(lines, "  "+st.key.Render(pad(h.Key, 10))+" "+desc)
		}
		lines = append(lines, "")
	}
	if k.recording {
		lines = append(lines, st.title.Render("a recording"), "  the actions (x p i h and : commands) are refused: they would change a cluster", "")
		return lines
	}
	lines = append(lines, st.title.Render("commands"))
	for _, c := range commandHelp {
		lines = append(lines, "  "+c)
	}
	return lines
}

// shortHelp renders the footer hints, as many as fit in w.
func (k keyMap) shortHelp(st styles, w int) string {
	var b strings.Builder
	used := 0
	for _, bind := range k.short() {
		h := bind.Help()
		desc := h.Desc
		n := len([]rune(h.Key)) + 1 + len([]rune(desc)) + 2
		if used+n > w {
			break
		}
		b.WriteString(st.key.Render(h.Key) + " " + st.dim.Render(desc) + "  ")
		used += n
	}
	return b.String()
}
