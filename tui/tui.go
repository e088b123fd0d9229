package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"spate/control"
	"spate/events"
)

// Controller is how the dashboard acts on the cluster: *control.Client
// satisfies it, and so does any in-memory fake. Its methods are called from
// command goroutines, never from Update, so they may block (each call has
// its own timeout).
type Controller interface {
	Act(ctx context.Context, a control.Action) (control.Result, error)
	Status(ctx context.Context) (control.Status, error)
}

// Options configures the dashboard.
type Options struct {
	// Events is the cluster's event stream. The dashboard never blocks it
	// for long: a pump drains it into a bounded buffer (dropping and
	// counting what does not fit) and hands the model one batch per frame.
	// When it is closed the dashboard shows the final state until q.
	Events <-chan events.Event
	// Control acts on the cluster; nil makes the dashboard read-only.
	Control Controller
	// Now is the clock (ages, chart windows); nil means time.Now.
	Now func() time.Time
	// In and Out are the terminal; nil means stdin and stdout.
	In  io.Reader
	Out io.Writer
	// Title names the run in the header (e.g. the run id or a scenario).
	Title string
	// RunDir is the run directory, shown in the header's detail line.
	RunDir string

	// Dropped, if set, reports events lost before they reached Events
	// (events.Sub.Dropped); the status bar adds them to its own drops.
	Dropped func() uint64
	// Plain forces the colourless (Ascii) profile, as NO_COLOR does.
	Plain bool
	// Frame is the pump's batching period; 0 means 50 ms.
	Frame time.Duration
	// BufferLimit bounds the events waiting for the next frame; 0 means
	// 8192 (plus a quarter more for lifecycle events).
	BufferLimit int
	// Lesson, if set, is a guided tour shown beside the dashboard (spate
	// tour): n and p step through it, and its steps' actions go through
	// Control.
	Lesson *Lesson
	// Compare runs the comparison of a lesson's step that has one
	// (Step.Compare) on a cluster of its own; nil: such a step says no
	// second cluster can be started.
	Compare Comparer
}

// actTimeout bounds one control API call.
const actTimeout = 10 * time.Second

// Run shows the dashboard on opt.In/opt.Out until the user quits (q,
// ctrl-c) or ctx ends (then it returns nil). It takes over the terminal
// (alternate screen) and gives it back on return.
func Run(ctx context.Context, opt Options) error {
	m := newModel(opt)
	defer m.pump.stop()
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithAltScreen(), tea.WithFPS(30)}
	if opt.In != nil {
		popts = append(popts, tea.WithInput(opt.In))
	}
	if opt.Out != nil {
		popts = append(popts, tea.WithOutput(opt.Out))
	}
	_, err := tea.NewProgram(m, popts...).Run()
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// New returns the dashboard's model, for tests and for embedding: the
// caller runs it in its own tea.Program. The pump goroutine starts with the
// model's first command (Init) and ends when opt.Events is closed.
func New(opt Options) tea.Model { return newModel(opt) }

func newModel(opt Options) *model {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	frame := opt.Frame
	if frame <= 0 {
		frame = 50 * time.Millisecond
	}
	out := opt.Out
	if out == nil {
		out = io.Discard
	}
	r := lipgloss.NewRenderer(out)
	if opt.Plain {
		r.SetColorProfile(termenv.Ascii)
		r.SetHasDarkBackground(true)
	} else if opt.Out != nil {
		// Ask the terminal now, before the program owns its input.
		r.SetHasDarkBackground(r.HasDarkBackground())
	} else {
		r = lipgloss.DefaultRenderer()
	}
	m := &model{
		opt:   opt,
		ctl:   opt.Control,
		now:   opt.Now,
		keys:  defaultKeys(),
		st:    newStyles(r),
		s:     newState(),
		pump:  newPump(frame, opt.BufferLimit),
		sel:   make([]int, len(panes)),
		input: newInput(),
	}
	m.sel[paneLog] = -1
	if opt.Lesson != nil && len(opt.Lesson.Steps) > 0 {
		m.tour = &tour{l: opt.Lesson, seen: map[events.Kind]uint64{}, done: make([]bool, len(opt.Lesson.Steps)),
			compare: opt.Compare, cmp: map[int]*Comparison{}}
		m.keys.tour = true
	}
	return m
}

// IsTerminal reports whether w is a character device (a terminal): where
// the dashboard can be drawn.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
