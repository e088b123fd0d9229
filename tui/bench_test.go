package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"spate/events"
)

// stream makes an endless realistic event mix from the recordings: the
// events of run-kill and future, re-stamped at rate events per second.
type stream struct {
	src  []events.Event
	i    int
	seq  uint64
	t    time.Time
	step time.Duration
}

func newStream(tb testing.TB, rate int) *stream {
	src := loadEvents(tb, "run-kill.jsonl", "future.jsonl")
	// Leave out the run's end, so the stream stays a running cluster.
	var keep []events.Event
	for _, e := range src {
		if e.Kind != events.RunFinished && e.Kind != events.DrainStarted && e.Kind != events.InstanceDone {
			keep = append(keep, e)
		}
	}
	return &stream{src: keep, t: clock, step: time.Second / time.Duration(rate)}
}

func (s *stream) next(buf []events.Event, n int) []events.Event {
	buf = buf[:0]
	for k := 0; k < n; k++ {
		e := s.src[s.i%len(s.src)]
		s.i++
		s.seq++
		s.t = s.t.Add(s.step)
		e.Seq, e.Time = s.seq, s.t
		buf = append(buf, e)
	}
	return buf
}

// colourModel is a model at 160x48 with full colour, so the benchmark pays
// for styling as a real terminal would.
func colourModel(s *stream) *model {
	m := newModel(Options{Now: func() time.Time { return s.t }})
	r := lipgloss.NewRenderer(nil)
	r.SetColorProfile(termenv.TrueColor)
	m.st = newStyles(r)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	return m
}

// BenchmarkEventsThroughput: one op is one second of a 10,000 events/s
// stream as the program sees it: 20 frames (50 ms) of 500 events, each an
// Update and a View at 160x48 in colour, on every pane in turn. The
// reported %core is the share of one core the dashboard needs for it; the
// budget is 25.
func BenchmarkEventsThroughput(b *testing.B) {
	const rate, frames = 10000, 20
	s := newStream(b, rate)
	m := colourModel(s)
	buf := make([]events.Event, 0, rate/frames)
	// Warm up: fill the histories to their bounds.
	for i := 0; i < 40; i++ {
		m.Update(batchMsg{events: s.next(buf, rate/frames)})
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		m.pane = i % len(panes)
		for f := 0; f < frames; f++ {
			m.Update(batchMsg{events: s.next(buf, rate/frames)})
			_ = m.View()
		}
	}
	perSec := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(100*float64(perSec)/float64(time.Second), "%core")
}

// BenchmarkKeyToEffect: a key press's cost until its effect is on screen,
// with the dashboard loaded as by a 10,000 events/s stream: the Update of
// the key and the View that shows it. In the program, the worst case adds
// one batch's Update and View (the key waits behind at most one) and the
// renderer's frame (1/30 s).
func BenchmarkKeyToEffect(b *testing.B) {
	s := newStream(b, 10000)
	m := colourModel(s)
	m.ctl = &fakeCtl{}
	buf := make([]events.Event, 0, 500)
	for i := 0; i < 40; i++ {
		m.Update(batchMsg{events: s.next(buf, 500)})
	}
	x := keyMsg("x")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Update(x) // the command (the HTTP call) is not run: it is off the UI loop
		if v := m.View(); !strings.Contains(v, "→ kill") {
			b.Fatal("the key press does not show")
		}
	}
}

// BenchmarkFrame: one frame of 500 events (Update and View), the unit the
// key press may wait behind.
func BenchmarkFrame(b *testing.B) {
	s := newStream(b, 10000)
	m := colourModel(s)
	buf := make([]events.Event, 0, 500)
	for i := 0; i < 40; i++ {
		m.Update(batchMsg{events: s.next(buf, 500)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Update(batchMsg{events: s.next(buf, 500)})
		_ = m.View()
	}
}

// BenchmarkPumpPut: the pump's cost per event on the sender's side.
func BenchmarkPumpPut(b *testing.B) {
	p := newPump(0, 1<<30)
	e := events.Event{Kind: events.Throughput}
	for i := 0; i < b.N; i++ {
		p.put(e)
		if i%500 == 499 {
			p.mu.Lock()
			p.buf = p.buf[:0]
			p.mu.Unlock()
		}
	}
}
