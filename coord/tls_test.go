package coord

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"spate/node"
	"spate/pki"
	"spate/traces"
	"spate/wire"
)

// capture records every byte that crosses the connections of a transport,
// both ways: what a tap on the network would see.
type capture struct {
	mu    sync.Mutex
	bytes bytes.Buffer
	conns int
}

func (c *capture) add(p []byte) {
	c.mu.Lock()
	c.bytes.Write(p)
	c.mu.Unlock()
}

func (c *capture) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes.Len()
}

func (c *capture) contains(s []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Contains(c.bytes.Bytes(), s)
}

// recording is wire.TCP with every connection, dialled or accepted,
// recorded into a capture.
type recording struct{ cap *capture }

func (r recording) Listen(addr string) (net.Listener, error) {
	ln, err := wire.TCP{}.Listen(addr)
	if err != nil {
		return nil, err
	}
	return recListener{ln, r.cap}, nil
}

func (r recording) Dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := wire.TCP{}.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return r.cap.wrap(c), nil
}

type recListener struct {
	net.Listener
	cap *capture
}

func (l recListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.cap.wrap(c), nil
}

func (c *capture) wrap(conn net.Conn) net.Conn {
	c.mu.Lock()
	c.conns++
	c.mu.Unlock()
	return &recConn{Conn: conn, cap: c}
}

// recConn records what it reads; the other end of each connection is
// recorded too, so every byte on the wire is in the capture (twice).
type recConn struct {
	net.Conn
	cap *capture
}

func (c *recConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.cap.add(p[:n])
	return n, err
}

func (c *recConn) Write(p []byte) (int, error) {
	c.cap.add(p)
	return c.Conn.Write(p)
}

// capturedRun runs a short cluster of in-process nodes over real TCP on
// loopback, every connection recorded, with the coordinator as the
// checkpoint and output store (so the store streams cross the links too).
func capturedRun(t *testing.T, withTLS bool) (*capture, string) {
	t.Helper()
	cp := &capture{}
	tr := recording{cp}
	cfg := testConfig(t)
	cfg.Listen, cfg.TLS, cfg.Store = "127.0.0.1:0", withTLS, "coord"
	cfg.Duration = time.Second
	var mu sync.Mutex
	var procs []*memProc
	spawn := func(name, addr, token, logPath string) (Process, error) {
		ctx, cancel := context.WithCancel(context.Background())
		p := &memProc{cancel: cancel, done: make(chan struct{})}
		ncfg := node.DefaultConfig()
		ncfg.Name, ncfg.Coord, ncfg.Token, ncfg.Transport = name, addr, token, tr
		go func() {
			defer close(p.done)
			p.err = node.Run(ctx, ncfg)
		}()
		mu.Lock()
		procs = append(procs, p)
		mu.Unlock()
		return p, nil
	}
	dir, err := Up(context.Background(), cfg, Options{Transport: tr, Spawn: spawn})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range procs {
		<-p.done
	}
	rep, err := VerifyRun(dir)
	if err != nil || !rep.OK() {
		dumpEvents(t, dir)
		t.Fatalf("verify (tls %v): %v %v", withTLS, rep, err)
	}
	return cp, dir
}

// someKeys are keys of records the run's source produced.
func someKeys(t *testing.T, dir string) [][]byte {
	t.Helper()
	ri, err := ReadRunInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := traces.Open(ri.Config.Source, ri.Config.SourceOptions())
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Open(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var keys [][]byte
	for range 50 {
		rec, ok, err := r.Next()
		if err != nil || !ok {
			t.Fatal(err)
		}
		keys = append(keys, bytes.Clone(rec.Key))
	}
	return keys
}

func foundKeys(cp *capture, keys [][]byte) (n int) {
	for _, k := range keys {
		if cp.contains(k) {
			n++
		}
	}
	return n
}

func TestTLSCaptureHoldsNeitherTheTokenNorAKey(t *testing.T) {
	// The control: without TLS a tap sees the records' keys (so the
	// search below can fail).
	clear, dir := capturedRun(t, false)
	n := foundKeys(clear, someKeys(t, dir))
	if n == 0 {
		t.Fatalf("without TLS the capture of %d connections holds none of 50 keys: the search is broken", clear.conns)
	}
	t.Logf("without TLS: %d of 50 keys in a capture of %d connections, %d bytes", n, clear.conns, clear.len())

	cp, dir := capturedRun(t, true)
	token, err := ReadToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cp.conns < 4 { // 3 joins, at least one peer link
		t.Fatalf("only %d connections captured", cp.conns)
	}
	if cp.contains([]byte(token)) {
		t.Error("the token crossed the wire")
	}
	t.Logf("with TLS: a capture of %d connections, %d bytes", cp.conns, cp.len())
	if n := foundKeys(cp, someKeys(t, dir)); n > 0 {
		t.Errorf("%d of 50 record keys crossed the wire in clear with TLS", n)
	}
	// The join itself is in the capture: its hello frames, in clear.
	if !cp.contains([]byte(`"role":"node"`)) || !cp.contains([]byte(`"nonce":`)) {
		t.Error("no join hello in the capture")
	}
	if _, err := os.Stat(filepath.Join(dir, pki.CertFile)); err != nil {
		t.Error(err)
	}
	ri, err := ReadRunInfo(dir)
	if err != nil || !ri.TLS {
		t.Errorf("run.json: tls %v, %v", ri != nil && ri.TLS, err)
	}
	if strings.Contains(string(mustRead(t, filepath.Join(dir, "run.json"))), token) {
		t.Error("run.json holds the token")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTLSDecision(t *testing.T) {
	cases := []struct {
		name string
		flag bool
		addr net.Addr
		want bool
	}{
		{"loopback", false, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, false},
		{"loopback v6", false, &net.TCPAddr{IP: net.IPv6loopback}, false},
		{"--tls on loopback", true, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, true},
		{"every interface", false, &net.TCPAddr{IP: net.IPv4zero}, true},
		{"a network address", false, &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3)}, true},
		{"in memory", false, memTestAddr("mem:1"), false},
	}
	for _, c := range cases {
		if got := wantTLS(c.flag, c.addr); got != c.want {
			t.Errorf("%s: wantTLS = %v, want %v", c.name, got, c.want)
		}
	}
}

type memTestAddr string

func (a memTestAddr) Network() string { return "mem" }
func (a memTestAddr) String() string  { return string(a) }
