package tui

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// ViewOptions configures spate view: the dashboard over a recorded run.
type ViewOptions struct {
	// Events is the recording, a run directory's events.jsonl.
	Events string
	// Speed is the playback speed to start with (0.25 to 16; 0 means 1).
	Speed float64
	// Play starts playing at once instead of paused at the start.
	Play bool
	// In and Out are the terminal; nil means stdin and stdout.
	In  io.Reader
	Out io.Writer
	// Title names the run in the header; empty: the run's own id.
	Title string
	// RunDir is shown in the help screen.
	RunDir string
	// Plain forces the colourless profile, as NO_COLOR does.
	Plain bool
	// Frame is the playback's frame period; 0 means 50 ms.
	Frame time.Duration
}

// View opens opt.Events and shows it in the dashboard until the user
// quits (then nil) or ctx ends. A recording that cannot be read, or a line
// that is not an event, is an error naming FILE:LINE, returned before the
// terminal is taken when it is found while opening, and after it is given
// back when the background fold finds it.
func View(ctx context.Context, opt ViewOptions) error {
	rec, err := openRecording(opt.Events)
	if err != nil {
		return err
	}
	m, err := newViewModel(rec, opt)
	if err != nil {
		return err
	}
	defer rec.close()
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithAltScreen(), tea.WithFPS(30)}
	if opt.In != nil {
		popts = append(popts, tea.WithInput(opt.In))
	}
	if opt.Out != nil {
		popts = append(popts, tea.WithOutput(opt.Out))
	}
	final, err := tea.NewProgram(m, popts...).Run()
	if fm, ok := final.(*model); ok && fm.fork != nil && fm.fork.cancel != nil {
		fm.fork.cancel() // a fork still running ends with the view
	}
	if fm, ok := final.(*model); ok && fm.rp != nil && fm.rp.rec != rec {
		fm.rp.rec.close() // a forked run's
	}
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return err
	}
	if fm, ok := final.(*model); ok && fm.rp.err != nil {
		return fm.rp.err
	}
	return nil
}

// ViewMain is spate view's command line: spate view [--data DIR] [--events
// FILE] [--speed X] [--play] [--plain]. resolve finds the run directory
// from --data (coord.ResolveDataDir: ./spate-data/latest by default). It
// returns the exit code: 0, or 2 for bad flags or a bad recording.
func ViewMain(args []string, stdout, stderr io.Writer, resolve func(string) (string, error)) int {
	return viewMain(args, stdout, stderr, resolve, nil)
}

