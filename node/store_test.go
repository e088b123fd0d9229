package node

import (
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/yamux"

	"spate/job"
	"spate/state"
	"spate/stores"
	"spate/wire"
)

func TestNodePicksItsStores(t *testing.T) {
	visible := t.TempDir()
	if err := os.WriteFile(filepath.Join(visible, "token"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(t.TempDir(), "elsewhere") // another host's run directory: not here
	other := t.TempDir()                              // a run directory of another run
	if err := os.WriteFile(filepath.Join(other, "token"), []byte("not-tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	sess, err := yamux.Client(a, wire.YamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, store, dir string
		want             string // dir, coord, or an error's text
	}{
		{"auto, visible", "", visible, "dir"},
		{"auto, not visible", "", hidden, "coord"},
		{"auto, another run's directory", "", other, "coord"},
		{"coord, visible", "coord", visible, "coord"},
		{"dir, visible", "dir", visible, "dir"},
		{"dir, not visible", "dir", hidden, "--store dir: node n4 cannot see the run directory"},
		{"malformed", "nfs", visible, `--store "nfs"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{cfg: Config{Token: "tok"}, name: "n4", coordSess: sess, log: log.New(io.Discard, "", 0)}
			ckpt, out, _, err := n.openStores(&wire.Deploy{Run: "r1", DataDir: tc.dir, Store: tc.store})
			var got string
			switch {
			case err != nil:
				got = err.Error()
			case ckpt == nil:
				got = "no checkpoint store"
			default:
				_, isDir := ckpt.(*state.DirStore)
				_, isClient := ckpt.(*stores.Client)
				_, outClient := out.(*stores.Client)
				switch {
				case isDir && out == nil:
					got = "dir"
				case isClient && outClient:
					got = "coord"
				default:
					got = "mixed"
				}
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("openStores = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := os.Stat(hidden); err == nil {
		t.Fatal("a node that cannot see the run directory made one")
	}
}

func TestSinkWritesSegmentsThroughAStore(t *testing.T) {
	spec := job.WindowCount(map[string]int{"source": 1, "count": 1, "rollup": 1, "sink": 1}, 1000, 0)
	all := []job.Range{{Lo: 0, Hi: job.KeyGroup(spec.Groups)}}
	d := &wire.Deploy{Job: spec, FT: "spate", DataDir: t.TempDir(), Instances: []wire.Placement{
		{ID: "source#0", Op: "source", Index: 0, Node: "n1", Gen: 1, Partitions: []int{0}},
		{ID: "count#0", Op: "count", Index: 0, Node: "n1", Gen: 1, Ranges: all},
		{ID: "rollup#0", Op: "rollup", Index: 0, Node: "n1", Gen: 1, Ranges: all},
		{ID: "sink#0", Op: "sink", Index: 0, Node: "n1", Gen: 3, Ranges: all},
	}}
	mem := state.NewMemStore()
	in, err := newInstance(&Node{out: mem}, d, &d.Instances[3])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := in.file.f.(*stores.Log); !ok {
		t.Fatalf("a sink with an output store writes to a %T", in.file.f)
	}
	if _, err := in.file.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	if err := in.file.f.Sync(); err != nil {
		t.Fatal(err)
	}
	got, err := stores.ReadLog(mem, in.file.name, nil)
	if err != nil || string(got) != "line\n" || in.file.n.Load() != 5 {
		t.Fatalf("the sink's output in the store: %q, %v (counted %d)", got, err, in.file.n.Load())
	}
	if _, err := os.Stat(filepath.Join(d.DataDir, "output", in.file.name)); err == nil {
		t.Fatal("the sink also wrote a file into the run directory")
	}
}

func TestSpillDirOfANodeThatCannotSeeTheRunDir(t *testing.T) {
	d := &wire.Deploy{Run: "r1", DataDir: "/elsewhere/run"}
	if got := spillDirFor(d, "n4", false); got != "" {
		t.Fatalf("a node that sees the run directory spills to %q, want the run directory's spill/", got)
	}
	got := spillDirFor(d, "n4", true)
	if !strings.HasPrefix(got, os.TempDir()) || !strings.Contains(got, "r1") || !strings.Contains(got, "n4") || strings.HasPrefix(got, d.DataDir) {
		t.Fatalf("a node that cannot see the run directory spills to %q", got)
	}
}
