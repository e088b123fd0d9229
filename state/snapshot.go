package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"spate/internal/varint"
)

// Snapshot is one checkpoint of one operator instance: a full snapshot
// holds the whole keyed state, a delta the changes since its parent.
type Snapshot struct {
	Instance string // the operator instance, e.g. "count#0"
	Gen      uint64 // the placement generation that wrote it
	ID       uint64 // checkpoint id, >= 1, increasing per instance
	Full     bool
	Base     uint64 // the full snapshot this chain starts at (== ID when Full)
	Parent   uint64 // the previous snapshot of the chain (0 when Full)

	// Sections is the runtime's own data (input positions, output
	// counters, backup, sink offsets), opaque here. Merge keeps, per name,
	// the latest snapshot's section.
	Sections map[string][]byte
	// Plain names the sections stored as they are, beside the compressed
	// body: data that is compact already, costs more CPU to compress than
	// the bytes it saves, and is read only by a restore (the upstream
	// backup's records). Merge keeps a section plain if it was.
	Plain map[string]bool
	// Pieces are plain sections given in pieces, stored one after the
	// other: what Encode writes without joining them first (the upstream
	// backup's mark, which points into its chunks). A name is in Sections
	// or in Pieces, not both. Decode gives Sections only, and Merge reads
	// Sections only.
	Pieces map[string][][]byte

	Groups []GroupData // by KG, ascending, each KG once
}

// GroupData is the state of one key group in a snapshot. In a delta,
// Reset says that the group's earlier state is discarded (the group was
// dropped, or created or restored since the parent): Entries is then its
// whole content. Without Reset, Entries are changes: a later value replaces
// an earlier one, a deletion removes the key. A full snapshot has no
// resets and no deletions.
type GroupData struct {
	KG      int
	Reset   bool
	Entries []KV // by Key, ascending (byte order), each key once

	// A group decoded by DecodeLazy, or made by EncodeCapture, keeps its
	// entries in the stored form instead, checked already: n of them in
	// raw, dels of them deletions. Entries is then nil. Len and KVs read
	// either form.
	raw  []byte
	n    int
	dels int
}

// Len returns the number of entries of g, deletions included.
func (g *GroupData) Len() int {
	if g.raw != nil {
		return g.n
	}
	return len(g.Entries)
}

// KVs returns the entries of g as a list: Entries, or, for a group in the
// stored form, a new list whose keys and values alias it.
func (g *GroupData) KVs() []KV {
	if g.raw == nil {
		return g.Entries
	}
	out := make([]KV, 0, g.n)
	c := cursor{g: g}
	for c.next(); c.ok; c.next() {
		out = append(out, c.kv)
	}
	return out
}

// KV is one key of a group: its encoded value, or its deletion (Value nil).
type KV struct {
	Key     []byte
	Value   []byte
	Deleted bool
}

// The stored form (see doc.go):
//
//	header (28 bytes, little endian)
//	  0  4  magic "SPCK"
//	  4  1  version (2; 1 is still read)
//	  5  1  codec of the body: 2 S2 (what Encode writes), 1 zstd (what
//	        it wrote before; read still, in either version)
//	  6  2  reserved, zero
//	  8  8  raw length: the body before compression
//	 16  8  stored length: what follows the header
//	 24  4  CRC-32C (Castagnoli) of header bytes 0..24 and what follows
//	version 2: u plain length, the plain sections' data (in name order),
//	  then the body, compressed
//	version 1: the body, compressed
//
// The raw body is a sequence of uvarints (u), varints and byte strings
// (s = u length, then the bytes):
//
//	s instance, u gen, u id, byte flags (1: full), u base, u parent
//	u sections, then per section: s name, then (version 2) byte flags
//	  (1: plain) and u length if plain, else s data (names ascending)
//	u groups, then per group: u kg, byte flags (1: reset), u entries,
//	  then per entry: byte flags (1: deleted), s key, and s value unless deleted
const (
	magic      = "SPCK"
	version    = 2
	headerSize = 28

	// MaxRawSize bounds the uncompressed body of a snapshot (1 GiB):
	// Encode refuses to write a bigger one and Decode to read one.
	MaxRawSize = 1 << 30
)

