package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"spate/internal/radix"
)

func sampleSnapshot() *Snapshot {
	return &Snapshot{
		Instance: "count#1", Gen: 3, ID: 17, Base: 10, Parent: 16,
		Sections: map[string][]byte{"positions": []byte("p1:42"), "counters": {}, "backup": bytes.Repeat([]byte("x"), 100),
			"backup.0": []byte("plain records"), "backup.1": {}},
		Plain: map[string]bool{"backup.0": true, "backup.1": true},
		Groups: []GroupData{
			{KG: 0, Entries: []KV{{Key: []byte(""), Value: []byte("empty key")}, {Key: []byte("a"), Value: []byte{}}, {Key: []byte("b"), Deleted: true}}},
			{KG: 5, Reset: true},
			{KG: 127, Reset: true, Entries: []KV{{Key: []byte("\xff\x00"), Value: bytes.Repeat([]byte{1, 2, 3}, 1000)}}},
		},
	}
}

// equalSnapshots compares two snapshots, nil and empty slices alike.
// rawBody is s's raw body (without its plain sections' data).
func rawBody(s *Snapshot) []byte {
	b, _ := appendBody(nil, s)
	return b
}

func equalSnapshots(a, b *Snapshot) bool {
	norm := func(s *Snapshot) Snapshot {
		c := *s
		if len(c.Sections) == 0 {
			c.Sections = nil
		}
		if len(c.Plain) == 0 {
			c.Plain = nil
		}
		if len(c.Groups) == 0 {
			c.Groups = nil
		}
		c.Groups = append([]GroupData(nil), c.Groups...)
		for i := range c.Groups {
			g := &c.Groups[i]
			if len(g.Entries) == 0 {
				g.Entries = nil
			}
			g.Entries = append([]KV(nil), g.Entries...)
			for j := range g.Entries {
				kv := &g.Entries[j]
				if kv.Key == nil {
					kv.Key = []byte{}
				}
				if !kv.Deleted && kv.Value == nil {
					kv.Value = []byte{}
				}
			}
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, s := range []*Snapshot{
		sampleSnapshot(),
		{Instance: "x", ID: 1, Full: true, Base: 1},
		{Instance: "rollup#0", Gen: 1 << 40, ID: 1 << 50, Full: true, Base: 1 << 50,
			Groups: []GroupData{{KG: MaxGroups - 1, Entries: []KV{{Key: []byte("k"), Value: []byte("v")}}}}},
	} {
		b, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(b)
		if err != nil || h.Stored != int64(len(b)-HeaderSize) || h.Raw <= 0 {
			t.Fatalf("header %+v, %v", h, err)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !equalSnapshots(s, back) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, s)
		}
		again, _ := Encode(back)
		if !bytes.Equal(again, b) {
			t.Fatal("encoding is not deterministic")
		}
	}
}

// encodeV1 is Encode as it was in version 1: every section in the
// compressed body, with no flags.
func encodeV1(s *Snapshot) []byte {
	raw := appendString(nil, s.Instance)
	raw = binary.AppendUvarint(raw, s.Gen)
	raw = binary.AppendUvarint(raw, s.ID)
	raw = append(raw, map[bool]byte{false: 0, true: flagFull}[s.Full])
	raw = binary.AppendUvarint(raw, s.Base)
	raw = binary.AppendUvarint(raw, s.Parent)
	raw = binary.AppendUvarint(raw, uint64(len(s.Sections)))
	for _, name := range sectionNames(s) {
		raw = appendString(raw, name)
		raw = appendBytes(raw, s.Sections[name])
	}
	// The groups are as in version 2: the end of a body without sections,
	// from the number of groups on.
	bare := *s
	bare.Sections, bare.Plain, bare.Groups = nil, nil, nil
	head := rawBody(&bare) // ends with the number of groups, 0: one byte
	bare.Groups = s.Groups
	raw = append(raw, rawBody(&bare)[len(head)-1:]...)
	out := zstdEncoder().EncodeAll(raw, make([]byte, headerSize))
	copy(out, magic)
	out[4], out[5] = 1, CodecZstd
	binary.LittleEndian.PutUint64(out[8:], uint64(len(raw)))
	binary.LittleEndian.PutUint64(out[16:], uint64(len(out)-headerSize))
	return reseal(out)
}

// zstdEncoder is the encoder of the files written before S2, for tests
// of their reading.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		panic(err)
	}
	return e
})

