package netfault

import (
	"encoding/binary"
	"net"
)

// yamux's frame header: version, type, flags (2), stream id (4), length
// (4, big-endian); only a data frame (type 0) has a body, of length bytes.
const (
	frameHeader = 12
	frameData   = 0
)

// frameCursor follows a byte stream of yamux frames, to tell a frame's
// boundary from its middle.
type frameCursor struct {
	hdr  [frameHeader]byte
	have int    // header bytes seen of the current frame
	body uint32 // body bytes still to come
}

// advance takes in p, the next bytes of the stream.
func (f *frameCursor) advance(p []byte) {
	for len(p) > 0 {
		if f.body > 0 {
			k := min(uint32(len(p)), f.body)
			f.body -= k
			p = p[k:]
			continue
		}
		k := copy(f.hdr[f.have:], p)
		f.have += k
		p = p[k:]
		if f.have == frameHeader {
			f.have = 0
			if f.hdr[1] == frameData {
				f.body = binary.BigEndian.Uint32(f.hdr[8:12])
			}
		}
	}
}

// left is the number of bytes to the end of the current frame as far as
// it is known (the rest of the header, then the body); 0 at a boundary.
func (f *frameCursor) left() int {
	if f.have > 0 {
		return frameHeader - f.have
	}
	return int(f.body)
}

// boundaryIn is the length of p's prefix that ends the current frame: 0
// at a boundary, len(p) if the frame goes on past p.
func (f frameCursor) boundaryIn(p []byte) int {
	n := 0
	for n < len(p) && f.left() > 0 {
		k := min(f.left(), len(p)-n)
		f.advance(p[n : n+k])
		n += k
	}
	return n
}

// Framed tells the layer that c carries yamux frames from now on: with
// Config.FrameAligned, a fault holds its traffic only between two frames,
// never inside one. Other connections are left as they are.
func Framed(c net.Conn) {
	if fc, ok := c.(*faultConn); ok && fc.layer.frameAligned {
		fc.framed.Store(true)
	}
}
