package wire

import (
	"encoding/binary"
	"net"
)

// yamux's frame header: version, type, flags, stream ID, length.
const (
	yamuxHeaderSize = 12
	yamuxTypeData   = 0
)

// Coalesce wraps the connection a yamux session runs over so that a data
// frame's header and its body reach the connection in one write.
// yamux's send loop writes them with two calls; on a TCP connection with
// Nagle's algorithm off each is a segment of its own, and the receiver
// wakes for each. Joined, a frame costs one write and one wake-up.
//
// Only the session's send loop may write to the returned connection
// (yamux has one); everything else passes through. A header whose frame
// has no body (a window update, a stream's open or close, a ping) is
// written at once.
func Coalesce(c net.Conn) net.Conn {
	return &coalescing{Conn: c}
}

type coalescing struct {
	net.Conn
	hdr  [yamuxHeaderSize]byte
	held bool   // hdr waits for its body
	buf  []byte // the header and the body, joined
}

func (c *coalescing) Write(p []byte) (int, error) {
	if c.held {
		c.held = false
		c.buf = append(append(c.buf[:0], c.hdr[:]...), p...)
		n, err := c.Conn.Write(c.buf)
		if len(c.buf) > 64<<10 {
			c.buf = nil // a rare large frame: not kept
		}
		return max(n-yamuxHeaderSize, 0), err
	}
	if len(p) == yamuxHeaderSize && p[1] == yamuxTypeData && binary.BigEndian.Uint32(p[8:]) > 0 {
		copy(c.hdr[:], p)
		c.held = true
		return len(p), nil
	}
	return c.Conn.Write(p)
}
