package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"

	"spate/job"
)

// FuzzReadFrame reads frames from arbitrary bytes. ReadFrame must never
// panic, must end with io.EOF or one of the package's errors, must not
// allocate much beyond the bytes it received, and the frames it returns,
// written again, must give back exactly the bytes it consumed.
func FuzzReadFrame(f *testing.F) {
	var seed bytes.Buffer
	w := NewWriter(&seed)
	_ = w.WriteJSON(THello, map[string]string{"token": "secret"})
	_ = w.WriteFrame(TStreamHello, []byte(`{"from":"a#0","to":"b#0"}`))
	var b BatchBuilder
	b.Append(1, 2, 3, job.Record{Key: []byte("key"), Time: 5, Value: 6})
	_ = w.WriteBatch(&b)
	_ = w.WriteWatermark(77)
	_ = w.WriteEnd()
	_ = w.Flush()
	f.Add(seed.Bytes(), uint32(0))
	f.Add(seed.Bytes()[:7], uint32(0))
	f.Add([]byte{}, uint32(0))
	f.Add([]byte{0, 0, 0, 0}, uint32(0))
	f.Add([]byte{0, 0, 0, 1, 0}, uint32(0))
	f.Add([]byte{0, 0, 0, 2, 8, 1}, uint32(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 6, 1, 2}, uint32(0))
	f.Add([]byte{0, 1, 0, 0, 6, 1, 2}, uint32(100))
	f.Fuzz(func(t *testing.T, data []byte, maxFrame uint32) {
		r := NewReader(bytes.NewReader(data), int(maxFrame))
		var again bytes.Buffer
		w := NewWriter(&again)
		w.SetMaxFrame(int(maxFrame))
		consumed := 0
		for {
			typ, p, err := r.ReadFrame()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrEmptyFrame) &&
					!errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrMalformed) {
					t.Fatalf("unexpected error %v", err)
				}
				if err == io.EOF && consumed != len(data) {
					t.Fatalf("io.EOF after %d of %d bytes", consumed, len(data))
				}
				break
			}
			if !typ.Known() || len(p)+1 > r.max {
				t.Fatalf("got a %v frame with %d bytes, max %d", typ, len(p), r.max)
			}
			if err := w.WriteFrame(typ, p); err != nil {
				t.Fatalf("cannot write back a frame that was read: %v", err)
			}
			consumed += headerSize + len(p)
			if consumed > len(data) {
				t.Fatalf("frames total %d bytes, input %d", consumed, len(data))
			}
			if limit := 2 * max(growStep, len(data)); cap(r.buf) > limit {
				t.Fatalf("buffer of %d bytes for %d bytes of input", cap(r.buf), len(data))
			}
		}
		if limit := 2 * max(growStep, len(data)); cap(r.buf) > limit {
			t.Fatalf("buffer of %d bytes for %d bytes of input", cap(r.buf), len(data))
		}
		_ = w.Flush()
		if !bytes.Equal(again.Bytes(), data[:consumed]) {
			t.Fatalf("frames written back differ from the bytes read")
		}
	})
}

// FuzzDecodeBatch decodes arbitrary payloads. DecodeBatch must never panic,
// must fail only with ErrMalformed, must call back at most once per four
// payload bytes, must agree with its validate-only mode, and what it
// decodes must survive a BatchBuilder round trip.
func FuzzDecodeBatch(f *testing.F) {
	var b BatchBuilder
	f.Add(b.Encode(nil))
	b.Append(1, 2, 3, job.Record{Key: []byte("key"), Time: 1000, Value: -1, Data: []byte("data")})
	f.Add(b.Encode(nil))
	b.Append(1, 2, 4, job.Record{Key: []byte("key2"), Time: 900, Value: 1 << 40})
	b.Append(2, 2, 0, job.Record{Key: nil, Time: math.MinInt64, Value: math.MaxInt64})
	b.Append(1, 2, 9, job.Record{Key: []byte("k"), Time: math.MaxInt64})
	b.Append(math.MaxUint32, math.MaxUint16, math.MaxUint64, job.Record{Key: []byte("edge")})
	full := b.Encode(nil)
	f.Add(full)
	f.Add(full[:len(full)-1])
	f.Add(append(bytes.Clone(full), 0))
	f.Add([]byte{1, 1, 1, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 1, 1, 0, 1, 0, 0, 0, 0})
	f.Add(binary.AppendUvarint([]byte{1, 1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 2))
	f.Fuzz(func(t *testing.T, payload []byte) {
		var got []entry
		err := DecodeBatch(payload, func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
			got = append(got, cloneEntry(p, kg, seq, rec))
			return nil
		})
		if len(got) > len(payload)/minRecordSize {
			t.Fatalf("%d records from %d bytes", len(got), len(payload))
		}
		errNil := DecodeBatch(payload, nil)
		if (err == nil) != (errNil == nil) || (err != nil && err.Error() != errNil.Error()) {
			t.Fatalf("with a callback: %v; validate only: %v", err, errNil)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		var b BatchBuilder
		for _, e := range got {
			b.Append(e.p, e.kg, e.seq, e.rec)
		}
		again, err := decodeAll(b.Encode(nil))
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		checkSamePerPair(t, again, got)
	})
}

// FuzzDecodeWatermark: never panics; what decodes encodes back to the same
// value.
func FuzzDecodeWatermark(f *testing.F) {
	f.Add(EncodeWatermark(nil, 0))
	f.Add(EncodeWatermark(nil, math.MinInt64))
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, payload []byte) {
		wm, err := DecodeWatermark(payload)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if back, err := DecodeWatermark(EncodeWatermark(nil, wm)); err != nil || back != wm {
			t.Fatalf("%d came back as %d, %v", wm, back, err)
		}
	})
}
