package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

func TestTypeString(t *testing.T) {
	cases := []struct {
		t    Type
		want string
	}{
		{THello, "hello"},
		{TWelcome, "welcome"},
		{TReject, "reject"},
		{TControl, "control"},
		{TStreamHello, "stream-hello"},
		{TBatch, "batch"},
		{TWatermark, "watermark"},
		{TEnd, "end"},
		{THeartbeat, "heartbeat"},
		{0, "type(0)"},
		{10, "resume"}, {11, "trim"}, {12, "barrier"}, {13, "store"}, {14, "store-data"}, {15, "store-end"}, {16, "store-reply"}, {17, "challenge"}, {18, "prove"}, {19, "type(19)"},
		{255, "type(255)"},
	}
	for _, c := range cases {
		if got := c.t.String(); got != c.want {
			t.Errorf("Type(%d).String() = %q, want %q", uint8(c.t), got, c.want)
		}
	}
}

// frame builds the bytes of one frame by hand, independently of Writer.
func frame(t Type, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)+1))
	b = append(b, byte(t))
	return append(b, payload...)
}

type testFrame struct {
	t Type
	p []byte
}

func TestFrameRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 000 bytes: the growing path
	cases := []struct {
		name   string
		frames []testFrame
	}{
		{"none", nil},
		{"one empty end", []testFrame{{TEnd, nil}}},
		{"json", []testFrame{{TControl, []byte(`{"kind":"start"}`)}}},
		{"every type", []testFrame{
			{THello, []byte(`{"token":"t"}`)},
			{TWelcome, []byte(`{}`)},
			{TReject, []byte(`{"reason":"no"}`)},
			{TControl, []byte(`{"kind":"x"}`)},
			{TStreamHello, []byte(`{"from":"a#0","to":"b#1"}`)},
			{TBatch, []byte{0}},
			{TWatermark, EncodeWatermark(nil, -5)},
			{THeartbeat, []byte(`{}`)},
			{TEnd, nil},
		}},
		{"empty payloads", []testFrame{{TBatch, nil}, {TWatermark, nil}, {TControl, nil}}},
		{"large after small", []testFrame{{TBatch, []byte{1, 2, 3}}, {TBatch, big}, {TBatch, []byte{4}}, {TBatch, big[:100000]}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			var want []byte
			for _, f := range c.frames {
				if err := w.WriteFrame(f.t, f.p); err != nil {
					t.Fatalf("WriteFrame(%v): %v", f.t, err)
				}
				want = append(want, frame(f.t, f.p)...)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("Writer wrote %d bytes that differ from the spec's layout (%d bytes)", buf.Len(), len(want))
			}
			// Read back through a reader that returns short reads.
			r := NewReader(iotest.HalfReader(&buf), 0)
			for i, f := range c.frames {
				typ, p, err := r.ReadFrame()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if typ != f.t || !bytes.Equal(p, f.p) {
					t.Fatalf("frame %d: got %v with %d bytes, want %v with %d bytes", i, typ, len(p), f.t, len(f.p))
				}
			}
			if _, _, err := r.ReadFrame(); err != io.EOF {
				t.Fatalf("after the last frame: got %v, want io.EOF", err)
			}
		})
	}
}

var errDisk = errors.New("disk on fire")

