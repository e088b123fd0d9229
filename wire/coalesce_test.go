package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
)

// writes records each Write the wrapped connection receives.
type writes struct {
	net.Conn
	mu  sync.Mutex
	got [][]byte
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.got = append(w.got, append([]byte(nil), p...))
	w.mu.Unlock()
	return len(p), nil
}

func header(typ byte, length uint32) []byte {
	h := make([]byte, yamuxHeaderSize)
	h[1] = typ
	binary.BigEndian.PutUint32(h[4:], 3)
	binary.BigEndian.PutUint32(h[8:], length)
	return h
}

// A data frame's header and body reach the connection in one write; a
// header with no body passes at once; the bytes are the same.
func TestCoalesceJoinsADataFrameAndPassesTheRest(t *testing.T) {
	w := &writes{}
	c := Coalesce(w)
	body := []byte("hello")
	steps := [][]byte{header(yamuxTypeData, 5), body, header(1, 4096), header(yamuxTypeData, 0)}
	for _, p := range steps {
		if n, err := c.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
		}
	}
	want := [][]byte{append(header(yamuxTypeData, 5), body...), header(1, 4096), header(yamuxTypeData, 0)}
	if len(w.got) != len(want) {
		t.Fatalf("%d writes reached the connection, want %d", len(w.got), len(want))
	}
	for i := range want {
		if !bytes.Equal(w.got[i], want[i]) {
			t.Fatalf("write %d = %x, want %x", i, w.got[i], want[i])
		}
	}
}

// A yamux session over coalescing connections carries streams both ways.
func TestCoalesceUnderYamux(t *testing.T) {
	a, b := net.Pipe()
	client, err := yamux.Client(Coalesce(a), YamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := yamux.Server(Coalesce(b), YamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	msg := bytes.Repeat([]byte("spate "), 50000) // several frames
	done := make(chan error, 1)
	go func() {
		st, err := server.AcceptStream()
		if err != nil {
			done <- err
			return
		}
		defer st.Close()
		_, err = io.Copy(st, st) // echo
		done <- err
	}()
	st, err := client.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = st.Write(msg); _ = st.Close() }() // a half close: the echo still comes back
	_ = st.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := io.ReadAll(st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echoed %d bytes, want the %d sent", len(got), len(msg))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