// toZstd is b, a stored snapshot, as it was stored before S2: the same
// version and layout, the body compressed with zstd (codec 1).
func toZstd(t *testing.T, b []byte) []byte {
	t.Helper()
	h, err := ReadHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	n, w := binary.Uvarint(b[headerSize:])
	at := headerSize + w + int(n) // the compressed body
	raw, err := s2.Decode(nil, b[at:])
	if err != nil || int64(len(raw)) != h.Raw {
		t.Fatalf("the body: %d bytes, %v", len(raw), err)
	}
	out := zstdEncoder().EncodeAll(raw, bytes.Clone(b[:at]))
	out[5] = CodecZstd
	binary.LittleEndian.PutUint64(out[16:], uint64(len(out)-headerSize))
	return reseal(out)
}

// TestDecodeZstdBody: a file of version 2 whose body is compressed with
// zstd, as every file was before S2, is read as it was, by Decode and by
// DecodeLazy; its corruption is found as it was.
func TestDecodeZstdBody(t *testing.T) {
	s := sampleSnapshot()
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := ReadHeader(b); h.Codec != CodecS2 {
		t.Fatalf("Encode writes codec %d, want S2", h.Codec)
	}
	old := toZstd(t, b)
	if h, err := ReadHeader(old); err != nil || h.Version != 2 || h.Codec != CodecZstd {
		t.Fatalf("header %+v, %v", h, err)
	}
	got, err := Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if !equalSnapshots(got, s) {
		t.Fatalf("Decode of a zstd body: %+v, want %+v", got, s)
	}
	lazy := decodeLazyAs(t, old, got, "a zstd body")
	// Its body re-encoded is the same snapshot, now with S2.
	again, err := Encode(lazy)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Fatal("a lazily decoded zstd file encodes to other bytes than the snapshot it holds")
	}
	if out, err := decoder().DecodeAll(zstdEmpty, nil); err != nil || len(out) != 0 {
		t.Fatalf("the frame the decoder starts with: %q, %v", out, err)
	}
	bad := bytes.Clone(old)
	copy(bad[len(bad)-12:], "garbage!")
	if _, err := Decode(reseal(bad)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "decompress") {
		t.Fatalf("a damaged zstd body: %v, want ErrCorrupt saying decompress", err)
	}
}

// decodeLazyAs decodes b lazily and checks that it holds what got, b
// decoded, holds.
func decodeLazyAs(t *testing.T, b []byte, got *Snapshot, what string) *Snapshot {
	t.Helper()
	lazy, err := DecodeLazy(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lazy.Sections, got.Sections) {
		t.Fatalf("DecodeLazy of %s: sections %q, want %q", what, lazy.Sections, got.Sections)
	}
	for i, g := range WholeGroups(lazy.Groups) {
		var kvs []KV
		for kv := range g.All() {
			kvs = append(kvs, kv)
		}
		if !equalKVs(kvs, got.Groups[i].Entries) {
			t.Fatalf("DecodeLazy of %s: key group %d holds %v, want %v", what, g.KG, kvs, got.Groups[i].Entries)
		}
	}
	return lazy
}

