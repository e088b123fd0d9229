package netfault

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"
)

// dataFrame is a yamux data frame of body.
func dataFrame(stream uint32, body string) []byte {
	f := make([]byte, frameHeader, frameHeader+len(body))
	f[0], f[1] = 0, frameData
	binary.BigEndian.PutUint32(f[4:8], stream)
	binary.BigEndian.PutUint32(f[8:12], uint32(len(body)))
	return append(f, body...)
}

func TestFrameCursorFindsBoundaries(t *testing.T) {
	var f frameCursor
	a, b := dataFrame(1, "hello"), dataFrame(3, "")
	ping := make([]byte, frameHeader)
	ping[1] = 2 // a ping: its length field is a value, not a body
	binary.BigEndian.PutUint32(ping[8:12], 77)
	stream := append(append(append([]byte(nil), a...), ping...), b...)
	for i, c := range stream {
		f.advance([]byte{c})
		atEnd := i == len(a)-1 || i == len(a)+len(ping)-1 || i == len(stream)-1
		if atEnd != (f.left() == 0) {
			t.Fatalf("after byte %d: %d left, boundary %v", i, f.left(), atEnd)
		}
	}
	var g frameCursor
	g.advance(a[:7])
	if n := g.boundaryIn(stream[7:]); n != len(a)-7 {
		t.Fatalf("the frame ends %d bytes on, want %d", n, len(a)-7)
	}
}

// With FrameAligned, a hold that starts inside a frame lets the rest of
// the frame through, in either direction, and holds the next one; without
// it the hold cuts the frame (the product's behaviour, a real network's).
func TestFramedHoldFallsBetweenFrames(t *testing.T) {
	first, second := dataFrame(1, "the first frame"), dataFrame(1, "the second")
	for _, dir := range []string{"recv", "send"} {
		t.Run(dir, func(t *testing.T) {
			raw, peer := tcpPair(t)
			l, err := NewLayer(Config{Clock: RealClock{}, Rand: rand.New(rand.NewPCG(1, 2)), FrameAligned: true})
			if err != nil {
				t.Fatal(err)
			}
			a := l.Wrap(raw, "n1", "n2")
			Framed(a)
			// recv: the peer writes, the wrapped side reads; send: the
			// other way round.
			from, k, fault := io.Writer(peer), collect(a), LinkFault{BlockRecv: true}
			if dir == "send" {
				from, k, fault = a, collect(peer), LinkFault{BlockSend: true}
			}
			if _, err := from.Write(first[:5]); err != nil {
				t.Fatal(err)
			}
			k.waitLen(t, 5)
			mustSet(t, l, "n2", fault)
			if _, err := from.Write(first[5:]); err != nil {
				t.Fatal(err)
			}
			if got := k.waitLen(t, len(first)); string(got) != string(first) {
				t.Fatalf("the frame under way: %q", got)
			}
			if _, err := from.Write(second); err != nil {
				t.Fatal(err)
			}
			if dir == "send" {
				waitFor(t, "the second frame to be held", func() (bool, string) {
					return l.Held("n2") == len(second), ""
				})
			}
			if got := k.bytes(); len(got) != len(first) {
				t.Fatalf("%d bytes through a hold, want the first frame's %d", len(got), len(first))
			}
			l.Clear("n2")
			if got := k.waitLen(t, len(first)+len(second)); string(got[len(first):]) != string(second) {
				t.Fatalf("after heal: %q", got[len(first):])
			}
		})
	}
}