// The codecs of a stored body.
const (
	CodecZstd = 1
	CodecS2   = 2
)

const (
	flagFull    = 1
	flagReset   = 1
	flagDeleted = 1
	flagPlain   = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The zstd decoder, for the files written before S2, is made when the
// package is initialised, not at first use: it keeps channels, and under
// testing/synctest a channel made inside one bubble (the first run that
// restores) is fatal to use in another.
func init() {
	_, _ = decoder().DecodeAll(zstdEmpty, nil)
}

// zstdEmpty is a zstd frame of nothing.
var zstdEmpty = []byte{0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x01, 0x00, 0x00}

var (
	decoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(2),
			zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderMaxMemory(MaxRawSize))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// Header is the fixed-size head of a stored snapshot.
type Header struct {
	Version int
	Codec   int   // CodecS2 or CodecZstd
	Raw     int64 // uncompressed body size
	Stored  int64 // compressed body size: the file is HeaderSize + Stored bytes
}

// HeaderSize is the size of a stored snapshot's header.
const HeaderSize = headerSize

// ReadHeader reads the header of a stored snapshot without decompressing
// or checking the body: enough to learn its sizes. It checks the magic, the
// version and the lengths, not the checksum. Errors wrap ErrCorrupt.
func ReadHeader(b []byte) (Header, error) {
	if len(b) < headerSize {
		return Header{}, corrupt("truncated header: %d bytes, want %d", len(b), headerSize)
	}
	if string(b[:4]) != magic {
		return Header{}, corrupt("bad magic %q", b[:4])
	}
	if b[4] != version && b[4] != 1 {
		return Header{}, corrupt("unknown version %d", b[4])
	}
	if b[5] != CodecZstd && b[5] != CodecS2 {
		return Header{}, corrupt("unknown codec %d", b[5])
	}
	if b[6] != 0 || b[7] != 0 {
		return Header{}, corrupt("reserved header bytes not zero")
	}
	raw := binary.LittleEndian.Uint64(b[8:])
	stored := binary.LittleEndian.Uint64(b[16:])
	if raw > MaxRawSize {
		return Header{}, corrupt("bad length: raw body of %d bytes, limit %d", raw, MaxRawSize)
	}
	if stored > MaxRawSize+MaxRawSize/4 { // S2 and zstd expand incompressible data only a little
		return Header{}, corrupt("bad length: stored body of %d bytes", stored)
	}
	return Header{Version: int(b[4]), Codec: int(b[5]), Raw: int64(raw), Stored: int64(stored)}, nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w snapshot: "+format, append([]any{ErrInvalid}, args...)...)
}

// Validate checks the rules of the format: ids, sorted and unique groups
// and keys, no deletions or resets in a full snapshot, key groups in range.
func (s *Snapshot) Validate() error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("%s checkpoint %d: %s", s.Instance, s.ID, err)
	}
	return nil
}

func (s *Snapshot) validate() error {
	if err := s.validateHead(); err != nil {
		return err
	}
	for i := range s.Groups {
		g := &s.Groups[i]
		if g.raw != nil { // checked when it was decoded or encoded
			if g.dels > 0 && (s.Full || g.Reset) {
				return fmt.Errorf("key group %d: %d deletions in a full group", g.KG, g.dels)
			}
			continue
		}
		for j := range g.Entries {
			kv := &g.Entries[j]
			if j > 0 && bytes.Compare(g.Entries[j-1].Key, kv.Key) >= 0 {
				return fmt.Errorf("key group %d: key %q after %q: not ascending", g.KG, kv.Key, g.Entries[j-1].Key)
			}
			if kv.Deleted && (s.Full || g.Reset) {
				return fmt.Errorf("key group %d: deletion of %q in a full group", g.KG, kv.Key)
			}
			if kv.Deleted && kv.Value != nil {
				return fmt.Errorf("key group %d: deletion of %q with a value", g.KG, kv.Key)
			}
		}
	}
	return nil
}

