package control

import (
	"context"
	"fmt"
	"sync"

	"spate/events"
)

// Fake is an in-memory Backend for tests: it serves a fixed Status,
// records every action, and replays and forwards the events it is given.
// Safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	st      Status
	acts    []Action
	refuse  map[string]string // verb -> reason
	past    []events.Event
	subs    map[int]chan events.Event
	nextSub int
}

// NewFake returns a fake serving st.
func NewFake(st Status) *Fake {
	return &Fake{st: st, subs: map[int]chan events.Event{}, refuse: map[string]string{}}
}

// Refuse makes every action with this verb fail with reason.
func (f *Fake) Refuse(verb, reason string) {
	f.mu.Lock()
	f.refuse[verb] = reason
	f.mu.Unlock()
}

// Actions returns the actions received so far.
func (f *Fake) Actions() []Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Action(nil), f.acts...)
}

// Publish adds e to the history and sends it to live subscribers.
func (f *Fake) Publish(e events.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.past = append(f.past, e)
	f.st.Seq = e.Seq
	for _, c := range f.subs {
		select {
		case c <- e:
		default:
		}
	}
}

// Status implements Backend.
func (f *Fake) Status(context.Context) (Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, nil
}

// Act implements Backend.
func (f *Fake) Act(_ context.Context, a Action) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if why, ok := f.refuse[a.Verb]; ok {
		return Result{Text: why}, nil
	}
	f.acts = append(f.acts, a)
	return Result{OK: true, Text: fmt.Sprintf("done: %s", a)}, nil
}

// Events implements Backend.
func (f *Fake) Events(after uint64) ([]events.Event, <-chan events.Event, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var past []events.Event
	for _, e := range f.past {
		if e.Seq > after {
			past = append(past, e)
		}
	}
	c := make(chan events.Event, 1024)
	id := f.nextSub
	f.nextSub++
	f.subs[id] = c
	return past, c, func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}
}
