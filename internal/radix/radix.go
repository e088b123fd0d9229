// Package radix sorts 64-bit keys with their indexes: a least significant
// byte first radix sort, one counting pass per byte in which the keys
// differ. For large sorts whose comparisons would chase pointers (the
// keys of a capture being encoded, the firings of a window), ordering
// these 16-byte handles is several times cheaper than a comparison sort.
package radix

import (
	"cmp"
	"slices"
)

// Handle is a sort key and the index of what it stands for.
type Handle struct {
	Key uint64
	I   int
}

// Sort orders hs by Key, stably: handles with equal keys keep their order.
// Below a few hundred handles a comparison sort is quicker.
func Sort(hs []Handle) { SortBuf(hs, nil) }

// SortBuf is Sort with buf as its storage, if it is large enough; it
// returns the storage it used, for the next sort.
func SortBuf(hs, buf []Handle) []Handle {
	if len(hs) < 256 {
		slices.SortStableFunc(hs, func(a, b Handle) int { return cmp.Compare(a.Key, b.Key) })
		return buf
	}
	var diff uint64 // the bits in which some key differs from the first
	for _, h := range hs {
		diff |= h.Key ^ hs[0].Key
	}
	if cap(buf) < len(hs) {
		buf = make([]Handle, len(hs))
	}
	src, dst := hs, buf[:len(hs)]
	for shift := 0; shift < 64; shift += 8 {
		if diff>>shift&0xff == 0 {
			continue
		}
		var at [256]int
		for _, h := range src {
			at[h.Key>>shift&0xff]++
		}
		sum := 0
		for b, n := range at {
			at[b], sum = sum, sum+n
		}
		for _, h := range src {
			b := h.Key >> shift & 0xff
			dst[at[b]] = h
			at[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &hs[0] {
		copy(hs, src)
	}
	return buf
}
