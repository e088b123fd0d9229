package coord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// UpMain is `spate up`; it returns the exit code.
func UpMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := ParseUp(args, stderr)
	if err != nil {
		if !errors.Is(err, ErrUsage) || err.Error() != ErrUsage.Error() {
			fmt.Fprintln(stderr, "spate up:", trimUsage(err))
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = Up(ctx, cfg, Options{Out: stdout})
	if err != nil {
		fmt.Fprintln(stderr, "spate up:", trimUsage(err))
		if errors.Is(err, ErrUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// trimUsage drops the "usage: " marker from an error's text.
func trimUsage(err error) string {
	s := err.Error()
	const p = "usage: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
