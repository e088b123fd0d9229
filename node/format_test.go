package node

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"spate/state"
)

// TestRestoreAChainWrittenBeforeS2: a chain that count#0 wrote before its
// state bodies were compressed with S2 (format version 2, zstd: the files
// in testdata/zstd-chain, written by the newChain below at commit
// 2ede2c3) is restored as it was: the same state as the chain the
// current code writes from the same records, and the same backup.
func TestRestoreAChainWrittenBeforeS2(t *testing.T) {
	f := newChain(t, 300, []chainStep{{lo: 200, hi: 400}, {lo: 10, hi: 40}})
	old := &chainFixture{d: f.d, n: &Node{store: &faultStore{Store: state.NewMemStore()}}}
	for _, name := range f.files {
		b, err := os.ReadFile(filepath.Join("testdata", "zstd-chain", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if h, err := state.ReadHeader(b); err != nil || h.Version != 2 || h.Codec != state.CodecZstd {
			t.Fatalf("%s: header %+v, %v: not a file of the old format", name, h, err)
		}
		if err := old.n.store.Put(name, b); err != nil {
			t.Fatal(err)
		}
	}
	in := old.instance(t)
	if _, err := in.restore(f.files); err != nil {
		t.Fatal(err)
	}
	if err := sameGroups(in.stateful.Capture(true).Encode(nil), f.want); err != nil {
		t.Fatal(err)
	}
	now := f.instance(t)
	if _, err := now.restore(f.files); err != nil {
		t.Fatal(err)
	}
	for pi, pt := range in.ports {
		got, err := pt.backup.MarkFull()
		if err != nil {
			t.Fatal(err)
		}
		want, err := now.ports[pi].backup.MarkFull()
		if err != nil {
			t.Fatal(err)
		}
		if n := pt.backup.Stats().Records; n == 0 || !bytes.Equal(got, want) {
			t.Fatalf("backup toward %s (%d records): what the old files restore differs from what the new ones do", pt.to, n)
		}
	}
}
