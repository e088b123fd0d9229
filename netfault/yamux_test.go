package netfault

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
)

// yamuxConfig is close to the product's (wire.YamuxConfig): keepalive off,
// logging off.
func yamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.EnableKeepAlive = false
	c.LogOutput = io.Discard
	return c
}

// link is one yamux session over loopback TCP between two processes, each
// end wrapped by its process's Layer.
type link struct {
	client, server *yamux.Session
}

func newLink(t *testing.T, lc *Layer, cname string, ls *Layer, sname string) link {
	t.Helper()
	rc, rs := tcpPair(t)
	cc := lc.Wrap(rc, cname, sname)
	sc := ls.Wrap(rs, sname, cname)
	client, err := yamux.Client(cc, yamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	server, err := yamux.Server(sc, yamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return link{client, server}
}

// streamPair opens a stream from the client and accepts it on the server,
// with a first exchange so both sides know it.
func (l link) streamPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	cs, err := l.client.Open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	ss, err := l.server.Accept()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(ss, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("first exchange: %q, %v", buf, err)
	}
	return cs, ss
}

func closedWithin(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(20 * time.Second):
		return false
	}
}

func TestYamuxPartitionStallsStreamsAndHealDeliversInOrder(t *testing.T) {
	l1, l2 := newTestLayer(t, RealClock{}, 0), newTestLayer(t, RealClock{}, 0)
	lk := newLink(t, l1, "n1", l2, "n2")
	cs, ss := lk.streamPair(t)
	kc, ks := collect(cs), collect(ss)

	mustSet(t, l1, "n2", LinkFault{BlockSend: true, BlockRecv: true})
	mustSet(t, l2, "n1", LinkFault{BlockSend: true, BlockRecv: true})
	var want []byte
	for i := range 100 {
		msg := fmt.Appendf(nil, "msg %03d\n", i)
		// A yamux stream write returns once the session has written the
		// frame to the connection: here, into the held bytes.
		if _, err := cs.Write(msg); err != nil {
			t.Fatalf("write %d across the cut: %v", i, err)
		}
		want = append(want, msg...)
	}
	if _, err := ss.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	if h := l1.Held("n2"); h < len(want) {
		t.Fatalf("held %d bytes toward n2, want at least the %d written", h, len(want))
	}
	if got := ks.bytes(); len(got) != 0 {
		t.Fatalf("server read %q across the cut", got)
	}
	if got := kc.bytes(); len(got) != 0 {
		t.Fatalf("client read %q across the cut", got)
	}
	if lk.client.IsClosed() || lk.server.IsClosed() {
		t.Fatal("a partition closed the session")
	}

	l1.ClearAll()
	l2.ClearAll()
	if got := ks.waitLen(t, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("after heal the server read %q", got)
	}
	if got := kc.waitLen(t, 5); string(got) != "reply" {
		t.Fatalf("after heal the client read %q", got)
	}
	// The session is whole: a new stream works.
	cs2, ss2 := lk.streamPair(t)
	cs2.Close()
	ss2.Close()
}

func TestYamuxOneWayPartition(t *testing.T) {
	l1, l2 := newTestLayer(t, RealClock{}, 0), newTestLayer(t, RealClock{}, 0)
	lk := newLink(t, l1, "n1", l2, "n2")
	cs, ss := lk.streamPair(t)
	ks := collect(ss)
	// n1 -> n2 cut, at both ends as PartitionPlan places it; n2 -> n1
	// flows.
	mustSet(t, l1, "n2", LinkFault{BlockSend: true})
	mustSet(t, l2, "n1", LinkFault{BlockRecv: true})
	if _, err := cs.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Write([]byte("flows")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(cs, buf); err != nil || string(buf) != "flows" {
		t.Fatalf("the open direction: %q, %v", buf, err)
	}
	if got := ks.bytes(); len(got) != 0 {
		t.Fatalf("read %q across a one-way cut", got)
	}
	l2.Clear("n1") // half healed: still cut at the sender
	if _, err := ss.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(cs, buf); err != nil || string(buf) != "again" {
		t.Fatalf("the open direction: %q, %v", buf, err)
	}
	if got := ks.bytes(); len(got) != 0 {
		t.Fatalf("read %q while the sender still blocks", got)
	}
	l1.Clear("n2")
	if got := ks.waitLen(t, 4); string(got) != "held" {
		t.Fatalf("after heal: %q", got)
	}
}

func TestYamuxResetKillsSession(t *testing.T) {
	l1, l2 := newTestLayer(t, RealClock{}, 0), newTestLayer(t, RealClock{}, 0)
	lk := newLink(t, l1, "n1", l2, "n2")
	cs, ss := lk.streamPair(t)
	mustSet(t, l1, "n2", LinkFault{Reset: true})
	if !closedWithin(lk.client.CloseChan()) {
		t.Fatal("the resetting end's session is still open")
	}
	if !closedWithin(lk.server.CloseChan()) {
		t.Fatal("the far end's session is still open")
	}
	if _, err := io.ReadFull(ss, make([]byte, 1)); err == nil {
		t.Fatal("a stream of a reset session still reads")
	}
	if _, err := cs.Write([]byte("x")); err == nil {
		t.Fatal("a stream of a reset session still writes")
	}
}

func TestYamuxLatencyKeepsOrder(t *testing.T) {
	l1, l2 := newTestLayer(t, RealClock{}, 0), newTestLayer(t, RealClock{}, 0)
	lk := newLink(t, l1, "n1", l2, "n2")
	cs, ss := lk.streamPair(t)
	ks := collect(ss)
	mustSet(t, l1, "n2", LinkFault{Latency: 2 * time.Millisecond, Jitter: 2 * time.Millisecond, Bandwidth: 4 << 20})
	want := pattern(300 << 10) // beyond the 256 KiB stream window: window updates cross too
	for off := 0; off < len(want); off += 7000 {
		if _, err := cs.Write(want[off:min(off+7000, len(want))]); err != nil {
			t.Fatal(err)
		}
	}
	if got := ks.waitLen(t, len(want)); !bytes.Equal(got, want) {
		t.Fatal("bytes changed under latency, jitter and bandwidth")
	}
}