// failAfter returns data, then err.
type failAfter struct {
	data []byte
	err  error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReadFrameErrors(t *testing.T) {
	hdr := func(n uint32, typ byte) []byte { return append(binary.BigEndian.AppendUint32(nil, n), typ) }
	cases := []struct {
		name    string
		in      []byte
		readErr error // the underlying reader's error after in; nil: io.EOF
		max     int
		frames  int // good frames before the error
		want    error
		msg     string // a substring of the error
	}{
		{name: "clean end", in: nil, want: io.EOF},
		{name: "clean end after a frame", in: frame(TEnd, nil), frames: 1, want: io.EOF},
		{name: "header 1 byte", in: []byte{0}, want: ErrTruncated, msg: "header, 1 of 5"},
		{name: "header 3 bytes", in: []byte{0, 0, 0}, want: ErrTruncated, msg: "header, 3 of 5"},
		{name: "header without type", in: []byte{0, 0, 0, 2}, want: ErrTruncated, msg: "header, 4 of 5"},
		{name: "header cut after a frame", in: append(frame(TEnd, nil), 0, 0), frames: 1, want: ErrTruncated},
		{name: "empty frame", in: hdr(0, byte(TEnd)), want: ErrEmptyFrame},
		{name: "empty frame at the end", in: []byte{0, 0, 0, 0}, want: ErrEmptyFrame},
		{name: "too large", in: hdr(1001, byte(TBatch)), max: 1000, want: ErrFrameTooLarge, msg: "length 1001, max 1000"},
		{name: "too large default", in: hdr(DefaultMaxFrame+1, byte(TBatch)), want: ErrFrameTooLarge},
		{name: "too large without type", in: hdr(math.MaxUint32, 0)[:4], want: ErrFrameTooLarge},
		{name: "at the max", in: append(hdr(3, byte(TBatch)), 1, 2), max: 3, frames: 1, want: io.EOF},
		{name: "type 0", in: hdr(1, 0), want: ErrUnknownType, msg: "type byte 0"},
		{name: "type 19", in: hdr(1, 19), want: ErrUnknownType, msg: "type byte 19"},
		{name: "type 255", in: hdr(1, 255), want: ErrUnknownType},
		{name: "payload cut", in: append(hdr(10, byte(TBatch)), 1, 2, 3), want: ErrTruncated, msg: "payload, 3 of 9"},
		{name: "payload missing", in: hdr(10, byte(TBatch)), want: ErrTruncated, msg: "payload, 0 of 9"},
		{name: "lying length", in: append(hdr(DefaultMaxFrame, byte(TBatch)), 1, 2, 3), want: ErrTruncated},
		{name: "end with payload", in: frame(TEnd, []byte{1}), want: ErrMalformed, msg: "end frame"},
		{name: "reader error between frames", in: frame(TEnd, nil), readErr: errDisk, frames: 1, want: errDisk},
		{name: "reader error in header", in: []byte{0, 0}, readErr: errDisk, want: errDisk, msg: "header"},
		{name: "reader error in payload", in: append(hdr(10, byte(TBatch)), 1), readErr: errDisk, want: errDisk, msg: "payload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := io.Reader(bytes.NewReader(c.in))
			if c.readErr != nil {
				src = &failAfter{data: c.in, err: c.readErr}
			}
			r := NewReader(src, c.max)
			for i := 0; i < c.frames; i++ {
				if _, _, err := r.ReadFrame(); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
			}
			typ, p, err := r.ReadFrame()
			if !errors.Is(err, c.want) {
				t.Fatalf("got (%v, %d bytes, %v), want error %v", typ, len(p), err, c.want)
			}
			if c.want == ErrTruncated && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%v does not wrap io.ErrUnexpectedEOF", err)
			}
			if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
			if typ != 0 || p != nil {
				t.Errorf("an error came with a frame: %v, %d bytes", typ, len(p))
			}
			if cap(r.buf) > growStep {
				t.Errorf("reader allocated %d bytes for a %d-byte input", cap(r.buf), len(c.in))
			}
			// Errors are sticky.
			if _, _, err2 := r.ReadFrame(); err2 != err {
				t.Errorf("second call: got %v, want the same error %v", err2, err)
			}
		})
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReaderDoesNotReadAhead(t *testing.T) {
	in := append(frame(THello, []byte(`{"token":"x"}`)), []byte("yamux bytes follow")...)
	cr := &countingReader{r: bytes.NewReader(in)}
	r := NewReader(cr, 0)
	if _, _, err := r.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	if want := len(in) - len("yamux bytes follow"); cr.n != want {
		t.Fatalf("read %d bytes, want exactly the frame's %d", cr.n, want)
	}
}

func TestReaderDropsHugeBuffer(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	_ = w.WriteFrame(TBatch, make([]byte, 2*keepBuffer))
	_ = w.WriteFrame(TBatch, []byte{1})
	_ = w.Flush()
	r := NewReader(&buf, 0)
	if _, p, err := r.ReadFrame(); err != nil || len(p) != 2*keepBuffer {
		t.Fatalf("got %d bytes, %v", len(p), err)
	}
	if _, p, err := r.ReadFrame(); err != nil || len(p) != 1 {
		t.Fatalf("got %d bytes, %v", len(p), err)
	}
	if cap(r.buf) > keepBuffer {
		t.Fatalf("reader kept a %d-byte buffer", cap(r.buf))
	}
}

func TestReadFrameSteadyStateAllocs(t *testing.T) {
	one := frame(TBatch, make([]byte, 1000))
	src := bytes.NewReader(nil)
	r := NewReader(src, 0)
	allocs := testing.AllocsPerRun(100, func() {
		src.Reset(one)
		if _, _, err := r.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ReadFrame allocates %v times per frame in steady state", allocs)
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errDisk }

func TestWriterErrors(t *testing.T) {
	cases := []struct {
		name  string
		max   int
		write func(w *Writer) error
		want  error
	}{
		{"unknown type 0", 0, func(w *Writer) error { return w.WriteFrame(0, nil) }, ErrUnknownType},
		{"unknown type 42", 0, func(w *Writer) error { return w.WriteFrame(42, []byte{1}) }, ErrUnknownType},
		{"too large", 10, func(w *Writer) error { return w.WriteFrame(TBatch, make([]byte, 10)) }, ErrFrameTooLarge},
		{"end with payload", 0, func(w *Writer) error { return w.WriteFrame(TEnd, []byte{0}) }, ErrMalformed},
		{"json with a binary type", 0, func(w *Writer) error { return w.WriteJSON(TBatch, struct{}{}) }, ErrWrongType},
		{"json that cannot marshal", 0, func(w *Writer) error { return w.WriteJSON(TControl, make(chan int)) }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			w.SetMaxFrame(c.max)
			err := c.write(w)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if w.Buffered() != 0 {
				t.Fatalf("a refused frame left %d bytes in the buffer", w.Buffered())
			}
		})
	}
	t.Run("at the max", func(t *testing.T) {
		w := NewWriter(io.Discard)
		w.SetMaxFrame(10)
		if err := w.WriteFrame(TBatch, make([]byte, 9)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stream error", func(t *testing.T) {
		w := NewWriter(failWriter{})
		if err := w.WriteFrame(TEnd, nil); err != nil {
			t.Fatal(err) // buffered
		}
		if err := w.Flush(); !errors.Is(err, errDisk) {
			t.Fatalf("Flush: got %v, want %v", err, errDisk)
		}
		if err := w.WriteFrame(TBatch, make([]byte, 2*writeBufferSize)); !errors.Is(err, errDisk) {
			t.Fatalf("after a failed Flush: got %v, want %v", err, errDisk)
		}
	})
}

type testMsg struct {
	Kind string `json:"kind"`
	N    int    `json:"n,omitempty"`
}

func TestJSONRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	in := testMsg{Kind: "deploy", N: 3}
	if err := w.WriteJSON(TControl, in); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	typ, p, err := NewReader(&buf, 0).ReadFrame()
	if err != nil || typ != TControl {
		t.Fatalf("got %v, %v", typ, err)
	}
	var out testMsg
	if err := DecodeJSON(typ, p, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Fatalf("got %+v, want %+v", out, in)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	cases := []struct {
		name    string
		t       Type
		payload string
		want    error
		msg     string
	}{
		{"unknown field", TControl, `{"kind":"x","bogus":1}`, ErrMalformed, `wire: control frame: invalid JSON: json: unknown field "bogus"`},
		{"syntax", TStreamHello, `{"kind":`, ErrMalformed, "wire: stream-hello frame: invalid JSON"},
		{"wrong field type", THeartbeat, `{"n":"three"}`, ErrMalformed, "wire: heartbeat frame: invalid JSON"},
		{"empty", TWelcome, ``, ErrMalformed, "not a JSON object"},
		{"null", TReject, `null`, ErrMalformed, "not a JSON object"},
		{"array", THello, `[1]`, ErrMalformed, "not a JSON object"},
		{"trailing", TControl, `{"kind":"x"} {}`, ErrMalformed, "after the object"},
		{"binary type", TBatch, `{}`, ErrWrongType, "batch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m testMsg
			err := DecodeJSON(c.t, []byte(c.payload), &m)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %q does not say %q", err, c.msg)
			}
		})
	}
	t.Run("whitespace around", func(t *testing.T) {
		var m testMsg
		if err := DecodeJSON(TControl, []byte(" \n{\"kind\":\"x\"}\n "), &m); err != nil || m.Kind != "x" {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
}

func TestWatermarkRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		wm   int64
		size int
	}{
		{"zero", 0, 1},
		{"minus one", -1, 1},
		{"small", 63, 1},
		{"two bytes", 64, 2},
		{"epoch ms", 1_700_000_000_000, 6},
		{"min", math.MinInt64, 10},
		{"max", math.MaxInt64, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := EncodeWatermark(nil, c.wm)
			if len(p) != c.size {
				t.Errorf("encoded in %d bytes, want %d", len(p), c.size)
			}
			got, err := DecodeWatermark(p)
			if err != nil || got != c.wm {
				t.Fatalf("got %d, %v; want %d", got, err, c.wm)
			}
		})
	}
	t.Run("through a frame", func(t *testing.T) {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if err := w.WriteWatermark(-42); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteEnd(); err != nil {
			t.Fatal(err)
		}
		_ = w.Flush()
		r := NewReader(&buf, 0)
		typ, p, err := r.ReadFrame()
		if err != nil || typ != TWatermark {
			t.Fatalf("got %v, %v", typ, err)
		}
		if wm, err := DecodeWatermark(p); err != nil || wm != -42 {
			t.Fatalf("got %d, %v", wm, err)
		}
		if typ, _, err := r.ReadFrame(); err != nil || typ != TEnd {
			t.Fatalf("got %v, %v", typ, err)
		}
	})
}

func TestDecodeWatermarkErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		msg  string
	}{
		{"empty", nil, "truncated varint"},
		{"cut", []byte{0x80, 0x80}, "truncated varint"},
		{"overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, "overflows"},
		{"too long", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, "overflows"},
		{"trailing", []byte{0x02, 0x00}, "1 bytes after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeWatermark(c.in)
			if !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), "wire: watermark frame: ") || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want a malformed watermark error saying %q", err, c.msg)
			}
		})
	}
}

