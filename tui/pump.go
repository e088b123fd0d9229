package tui

import (
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"spate/events"
)

// pump carries events from the cluster's channel to the model without ever
// blocking the sender for long and without one tea.Msg per event. A
// goroutine drains the channel into a bounded buffer; the model asks for
// the buffer with next(), which waits for at least one event and then for
// the rest of the frame, and hands everything over as one batchMsg. So at
// 10,000 events/s the program sees about 1000/frame messages per second,
// not 10,000.
//
// The buffer holds at most limit frequent events (throughput, checkpoints,
// trims, metrics, windows: the next one supersedes them) plus a reserve of
// limit/4 for lifecycle events (nodes, recoveries, faults, rescales), which
// the dashboard must not lose. What does not fit is dropped and counted.
//
// Lock order: mu only. Safe for concurrent use: run is one goroutine, next
// is called by one outstanding command at a time.
type pump struct {
	frame time.Duration
	limit int

	mu      sync.Mutex
	buf     []events.Event
	spare   []events.Event // the previous batch, handed back for reuse
	dropped uint64
	closed  bool

	wake     chan struct{} // cap 1: there is something to take
	stopOnce sync.Once
	stopped  chan struct{}
	last     time.Time // when the last batch left; only next touches it
}

// batchMsg is one frame's worth of events.
type batchMsg struct {
	events  []events.Event
	dropped uint64 // dropped by the pump so far (a running total)
	closed  bool   // the stream has ended; no more batches
}

func newPump(frame time.Duration, limit int) *pump {
	if limit <= 0 {
		limit = 8192
	}
	return &pump{frame: frame, limit: limit, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// lifecycle kinds are kept even when the buffer is full of frequent ones.
func lifecycle(k events.Kind) bool {
	switch k {
	case events.Throughput, events.Checkpoint, events.WindowFired, events.Trim, events.Metrics, events.Replay, events.Interval, events.FrameError:
		return false
	}
	return true
}

// run drains in until it closes or stop is called.
func (p *pump) run(in <-chan events.Event) {
	if in == nil {
		p.finish()
		return
	}
	for {
		select {
		case e, ok := <-in:
			if !ok {
				p.finish()
				return
			}
			p.put(e)
		case <-p.stopped:
			return
		}
	}
}

func (p *pump) put(e events.Event) {
	p.mu.Lock()
	n := len(p.buf)
	if n >= p.limit+p.limit/4 || (n >= p.limit && !lifecycle(e.Kind)) {
		p.dropped++
		p.mu.Unlock()
		return
	}
	p.buf = append(p.buf, e)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pump) finish() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// stop ends run; a next waiting for events returns nil.
func (p *pump) stop() { p.stopOnce.Do(func() { close(p.stopped) }) }

// next is the command that delivers the next batch. recycled is the
// previous batch's slice, which the model no longer needs.
func (p *pump) next(recycled []events.Event) tea.Cmd {
	return func() tea.Msg {
		if recycled != nil {
			p.mu.Lock()
			p.spare = recycled[:0]
			p.mu.Unlock()
		}
		select {
		case <-p.wake:
		case <-p.stopped:
			return nil
		}
		if wait := p.frame - time.Since(p.last); wait > 0 && !p.last.IsZero() {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.stopped:
				t.Stop()
				return nil
			}
		}
		p.mu.Lock()
		msg := batchMsg{events: p.buf, dropped: p.dropped, closed: p.closed}
		p.buf, p.spare = p.spare, nil
		p.mu.Unlock()
		p.last = time.Now()
		return msg
	}
}