// validateHead is validate without the entries: the ids and the groups'
// order and flags.
func (s *Snapshot) validateHead() error {
	for name := range s.Pieces {
		if _, ok := s.Sections[name]; ok {
			return fmt.Errorf("section %q both whole and in pieces", name)
		}
	}
	switch {
	case s.ID == 0:
		return fmt.Errorf("id 0")
	case s.Full && (s.Base != s.ID || s.Parent != 0):
		return fmt.Errorf("full snapshot with base %d, parent %d", s.Base, s.Parent)
	case !s.Full && (s.Parent == 0 || s.Parent >= s.ID || s.Base > s.Parent || s.Base == 0):
		return fmt.Errorf("delta with base %d, parent %d", s.Base, s.Parent)
	}
	for i := range s.Groups {
		g := &s.Groups[i]
		if g.KG < 0 || g.KG >= MaxGroups {
			return fmt.Errorf("key group %d out of range", g.KG)
		}
		if i > 0 && s.Groups[i-1].KG >= g.KG {
			return fmt.Errorf("key group %d after %d: not ascending", g.KG, s.Groups[i-1].KG)
		}
		if s.Full && g.Reset {
			return fmt.Errorf("key group %d: reset in a full snapshot", g.KG)
		}
	}
	return nil
}

// Decode parses a stored snapshot. Every error wraps ErrCorrupt and says
// what is wrong; Decode never panics, and it allocates no more than the
// header's raw length (at most MaxRawSize) plus what the body's contents
// need. Keys, values and sections alias one buffer owned by the result.
//
// Decode is safe for concurrent use.
func Decode(b []byte) (*Snapshot, error) { return decode(b, false) }

// DecodeLazy is Decode for a restore: it checks everything Decode does, but
// leaves each group's entries in the decompressed body, read by
// MergeGroups, Merge and GroupData.KVs: Entries is nil. It spares a KV per
// entry.
//
// DecodeLazy is safe for concurrent use.
func DecodeLazy(b []byte) (*Snapshot, error) { return decode(b, true) }

func decode(b []byte, lazy bool) (*Snapshot, error) {
	h, err := Verify(b)
	if err != nil {
		return nil, err
	}
	body := b[headerSize:]
	var plain []byte
	if h.Version >= 2 {
		n, w := binary.Uvarint(body)
		if w <= 0 || n > uint64(len(body)-w) {
			return nil, corrupt("bad length: plain sections of %d bytes in a body of %d", n, len(body))
		}
		plain, body = body[w:w+int(n):w+int(n)], body[w+int(n):]
	}
	var raw []byte
	if h.Codec == CodecS2 {
		// The length S2 says first is checked before the buffer is made.
		if n, err := s2.DecodedLen(body); err != nil || int64(n) != h.Raw {
			return nil, corrupt("bad length: body decompresses to %d bytes (%v), header says %d", n, err, h.Raw)
		}
		raw, err = s2.Decode(make([]byte, h.Raw), body)
	} else {
		raw, err = decoder().DecodeAll(body, make([]byte, 0, h.Raw))
	}
	if err != nil {
		return nil, corrupt("decompress: %v", err)
	}
	if int64(len(raw)) != h.Raw {
		return nil, corrupt("bad length: body decompresses to %d bytes, header says %d", len(raw), h.Raw)
	}
	return decodeBody(raw, h.Version, plain, lazy)
}

// Verify checks a stored snapshot's header, length and checksum without
// decompressing it: what a scrub of a stored file needs. Errors wrap
// ErrCorrupt. It is safe for concurrent use.
func Verify(b []byte) (Header, error) {
	h, err := ReadHeader(b)
	if err != nil {
		return h, err
	}
	crc := crc32.Update(crc32.Checksum(b[:24], castagnoli), castagnoli, b[headerSize:])
	return h, checkStored(b[:headerSize], h, int64(len(b)-headerSize), crc)
}

