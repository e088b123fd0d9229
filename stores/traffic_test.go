package stores

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
