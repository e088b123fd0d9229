package sim

import "context"

// interruptible is a plain context in the exact mode's guest: a wasip1
// process receives no signals, and os/signal's loop would poll for ever,
// so the scheduler would never be idle and the virtual clock never jump.
func interruptible() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
