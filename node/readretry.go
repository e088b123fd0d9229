package node

import (
	"errors"
	"time"

	"spate/state"
)

// Reads of checkpoint files (a scrub, a restore, a slice's load) retry
// an error that says nothing of the file itself: a network error of the
// coordinator's store or an object store, an I/O error. Only what the
// file's bytes show (state.ErrCorrupt: a checksum, a length, a header)
// and a file that is not there are answers; taken as damage, a passing
// error made every checkpoint built on the file forgotten.

const (
	readTries      = 6                      // attempts of one read, the first included
	readBackoff    = 50 * time.Millisecond  // the wait after the first failure, doubled after each
	readBackoffMax = 800 * time.Millisecond // the longest wait
)

// retryable reports whether a read's error may pass: it is not about the
// file's content, its name or its absence.
func retryable(err error) bool {
	return err != nil && !errors.Is(err, state.ErrCorrupt) && !errors.Is(err, state.ErrNotFound) &&
		!errors.Is(err, state.ErrBadName) && !errors.Is(err, state.ErrBrokenChain)
}

// readRetry runs read until it succeeds, fails with an error that is an
// answer (not retryable), or has failed readTries times; between
// attempts it waits on sleep (the node's clock), with backoff.
func readRetry(sleep func(time.Duration), read func() error) error {
	wait := readBackoff
	for try := 1; ; try++ {
		err := read()
		if !retryable(err) || try == readTries {
			return err
		}
		sleep(wait)
		wait = min(2*wait, readBackoffMax)
	}
}

// sleep waits d on the node's clock.
func (n *Node) sleep(d time.Duration) { time.Sleep(d) }
