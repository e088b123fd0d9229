package wire

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Transport is the seam under every link: real TCP in the product, an
// in-memory network in tests. Both hand out net.Conn, so yamux runs on
// either.
type Transport interface {
	Listen(addr string) (net.Listener, error)
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// TCP is the product transport.
type TCP struct{}

// Listen listens on a TCP address ("127.0.0.1:0" picks a free port).
func (TCP) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// Dial connects to a TCP address.
func (TCP) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
	}
	return c, err
}

// Mem is an in-memory network: addresses are names, connections are
// net.Pipe pairs. Safe for concurrent use.
type Mem struct {
	mu sync.Mutex
	ln map[string]*memListener
	n  int
}

// NewMem returns an empty in-memory network.
func NewMem() *Mem { return &Mem{ln: map[string]*memListener{}} }

// Listen registers addr; ":0" or "" picks a fresh name.
func (m *Mem) Listen(addr string) (net.Listener, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if addr == "" || addr[len(addr)-2:] == ":0" {
		m.n++
		addr = fmt.Sprintf("mem:%d", m.n)
	}
	if _, ok := m.ln[addr]; ok {
		return nil, fmt.Errorf("mem listen %s: address in use", addr)
	}
	l := &memListener{m: m, addr: memAddr(addr), c: make(chan net.Conn), done: make(chan struct{})}
	m.ln[addr] = l
	return l, nil
}

// Dial connects to a listener of this network.
func (m *Mem) Dial(ctx context.Context, addr string) (net.Conn, error) {
	m.mu.Lock()
	l := m.ln[addr]
	m.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("mem dial %s: connection refused", addr)
	}
	a, b := net.Pipe()
	select {
	case l.c <- b:
		return a, nil
	case <-l.done:
		return nil, fmt.Errorf("mem dial %s: connection refused", addr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

type memListener struct {
	m    *Mem
	addr memAddr
	c    chan net.Conn
	once sync.Once
	done chan struct{}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.m.mu.Lock()
		delete(l.m.ln, string(l.addr))
		l.m.mu.Unlock()
	})
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }

// YamuxConfig is the yamux configuration of every link: large stream
// windows for throughput, keepalive off (heartbeats do failure detection),
// yamux's own logging silenced (errors surface as events).
func YamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.MaxStreamWindowSize = 4 << 20
	c.EnableKeepAlive = false
	c.LogOutput = io.Discard
	c.StreamOpenTimeout = 30 * time.Second
	return c
}

// ErrRejected is returned by ClientHandshake when the peer refused the Hello.
var ErrRejected = errors.New("wire: rejected")

// handshakeMax bounds handshake frames.
const handshakeMax = 64 << 10

// writeHandshake writes one JSON frame directly to c.
func writeHandshake(c net.Conn, t Type, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 5+len(b))
	binary.BigEndian.PutUint32(buf, uint32(1+len(b)))
	buf[4] = byte(t)
	copy(buf[5:], b)
	_, err = c.Write(buf)
	return err
}

// readHandshake reads exactly one frame from c. Reader never reads past a
// frame, so yamux can take over the connection right after.
func readHandshake(c net.Conn) (Type, []byte, error) {
	t, p, err := NewReader(c, handshakeMax).ReadFrame()
	if err != nil {
		return 0, nil, fmt.Errorf("handshake: %w", err)
	}
	return t, p, nil
}

// TokenEqual compares a presented token with the cluster's in constant time.
func TokenEqual(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// ClientHandshake sends h on c and waits for the answer.
func ClientHandshake(c net.Conn, h Hello, timeout time.Duration) (Welcome, error) {
	var w Welcome
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if err := writeHandshake(c, THello, h); err != nil {
		return w, fmt.Errorf("handshake with %s: %w", c.RemoteAddr(), err)
	}
	t, p, err := readHandshake(c)
	if err != nil {
		return w, fmt.Errorf("handshake with %s: %w", c.RemoteAddr(), err)
	}
	switch t {
	case TWelcome:
		err = DecodeJSON(t, p, &w)
	case TReject:
		var r Reject
		if err = DecodeJSON(t, p, &r); err == nil {
			err = fmt.Errorf("%w: %s", ErrRejected, r.Reason)
		}
	default:
		err = fmt.Errorf("unexpected %v frame", t)
	}
	if err != nil {
		return w, fmt.Errorf("handshake with %s: %w", c.RemoteAddr(), err)
	}
	return w, nil
}

// readHello reads the Hello frame that opens a connection.
func readHello(c net.Conn) (Hello, error) {
	var h Hello
	t, p, err := readHandshake(c)
	if err != nil {
		return h, err
	}
	if t != THello {
		return h, fmt.Errorf("handshake: want hello frame, got %v", t)
	}
	if err := DecodeJSON(t, p, &h); err != nil {
		return h, fmt.Errorf("handshake: %w", err)
	}
	return h, nil
}

// ServerHandshake reads a Hello from c and answers with accept's Welcome,
// or with a Reject carrying accept's error (and then returns that error).
func ServerHandshake(c net.Conn, timeout time.Duration, accept func(Hello) (Welcome, error)) (Hello, error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	h, err := readHello(c)
	if err != nil {
		return h, err
	}
	w, err := accept(h)
	if err != nil {
		_ = writeHandshake(c, TReject, Reject{Reason: err.Error()})
		return h, err
	}
	return h, writeHandshake(c, TWelcome, w)
}