// TestDecodeVersion1: a file of version 1 (no plain sections) is still
// read, by Decode and by DecodeLazy.
func TestDecodeVersion1(t *testing.T) {
	s := sampleSnapshot()
	s.Plain = nil
	b := encodeV1(s)
	if h, err := ReadHeader(b); err != nil || h.Version != 1 {
		t.Fatalf("header %+v, %v", h, err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !equalSnapshots(got, s) {
		t.Fatalf("Decode of version 1: %+v, want %+v", got, s)
	}
	decodeLazyAs(t, b, got, "version 1")
}

func TestEncodeRejectsInvalid(t *testing.T) {
	kv := func(k string) KV { return KV{Key: []byte(k), Value: []byte("v")} }
	cases := map[string]Snapshot{
		"id 0":               {Instance: "a", Full: true},
		"full with a base":   {Instance: "a", ID: 2, Full: true, Base: 1},
		"full with a parent": {Instance: "a", ID: 2, Full: true, Base: 2, Parent: 1},
		"delta, no parent":   {Instance: "a", ID: 2, Base: 1},
		"delta, parent ≥ id": {Instance: "a", ID: 2, Base: 1, Parent: 2},
		"delta, base > par":  {Instance: "a", ID: 5, Base: 4, Parent: 3},
		"groups unsorted": {Instance: "a", ID: 1, Full: true, Base: 1,
			Groups: []GroupData{{KG: 2}, {KG: 1}}},
		"group twice": {Instance: "a", ID: 1, Full: true, Base: 1,
			Groups: []GroupData{{KG: 2}, {KG: 2}}},
		"group out of range": {Instance: "a", ID: 1, Full: true, Base: 1,
			Groups: []GroupData{{KG: MaxGroups}}},
		"keys unsorted": {Instance: "a", ID: 1, Full: true, Base: 1,
			Groups: []GroupData{{KG: 1, Entries: []KV{kv("b"), kv("a")}}}},
		"key twice": {Instance: "a", ID: 1, Full: true, Base: 1,
			Groups: []GroupData{{KG: 1, Entries: []KV{kv("a"), kv("a")}}}},
		"deletion in full": {Instance: "a", ID: 1, Full: true, Base: 1,
			Groups: []GroupData{{KG: 1, Entries: []KV{{Key: []byte("a"), Deleted: true}}}}},
		"deletion in reset": {Instance: "a", ID: 2, Base: 1, Parent: 1,
			Groups: []GroupData{{KG: 1, Reset: true, Entries: []KV{{Key: []byte("a"), Deleted: true}}}}},
		"reset in full": {Instance: "a", ID: 1, Full: true, Base: 1,
			Groups: []GroupData{{KG: 1, Reset: true}}},
		"deletion with value": {Instance: "a", ID: 2, Base: 1, Parent: 1,
			Groups: []GroupData{{KG: 1, Entries: []KV{{Key: []byte("a"), Value: []byte("v"), Deleted: true}}}}},
	}
	for name, s := range cases {
		if _, err := Encode(&s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Encode error %v, want ErrInvalid", name, err)
		}
	}
}

// reseal recomputes the checksum of a stored snapshot whose header or body
// a test changed, so that Decode gets past the checksum.
func reseal(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[24:], crc32.Update(crc32.Checksum(b[:24], castagnoli), castagnoli, b[headerSize:]))
	return b
}

func TestDecodeCorrupt(t *testing.T) {
	good, err := Encode(sampleSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	setRaw := func(n uint64) []byte {
		return mod(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[8:], n); return reseal(b) })
	}
	body := func(raw []byte) []byte { // a valid container around any raw body
		b := s2.Encode(nil, raw)
		b = append(append(slices.Clone(good[:headerSize]), 0), b...) // no plain sections
		binary.LittleEndian.PutUint64(b[8:], uint64(len(raw)))
		binary.LittleEndian.PutUint64(b[16:], uint64(len(b)-headerSize))
		return reseal(b)
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "truncated header"},
		{"short header", good[:10], "truncated header"},
		{"bad magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"version", mod(func(b []byte) []byte { b[4] = 9; return b }), "unknown version"},
		{"codec", mod(func(b []byte) []byte { b[5] = 0; return b }), "unknown codec"},
		{"reserved", mod(func(b []byte) []byte { b[6] = 1; return b }), "reserved"},
		{"huge raw length", setRaw(MaxRawSize + 1), "bad length"},
		{"truncated body", good[:len(good)-1], "truncated"},
		{"trailing bytes", append(bytes.Clone(good), 0), "bad length"},
		{"bit flip", mod(func(b []byte) []byte { b[len(b)/2] ^= 1; return b }), "checksum mismatch"},
		{"checksum flip", mod(func(b []byte) []byte { b[25] ^= 1; return b }), "checksum mismatch"},
		{"raw length low", setRaw(10), "bad length"},
		{"raw length high", setRaw(1 << 20), "bad length"},
		{"not S2", mod(func(b []byte) []byte { copy(b[len(b)-12:], "garbage!"); return reseal(b) }), "decompress"},
		{"empty body", body(nil), "bad instance length"},
		{"body trailing", body(append(rawBody(&Snapshot{Instance: "x", ID: 1, Full: true, Base: 1}), 0)), "trailing"},
		{"body flags", body([]byte{1, 'x', 0, 1, 0x80, 1, 0, 0, 0}), "unknown snapshot flags"},
		{"body ids", body(rawBody(&Snapshot{Instance: "x", ID: 3, Base: 1})), "delta with base 1, parent 0"},
		{"plain too long", mod(func(b []byte) []byte {
			b = append(binary.AppendUvarint(b[:headerSize:headerSize], 1<<40), b[headerSize+1:]...)
			binary.LittleEndian.PutUint64(b[16:], uint64(len(b)-headerSize))
			return reseal(b)
		}), "plain sections"},
		{"body count", body([]byte{1, 'x', 0, 1, 1, 1, 0, 0xff, 0xff, 0xff, 0x7f}), "cannot fit"},
	}
	for _, c := range cases {
		_, err := Decode(c.b)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Decode error %v, want ErrCorrupt saying %q", c.name, err, c.want)
		}
		// What a scrub checks (the container) it finds alike in memory
		// and streamed through a small buffer.
		_, verr := Verify(c.b)
		_, rerr := VerifyReader(iotest.HalfReader(bytes.NewReader(c.b)), make([]byte, 7))
		if fmt.Sprint(verr) != fmt.Sprint(rerr) {
			t.Errorf("%s: Verify says %v, VerifyReader %v", c.name, verr, rerr)
		}
	}
	if _, err := VerifyReader(bytes.NewReader(good), nil); err != nil {
		t.Fatalf("VerifyReader of a good snapshot: %v", err)
	}
	if _, err := VerifyReader(iotest.ErrReader(io.ErrClosedPipe), nil); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("VerifyReader of a failing reader: %v", err)
	}
}