// VerifyReader is Verify of a stored snapshot read from r through buf (nil:
// one of 256 KiB): a scrub without a buffer of the file's size. Errors
// reading r are returned as they are.
func VerifyReader(r io.Reader, buf []byte) (Header, error) {
	var hb [headerSize]byte
	if n, err := io.ReadFull(r, hb[:]); errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return ReadHeader(hb[:n])
	} else if err != nil {
		return Header{}, err
	}
	h, err := ReadHeader(hb[:])
	if err != nil {
		return h, err
	}
	if len(buf) == 0 {
		buf = make([]byte, 256<<10)
	}
	crc := crc32.Checksum(hb[:24], castagnoli)
	var got int64
	for {
		n, err := r.Read(buf)
		crc = crc32.Update(crc, castagnoli, buf[:n])
		got += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return h, err
		}
	}
	return h, checkStored(hb[:], h, got, crc)
}

// checkStored checks that a stored snapshot with header hb (h, read) has
// the body length it says and the checksum crc.
func checkStored(hb []byte, h Header, got int64, crc uint32) error {
	if got != h.Stored {
		if got < h.Stored {
			return corrupt("truncated: %d of %d body bytes", got, h.Stored)
		}
		return corrupt("bad length: %d bytes after a body of %d", got-h.Stored, h.Stored)
	}
	if want := binary.LittleEndian.Uint32(hb[24:]); crc != want {
		return corrupt("checksum mismatch: stored %08x, computed %08x", want, crc)
	}
	return nil
}

// reader decodes the raw body. The first error sticks.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = corrupt("body offset %d: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad %s", what)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated at %s", what)
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

// bytes returns the next byte string, aliasing the body, with capacity cut
// to its length so that an append by the user never writes into the body.
func (r *reader) bytes(what string) []byte {
	if r.err != nil {
		return nil
	}
	n, w := binary.Uvarint(r.b[r.off:])
	if w <= 0 {
		r.fail("bad %s length", what)
		return nil
	}
	r.off += w
	if n > uint64(len(r.b)-r.off) {
		r.fail("%s of %d bytes, %d left", what, n, len(r.b)-r.off)
		return nil
	}
	s := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return s
}

// count reads a count of items that take at least min bytes each, and
// checks that the rest of the body can hold them: allocations stay bounded
// by the body's size.
func (r *reader) count(what string, min int) int {
	n := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	if n > uint64((len(r.b)-r.off)/min) {
		r.fail("%d %s cannot fit in %d bytes", n, what, len(r.b)-r.off)
		return 0
	}
	return int(n)
}

// entries decodes the entries of group g, n of them, into es (nil: it
// only checks them), and checks that keys ascend and that a whole group
// (whole: a full snapshot's or a reset one) holds no deletion; it counts
// the deletions of a group kept in the body in g.dels. It is the bulk of a body, so it reads the bytes
// itself (with str) rather than through byte and bytes, which it calls
// only to report an error.
func (r *reader) entries(g *GroupData, n int, es []KV, whole bool) {
	b, off := r.b, r.off
	var prev []byte
	for j := range n {
		if off >= len(b) {
			r.off = off
			r.fail("truncated at entry flags")
			return
		}
		flags := b[off]
		if flags&^flagDeleted != 0 {
			r.off = off + 1
			r.fail("key group %d: entry %d: unknown flags %#x", g.KG, j, flags)
			return
		}
		kv := KV{Deleted: flags&flagDeleted != 0}
		var next int
		if kv.Key, next = str(b, off+1); next < 0 {
			r.badStr(off+1, "key")
			return
		}
		if j > 0 && bytes.Compare(prev, kv.Key) >= 0 {
			r.off = off
			r.fail("key group %d: key %q after %q: not ascending", g.KG, kv.Key, prev)
			return
		}
		if kv.Deleted && whole {
			r.off = off
			r.fail("key group %d: deletion of %q in a full group", g.KG, kv.Key)
			return
		}
		if kv.Deleted {
			if es == nil { // kept in the body: its deletions are counted
				g.dels++
			}
		} else {
			at := next
			if kv.Value, next = str(b, at); next < 0 {
				r.badStr(at, "value")
				return
			}
		}
		if es != nil {
			es[j] = kv
		}
		prev, off = kv.Key, next
	}
	r.off = off
}