func TestPositionsRoundTrip(t *testing.T) {
	cases := map[string][]Position{
		"none": nil,
		"one":  {{P: 3, KG: 7, Seq: 1}},
		"wide": {{P: 0xffffffff, KG: 0xffff, Seq: math.MaxUint64}, {P: 1<<16 | 5, KG: 0, Seq: 0}},
	}
	for name, ps := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := DecodePositions(EncodePositions(nil, ps))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(ps) {
				t.Fatalf("got %v, want %v", got, ps)
			}
			for i := range ps {
				if got[i] != ps[i] {
					t.Fatalf("got %v, want %v", got, ps)
				}
			}
		})
	}
}

func TestDecodePositionsRejectsMalformed(t *testing.T) {
	good := EncodePositions(nil, []Position{{P: 1, KG: 2, Seq: 3}})
	cases := map[string][]byte{
		"empty":       {},
		"count lies":  {200, 1, 1, 1},
		"truncated":   good[:len(good)-1],
		"trailing":    append(append([]byte(nil), good...), 0),
		"kg too wide": {1, 1, 0xff, 0xff, 0x7f, 1}, // kg 2^21-1
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodePositions(b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodePositions(%x) = %v, want ErrMalformed", b, err)
			}
		})
	}
}

func FuzzDecodePositions(f *testing.F) {
	f.Add(EncodePositions(nil, []Position{{P: 1, KG: 2, Seq: 3}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := DecodePositions(b)
		if err != nil {
			return
		}
		again := EncodePositions(nil, ps)
		if ps2, err := DecodePositions(again); err != nil || len(ps2) != len(ps) {
			t.Fatalf("re-decode: %v %v", ps2, err)
		}
	})
}