// TestEncodePartsIsEncode: the parts, one after the other, are Encode's
// bytes, with one Scratch used for snapshots of different sizes in turn;
// a plain section is a part of its own, the snapshot's own storage.
func TestEncodePartsIsEncode(t *testing.T) {
	big := sampleSnapshot()
	big.Groups[0].Entries = nil
	for i := range 3000 {
		big.Groups[0].Entries = append(big.Groups[0].Entries, KV{Key: fmt.Appendf(nil, "k%05d", i), Value: fmt.Appendf(nil, "v%d", i*i)})
	}
	sc := &Scratch{}
	for i, s := range []*Snapshot{sampleSnapshot(), big, sampleSnapshot(), {Instance: "x", ID: 1, Full: true, Base: 1}} {
		want, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := EncodeParts(s, sc)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Concat(parts...); !bytes.Equal(got, want) {
			t.Fatalf("snapshot %d: the parts differ from Encode's bytes", i)
		}
		if p := s.Sections["backup.0"]; p != nil && !slices.ContainsFunc(parts, func(b []byte) bool { return &b[0] == &p[0] }) {
			t.Fatalf("snapshot %d: the plain section was copied", i)
		}
	}
	// A plain section in pieces is stored as the whole of it.
	whole := sampleSnapshot()
	want, err := Encode(whole)
	if err != nil {
		t.Fatal(err)
	}
	inPieces := sampleSnapshot()
	b0 := inPieces.Sections["backup.0"]
	delete(inPieces.Sections, "backup.0")
	inPieces.Pieces = map[string][][]byte{"backup.0": {b0[:3], nil, b0[3:5], b0[5:]}}
	if inPieces.RawSize() != whole.RawSize() {
		t.Fatalf("RawSize in pieces %d, whole %d", inPieces.RawSize(), whole.RawSize())
	}
	parts, err := EncodeParts(inPieces, sc)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Concat(parts...); !bytes.Equal(got, want) {
		t.Fatal("a section in pieces is stored unlike the whole of it")
	}
	inPieces.Sections["backup.0"] = b0
	if _, err := Encode(inPieces); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a section both whole and in pieces: %v, want ErrInvalid", err)
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode(sampleSnapshot())
	f.Add(good, false)
	f.Add(good[:40], false)
	f.Add(rawBody(sampleSnapshot()), true)
	f.Add([]byte("SPCK"), false)
	f.Fuzz(func(t *testing.T, b []byte, isBody bool) {
		// Either a stored snapshot, or a raw body (the checksum would stop
		// nearly every mutation of a stored one before the body decoder).
		var s *Snapshot
		var err error
		if isBody {
			s, err = decodeBody(b, version, []byte("plain section data"), false)
			lazy, lerr := decodeBody(b, version, []byte("plain section data"), true)
			if (err == nil) != (lerr == nil) {
				t.Fatalf("Decode: %v, DecodeLazy: %v", err, lerr)
			}
			if err == nil {
				for i, g := range WholeGroups(lazy.Groups) {
					var got []KV
					for kv := range g.All() {
						got = append(got, kv)
					}
					if !equalKVs(got, s.Groups[i].Entries) {
						t.Fatalf("key group %d decoded lazily: %v, want %v", g.KG, got, s.Groups[i].Entries)
					}
				}
			}
		} else {
			s, err = Decode(b)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := Encode(s)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", s, err)
		}
		back, err := Decode(again)
		if err != nil || !equalSnapshots(s, back) {
			t.Fatalf("decoded snapshot does not round-trip: %v", err)
		}
	})
}

