package stores

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"spate/state"
	"spate/state/storetest"
	"spate/wire"
)

// coordPair serves the store spaces over a real yamux session on an
// in-memory pipe, as the coordinator serves its nodes, and returns the
// node's opener. The session is closed at the test's end.
func coordPair(t *testing.T, srv *Server) func() (net.Conn, error) {
	open, _ := servedPair(t, srv)
	return open
}

// servedPair is coordPair with a signal each time a Serve returns (the
// signals beyond the channel's room are dropped).
func servedPair(t *testing.T, srv *Server) (func() (net.Conn, error), <-chan struct{}) {
	t.Helper()
	a, b := net.Pipe()
	server, err := yamux.Server(a, wire.YamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	client, err := yamux.Client(b, wire.YamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{}, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			st, err := server.AcceptStream()
			if err != nil {
				return
			}
			wg.Go(func() {
				_ = srv.Serve(st)
				select {
				case served <- struct{}{}:
				default:
				}
			})
		}
	})
	t.Cleanup(func() {
		client.Close()
		server.Close()
		wg.Wait()
	})
	return func() (net.Conn, error) { return client.Open() }, served
}

func flip(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[len(b)/2] ^= 0x10
	return os.WriteFile(path, b, 0o644)
}

func TestCoordStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		dir := t.TempDir()
		open := func() state.Store {
			ck, err := state.NewDirStore(filepath.Join(dir, "checkpoints"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := state.NewDirStore(filepath.Join(dir, "output"))
			if err != nil {
				t.Fatal(err)
			}
			srv := NewServer(map[wire.StoreSpace]state.Store{wire.SpaceCheckpoints: ck, wire.SpaceOutput: out}, 0)
			return NewClient(coordPair(t, srv), wire.SpaceCheckpoints, 0)
		}
		return storetest.Harness{Store: open(), Reopen: open,
			Corrupt: func(name string) error { return flip(filepath.Join(dir, "checkpoints", filepath.FromSlash(name))) }}
	})
}

func TestCoordStoreSpacesAreApart(t *testing.T) {
	dir := t.TempDir()
	ck, _ := state.NewDirStore(filepath.Join(dir, "checkpoints"))
	out, _ := state.NewDirStore(filepath.Join(dir, "output"))
	srv := NewServer(map[wire.StoreSpace]state.Store{wire.SpaceCheckpoints: ck, wire.SpaceOutput: out}, 0)
	open := coordPair(t, srv)
	if err := NewClient(open, wire.SpaceOutput, 0).Put("sink-0-g1.jsonl.seg/o000000000000", []byte("line\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "output", "sink-0-g1.jsonl.seg", "o000000000000")); err != nil || string(b) != "line\n" {
		t.Fatalf("the output space's file: %q, %v", b, err)
	}
	if names, err := NewClient(open, wire.SpaceCheckpoints, 0).List(""); err != nil || len(names) != 0 {
		t.Fatalf("the checkpoint space lists %q, %v", names, err)
	}
	if _, err := NewClient(open, "elsewhere", 0).Get("a"); err == nil || !strings.Contains(err.Error(), `unknown space "elsewhere"`) {
		t.Fatalf("a request for an unknown space: %v", err)
	}
	in, outB := srv.Bytes()
	if in != int64(len("line\n")) || outB != 0 {
		t.Fatalf("Bytes() = %d in, %d out", in, outB)
	}
}

// tamper is a connection that flips one byte of what passes through it
// once `after` bytes have passed: damage on the way.
type tamper struct {
	net.Conn
	mu    sync.Mutex
	seen  int
	after int
	done  bool
}

func (c *tamper) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done && c.seen+n > c.after {
		p[c.after-c.seen] ^= 0x01
		c.done = true
	}
	c.seen += n
	return n, err
}

// pipeOpener serves each stream on a plain pipe (no yamux), the server
// reading through wrapS and the client through wrapC.
func pipeOpener(t *testing.T, srv *Server, wrapS, wrapC func(net.Conn) net.Conn, errs chan<- error) func() (net.Conn, error) {
	return func() (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			err := srv.Serve(wrapS(a))
			if errs != nil {
				errs <- err
			}
		}()
		return wrapC(b), nil
	}
}

func same(c net.Conn) net.Conn { return c }

