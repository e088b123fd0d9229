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

// TestChainSizesLeaveOutTheBackup: what an instance weighs to choose a
// full checkpoint (state.Config.MaxChainRatio) is the stored size of
// each file of its chain without the upstream backup's records, after a
// persist and after a restore alike.
func TestChainSizesLeaveOutTheBackup(t *testing.T) {
	f := newChain(t, 3000, []chainStep{{lo: 2000, hi: 4000}})
	in := f.instance(t)
	if _, err := in.restore(f.files); err != nil {
		t.Fatal(err)
	}
	if want := f.chainState(t); in.ck.chain != want {
		t.Fatalf("restored chain %+v, want %+v", in.ck.chain, want)
	}
	fresh := &chainFixture{d: f.d, n: &Node{store: &faultStore{Store: state.NewMemStore()}}}
	r := fresh.drive(t, fresh.instance(t))
	r.feed(0, 3000, 40_000)
	r.checkpoint(1, true)
	r.feed(2000, 4000, 41_000)
	r.checkpoint(2, false)
	if want := fresh.chainState(t); r.in.ck.chain != want {
		t.Fatalf("chain after persisting %+v, want %+v", r.in.ck.chain, want)
	}
}

// chainState is what the fixture's chain weighs: each file's size without
// its plain sections, which must hold some backup.
func (f *chainFixture) chainState(t *testing.T) state.ChainState {
	t.Helper()
	var cs state.ChainState
	for i, name := range f.files {
		b, err := f.n.store.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := state.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if s.PlainSize() == 0 {
			t.Fatalf("%s holds no backup: the test needs some", name)
		}
		n := int64(len(b) - s.PlainSize())
		if i == 0 {
			cs = state.ChainState{Base: true, BaseSize: n}
		} else {
			cs.Deltas++
			cs.DeltaSize += n
		}
	}
	return cs
}

// TestAGrowingStateKeepsItsChain: deltas whose new keys outweigh the base
// they build on, but not what a full checkpoint of the state now would
// be, do not make the next checkpoint a full one (they did while the
// state of a million keys grew); deltas that outweigh that too do.
func TestAGrowingStateKeepsItsChain(t *testing.T) {
	f := newChain(t, 300, []chainStep{{lo: 300, hi: 900}})
	in := f.instance(t)
	if _, err := in.restore(f.files); err != nil {
		t.Fatal(err)
	}
	if in.ck.chain.DeltaSize <= in.ck.chain.BaseSize {
		t.Fatalf("chain %+v: the delta should outweigh the base", in.ck.chain)
	}
	if in.fullNext() {
		t.Fatalf("chain %+v: a full checkpoint next, for a state of %d keys", in.ck.chain, in.stateful.Len())
	}
	// More new keys (the state grows again), then every key again: the
	// deltas together outweigh the whole state.
	r := f.drive(t, in)
	r.feed(900, 2000, 42_500)
	r.checkpoint(3, false)
	if in.fullNext() {
		t.Fatalf("chain %+v: a full checkpoint next, for a state of %d keys", in.ck.chain, in.stateful.Len())
	}
	r.feed(0, 2000, 42_600)
	r.checkpoint(4, false)
	if !in.fullNext() {
		t.Fatalf("chain %+v: no full checkpoint next, for a state of %d keys", in.ck.chain, in.stateful.Len())
	}
}