// viewMain is ViewMain reading the keys from in (nil: stdin).
func viewMain(args []string, stdout, stderr io.Writer, resolve func(string) (string, error), in io.Reader) int {
	fs := flag.NewFlagSet("spate view", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "the run directory (default ./spate-data/latest)")
	file := fs.String("events", "", "the events file (default DIR/events.jsonl)")
	speed := fs.Float64("speed", 1, "playback speed, 0.25 to 16")
	play := fs.Bool("play", false, "start playing at once")
	plain := fs.Bool("plain", false, "no colour (as NO_COLOR)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "spate view: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *speed < speeds[0] || *speed > speeds[len(speeds)-1] {
		fmt.Fprintf(stderr, "spate view: --speed %g: want 0.25 to 16\n", *speed)
		return 2
	}
	path, dir := *file, *data
	if path == "" {
		d, err := resolve(*data)
		if err != nil {
			fmt.Fprintln(stderr, "spate view:", err)
			return 2
		}
		dir, path = d, filepath.Join(d, "events.jsonl")
	}
	err := View(context.Background(), ViewOptions{Events: path, Speed: *speed, Play: *play, RunDir: dir,
		Plain: *plain, Out: stdout, In: in})
	if err != nil {
		fmt.Fprintln(stderr, "spate view:", oneLine(err))
		return 2
	}
	return 0
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// speeds are the playback speeds + and - step through.
var speeds = []float64{0.25, 0.5, 1, 2, 4, 8, 16}

// player is the transport of a recording: where it is, whether it plays,
// how fast. The model's state is always the fold of events [0, pos).
type player struct {
	rec     *recording
	pos     int       // events applied
	at      time.Time // the recording's clock on screen
	playing bool
	speed   int // index into speeds
	frame   time.Duration
	ticking bool // a tick is scheduled
	folded  int  // how far the background fold has come
	done    bool // the background fold is done
	err     error

	faultBar []bool // the position bar's fault marks, for its width
}

// Messages of the transport.
type (
	playTick struct{}
)

func newViewModel(rec *recording, opt ViewOptions) (*model, error) {
	frame := opt.Frame
	if frame <= 0 {
		frame = 50 * time.Millisecond
	}
	p := &player{rec: rec, frame: frame, speed: 2}
	if opt.Speed > 0 {
		for i, s := range speeds {
			if s <= opt.Speed {
				p.speed = i
			}
		}
	}
	p.at = rec.time(0)
	m := newModel(Options{In: opt.In, Out: opt.Out, Title: opt.Title, RunDir: opt.RunDir, Plain: opt.Plain})
	m.rp = p
	m.now = func() time.Time { return p.at }
	m.keys.recording = true
	p.playing = opt.Play
	dir := opt.RunDir
	if dir == "" {
		dir = filepath.Dir(opt.Events)
	}
	m.fork = newForker(dir)
	return m, nil
}

// initView starts the background fold and the ticks.
func (m *model) initView() tea.Cmd {
	rec := m.rp.rec
	start := func() tea.Msg {
		rec.startFold()
		return nil
	}
	m.rp.ticking = true
	return tea.Batch(start, m.tick())
}

func (m *model) tick() tea.Cmd {
	return tea.Tick(m.rp.frame, func(time.Time) tea.Msg { return playTick{} })
}

// onTick advances the playback by one frame, notes how far the background
// fold has come, and keeps ticking while there is something to do.
func (m *model) onTick() tea.Cmd {
	p := m.rp
	p.ticking = false
	p.folded, p.done, p.err = p.rec.progress()
	if p.err != nil {
		m.note(p.err.Error(), true)
		m.flash, m.flashOK = oneLine(p.err), false
		return tea.Quit
	}
	if p.playing {
		at := p.at.Add(time.Duration(float64(p.frame) * speeds[p.speed]))
		n := p.rec.countUpTo(at)
		if n >= p.rec.len() {
			m.seek(p.rec.len())
			p.playing = false
		} else {
			m.seek(n)
			p.at = at
		}
	}
	return m.keepTicking()
}

func (m *model) keepTicking() tea.Cmd {
	p := m.rp
	if p.ticking || (!p.playing && p.done) {
		return nil
	}
	p.ticking = true
	return m.tick()
}

// seek makes the state the fold of events [0, target): forward by folding
// the events in between when they are fewer than a snapshot's distance,
// otherwise from the nearest snapshot: by folding the rest when the
// background fold has made the snapshot at or before target, and by
// skimming from its latest one when it has not (skim.go). Either way the
// state is the one folding every event from the start gives.
func (m *model) seek(target int) {
	p := m.rp
	target = min(max(target, 0), p.rec.len())
	var err error
	switch {
	case target == p.pos:
	case target > p.pos && target-p.pos <= p.rec.snapDistance():
		err = p.rec.fold(m.s, p.pos, target)
		p.pos = target
	default:
		var s *state
		s, err = p.rec.seekState(target)
		if err != nil {
			break
		}
		m.s, p.pos = s, target
		m.logView = nil // the cache is keyed by the log's version, which a seek may repeat
	}
	if err != nil {
		p.err = err
		m.note(err.Error(), true)
		m.flash, m.flashOK = oneLine(err), false
		return
	}
	p.at = p.rec.time(max(p.pos-1, 0))
}

// viewKey handles the transport's keys; ok is false for any other key.
func (m *model) viewKey(k tea.KeyMsg) (tea.Cmd, bool) {
	p, km := m.rp, m.keys
	rec := p.rec
	switch {
	case keyIs(k, km.Play):
		p.playing = !p.playing
		if p.playing && p.pos >= rec.len() {
			m.seek(0)
		}
	case keyIs(k, km.StepFwd):
		p.playing = false
		m.seek(p.pos + 1)
	case keyIs(k, km.StepBack):
		p.playing = false
		m.seek(p.pos - 1)
	case keyIs(k, km.SecFwd):
		p.playing = false
		m.seek(max(rec.countUpTo(p.at.Add(time.Second)), p.pos+1))
	case keyIs(k, km.SecBack):
		p.playing = false
		m.seek(min(rec.countUpTo(p.at.Add(-time.Second)), p.pos-1))
	case keyIs(k, km.NextMark):
		m.jumpTo(jumpNotable, true)
	case keyIs(k, km.PrevMark):
		m.jumpTo(jumpNotable, false)
	case keyIs(k, km.NextFault):
		m.jumpTo(jumpFault, true)
	case keyIs(k, km.PrevFault):
		m.jumpTo(jumpFault, false)
	case keyIs(k, km.NextRecovery):
		m.jumpTo(jumpRecovery, true)
	case keyIs(k, km.PrevRecovery):
		m.jumpTo(jumpRecovery, false)
	case keyIs(k, km.NextRescale):
		m.jumpTo(jumpRescale, true)
	case keyIs(k, km.PrevRescale):
		m.jumpTo(jumpRescale, false)
	case keyIs(k, km.NextCheckpoint):
		m.jumpTo(jumpCheckpoint, true)
	case keyIs(k, km.PrevCheckpoint):
		m.jumpTo(jumpCheckpoint, false)
	case keyIs(k, km.Faster):
		p.speed = min(p.speed+1, len(speeds)-1)
	case keyIs(k, km.Slower):
		p.speed = max(p.speed-1, 0)
	case keyIs(k, km.Start):
		p.playing = false
		m.seek(0)
	case keyIs(k, km.End):
		p.playing = false
		m.seek(rec.len())
	case keyIs(k, km.Fork):
		m.openFork()
	default:
		return nil, false
	}
	return m.keepTicking(), true
}

// jumpTo moves to the next (or previous) event j stops at, and says in
// the footer where it landed or that there is none.
func (m *model) jumpTo(j jump, forward bool) {
	p := m.rp
	p.playing = false
	i, word := p.rec.next(p.pos, j), "later"
	if !forward {
		i, word = p.rec.prev(p.pos, j), "earlier"
	}
	if i < 0 {
		m.flash, m.flashOK = "no "+word+" "+j.what, false
		return
	}
	m.seek(i + 1)
	m.flashMark(i)
}

// flashMark says in the footer which event a jump landed on.
func (m *model) flashMark(i int) {
	if e, err := m.rp.rec.event(i); err == nil {
		m.flash, m.flashOK = "at "+e.Time.Format("15:04:05.000")+" "+string(e.Kind)+": "+e.Text, true
	}
}

// transport is the header's right side: play state, speed, the position
// bar, the time into the run and the event number.
func (m *model) transport(w int) string {
	p := m.rp
	rec := p.rec
	state := "‖"
	if p.playing {
		state = "▶"
	}
	t0 := rec.time(0)
	span := rec.time(rec.len() - 1).Sub(t0)
	pos := fmt.Sprintf("%s/%s", fmtSpan(p.at.Sub(t0)), fmtSpan(span))
	ev := fmt.Sprintf("ev %d/%d", p.pos, rec.len())
	extra := ""
	if !p.done && p.folded < rec.len() && p.folded > 0 {
		extra = fmt.Sprintf(" folded %d%%", 100*p.folded/rec.len())
	}
	head := fmt.Sprintf("%s %s ", state, fmtSpeed(speeds[p.speed]))
	tail := " " + pos + " " + ev + extra
	bw := w - width(head) - width(tail)
	if bw < 6 {
		return fit(head+pos, w)
	}
	bw = min(bw, 40)
	if len(p.faultBar) != bw {
		p.faultBar = rec.faultCells(bw)
	}
	return head + positionBar(p.pos, rec.len(), p.faultBar) + tail
}

// positionBar is a bar of len(faults) cells with a ● at pos of n and a ✗
// where a fault began.
func positionBar(pos, n int, faults []bool) string {
	w := len(faults)
	at := 0
	if n > 0 {
		at = min(pos*(w-1)/n, w-1)
	}
	var b strings.Builder
	for c := 0; c < w; c++ {
		switch {
		case c == at:
			b.WriteRune('●')
		case faults[c]:
			b.WriteRune('✗')
		case c < at:
			b.WriteRune('━')
		default:
			b.WriteRune('─')
		}
	}
	return b.String()
}

func fmtSpan(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	m := int(d / time.Minute)
	s := float64(d%time.Minute) / float64(time.Second)
	return fmt.Sprintf("%d:%04.1f", m, s)
}

func fmtSpeed(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%gx", s)
	}
	return fmt.Sprintf("%.0fx", s)
}