func BenchmarkEncodeDecode(b *testing.B) {
	s := &Snapshot{Instance: "count#0", ID: 1, Full: true, Base: 1}
	for kg := range 128 {
		g := GroupData{KG: kg}
		for i := range 8000 {
			g.Entries = append(g.Entries, KV{Key: fmt.Appendf(nil, "user-%03d-%06d", kg, i), Value: binary.AppendVarint(nil, int64(i*kg))})
		}
		s.Groups = append(s.Groups, g)
	}
	raw := len(rawBody(s))
	var enc []byte
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(raw))
		for range b.N {
			enc, _ = Encode(s)
		}
		b.ReportMetric(float64(raw)/float64(len(enc)), "ratio")
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(raw))
		for range b.N {
			if _, err := Decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sortedKVs is es in the order sortEntries puts them in: each written in
// the stored form, sorted, read back.
func sortedKVs(es []KV, sc *Scratch) []KV {
	var buf []byte
	offs := make([]int, 0, len(es)+1)
	for _, kv := range es {
		offs = append(offs, len(buf))
		buf = appendBytes(append(appendEntry(buf, len(kv.Key), false), kv.Key...), kv.Value)
	}
	offs = append(offs, len(buf))
	dst := make([]byte, len(buf))
	sortEntries(buf, offs, dst, sc)
	g := GroupData{raw: dst, n: len(es)}
	if len(es) == 0 {
		g.raw = []byte{}
	}
	return g.KVs()
}

// TestSortEntriesIsByteOrder: the handle sort orders keys as bytes.Compare
// does, ties of the first 8 bytes (prefixes, NUL bytes, long keys) included,
// by comparisons (small groups) and by the radix sort (odd rounds), and
// keeps each key with its value.
func TestSortEntriesIsByteOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	sc := &Scratch{}
	for round := range 200 {
		seen := map[string]bool{}
		var es []KV
		for range rng.IntN(300) + round%2*rng.IntN(3000) {
			k := make([]byte, rng.IntN(14))
			for j := range k {
				k[j] = alphabet[rng.IntN(len(alphabet))]
			}
			if seen[string(k)] { // a capture holds each key once
				continue
			}
			seen[string(k)] = true
			es = append(es, KV{Key: k, Value: bytes.Repeat([]byte{byte(len(es))}, rng.IntN(200))})
		}
		want := slices.Clone(es)
		slices.SortFunc(want, func(a, b KV) int { return bytes.Compare(a.Key, b.Key) })
		if got := sortedKVs(es, sc); !equalKVs(got, want) {
			t.Fatalf("round %d: %d entries not in byte order, or not with their values", round, len(es))
		}
	}
}

