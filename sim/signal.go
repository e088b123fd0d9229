//go:build !wasip1

package sim

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interruptible is a context that an interrupt or SIGTERM cancels.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