// badStr reports what is wrong with the byte string at offset at, which
// str refused.
func (r *reader) badStr(at int, what string) {
	r.off = at
	if r.bytes(what); r.err == nil {
		r.fail("bad %s", what)
	}
}

// str returns the byte string at b[off:] (uvarint length, then the bytes),
// aliasing b with its capacity cut (never nil), and the offset after it;
// next is -1 if it is malformed or does not fit in b.
func str(b []byte, off int) (s []byte, next int) {
	n, w := varint.At(b, off)
	if w <= 0 || n > uint64(len(b)-off-w) {
		return nil, -1
	}
	off += w
	end := off + int(n)
	return b[off:end:end], end
}

func decodeBody(raw []byte, version int, plain []byte, lazy bool) (*Snapshot, error) {
	r := &reader{b: raw}
	s := &Snapshot{}
	s.Instance = string(r.bytes("instance"))
	s.Gen = r.uvarint("generation")
	s.ID = r.uvarint("id")
	flags := r.byte("flags")
	if flags&^flagFull != 0 {
		r.fail("unknown snapshot flags %#x", flags)
	}
	s.Full = flags&flagFull != 0
	s.Base = r.uvarint("base")
	s.Parent = r.uvarint("parent")

	if n := r.count("sections", 2); n > 0 {
		s.Sections = make(map[string][]byte, n)
		prev := ""
		for i := range n {
			name := string(r.bytes("section name"))
			var data []byte
			if version < 2 {
				data = r.bytes("section")
			} else if sf := r.byte("section flags"); sf == flagPlain {
				n := r.uvarint("plain section length")
				if n > uint64(len(plain)) {
					r.fail("section %q: %d plain bytes, %d left", name, n, len(plain))
					break
				}
				data, plain = plain[:n:n], plain[n:]
				if s.Plain == nil {
					s.Plain = map[string]bool{}
				}
				s.Plain[name] = true
			} else if sf != 0 {
				r.fail("section %q: unknown flags %#x", name, sf)
			} else {
				data = r.bytes("section")
			}
			if r.err != nil {
				break
			}
			if i > 0 && name <= prev {
				r.fail("section %q after %q: not ascending", name, prev)
				break
			}
			s.Sections[name], prev = data, name
		}
	}

	if n := r.count("groups", 3); n > 0 {
		s.Groups = make([]GroupData, n)
		for i := range s.Groups {
			g := &s.Groups[i]
			kg := r.uvarint("key group")
			if kg >= MaxGroups {
				r.fail("key group %d out of range", kg)
			}
			g.KG = int(kg)
			gflags := r.byte("group flags")
			if gflags&^flagReset != 0 {
				r.fail("key group %d: unknown flags %#x", kg, gflags)
			}
			g.Reset = gflags&flagReset != 0
			if m := r.count("entries", 2); m > 0 && lazy {
				start := r.off
				r.entries(g, m, nil, s.Full || g.Reset)
				g.raw, g.n = raw[start:r.off:r.off], m
			} else if m > 0 {
				g.Entries = make([]KV, m)
				r.entries(g, m, g.Entries, s.Full || g.Reset)
			}
			if r.err != nil {
				break
			}
		}
	}
	if r.err == nil && r.off != len(raw) {
		r.fail("%d trailing bytes", len(raw)-r.off)
	}
	if r.err != nil {
		return nil, r.err
	}
	if err := s.validateHead(); err != nil { // the entries are checked already
		return nil, corrupt("%s checkpoint %d: %v", s.Instance, s.ID, err)
	}
	return s, nil
}
