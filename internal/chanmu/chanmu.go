// Package chanmu is a mutex made of a channel. A goroutine waiting for it
// waits on a channel, which testing/synctest counts as durably blocked: a
// sync.Mutex held across a write that waits for the virtual clock stops
// that clock for ever, since its waiters are not durably blocked. Use it
// where a lock is held across a blocking write.
package chanmu

import "sync"

// Mutex is a mutual exclusion lock. The zero value is unlocked; it must
// not be copied after first use.
type Mutex struct {
	once sync.Once // held only while the channel is made
	ch   chan struct{}
}

func (m *Mutex) init() { m.once.Do(func() { m.ch = make(chan struct{}, 1) }) }

// Lock locks m, waiting until it is free.
func (m *Mutex) Lock() { m.init(); m.ch <- struct{}{} }

// Unlock unlocks m; it must be locked.
func (m *Mutex) Unlock() { m.init(); <-m.ch }
