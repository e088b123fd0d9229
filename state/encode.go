package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"slices"

	"github.com/klauspost/compress/s2"

	"spate/internal/radix"
	"spate/internal/varint"
)

// RawSize returns the size of s's uncompressed body, plain sections
// included (an upper bound: varints are counted at their widest).
func (s *Snapshot) RawSize() int {
	n := 4*binary.MaxVarintLen64 + 1 + len(s.Instance) + 2*binary.MaxVarintLen64
	for name, data := range s.Sections {
		n += 2*binary.MaxVarintLen64 + len(name) + len(data)
	}
	for name, ps := range s.Pieces {
		n += 2*binary.MaxVarintLen64 + len(name) + piecesLen(ps)
	}
	for i := range s.Groups {
		g := &s.Groups[i]
		n += 2*binary.MaxVarintLen64 + 1
		if g.raw != nil {
			n += len(g.raw)
			continue
		}
		for _, kv := range g.Entries {
			n += 1 + 2*binary.MaxVarintLen64 + len(kv.Key) + len(kv.Value)
		}
	}
	return n
}

// PlainSize returns the size of s's plain sections (Plain and Pieces):
// what a stored snapshot holds besides its header and its compressed body.
func (s *Snapshot) PlainSize() int {
	n := 0
	for name, data := range s.Sections {
		if s.Plain[name] {
			n += len(data)
		}
	}
	for _, ps := range s.Pieces {
		n += piecesLen(ps)
	}
	return n
}

// Encode returns the stored form of s: header, compressed body, CRC-32C.
// It fails (ErrInvalid) for a snapshot that breaks the rules of Validate
// or whose body would exceed MaxRawSize. ReadHeader on the result gives
// the raw and compressed sizes.
//
// Encode is safe for concurrent use.
func Encode(s *Snapshot) ([]byte, error) {
	parts, err := EncodeParts(s, nil)
	if err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// Scratch is the storage that encoding checkpoints needs, kept from one
// encoding to the next by a goroutine that encodes one at a time (an
// instance's persist): a large state's checkpoint would otherwise allocate
// tens of megabytes each time, which the runtime zeroes and the kernel
// maps in afresh. The zero Scratch is ready to use. What an encoding
// returns aliases its Scratch, and is good until the next one.
type Scratch struct {
	// EncodeCapture's: the entries as Each visits them, their offsets
	// (and the end), the groups they fall in, the sort's handles, and the
	// entries in key order, what the groups it returns hold.
	visit  []byte
	offs   []int
	spans  []span
	hs     []radix.Handle
	radix  []radix.Handle
	sorted []byte
	// EncodeParts's.
	raw   []byte
	body  []byte
	head  [headerSize + binary.MaxVarintLen64]byte
	parts [][]byte
}

// grow returns b with room for n bytes, and a quarter more if it must
// grow: a state that grows would otherwise make each checkpoint move its
// encoding into a new array, zeroed, and again as it outgrew that.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	return slices.Grow(b, n+n/4)
}

// span is one key group of a capture being encoded: its entries start at
// offs[from], dels of them deletions.
type span struct{ kg, from, dels int }

