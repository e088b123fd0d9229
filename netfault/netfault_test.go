package netfault

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when told. Timers fire from
// Advance, in time order, outside the clock's lock.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]bool
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	f  func()
}

func newFakeClock() *fakeClock {
	// Start at the real time, so that deadlines passed on to real
	// connections are sensible too.
	return &fakeClock{now: time.Now(), timers: map[*fakeTimer]bool{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers[t] = true
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	ok := t.c.timers[t]
	delete(t.c.timers, t)
	return ok
}

// pending is the number of timers not yet fired or stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves time by d and fires the timers due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
			delete(c.timers, t)
		}
	}
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// waitFor polls cond until it holds, and fails with what it last saw after
// a generous deadline. It is synchronisation, not a timed assertion.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: last saw %s", what, seen)
		}
		time.Sleep(time.Millisecond)
	}
}

// armed waits until the fake clock has at least n pending timers: the
// pump (or a waiter) has computed its wake-up from the current time.
func armed(t *testing.T, clk *fakeClock, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d armed timers", n), func() (bool, string) {
		p := clk.pending()
		return p >= n, fmt.Sprintf("%d timers", p)
	})
}

func newTestLayer(t *testing.T, clk Clock, maxHeld int) *Layer {
	t.Helper()
	l, err := NewLayer(Config{Clock: clk, Rand: rand.New(rand.NewPCG(1, 2)), MaxHeld: maxHeld})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pipe returns a wrapped end (process n1, peer n2) and the raw other end
// of a net.Pipe.
func pipe(t *testing.T, l *Layer) (net.Conn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	w := l.Wrap(a, "n1", "n2")
	t.Cleanup(func() { w.Close(); b.Close() })
	return w, b
}

// tcpPair returns the two ends of a real loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { a.Close(); r.c.Close() })
	return a, r.c
}

// collector reads c in the background and keeps what it read.
type collector struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	err  error
	done chan struct{}
}

func collect(c net.Conn) *collector {
	k := &collector{done: make(chan struct{})}
	go func() {
		defer close(k.done)
		b := make([]byte, 32<<10)
		for {
			n, err := c.Read(b)
			k.mu.Lock()
			k.buf.Write(b[:n])
			if err != nil {
				k.err = err
			}
			k.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return k
}

func (k *collector) bytes() []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]byte(nil), k.buf.Bytes()...)
}

func (k *collector) waitLen(t *testing.T, n int) []byte {
	t.Helper()
	var got []byte
	waitFor(t, fmt.Sprintf("%d bytes read", n), func() (bool, string) {
		got = k.bytes()
		return len(got) >= n, fmt.Sprintf("%d bytes", len(got))
	})
	return got
}

// pattern is n bytes whose content depends on their position.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func mustSet(t *testing.T, l *Layer, peer string, f LinkFault) {
	t.Helper()
	if err := l.Set(peer, f); err != nil {
		t.Fatal(err)
	}
}