func equalKVs(a, b []KV) bool {
	return slices.EqualFunc(a, b, func(x, y KV) bool {
		return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value) && x.Deleted == y.Deleted
	})
}

// TestSortEntriesKeyShapes: byte order for the shapes of keys that the
// handles treat differently: the generator's names (decimal digits, at
// most 8 bytes, packed to their low four bits), names past 8 bytes with
// a shared prefix (the 8 bytes after it), digits under a prefix shorter
// than a handle, keys that differ in one high bit or in scattered bits of
// a byte, and keys that differ only past their first 8 bytes.
func TestSortEntriesKeyShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sc := &Scratch{}
	for _, tc := range []struct {
		name string
		key  func(i int) []byte
	}{
		{"generator", func(int) []byte { return fmt.Appendf(nil, "k%06d", rng.IntN(1_000_000)) }},
		{"generator-8", func(int) []byte { return fmt.Appendf(nil, "k%07d", rng.IntN(10_000_000)) }},
		{"few-digits", func(int) []byte { return fmt.Appendf(nil, "k%06d", rng.IntN(5000)) }},
		{"long-shared-prefix", func(int) []byte { return fmt.Appendf(nil, "user-%08d", rng.IntN(100_000_000)) }},
		{"short-prefix-digits", func(int) []byte { return fmt.Appendf(nil, "ab%d", rng.IntN(1_000_000)) }},
		{"high-bit", func(int) []byte { return []byte{'x', 0x40 | byte(rng.IntN(2))<<7, byte(rng.IntN(256))} }},
		{"scattered-bits", func(int) []byte {
			return []byte{byte(rng.IntN(2))<<6 | byte(rng.IntN(2))<<1, byte(rng.IntN(2)) << 4, byte(rng.IntN(4))}
		}},
		{"differ-past-8", func(int) []byte { return fmt.Appendf(nil, "12345678%d", rng.IntN(100_000)) }},
		{"random-lengths", func(int) []byte {
			k := make([]byte, rng.IntN(12))
			for j := range k {
				k[j] = '0' + byte(rng.IntN(10))
			}
			return k
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 20 {
				seen := map[string]bool{}
				var es []KV
				for i := range 100 + round*200 {
					k := tc.key(i)
					if seen[string(k)] {
						continue
					}
					seen[string(k)] = true
					es = append(es, KV{Key: k, Value: []byte{byte(i), byte(i >> 8)}})
				}
				want := slices.Clone(es)
				slices.SortFunc(want, func(a, b KV) int { return bytes.Compare(a.Key, b.Key) })
				if got := sortedKVs(es, sc); !equalKVs(got, want) {
					t.Fatalf("round %d: %d entries not in byte order, or not with their values", round, len(es))
				}
			}
		})
	}
}

// TestPackKeysKeepsOrder: packKeys keeps the order of any two keys and
// their ties, whichever bits of which bytes the keys differ in.
func TestPackKeysKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 500 {
		mask := rng.Uint64() & rng.Uint64() // some bits vary, some do not
		if round%3 == 0 {
			mask &= 0x0f0f0f0f0f0f0f0f // digits' shape
		}
		base := rng.Uint64()
		hs := make([]radix.Handle, 1+rng.IntN(400))
		for i := range hs {
			hs[i] = radix.Handle{Key: base&^mask | rng.Uint64()&mask, I: i}
			if i > 0 && rng.IntN(8) == 0 {
				hs[i].Key = hs[rng.IntN(i)].Key // a tie
			}
		}
		orig := slices.Clone(hs)
		packKeys(hs)
		for i := range hs {
			for j := range hs {
				if got, want := cmp.Compare(hs[i].Key, hs[j].Key), cmp.Compare(orig[i].Key, orig[j].Key); got != want {
					t.Fatalf("round %d (mask %#x): keys %#x and %#x compare %d, packed %#x and %#x %d",
						round, mask, orig[i].Key, orig[j].Key, want, hs[i].Key, hs[j].Key, got)
				}
			}
		}
	}
}