// EncodeParts is Encode without the copy: the stored form in parts, to be
// written one after the other (Store.Put takes them so). The plain
// sections are parts of their own, the caller's storage. With sc non-nil
// the other parts are sc's, good until its next use.
func EncodeParts(s *Snapshot, sc *Scratch) ([][]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	n := s.RawSize()
	if n > MaxRawSize+1<<10 {
		return nil, invalid("%s checkpoint %d: about %d bytes, limit %d", s.Instance, s.ID, n, MaxRawSize)
	}
	if sc == nil {
		sc = &Scratch{}
	}
	raw, plain := appendBody(grow(sc.raw[:0], n-s.PlainSize()), s)
	sc.raw = raw
	if len(raw)+plain > MaxRawSize {
		return nil, invalid("%s checkpoint %d: %d bytes, limit %d", s.Instance, s.ID, len(raw)+plain, MaxRawSize)
	}
	head := binary.AppendUvarint(sc.head[:headerSize], uint64(plain))
	parts := append(sc.parts[:0], head)
	for _, name := range sectionNames(s) {
		if ps, ok := s.Pieces[name]; ok {
			for _, p := range ps {
				if len(p) > 0 {
					parts = append(parts, p)
				}
			}
		} else if s.Plain[name] && len(s.Sections[name]) > 0 {
			parts = append(parts, s.Sections[name])
		}
	}
	sc.body = grow(sc.body[:0], s2.MaxEncodedLen(len(raw)))
	sc.body = s2.Encode(sc.body[:cap(sc.body)], raw)
	parts = append(parts, sc.body)
	sc.parts = parts
	stored := len(head) - headerSize
	for _, p := range parts[1:] {
		stored += len(p)
	}
	copy(head, magic)
	head[4], head[5], head[6], head[7] = version, CodecS2, 0, 0
	binary.LittleEndian.PutUint64(head[8:], uint64(len(raw)))
	binary.LittleEndian.PutUint64(head[16:], uint64(stored))
	crc := crc32.Update(crc32.Checksum(head[:24], castagnoli), castagnoli, head[headerSize:])
	for _, p := range parts[1:] {
		crc = crc32.Update(crc, castagnoli, p)
	}
	binary.LittleEndian.PutUint32(head[24:], crc)
	return parts, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// sectionNames returns the names of s's sections, ascending.
func sectionNames(s *Snapshot) []string {
	names := make([]string, 0, len(s.Sections)+len(s.Pieces))
	for name := range s.Sections {
		names = append(names, name)
	}
	for name := range s.Pieces {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// piecesLen is the length of a section given in pieces.
func piecesLen(ps [][]byte) int {
	n := 0
	for _, p := range ps {
		n += len(p)
	}
	return n
}

// appendBody appends s's raw body to b; plain is the length of the plain
// sections' data, which the body does not hold.
func appendBody(b []byte, s *Snapshot) (_ []byte, plain int) {
	b = appendString(b, s.Instance)
	b = binary.AppendUvarint(b, s.Gen)
	b = binary.AppendUvarint(b, s.ID)
	var flags byte
	if s.Full {
		flags |= flagFull
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, s.Base)
	b = binary.AppendUvarint(b, s.Parent)

	names := sectionNames(s)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = appendString(b, name)
		if ps, ok := s.Pieces[name]; ok {
			n := piecesLen(ps)
			b = append(b, flagPlain)
			b = binary.AppendUvarint(b, uint64(n))
			plain += n
		} else if data := s.Sections[name]; s.Plain[name] {
			b = append(b, flagPlain)
			b = binary.AppendUvarint(b, uint64(len(data)))
			plain += len(data)
		} else {
			b = append(b, 0)
			b = appendBytes(b, data)
		}
	}

	b = binary.AppendUvarint(b, uint64(len(s.Groups)))
	for i := range s.Groups {
		g := &s.Groups[i]
		b = binary.AppendUvarint(b, uint64(g.KG))
		flags = 0
		if g.Reset {
			flags |= flagReset
		}
		b = append(b, flags)
		if g.raw != nil {
			b = binary.AppendUvarint(b, uint64(g.n))
			b = append(b, g.raw...)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(g.Entries)))
		for _, kv := range g.Entries {
			b = append(appendEntry(b, len(kv.Key), kv.Deleted), kv.Key...)
			if !kv.Deleted {
				b = appendBytes(b, kv.Value)
			}
		}
	}
	return b, plain
}

// appendEntry appends the flags and the length of the key of an entry
// in the stored form; the key, then the value (unless deleted), follow.
func appendEntry(b []byte, keyLen int, deleted bool) []byte {
	if deleted {
		b = append(b, flagDeleted)
	} else {
		b = append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(keyLen))
}

// EncodeCapture runs c.Each and returns the captured groups in snapshot
// form: by key group, each group's entries in the stored form (keys in
// byte order, values encoded by enc, which appends the encoding of *v to
// dst and returns it), with the resets of a delta capture. They live in
// sc's storage when sc is not nil, and the result is then good until sc's
// next use. enc is called with the table's lock held, on the goroutine
// that calls EncodeCapture; it must not keep v.
//
// Each entry is written in its stored form as Each visits it, and the
// entries of each group are put in key order afterwards, once the
// capture has ended: the encoding of a snapshot then copies them as they
// are, with no list of entries between.
//
// When EncodeCapture returns, the capture has ended (see Capture.Each).
func EncodeCapture[V any](c *Capture[V], enc func(dst []byte, v *V) []byte, sc *Scratch) []GroupData {
	if sc == nil {
		sc = &Scratch{}
	}
	// Room for what the previous capture took and a quarter more, or for
	// this one's entries at the previous one's bytes per entry if that is
	// more: a state that grows (every run starts empty) would otherwise
	// move the encoding into a new, zeroed array several times a capture
	// as appending outgrew it.
	need := len(sc.visit) + len(sc.visit)/4
	if n := len(sc.offs) - 1; n > 0 {
		need = max(need, c.Len()*(len(sc.visit)/n+1))
	}
	buf, offs, spans := grow(sc.visit[:0], need), slices.Grow(sc.offs[:0], c.Len()+1), sc.spans[:0]
	c.Each(func(kg int, key string, v *V, deleted bool) {
		if len(spans) == 0 || spans[len(spans)-1].kg != kg {
			spans = append(spans, span{kg: kg, from: len(offs)})
		}
		offs = append(offs, len(buf))
		buf = append(appendEntry(buf, len(key), deleted), key...)
		if deleted {
			spans[len(spans)-1].dels++
			return
		}
		// The value's length goes before it: one byte is kept for it, and
		// a value of 128 bytes or more moves over to make room.
		at := len(buf)
		buf = enc(append(buf, 0), v)
		if n := len(buf) - at - 1; n < 0x80 {
			buf[at] = byte(n)
		} else {
			w := varint.Len(uint64(n))
			buf = append(buf, make([]byte, w-1)...)
			copy(buf[at+w:], buf[at+1:at+1+n])
			varint.Put(buf[at:], uint64(n))
		}
	})
	offs = append(offs, len(buf)) // the end of the last entry
	sc.visit, sc.offs, sc.spans = buf, offs, spans
	sorted := grow(sc.sorted[:0], len(buf))[:len(buf)]
	sc.sorted = sorted

	resets := c.Resets()
	out := make([]GroupData, 0, len(spans)+len(resets))
	ri := 0
	addResets := func(below int) {
		for ri < len(resets) && resets[ri] < below {
			out = append(out, GroupData{KG: resets[ri], Reset: true})
			ri++
		}
	}
	for i, sp := range spans {
		to := len(offs) - 1
		if i+1 < len(spans) {
			to = spans[i+1].from
		}
		addResets(sp.kg)
		start, end := offs[sp.from], offs[to]
		sortEntries(buf, offs[sp.from:to+1], sorted[start:end], sc)
		g := GroupData{KG: sp.kg, raw: sorted[start:end:end], n: to - sp.from, dels: sp.dels}
		if ri < len(resets) && resets[ri] == sp.kg {
			g.Reset = true
			ri++
		}
		out = append(out, g)
	}
	addResets(MaxGroups)
	return out
}

// sortEntries writes the entries of buf that start at offs[:len-1] (each
// ends where the next starts; the last offset is the end of the last) to
// dst in key order, byte order. It orders 16-byte handles (8 bytes of the
// key as a big-endian integer, and the entry's index): the first 8 bytes
// of the keys, or, if some key is longer, the 8 bytes after the prefix
// every key shares, by a radix sort on the bits where they differ, then
// whole keys where those tie. A capture's sort is most of what encoding it
// costs otherwise.
func sortEntries(buf []byte, offs []int, dst []byte, sc *Scratch) {
	n := len(offs) - 1
	key := func(i int) []byte {
		k, _ := str(buf, offs[i]+1)
		return k
	}
	if n < 2 {
		copy(dst, buf[offs[0]:offs[n]])
		return
	}
	hs := slices.Grow(sc.hs[:0], n)[:n]
	sc.hs = hs
	long := false
	for i := range n {
		k := key(i)
		long = long || len(k) > 8
		hs[i] = radix.Handle{Key: prefix8(k), I: i}
	}
	if long {
		// The 8 bytes after the shared prefix, if there is one.
		first := key(0)
		lcp := len(first)
		for i := 1; i < n && lcp > 0; i++ {
			k := key(i)
			m := min(lcp, len(k))
			j := 0
			for j < m && k[j] == first[j] {
				j++
			}
			lcp = j
		}
		if lcp > 0 {
			for i := range hs {
				hs[i].Key = prefix8(key(i)[lcp:])
			}
		}
	}
	packKeys(hs)
	sc.radix = radix.SortBuf(hs, sc.radix)
	for i := 0; i < n; { // ties of the 8 bytes: by the whole key
		j := i + 1
		for j < n && hs[j].Key == hs[i].Key {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(hs[i:j], func(a, b radix.Handle) int { return bytes.Compare(key(a.I), key(b.I)) })
		}
		i = j
	}
	at := 0
	for _, h := range hs {
		at += copy(dst[at:], buf[offs[h.I]:offs[h.I+1]])
	}
}

// prefix8 is the first 8 bytes of k as a big-endian integer, k padded
// with zeros if it is shorter.
func prefix8(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// packKeys rewrites the keys of hs, keeping their order and their ties,
// into fewer bytes where it can: of each byte in which some keys differ,
// only the span from its lowest to its highest differing bit is kept (the
// other bits are the same in every key), the spans back to back. The
// radix sort then makes one pass per byte of the packed keys: the
// generator's keys are decimal digits, which differ in their low four
// bits, so six digits take three passes instead of six.
func packKeys(hs []radix.Handle) {
	var diff uint64
	for _, h := range hs {
		diff |= h.Key ^ hs[0].Key
	}
	if diff&^lowNibbles == 0 {
		// Only low nibbles differ (digits do): the nibbles side by side,
		// less the constant ones below the lowest that differs, a few
		// operations a key. Packing is a selection of bits, so the packed
		// keys differ where the packed diff says.
		shift := uint(bits.TrailingZeros32(nibbles(diff)))
		for i := range hs {
			hs[i].Key = uint64(nibbles(hs[i].Key) >> shift)
		}
		return
	}
	type step struct {
		shift, width uint
		mask         uint64
	}
	var steps [8]step
	ns, width, varying := 0, uint(0), 0
	for shift := 56; shift >= 0; shift -= 8 {
		m := uint8(diff >> shift)
		if m == 0 {
			continue
		}
		lo := uint(bits.TrailingZeros8(m))
		w := uint(bits.Len8(m)) - lo
		steps[ns] = step{shift: uint(shift) + lo, width: w, mask: 1<<w - 1}
		ns++
		width += w
		varying++
	}
	if int(width+7)/8 >= varying {
		return // nothing to gain
	}
	for i := range hs {
		k, v := hs[i].Key, uint64(0)
		for _, s := range steps[:ns] {
			v = v<<s.width | k>>s.shift&s.mask
		}
		hs[i].Key = v
	}
}

const lowNibbles = 0x0f0f0f0f0f0f0f0f

// nibbles is the low nibbles of k's eight bytes side by side, in order.
func nibbles(k uint64) uint32 {
	k &= lowNibbles
	k = (k | k>>4) & 0x00ff00ff00ff00ff
	k = (k | k>>8) & 0x0000ffff0000ffff
	return uint32(k | k>>16)
}
