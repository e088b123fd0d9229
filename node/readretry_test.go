package node

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"spate/state"
)

// flakyStore fails its first fails reads (Get and Open) with err, as a
// store over a network does while the network is down, then reads.
type flakyStore struct {
	state.Store
	mu    sync.Mutex
	fails int
	err   error
	reads int
}

func (s *flakyStore) fail() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.fails > 0 {
		s.fails--
		return s.err
	}
	return nil
}

func (s *flakyStore) Get(name string) ([]byte, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.Store.Get(name)
}

func (s *flakyStore) Open(name string) (io.ReadCloser, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.Store.Open(name)
}

var errNetwork = errors.New("store: read tcp 127.0.0.1:41234: connection reset by peer")

// readRetry retries what says nothing of the file, with a backoff that
// doubles up to its bound, and returns at once what is an answer.
func TestReadRetryRetriesOnlyWhatIsNotAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		fails int
		tries int
		ok    bool
	}{
		{"a network error that passes", errNetwork, 3, 4, true},
		{"a network error that stays", errNetwork, 100, readTries, false},
		{"a checksum mismatch", fmt.Errorf("checkpoint x: %w: checksum mismatch", state.ErrCorrupt), 100, 1, false},
		{"a file that is not there", state.ErrNotFound, 100, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waits []time.Duration
			tries, fails := 0, tc.fails
			err := readRetry(func(d time.Duration) { waits = append(waits, d) }, func() error {
				tries++
				if fails > 0 {
					fails--
					return tc.err
				}
				return nil
			})
			if tries != tc.tries || (err == nil) != tc.ok {
				t.Fatalf("%d tries, error %v; want %d tries, ok %v", tries, err, tc.tries, tc.ok)
			}
			if len(waits) != tries-1 {
				t.Fatalf("%d waits for %d tries", len(waits), tries)
			}
			for i, w := range waits {
				if want := min(readBackoff<<i, readBackoffMax); w != want {
					t.Fatalf("wait %d: %v, want %v", i, w, want)
				}
			}
		})
	}
}

// A scrub whose read fails with a network error is retried and never
// taken as damage: the delta is taken once the read passes, and while it
// does not, the checkpoint fails and nothing is reported damaged (before,
// any error of the read made every checkpoint built on the file
// forgotten). A restore's reads are retried alike.
func TestANetworkErrorOfAReadIsNotDamage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails int
		taken bool
	}{
		{"passing", 2, true},
		{"lasting", 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newChain(t, 300, nil)
				in := f.instance(t)
				if _, err := in.restore(f.files); err != nil {
					t.Fatal(err)
				}
				r := f.drive(t, in)
				r.feed(0, 100, 42_000)
				flaky := &flakyStore{Store: f.n.store.Store, fails: tc.fails, err: errNetwork}
				f.n.store.Store = flaky
				pc := in.capture(2, false)
				err := in.persist(pc)
				in.persisted(pc, err)
				if pc.damaged != "" {
					t.Fatalf("a network error taken as damage of %s", pc.damaged)
				}
				if tc.taken != (err == nil) || errors.Is(err, errChainBroken) {
					t.Fatalf("persist: %v; want taken %v, never a broken chain", err, tc.taken)
				}
				if tc.taken && flaky.reads < tc.fails+1 {
					t.Fatalf("%d reads for %d failures: not retried", flaky.reads, tc.fails)
				}
				if !tc.taken && flaky.reads != readTries {
					t.Fatalf("%d reads of a lasting failure, want %d (bounded)", flaky.reads, readTries)
				}
				if !tc.taken {
					return
				}
				flaky.fails = 2
				again := f.instance(t)
				if _, err := again.restore(f.files); err != nil {
					t.Fatalf("a restore through a passing network error: %v", err)
				}
			})
		})
	}
}
