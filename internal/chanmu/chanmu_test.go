package chanmu

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestMutexExcludes(t *testing.T) {
	var m Mutex
	var wg sync.WaitGroup
	n := 0
	for range 50 {
		wg.Go(func() {
			for range 100 {
				m.Lock()
				n++
				m.Unlock()
			}
		})
	}
	wg.Wait()
	if n != 5000 {
		t.Fatalf("n = %d, want 5000", n)
	}
}

// TestAWaiterIsDurablyBlocked: a goroutine waiting for the mutex while
// its holder sleeps lets the virtual clock advance (with a sync.Mutex the
// bubble would never be idle, and the sleep would never end).
func TestAWaiterIsDurablyBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m Mutex
		m.Lock()
		done := make(chan struct{})
		go func() {
			m.Lock()
			m.Unlock()
			close(done)
		}()
		time.Sleep(time.Hour) // on the virtual clock: at once
		m.Unlock()
		<-done
	})
}
