package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestContentRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (StoreChunk/16)*2+5) // three data frames
	for _, tc := range []struct {
		name  string
		parts [][]byte
	}{
		{"empty", nil},
		{"empty parts", [][]byte{{}, nil}},
		{"small", [][]byte{[]byte("hello"), []byte(" world")}},
		{"chunked", [][]byte{big, []byte("tail")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			crc, err := w.WriteContent(tc.parts...)
			if err != nil {
				t.Fatal(err)
			}
			want := bytes.Join(tc.parts, nil)
			if crc != CRC32C(0, want) {
				t.Fatalf("WriteContent's CRC %08x, want %08x", crc, CRC32C(0, want))
			}
			var got []byte
			frames := 0
			r := NewReader(&buf, 0)
			if err := r.ReadContent(0, func(p []byte) error { frames++; got = append(got, p...); return nil }); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, want %d", len(got), len(want))
			}
			if wantFrames := (len(want) + StoreChunk - 1) / StoreChunk; frames != wantFrames {
				t.Fatalf("%d data frames, want %d", frames, wantFrames)
			}
		})
	}
}

func TestContentErrors(t *testing.T) {
	frame := func(typ Type, p []byte) []byte {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if err := w.WriteFrame(typ, p); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		return buf.Bytes()
	}
	data := []byte("content")
	good := EncodeStoreEnd(CRC32C(0, data), uint64(len(data)))
	flipped := append([]byte(nil), data...)
	flipped[3] ^= 1
	for _, tc := range []struct {
		name  string
		in    []byte
		limit uint64
		want  error
	}{
		{"damaged on the way", append(frame(TStoreData, flipped), frame(TStoreEnd, good)...), 0, ErrChecksum},
		{"a piece lost", frame(TStoreEnd, good), 0, ErrChecksum},
		{"short end", append(frame(TStoreData, data), frame(TStoreEnd, good[:4])...), 0, ErrMalformed},
		{"trailing byte", append(frame(TStoreData, data), frame(TStoreEnd, append(append([]byte(nil), good...), 0))...), 0, ErrMalformed},
		{"overflowing length", append(frame(TStoreData, data), frame(TStoreEnd, append(good[:4:4], bytes.Repeat([]byte{0xff}, 11)...))...), 0, ErrMalformed},
		{"another frame", append(frame(TStoreData, data), frame(TBatch, []byte{0})...), 0, ErrMalformed},
		{"over the limit", append(frame(TStoreData, data), frame(TStoreEnd, good)...), 3, ErrFrameTooLarge},
		{"cut short", frame(TStoreData, data), 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NewReader(bytes.NewReader(tc.in), 0).ReadContent(tc.limit, func([]byte) error { return nil })
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("ReadContent = %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzDecodeStoreEnd(f *testing.F) {
	f.Add(EncodeStoreEnd(0xdeadbeef, 1<<40))
	f.Add([]byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, p []byte) {
		crc, n, err := DecodeStoreEnd(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if again := EncodeStoreEnd(crc, n); len(again) > len(p) {
			t.Fatalf("decoded %d bytes into a longer encoding", len(p))
		}
	})
}
