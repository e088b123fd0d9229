package state

import (
	"hash/maphash"
	"unsafe"
)

// index maps the keys of one key group to their entries: open addressing
// with linear probing over a power-of-two array of slots, each holding a
// key's 64-bit hash and its entry.
//
// It replaces a Go map[string]*Entry because a lookup at a large state is
// a chain of cache misses, and the map's is longer: its control word, the
// slot's key header, the key's bytes elsewhere on the heap, then the entry.
// Here the slot has the hash and the entry side by side (four slots to a
// cache line, so a probe seldom leaves it), the full hash settles almost
// every mismatch without touching an entry, and a short key's bytes are
// inside its entry (Entry.short), next to what Mut reads next: a lookup is
// the slot's line and the entry's.
//
// Deletion shifts the slots after the hole back (no tombstones), so a
// probe stops at the first free slot. The index never shrinks, as a Go
// map does not.
type index[V any] struct {
	slots []islot[V] // nil while empty; else len is a power of two
	n     int        // entries
}

type islot[V any] struct {
	h uint64
	e *Entry[V] // nil: free
}

// indexLoad is the fullest an index gets, as n/len(slots) = 3/4.
const indexLoad = 4

func (x *index[V]) full(n int) bool { return n*indexLoad > len(x.slots)*(indexLoad-1) }

// sizeFor makes the index empty with room for n entries without growing.
func (x *index[V]) sizeFor(n int) {
	size := 8
	for n*indexLoad > size*(indexLoad-1) {
		size *= 2
	}
	x.slots, x.n = make([]islot[V], size), 0
}

// find returns the entry of key, whose hash is h, or nil.
func (x *index[V]) find(h uint64, key []byte) *Entry[V] {
	if x.n == 0 {
		return nil
	}
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && s.e.key == string(key) {
			return s.e
		}
	}
}

// put adds e, whose key has hash h and is not in the index.
func (x *index[V]) put(h uint64, e *Entry[V]) {
	if x.full(x.n + 1) {
		x.grow()
	}
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].e != nil {
		i = (i + 1) & mask
	}
	x.slots[i] = islot[V]{h: h, e: e}
	x.n++
}

func (x *index[V]) grow() {
	old := x.slots
	x.sizeFor(max(2*len(old), 1))
	mask := uint64(len(x.slots) - 1)
	for _, s := range old {
		if s.e == nil {
			continue
		}
		i := s.h & mask
		for x.slots[i].e != nil {
			i = (i + 1) & mask
		}
		x.slots[i] = s
		x.n++
	}
}

// remove takes key, whose hash is h, out of the index and returns its
// entry (nil if it was not there).
func (x *index[V]) remove(h uint64, key []byte) *Entry[V] {
	if x.n == 0 {
		return nil
	}
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for ; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && s.e.key == string(key) {
			break
		}
	}
	e := x.slots[i].e
	// Close the hole at i: a later slot of the same run moves into it if
	// the hole is on its probe path, that is, no farther from its home
	// slot than the slot itself is.
	for j := (i + 1) & mask; x.slots[j].e != nil; j = (j + 1) & mask {
		if (j-x.slots[j].h)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = islot[V]{}
	x.n--
	return e
}

// hashKey is the hash the tables of this process index key by.
func hashKey(key []byte) uint64 { return maphash.Bytes(keySeed, key) }

var keySeed = maphash.MakeSeed()

// bytesOf is s's bytes, for reading only.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
