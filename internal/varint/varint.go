// Package varint is the unsigned and zigzag varint code shared by the wire
// batch codec and the backup's chunks: small functions with no calls, so
// that they inline into the hot loops that use them.
package varint

import "math/bits"

// At decodes the uvarint at b[i:] and returns it and its width; a width of
// 0 means truncated, below 0 an overflow of 64 bits (as binary.Uvarint,
// except that ten continuation bytes are an overflow even at the end of b).
func At(b []byte, i int) (uint64, int) {
	var x uint64
	var s uint
	for j := i; j < len(b); j++ {
		c := b[j]
		if c < 0x80 {
			if s == 63 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<s, j - i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
		if s > 63 {
			return 0, -1
		}
	}
	return 0, 0
}

// Put is binary.PutUvarint, small enough to inline.
func Put(b []byte, x uint64) int {
	i := 0
	for x >= 0x80 {
		b[i] = byte(x) | 0x80
		x >>= 7
		i++
	}
	b[i] = byte(x)
	return i + 1
}

// Len is the encoded size of x.
func Len(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// Zigzag maps a signed integer to an unsigned one, small values small.
func Zigzag(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

// Unzigzag inverts Zigzag.
func Unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
