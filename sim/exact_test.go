//go:build !wasip1

package sim

import (
	"context"
	"flag"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestExactReplayIsAFunctionOfTheSeed runs seeds of the exact mode twice,
// the second time with another GOMAXPROCS and the machine loaded by busy
// goroutines, and compares the hashes of their event logs.
func TestExactReplayIsAFunctionOfTheSeed(t *testing.T) {
	long(t, "builds the guest and runs six seeds under wazero")
	ctx := context.Background()
	host, err := newExactHost(ctx, flag.NewFlagSet("sim", flag.ContinueOnError), io.Discard, true)
	if err != nil {
		t.Fatal(err)
	}
	defer host.close(ctx)
	cfg := DefaultConfig()
	cfg.Wide = true // as spate sim runs it
	seeds := []uint64{7, 33, 1001}
	first := map[uint64]string{}
	root := t.TempDir()
	for _, seed := range seeds {
		r := host.run(ctx, seed, cfg, Dir(root+"/a", seed))
		if r.Err != "" || r.Hash == "" {
			t.Fatalf("seed %d: %s (hash %q)", seed, r.Verdict(), r.Hash)
		}
		first[seed] = r.Hash
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			x := 0
			for !stop.Load() {
				x++
			}
			_ = x
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for _, seed := range seeds {
		r := host.run(ctx, seed, cfg, Dir(root+"/b", seed))
		if r.Hash != first[seed] {
			t.Errorf("seed %d: the event log's sha256 was %s, then %s loaded and at GOMAXPROCS 4", seed, first[seed], r.Hash)
		} else {
			t.Logf("seed %d: sha256 %s twice: %s", seed, r.Hash, r.Verdict())
		}
	}
}
