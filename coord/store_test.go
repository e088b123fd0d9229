package coord

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spate/events"
	"spate/state"
	"spate/stores/weedtest"
)

func TestMain(m *testing.M) { os.Exit(weedtest.Main(m)) }

// plainFiles lists the files under dir whose names end in suffix.
func plainFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestCoordinatorStoreRecoversAKilledNode runs every node on the
// coordinator store (--store coord): the coordinator's checkpoint store
// is in memory, so a checkpoint can only get there through the store
// streams, and a sink's output only as segments. A node is killed after
// a checkpoint, recovered from what the coordinator kept, and the output
// is exactly once.
func TestCoordinatorStoreRecoversAKilledNode(t *testing.T) {
	cfg := testConfig(t)
	cfg.Store = "coord"
	cfg.Duration = 4 * time.Second
	cfg.Interval = "300ms"
	mem := state.NewMemStore()
	mc := newMemCluster()
	dir := killAfterWith(t, cfg, Options{Transport: mc.mem, Spawn: mc.spawn, Store: mem}, mc, "n3", events.Checkpoint)
	evs := readEvents(t, dir)
	if !hasEvent(evs, events.NodeLost, "n3") || !hasEvent(evs, events.RecoveryRestored, "") {
		dumpEvents(t, dir)
		t.Fatal("no loss and restore events")
	}
	rep, err := VerifyRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Windows == 0 {
		dumpEvents(t, dir)
		t.Fatalf("%s %+v", rep, rep.Diffs)
	}
	ckpts, _ := mem.List("")
	if mem.Puts() == 0 || len(ckpts) == 0 {
		t.Fatal("no checkpoint reached the coordinator's store")
	}
	if f := plainFiles(t, filepath.Join(dir, "checkpoints"), ".ckpt"); len(f) > 0 {
		t.Fatalf("a node wrote checkpoint files into the run directory itself: %q", f)
	}
	if f := plainFiles(t, filepath.Join(dir, "output"), ".jsonl"); len(f) > 0 {
		t.Fatalf("a sink wrote output files into the run directory itself: %q", f)
	}
	segs := plainFiles(t, filepath.Join(dir, "output"), "")
	if len(segs) < 2 { // at least a segment of each sink, and the manifest
		t.Fatalf("output holds %q", segs)
	}
}

// killAfterWith is killAfter with the options given.
func killAfterWith(t *testing.T, cfg Config, opt Options, mc *memCluster, victim string, after events.Kind) string {
	t.Helper()
	killed := make(chan struct{})
	once := false
	opt.Observe = func(e events.Event) {
		if !once && e.Kind == after {
			once = true
			mc.kill(victim)
			close(killed)
		}
	}
	dir, err := Up(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-killed:
	default:
		dumpEvents(t, dir)
		t.Fatalf("no %s event before the end of the run: the kill never happened", after)
	}
	return dir
}

// TestObjectStoreRecoversAKilledNode is the same run on an S3-compatible
// object store (SeaweedFS, when weed is on PATH): no checkpoint and no
// output in the run directory, exactly once all the same, and verify
// reads the output from the object store.
func TestObjectStoreRecoversAKilledNode(t *testing.T) {
	ep := weedtest.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", weedtest.Key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", weedtest.Secret)
	cfg := testConfig(t)
	cfg.Store = "s3://spate-test/e2e?endpoint=" + ep
	cfg.Duration = 4 * time.Second
	cfg.Interval = "300ms"
	mc := newMemCluster()
	dir := killAfterWith(t, cfg, Options{Transport: mc.mem, Spawn: mc.spawn}, mc, "n3", events.Checkpoint)
	rep, err := VerifyRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Windows == 0 {
		dumpEvents(t, dir)
		t.Fatalf("%s %+v", rep, rep.Diffs)
	}
	if f := plainFiles(t, filepath.Join(dir, "checkpoints"), ".ckpt"); len(f) > 0 {
		t.Fatalf("checkpoint files in the run directory: %q", f)
	}
	if f := plainFiles(t, filepath.Join(dir, "output"), ""); len(f) > 0 {
		t.Fatalf("output in the run directory: %q", f)
	}
	st, err := OpenOutput(dir)
	if err != nil {
		t.Fatal(err)
	}
	names, err := st.List("")
	if err != nil || len(names) < 2 {
		t.Fatalf("the object store's output: %q, %v", names, err)
	}
}

func TestStoreFlagErrors(t *testing.T) {
	for _, tc := range []struct{ flag, says string }{
		{"nfs://x", `--store "nfs://x": want dir, coord or s3://`},
		{"s3://?endpoint=h:1", "no bucket"},
		{"s3://runs?endpoint=h:1&password=x", `unknown parameter "password"`},
	} {
		_, err := ParseUp([]string{"--store", tc.flag}, nil)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("up --store %s: %v; want one usage line saying %q", tc.flag, err, tc.says)
		}
	}

	// Missing credentials and an endpoint that does not answer fail
	// before any node starts, naming --store.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name, key, says string
	}{
		{"no credentials", "", "no credentials: set AWS_ACCESS_KEY_ID"},
		{"unreachable", "k", "does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"} {
				t.Setenv(k, "")
			}
			if tc.key != "" {
				t.Setenv("AWS_ACCESS_KEY_ID", tc.key)
				t.Setenv("AWS_SECRET_ACCESS_KEY", tc.key)
			}
			cfg := testConfig(t)
			cfg.Store = "s3://runs?endpoint=" + dead
			mc := newMemCluster()
			spawned := false
			_, err := Up(context.Background(), cfg, Options{Transport: mc.mem, Spawn: func(name, addr, token, log string) (Process, error) {
				spawned = true
				return mc.spawn(name, addr, token, log)
			}})
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--store s3://runs") || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Up = %v; want one usage line naming --store and saying %q", err, tc.says)
			}
			if spawned {
				t.Fatal("a node was spawned before the store was checked")
			}
		})
	}
}

// --flush sets the flush period in whole milliseconds, from 1ms to 1s; a
// mistake is one usage line naming the flag.
func TestFlushFlag(t *testing.T) {
	c, err := ParseUp([]string{"--flush", "50ms"}, nil)
	if err != nil || c.FlushMs != 50 {
		t.Fatalf("up --flush 50ms: FlushMs %d, %v; want 50", c.FlushMs, err)
	}
	if c, _ := ParseUp(nil, nil); c.FlushMs != DefaultConfig().FlushMs {
		t.Fatalf("up without --flush: FlushMs %d, want the default %d", c.FlushMs, DefaultConfig().FlushMs)
	}
	for _, v := range []string{"0s", "1500us", "2s", "-5ms", "soon"} {
		_, err := ParseUp([]string{"--flush", v}, nil)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "flush") || strings.Contains(err.Error(), "\n") {
			t.Errorf("up --flush %s: %v; want one usage line naming --flush", v, err)
		}
	}
}