func TestNoFaultPassesThrough(t *testing.T) {
	l := newTestLayer(t, newFakeClock(), 0)
	a, b := pipe(t, l)
	k := collect(b)
	if _, err := a.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := k.waitLen(t, 5); string(got) != "hello" {
		t.Fatalf("got %q", got)
	}
	go b.Write([]byte("back"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(a, buf); err != nil || string(buf) != "back" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if f := a.(*faultConn).flags.Load(); f != 0 {
		t.Fatalf("flags %b with no fault, want the fast path", f)
	}
}

func TestBlockSendHoldsThenDeliversInOrder(t *testing.T) {
	l := newTestLayer(t, newFakeClock(), 0)
	a, b := pipe(t, l)
	mustSet(t, l, "n2", LinkFault{BlockSend: true})
	k := collect(b)
	var want []byte
	for i := range 50 {
		msg := fmt.Appendf(nil, "m%02d;", i)
		// On a net.Pipe a write returns only once read; held, it
		// returns at once.
		if n, err := a.Write(msg); err != nil || n != len(msg) {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		want = append(want, msg...)
	}
	if h := l.Held("n2"); h != len(want) {
		t.Fatalf("held %d bytes, want %d", h, len(want))
	}
	if got := k.bytes(); len(got) != 0 {
		t.Fatalf("read %q across a blocked link", got)
	}
	l.Clear("n2")
	if got := k.waitLen(t, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("after heal got %q, want %q", got, want)
	}
	waitFor(t, "the fast path again", func() (bool, string) {
		f := a.(*faultConn).flags.Load()
		return f == 0 && l.Held("n2") == 0, fmt.Sprintf("flags %b, held %d", f, l.Held("n2"))
	})
}

// readHook reports every Read entering the connection it wraps.
type readHook struct {
	net.Conn
	entered chan struct{}
	reads   atomic.Int64
}

func (h *readHook) Read(p []byte) (int, error) {
	h.reads.Add(1)
	select {
	case h.entered <- struct{}{}:
	default:
	}
	return h.Conn.Read(p)
}

func TestBlockRecvHoldsThenDelivers(t *testing.T) {
	for _, midRead := range []bool{true, false} {
		t.Run(fmt.Sprintf("fault during a read=%v", midRead), func(t *testing.T) {
			raw, peer := tcpPair(t)
			hook := &readHook{Conn: raw, entered: make(chan struct{}, 1)}
			l := newTestLayer(t, RealClock{}, 0)
			a := l.Wrap(hook, "n1", "n2")
			var k *collector
			if midRead {
				// The reader is inside the socket's Read when the
				// fault arrives: what it gets is held.
				k = collect(a)
				<-hook.entered
				mustSet(t, l, "n2", LinkFault{BlockRecv: true})
			} else {
				// The fault is there first: the reader does not
				// even read the socket, so the peer's window fills.
				mustSet(t, l, "n2", LinkFault{BlockRecv: true})
				k = collect(a)
			}
			if _, err := peer.Write([]byte("across the cut")); err != nil {
				t.Fatal(err)
			}
			if midRead {
				waitFor(t, "the bytes to be held", func() (bool, string) {
					h := l.Held("n2")
					return h == 14, fmt.Sprintf("%d held", h)
				})
			}
			// The other direction still flows (one-way).
			if _, err := a.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "ping" {
				t.Fatalf("reverse direction: %q, %v", buf, err)
			}
			if got := k.bytes(); len(got) != 0 {
				t.Fatalf("read %q across a blocked receive side", got)
			}
			if !midRead && hook.reads.Load() != 0 {
				t.Fatalf("%d reads of the socket while its traffic is held", hook.reads.Load())
			}
			l.Clear("n2")
			if got := k.waitLen(t, 14); string(got) != "across the cut" {
				t.Fatalf("after heal got %q", got)
			}
		})
	}
}

func TestStallHoldsBothWays(t *testing.T) {
	raw, peer := tcpPair(t)
	l := newTestLayer(t, RealClock{}, 0)
	a := l.Wrap(raw, "n1", "n2")
	mustSet(t, l, "n2", LinkFault{Stall: true})
	ka, kp := collect(a), collect(peer)
	if _, err := a.Write([]byte("out")); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Write([]byte("in")); err != nil {
		t.Fatal(err)
	}
	if l.Held("n2") < 3 {
		t.Fatalf("held %d, want the 3 bytes written", l.Held("n2"))
	}
	if got := kp.bytes(); len(got) != 0 {
		t.Fatalf("peer read %q across a stall", got)
	}
	if got := ka.bytes(); len(got) != 0 {
		t.Fatalf("read %q across a stall", got)
	}
	l.ClearAll()
	if got := kp.waitLen(t, 3); string(got) != "out" {
		t.Fatalf("peer got %q", got)
	}
	if got := ka.waitLen(t, 2); string(got) != "in" {
		t.Fatalf("got %q", got)
	}
	if f := l.Faults(); len(f) != 0 {
		t.Fatalf("faults after ClearAll: %v", f)
	}
}

func TestLatencyWithJitterDelaysWithoutReordering(t *testing.T) {
	clk := newFakeClock()
	l := newTestLayer(t, clk, 0)
	a, b := pipe(t, l)
	const lat, jit = 50 * time.Millisecond, 40 * time.Millisecond
	mustSet(t, l, "n2", LinkFault{Latency: lat, Jitter: jit})
	k := collect(b)
	t0 := clk.Now()
	var want []byte
	for i := range 40 {
		msg := []byte{byte(i)}
		if _, err := a.Write(msg); err != nil {
			t.Fatal(err)
		}
		want = append(want, msg...)
		if i%8 == 7 {
			clk.Advance(time.Millisecond) // writes spread over time
		}
	}
	// Release times: within latency ± jitter of the write, never earlier
	// than the previous write's.
	fc := a.(*faultConn)
	fc.mu.Lock()
	var prev time.Time
	distinct := map[time.Time]bool{}
	for i, c := range fc.queue {
		d := c.at.Sub(t0)
		if c.at.Before(prev) {
			t.Errorf("chunk %d released at %v, before chunk %d's %v", i, d, i-1, prev.Sub(t0))
		}
		if d < lat-jit || d > lat+jit+5*time.Millisecond {
			t.Errorf("chunk %d released at %v, outside %v±%v", i, d, lat, jit)
		}
		prev = c.at
		distinct[c.at] = true
	}
	fc.mu.Unlock()
	if len(distinct) < 5 {
		t.Errorf("%d distinct release times over 40 writes: jitter not applied", len(distinct))
	}
	if got := k.bytes(); len(got) != 0 {
		t.Fatalf("%d bytes delivered before the latency", len(got))
	}
	armed(t, clk, 1)
	clk.Advance(lat + jit + 10*time.Millisecond)
	if got := k.waitLen(t, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestBandwidthPacesDelivery(t *testing.T) {
	clk := newFakeClock()
	l := newTestLayer(t, clk, 0)
	a, b := pipe(t, l)
	const rate = 1000 // bytes/s; burst 512
	mustSet(t, l, "n2", LinkFault{Bandwidth: rate})
	k := collect(b)
	want := pattern(3000)
	if _, err := a.Write(want); err != nil {
		t.Fatal(err)
	}
	burst := int(LinkFault{Bandwidth: rate}.burst())
	elapsed := time.Duration(0)
	for len(k.bytes()) < len(want) {
		if elapsed > 10*time.Second {
			t.Fatalf("only %d of %d bytes after %v of fake time", len(k.bytes()), len(want), elapsed)
		}
		// Wait until the pump waits for tokens (or is done).
		waitFor(t, "the pump to wait for tokens", func() (bool, string) {
			n := len(k.bytes())
			return clk.pending() > 0 || n == len(want), fmt.Sprintf("%d bytes, no timer", n)
		})
		if got, bound := len(k.bytes()), burst+int(float64(rate)*elapsed.Seconds()); got > bound {
			t.Fatalf("%d bytes delivered after %v, bucket allows %d", got, elapsed, bound)
		}
		clk.Advance(100 * time.Millisecond)
		elapsed += 100 * time.Millisecond
	}
	if got := k.bytes(); !bytes.Equal(got, want) {
		t.Fatal("paced bytes differ from those written")
	}
	// 3000 bytes at 1000 B/s with a 512-byte bucket need about 2.5 s.
	if elapsed < 2400*time.Millisecond {
		t.Fatalf("3000 bytes took only %v of fake time at %d B/s", elapsed, rate)
	}
}

func TestHeldBytesAreBoundedByBackpressure(t *testing.T) {
	clk := newFakeClock()
	l := newTestLayer(t, clk, 8)
	a, b := pipe(t, l)
	mustSet(t, l, "n2", LinkFault{BlockSend: true})
	if _, err := a.Write([]byte("01234567")); err != nil {
		t.Fatal(err)
	}
	// A distant deadline makes the blocked writer arm a timer: the sign
	// that it waits.
	if err := a.SetWriteDeadline(clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := a.Write([]byte("89abcdef"))
		done <- res{n, err}
	}()
	// The second write cannot be taken in while the first is held.
	armed(t, clk, 1)
	if h := l.Held("n2"); h != 8 {
		t.Fatalf("held %d, want the bound 8", h)
	}
	select {
	case r := <-done:
		t.Fatalf("write past the bound returned %d, %v while blocked", r.n, r.err)
	default:
	}
	k := collect(b)
	l.Clear("n2")
	if got := k.waitLen(t, 16); string(got) != "0123456789abcdef" {
		t.Fatalf("got %q", got)
	}
	if r := <-done; r.n != 8 || r.err != nil {
		t.Fatalf("blocked write: %d, %v", r.n, r.err)
	}
}

func TestDeadlinesEndWaits(t *testing.T) {
	clk := newFakeClock()
	l := newTestLayer(t, clk, 4)
	a, b := pipe(t, l)
	mustSet(t, l, "n2", LinkFault{Stall: true})
	if _, err := a.Write([]byte("full")); err != nil {
		t.Fatal(err)
	}
	if err := a.SetDeadline(clk.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	werr, rerr := make(chan error, 1), make(chan error, 1)
	go func() { _, err := a.Write([]byte("more")); werr <- err }()
	go func() { _, err := a.Read(make([]byte, 8)); rerr <- err }()
	armed(t, clk, 2) // both waits hold a deadline timer
	clk.Advance(time.Second)
	for name, ch := range map[string]chan error{"write": werr, "read": rerr} {
		select {
		case err := <-ch:
			var ne net.Error
			if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("%s after its deadline: %v, want a timeout", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s still blocked after its deadline", name)
		}
	}
	// The accepted bytes are still delivered once healed.
	if err := a.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	k := collect(b)
	l.Clear("n2")
	if got := k.waitLen(t, 4); string(got) != "full" {
		t.Fatalf("got %q", got)
	}
}

func TestCloseUnblocksEverything(t *testing.T) {
	l := newTestLayer(t, newFakeClock(), 4)
	a, _ := pipe(t, l)
	mustSet(t, l, "n2", LinkFault{Stall: true})
	if _, err := a.Write([]byte("full")); err != nil {
		t.Fatal(err)
	}
	werr, rerr := make(chan error, 1), make(chan error, 1)
	go func() { _, err := a.Write([]byte("more")); werr <- err }()
	go func() { _, err := a.Read(make([]byte, 8)); rerr <- err }()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan error{"write": werr, "read": rerr} {
		select {
		case err := <-ch:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("%s after Close: %v, want net.ErrClosed", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s still blocked after Close", name)
		}
	}
	if p := l.Peers(); len(p) != 0 {
		t.Fatalf("closed connection still registered: %v", p)
	}
}

func TestCloseUnblocksPumpWritingToStuckPeer(t *testing.T) {
	l := newTestLayer(t, newFakeClock(), 0)
	a, _ := pipe(t, l) // nobody reads the other end: the pump's write blocks
	mustSet(t, l, "n2", LinkFault{Bandwidth: 1 << 30})
	if _, err := a.Write([]byte("stuck")); err != nil {
		t.Fatal(err)
	}
	fc := a.(*faultConn)
	a.Close()
	waitFor(t, "the pump to exit", func() (bool, string) {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		return !fc.pumping, "pumping"
	})
}

func TestResetClosesBothEnds(t *testing.T) {
	raw, peer := tcpPair(t)
	hook := &readHook{Conn: raw, entered: make(chan struct{}, 1)}
	l := newTestLayer(t, RealClock{}, 0)
	a := l.Wrap(hook, "n1", "n2")
	inflight := make(chan error, 1)
	go func() { _, err := a.Read(make([]byte, 1)); inflight <- err }()
	<-hook.entered
	mustSet(t, l, "n2", LinkFault{Latency: time.Millisecond, Reset: true})
	if err := <-inflight; !errors.Is(err, ErrReset) {
		t.Fatalf("a read in progress during the reset: %v, want ErrReset", err)
	}
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, ErrReset) || !strings.Contains(err.Error(), "n1->n2") {
		t.Fatalf("local read after reset: %v, want ErrReset naming the link", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, ErrReset) {
		t.Fatalf("local write after reset: %v", err)
	}
	if err := peer.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("peer read after reset: %v, want the connection's end", err)
	}
	// Reset is an action: the rest of the fault stays, the reset does not.
	if f := l.Faults()["n2"]; f != (LinkFault{Latency: time.Millisecond}) {
		t.Fatalf("fault kept %+v", f)
	}
	// A new connection is not reset.
	raw2, peer2 := tcpPair(t)
	a2 := l.Wrap(raw2, "n1", "n2")
	k := collect(peer2)
	if _, err := a2.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	k.waitLen(t, 5)
}

func TestFaultAppliesToLaterConnections(t *testing.T) {
	l := newTestLayer(t, newFakeClock(), 0)
	mustSet(t, l, "n2", LinkFault{BlockSend: true})
	a, b := pipe(t, l)
	if _, err := a.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	if h := l.Held("n2"); h != 4 {
		t.Fatalf("held %d on a connection wrapped after the fault", h)
	}
	// Another peer is not affected.
	c, d := net.Pipe()
	other := l.Wrap(c, "n1", "n3")
	t.Cleanup(func() { other.Close(); d.Close() })
	kd := collect(d)
	if _, err := other.Write([]byte("free")); err != nil {
		t.Fatal(err)
	}
	kd.waitLen(t, 4)
	k := collect(b)
	l.Clear("n2")
	k.waitLen(t, 4)
}

func TestSetRejectsBadInput(t *testing.T) {
	l := newTestLayer(t, newFakeClock(), 0)
	cases := []struct {
		name, peer string
		f          LinkFault
		want       string
	}{
		{"empty peer", "", LinkFault{Stall: true}, "empty peer"},
		{"negative latency", "n2", LinkFault{Latency: -time.Second}, "latency"},
		{"negative jitter", "n2", LinkFault{Jitter: -1}, "jitter"},
		{"negative bandwidth", "n2", LinkFault{Bandwidth: -5}, "bandwidth"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := l.Set(tc.peer, tc.f)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Set: %v, want a one-line error naming %q", err, tc.want)
			}
		})
	}
	if f := l.Faults(); len(f) != 0 {
		t.Fatalf("bad input changed the faults: %v", f)
	}
	if _, err := NewLayer(Config{MaxHeld: -1}); err == nil {
		t.Fatal("NewLayer accepted a negative MaxHeld")
	}
	var nilLayer *Layer
	c, d := net.Pipe()
	defer c.Close()
	defer d.Close()
	if nilLayer.Wrap(c, "n1", "n2") != c {
		t.Fatal("a nil Layer must return the connection unchanged")
	}
	if l.Wrap(nil, "n1", "n2") != nil {
		t.Fatal("wrapping nil must give nil")
	}
}

func TestLinkFaultString(t *testing.T) {
	cases := map[string]LinkFault{
		"none":                      {},
		"stall":                     {Stall: true},
		"block-send block-recv":     {BlockSend: true, BlockRecv: true},
		"latency=50ms±10ms":         {Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond},
		"bandwidth=1000B/s reset":   {Bandwidth: 1000, Reset: true},
		"block-send latency=1s":     {BlockSend: true, Latency: time.Second},
		"latency=0s±5ms":            {Jitter: 5 * time.Millisecond},
		"stall bandwidth=1B/s":      {Stall: true, Bandwidth: 1},
		"block-recv bandwidth=2B/s": {BlockRecv: true, Bandwidth: 2},
	}
	for want, f := range cases {
		if got := f.String(); got != want {
			t.Errorf("%+v: %q, want %q", f, got, want)
		}
	}
}

// TestTCPBulkAcrossBlockAndHeal moves megabytes across a real socket
// through block and heal in both directions, with partial reads and
// writes, and checks every byte.
func TestTCPBulkAcrossBlockAndHeal(t *testing.T) {
	raw, peer := tcpPair(t)
	l := newTestLayer(t, RealClock{}, 1<<20) // a small bound: writers hit backpressure
	a := l.Wrap(raw, "n1", "n2")
	want := pattern(6 << 20)
	mustSet(t, l, "n2", LinkFault{BlockSend: true, BlockRecv: true})
	kp, ka := collect(peer), collect(a)
	werr := make(chan error, 2)
	go func() { // through the layer, held, then backpressured
		for off := 0; off < len(want); off += 100_000 {
			if _, err := a.Write(want[off:min(off+100_000, len(want))]); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	go func() { // into the layer's held receive side
		_, err := peer.Write(want)
		werr <- err
	}()
	waitFor(t, "the held bound to fill", func() (bool, string) {
		h := l.Held("n2")
		return h >= 1<<20, fmt.Sprintf("%d held", h)
	})
	if len(kp.bytes()) != 0 || len(ka.bytes()) != 0 {
		t.Fatal("bytes crossed a blocked link")
	}
	l.Clear("n2")
	if got := kp.waitLen(t, len(want)); !bytes.Equal(got, want) {
		t.Fatal("bytes sent through the layer arrived changed")
	}
	if got := ka.waitLen(t, len(want)); !bytes.Equal(got, want) {
		t.Fatal("bytes received through the layer arrived changed")
	}
	for range 2 {
		if err := <-werr; err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentWritersUnderChangingFaults has several writers share a
// connection while faults come and go; every writer's frames arrive
// complete and in its order.
func TestConcurrentWritersUnderChangingFaults(t *testing.T) {
	raw, peer := tcpPair(t)
	l := newTestLayer(t, RealClock{}, 64<<10)
	a := l.Wrap(raw, "n1", "n2")
	const writers, frames, size = 4, 2000, 32
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, size)
			for i := range frames {
				binary.BigEndian.PutUint32(buf[0:], uint32(w))
				binary.BigEndian.PutUint32(buf[4:], uint32(i))
				if _, err := a.Write(buf); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	// The reader paces the churn: every 50 frames it read, the fault
	// goes through every kind, ending on one that lets traffic flow.
	stop, progress := make(chan struct{}), make(chan struct{}, 1)
	var toggles atomic.Int64
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		for round := 0; ; round++ {
			select {
			case <-stop:
				l.ClearAll()
				return
			case <-progress:
			}
			last := LinkFault{}
			if round%2 == 1 {
				last = LinkFault{Latency: 200 * time.Microsecond}
			}
			for _, f := range []LinkFault{
				{BlockSend: true},
				{Stall: true},
				{Bandwidth: 1 << 20},
				{Latency: time.Millisecond, Jitter: time.Millisecond},
				last,
			} {
				_ = l.Set("n2", f)
				toggles.Add(1)
			}
		}
	}()
	next := make([]uint32, writers)
	buf := make([]byte, size)
	for read := range writers * frames {
		if _, err := io.ReadFull(peer, buf); err != nil {
			t.Fatal(err)
		}
		w, i := binary.BigEndian.Uint32(buf), binary.BigEndian.Uint32(buf[4:])
		if w >= writers || i != next[w] {
			t.Fatalf("frame %d of writer %d, want %d", i, w, next[w])
		}
		next[w]++
		if read%50 == 0 {
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}
	close(stop)
	<-churned
	wg.Wait()
	t.Logf("%d fault changes during the run", toggles.Load())
}

// discardConn is a net.Conn that takes every write and fills every read,
// for measuring the wrapper alone.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) Read(p []byte) (int, error)       { return len(p), nil }
func (discardConn) Close() error                     { return nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) SetReadDeadline(time.Time) error  { return nil }

func BenchmarkWrapNoFault(b *testing.B) {
	l, err := NewLayer(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)
	for _, bc := range []struct {
		name string
		c    net.Conn
	}{
		{"raw", discardConn{}},
		{"wrapped", l.Wrap(discardConn{}, "n1", "n2")},
	} {
		b.Run(bc.name+"/write", func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				bc.c.Write(buf)
			}
		})
		b.Run(bc.name+"/read", func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				bc.c.Read(buf)
			}
		})
	}
}
