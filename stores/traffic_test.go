package stores

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"spate/state"
	"spate/wire"
)

func TestCoordStoreCountsItsTrafficBothWays(t *testing.T) {
	dir := t.TempDir()
	ck, err := state.NewDirStore(filepath.Join(dir, "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(map[wire.StoreSpace]state.Store{wire.SpaceCheckpoints: ck}, 0)
	open, served := servedPair(t, srv)
	cl := NewClient(open, wire.SpaceCheckpoints, 0)
	if got := cl.Traffic(); got != (Traffic{}) {
		t.Fatalf("a new client's traffic: %+v", got)
	}
	const n = 3*wire.StoreChunk + 1234 // more than one content frame each way
	data := bytes.Repeat([]byte("spate"), n/5+1)[:n]
	if err := cl.Put("count-0/ck-1", data[:n/2], data[n/2:]); err != nil {
		t.Fatal(err)
	}
	afterPut := cl.Traffic()
	if afterPut.ToStore < n {
		t.Errorf("after a put of %d bytes the client counts %d sent", n, afterPut.ToStore)
	}
	got, err := cl.Get("count-0/ck-1")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
	<-served // the put's Serve returned
	<-served // and the get's: the server counted all it wrote
	c, s := cl.Traffic(), srv.Traffic()
	if c.FromStore-afterPut.FromStore < n {
		t.Errorf("after a get of %d bytes the client counts %d received for it", n, c.FromStore-afterPut.FromStore)
	}
	// Both ends count the same stream bytes, from where each stands.
	if s != c {
		t.Errorf("the server counts %+v, the client %+v", s, c)
	}
	if s.ToStore < n || s.FromStore < n {
		t.Errorf("the server counts %+v, want at least %d each way", s, n)
	}
}

func TestObjectStoreTransportCountsBodiesBothWays(t *testing.T) {
	const n = 100_000
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Add(int64(len(b)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(bytes.Repeat([]byte("x"), n))
		}
	}))
	t.Cleanup(srv.Close)
	m := &meter{}
	cl := &http.Client{Transport: meteredTransport{base: http.DefaultTransport, m: m}}
	resp, err := cl.Post(srv.URL+"/obj", "application/octet-stream", strings.NewReader(strings.Repeat("y", n)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = cl.Get(srv.URL + "/obj")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got.Load() != n || len(b) != n {
		t.Fatalf("the server read %d bytes, the client %d; want %d", got.Load(), len(b), n)
	}
	if tr := m.traffic(); tr != (Traffic{ToStore: n, FromStore: n}) {
		t.Errorf("traffic %+v, want %d each way", tr, n)
	}
}

// TestVerifyChecksAFileWhereItLies: a node's scrub asks the coordinator
// to check a checkpoint file rather than fetch it: ok for a good file,
// corrupt for a damaged one, not found for a missing one, and the file's
// bytes never cross the stream (a scrub of each delta's parent and base
// fetched 64-70 MB a run back from the coordinator store).
func TestVerifyChecksAFileWhereItLies(t *testing.T) {
	ck, err := state.NewDirStore(filepath.Join(t.TempDir(), "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 500_000) // does not compress: the file stays large
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	snap := &state.Snapshot{Instance: "count#0", Gen: 1, ID: 1, Full: true, Base: 1,
		Sections: map[string][]byte{"backup": noise}}
	good, err := state.Encode(snap)
	if err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(good)
	bad[len(bad)/2] ^= 0x5a
	if err := ck.Put("count#0/good.ckpt", good); err != nil {
		t.Fatal(err)
	}
	if err := ck.Put("count#0/bad.ckpt", bad); err != nil {
		t.Fatal(err)
	}
	srv := NewServer(map[wire.StoreSpace]state.Store{wire.SpaceCheckpoints: ck}, 0)
	cl := NewClient(coordPair(t, srv), wire.SpaceCheckpoints, 0)
	if err := cl.Verify("count#0/good.ckpt"); err != nil {
		t.Fatalf("a good file: %v", err)
	}
	if err := cl.Verify("count#0/bad.ckpt"); !errors.Is(err, state.ErrCorrupt) {
		t.Fatalf("a damaged file: %v, want state.ErrCorrupt", err)
	}
	if err := cl.Verify("count#0/none.ckpt"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("a missing file: %v, want state.ErrNotFound", err)
	}
	if tr := cl.Traffic(); tr.FromStore >= int64(len(good)) {
		t.Fatalf("three verifies of a %d-byte file brought %d bytes back", len(good), tr.FromStore)
	}
}