func TestCoordStoreDamageOnTheWay(t *testing.T) {
	mem := state.NewMemStore()
	srv := NewServer(map[wire.StoreSpace]state.Store{wire.SpaceCheckpoints: mem}, 0)
	content := bytes.Repeat([]byte("checkpoint "), 10000)
	if err := mem.Put("i#0/f", content); err != nil {
		t.Fatal(err)
	}

	// A get whose content is damaged after the reply header: the node
	// finds out at the end, and the content is not handed back as good.
	get := NewClient(pipeOpener(t, srv, same, func(c net.Conn) net.Conn { return &tamper{Conn: c, after: 5000} }, nil), wire.SpaceCheckpoints, 0)
	if b, err := get.Get("i#0/f"); !errors.Is(err, state.ErrCorrupt) {
		t.Fatalf("Get of content damaged on the way: %d bytes, %v; want ErrCorrupt", len(b), err)
	}

	// A put damaged on the way is refused and stores nothing: the old
	// content stays.
	errs := make(chan error, 1)
	put := NewClient(pipeOpener(t, srv, func(c net.Conn) net.Conn { return &tamper{Conn: c, after: 5000} }, same, errs), wire.SpaceCheckpoints, 0)
	if err := put.Put("i#0/f", bytes.Repeat([]byte("new "), 10000)); !errors.Is(err, state.ErrCorrupt) {
		t.Fatalf("Put damaged on the way: %v, want ErrCorrupt", err)
	}
	if err := <-errs; !errors.Is(err, wire.ErrChecksum) {
		t.Fatalf("the server's report of the damaged put: %v", err)
	}
	if b, _ := mem.Get("i#0/f"); !bytes.Equal(b, content) {
		t.Fatal("a damaged put replaced the content")
	}
}

// cutAfter closes the connection once n bytes have been written to it: a
// node that dies in the middle of a put.
type cutAfter struct {
	net.Conn
	left int
}

func (c *cutAfter) Write(p []byte) (int, error) {
	if len(p) >= c.left {
		k, _ := c.Conn.Write(p[:c.left])
		c.Conn.Close()
		return k, net.ErrClosed
	}
	c.left -= len(p)
	return c.Conn.Write(p)
}

func TestCoordStorePutCutShortStoresNothing(t *testing.T) {
	mem := state.NewMemStore()
	if err := mem.Put("i#0/f", []byte("old")); err != nil {
		t.Fatal(err)
	}
	srv := NewServer(map[wire.StoreSpace]state.Store{wire.SpaceCheckpoints: mem}, 0)
	errs := make(chan error, 1)
	c := NewClient(pipeOpener(t, srv, same, func(c net.Conn) net.Conn { return &cutAfter{Conn: c, left: 3 << 20} }, errs), wire.SpaceCheckpoints, 0)
	if err := c.Put("i#0/f", bytes.Repeat([]byte{7}, 8<<20)); err == nil {
		t.Fatal("a put cut short succeeded")
	}
	if err := <-errs; err == nil {
		t.Fatal("the server did not notice the cut")
	}
	if b, _ := mem.Get("i#0/f"); string(b) != "old" {
		t.Fatalf("a put cut short left %d bytes", len(b))
	}
	if mem.Puts() != 1 {
		t.Fatalf("%d puts reached the store", mem.Puts())
	}
}

func TestCoordStoreProtocolErrors(t *testing.T) {
	mem := state.NewMemStore()
	srv := NewServer(map[wire.StoreSpace]state.Store{wire.SpaceCheckpoints: mem}, 0)
	for _, tc := range []struct {
		name string
		send func(w *wire.Writer)
		want string
	}{
		{"not a store frame", func(w *wire.Writer) { w.WriteFrame(wire.TWatermark, []byte{0}) }, "want store"},
		{"unknown field", func(w *wire.Writer) {
			w.WriteFrame(wire.TStore, []byte(`{"op":"get","space":"checkpoints","bogus":1}`))
		}, "bogus"},
		{"unknown op", func(w *wire.Writer) {
			w.WriteJSON(wire.TStore, wire.StoreRequest{Op: "rename", Space: wire.SpaceCheckpoints})
		}, `unknown op "rename"`},
		{"a batch inside content", func(w *wire.Writer) {
			w.WriteJSON(wire.TStore, wire.StoreRequest{Op: wire.StorePut, Space: wire.SpaceCheckpoints, Name: "a"})
			w.WriteFrame(wire.TBatch, []byte{0})
		}, "unexpected in store content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(a) }()
			go func() {
				w := wire.NewWriter(b)
				tc.send(w)
				w.Flush()
				// read whatever the server answers until it closes
				buf := make([]byte, 4096)
				for {
					if _, err := b.Read(buf); err != nil {
						return
					}
				}
			}()
			err := <-errc
			b.Close()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Serve = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if mem.Puts() != 0 {
		t.Fatal("a bad request stored something")
	}
}

func TestCoordStoreSilentServerTimesOut(t *testing.T) {
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	c := NewClient(func() (net.Conn, error) {
		a, b := net.Pipe()
		held = append(held, a)
		go func() { // reads the request, never answers
			buf := make([]byte, 4096)
			for {
				if _, err := a.Read(buf); err != nil {
					return
				}
			}
		}()
		return b, nil
	}, wire.SpaceCheckpoints, 20*time.Millisecond)
	if _, err := c.Get("a"); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Get from a silent coordinator: %v, want a deadline error", err)
	}
}
