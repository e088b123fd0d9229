package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Type is the type byte of a frame.
type Type uint8

// Frame types. SPEC.md gives each payload's layout.
const (
	THello       Type = 1  // JSON Hello: first frame on a new TCP connection (before yamux)
	TWelcome     Type = 2  // JSON Welcome: the answer to an accepted Hello
	TReject      Type = 3  // JSON Reject {"reason":...}: the answer to a refused Hello
	TControl     Type = 4  // JSON Control: a message on a control stream
	TStreamHello Type = 5  // JSON StreamHello: first frame of a data stream
	TBatch       Type = 6  // binary: records, see BatchBuilder and DecodeBatch
	TWatermark   Type = 7  // binary: zigzag varint watermark in ms
	TEnd         Type = 8  // empty: the sender's stream ends
	THeartbeat   Type = 9  // JSON Heartbeat
	TResume      Type = 10 // binary positions: the receiver's answer to a stream hello
	TTrim        Type = 11 // binary positions: receiver to sender, what may be trimmed
	TBarrier     Type = 12 // uvarint checkpoint id: an aligned barrier (--ft global)
	TStore       Type = 13 // JSON StoreRequest: first frame of a store stream (store.go)
	TStoreData   Type = 14 // binary: a piece of a stored file's content
	TStoreEnd    Type = 15 // binary: CRC-32C and length of the content just sent
	TStoreReply  Type = 16 // JSON StoreReply: the coordinator's answer on a store stream
	TChallenge   Type = 17 // JSON Challenge: the coordinator's answer to a node's hello (join.go)
	TProve       Type = 18 // JSON Prove: the node's answer to a challenge (join.go)
)

var typeNames = [...]string{
	THello:       "hello",
	TWelcome:     "welcome",
	TReject:      "reject",
	TControl:     "control",
	TStreamHello: "stream-hello",
	TBatch:       "batch",
	TWatermark:   "watermark",
	TEnd:         "end",
	THeartbeat:   "heartbeat",
	TResume:      "resume",
	TTrim:        "trim",
	TBarrier:     "barrier",
	TStore:       "store",
	TStoreData:   "store-data",
	TStoreEnd:    "store-end",
	TStoreReply:  "store-reply",
	TChallenge:   "challenge",
	TProve:       "prove",
}

// String returns the type's name as SPEC.md writes it ("batch",
// "stream-hello"), or "type(N)" for an unknown type.
func (t Type) String() string {
	if t.Known() {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Known reports whether t is one of the frame types of SPEC.md.
func (t Type) Known() bool { return t >= THello && t <= TProve }

// IsJSON reports whether t's payload is a JSON object.
func (t Type) IsJSON() bool {
	switch t {
	case THello, TWelcome, TReject, TControl, TStreamHello, THeartbeat, TStore, TStoreReply, TChallenge, TProve:
		return true
	}
	return false
}

const (
	// DefaultMaxFrame is the default bound on a frame's length field (the
	// type byte plus the payload): 16 MiB.
	DefaultMaxFrame = 16 << 20

	// headerSize is the length field plus the type byte.
	headerSize = 5

	// writeBufferSize is the Writer's buffer.
	writeBufferSize = 32 << 10

	// growStep is the most a Reader allocates ahead of the bytes it has
	// received, so a lying length field costs little memory.
	growStep = 64 << 10

	// keepBuffer is the largest payload buffer a Reader keeps between
	// frames; a larger one (after an unusually large frame) is dropped.
	keepBuffer = 1 << 20
)

// clampMax turns a configured maximum into a usable one.
func clampMax(n int) int {
	if n <= 0 {
		return DefaultMaxFrame
	}
	if m := uint32(math.MaxUint32); uint64(n) > uint64(m) {
		return int(m) // the length field's limit (64-bit platforms only)
	}
	return n
}

// Writer writes frames to a byte stream through a buffer. Frames reach the
// stream when the buffer fills or on Flush. After a write error every later
// call returns it. A Writer is not safe for concurrent use.
type Writer struct {
	bw      *bufio.Writer
	max     int
	hdr     [headerSize]byte
	scratch []byte // WriteBatch and WriteWatermark encode here
}

// NewWriter returns a Writer on w whose maximum frame is DefaultMaxFrame.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, writeBufferSize), max: DefaultMaxFrame}
}

// SetMaxFrame sets the largest length field the Writer will write (the
// type byte plus the payload); n <= 0 means DefaultMaxFrame. It should
// match the receiver's maximum.
func (w *Writer) SetMaxFrame(n int) { w.max = clampMax(n) }

// WriteFrame writes one frame. It refuses (writing nothing) an unknown
// type, a payload too large for the maximum frame, and an end frame with a
// payload: whatever a Reader would reject.
func (w *Writer) WriteFrame(t Type, payload []byte) error {
	if !t.Known() {
		return fmt.Errorf("%w: writing type byte %d", ErrUnknownType, uint8(t))
	}
	if len(payload) >= w.max {
		return fmt.Errorf("%w: writing a %v frame with a %d-byte payload, max frame %d", ErrFrameTooLarge, t, len(payload), w.max)
	}
	if t == TEnd && len(payload) != 0 {
		return &payloadError{t: t, what: fmt.Sprintf("writing a %d-byte payload, want none", len(payload))}
	}
	binary.BigEndian.PutUint32(w.hdr[:4], uint32(len(payload)+1))
	w.hdr[4] = byte(t)
	if _, err := w.bw.Write(w.hdr[:]); err != nil {
		return err
	}
	_, err := w.bw.Write(payload)
	return err
}

// WriteJSON writes v, marshalled as JSON, as a frame of type t, which must
// be a JSON type.
func (w *Writer) WriteJSON(t Type, v any) error {
	if !t.IsJSON() {
		return fmt.Errorf("%w: WriteJSON with a %v frame", ErrWrongType, t)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("wire: %v frame: encoding JSON: %w", t, err)
	}
	return w.WriteFrame(t, b)
}

// WriteBatch writes b's records as one batch frame. It does not Reset b.
func (w *Writer) WriteBatch(b *BatchBuilder) error {
	w.scratch = b.Encode(w.scratch[:0])
	err := w.WriteFrame(TBatch, w.scratch)
	if cap(w.scratch) > keepBuffer {
		w.scratch = nil
	}
	return err
}

// WriteWatermark writes a watermark frame.
func (w *Writer) WriteWatermark(wm int64) error {
	w.scratch = EncodeWatermark(w.scratch[:0], wm)
	return w.WriteFrame(TWatermark, w.scratch)
}

// WriteEnd writes an end frame. The caller still has to Flush.
func (w *Writer) WriteEnd() error { return w.WriteFrame(TEnd, nil) }

// Flush writes the buffered frames to the underlying stream.
func (w *Writer) Flush() error { return w.bw.Flush() }

// Buffered returns the number of bytes waiting for Flush.
func (w *Writer) Buffered() int { return w.bw.Buffered() }

// Reader reads frames from a byte stream. It reads exactly the bytes of the
// frames it returns and never past them, so the stream can be handed to
// another reader (yamux after the handshake) between two frames. After an
// error the stream's position is lost: every later call returns the same
// error. A Reader is not safe for concurrent use.
type Reader struct {
	r   io.Reader
	max int
	hdr [headerSize]byte
	buf []byte // the last payload; reused
	err error  // sticky
}

// NewReader returns a Reader on r that rejects frames whose length field
// exceeds maxFrame bytes; maxFrame <= 0 means DefaultMaxFrame. It reads r
// without a buffer of its own (io.ReadFull of the header, then of the
// payload): a yamux stream buffers already; wrap a raw socket in a
// bufio.Reader if it need not be handed on between frames.
func NewReader(r io.Reader, maxFrame int) *Reader {
	return &Reader{r: r, max: clampMax(maxFrame)}
}

// ReadFrame returns the next frame. The payload is valid until the next
// call. Errors: io.EOF at a clean end of the stream between frames;
// ErrTruncated (wrapping io.ErrUnexpectedEOF) when it ends inside a frame;
// ErrEmptyFrame for a length of zero; ErrFrameTooLarge for a length above
// the maximum (before reading or allocating the payload); ErrUnknownType
// for an unknown type byte; ErrMalformed for an end frame with a payload.
// An error of the underlying reader is returned wrapped.
func (r *Reader) ReadFrame() (Type, []byte, error) {
	if r.err != nil {
		return 0, nil, r.err
	}
	t, p, err := r.readFrame()
	if err != nil {
		r.err = err
		return 0, nil, err
	}
	return t, p, nil
}

func (r *Reader) readFrame() (Type, []byte, error) {
	if cap(r.buf) > keepBuffer {
		r.buf = nil
	}
	got, err := io.ReadFull(r.r, r.hdr[:])
	if got == 0 && err == io.EOF {
		return 0, nil, io.EOF
	}
	var size uint32
	if got >= 4 {
		size = binary.BigEndian.Uint32(r.hdr[:4])
		if size == 0 {
			return 0, nil, ErrEmptyFrame
		}
		if uint64(size) > uint64(r.max) {
			return 0, nil, fmt.Errorf("%w: length %d, max %d", ErrFrameTooLarge, size, r.max)
		}
	}
	if err != nil {
		return 0, nil, readErr(err, "header", got, headerSize)
	}
	t := Type(r.hdr[4])
	if !t.Known() {
		return 0, nil, fmt.Errorf("%w: type byte %d (frame length %d)", ErrUnknownType, r.hdr[4], size)
	}
	n := int(size) - 1
	if t == TEnd && n != 0 {
		return 0, nil, &payloadError{t: t, what: fmt.Sprintf("%d-byte payload, want none", n)}
	}
	p, err := r.readPayload(n)
	if err != nil {
		return 0, nil, err
	}
	return t, p, nil
}

// readPayload reads n bytes into r.buf. A buffer larger than the one it has
// grows with the bytes actually received (at most growStep ahead of them,
// then doubling), so a length field that the stream does not back up costs
// little memory.
func (r *Reader) readPayload(n int) ([]byte, error) {
	if n <= cap(r.buf) {
		b := r.buf[:n]
		if got, err := io.ReadFull(r.r, b); err != nil {
			return nil, readErr(err, "payload", got, n)
		}
		return b, nil
	}
	b := r.buf[:0]
	for len(b) < n {
		chunk := min(n-len(b), max(len(b), growStep))
		if cap(b)-len(b) < chunk {
			nb := make([]byte, len(b), len(b)+chunk)
			copy(nb, b)
			b = nb
		}
		got, err := io.ReadFull(r.r, b[len(b):len(b)+chunk])
		b = b[:len(b)+got]
		if err != nil {
			r.buf = b[:0]
			return nil, readErr(err, "payload", len(b), n)
		}
	}
	r.buf = b
	return b, nil
}

// readErr wraps an error met inside a frame.
func readErr(err error, where string, got, want int) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: in the %s, %d of %d bytes", ErrTruncated, where, got, want)
	}
	return fmt.Errorf("wire: reading frame %s: %w", where, err)
}

// DecodeJSON decodes the JSON payload of a frame of type t into v. The
// payload must be one JSON object with no field unknown to v and nothing
// after it. Errors wrap ErrMalformed and name the frame type, like
// `wire: control frame: invalid JSON: json: unknown field "x"`; a binary
// frame type gives ErrWrongType.
func DecodeJSON(t Type, payload []byte, v any) error {
	if !t.IsJSON() {
		return fmt.Errorf("%w: DecodeJSON with a %v frame", ErrWrongType, t)
	}
	body := bytes.TrimLeft(payload, " \t\r\n")
	if len(body) == 0 || body[0] != '{' {
		return &payloadError{t: t, what: "invalid JSON", cause: errors.New("payload is not a JSON object")}
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &payloadError{t: t, what: "invalid JSON", cause: err}
	}
	if rest := bytes.TrimRight(payload[dec.InputOffset():], " \t\r\n"); len(rest) != 0 {
		return &payloadError{t: t, what: fmt.Sprintf("invalid JSON: %d bytes after the object", len(rest))}
	}
	return nil
}

// EncodeWatermark appends the payload of a watermark frame (a zigzag
// varint) to dst.
func EncodeWatermark(dst []byte, wm int64) []byte { return binary.AppendVarint(dst, wm) }

// DecodeWatermark decodes the payload of a watermark frame. Errors wrap
// ErrMalformed.
func DecodeWatermark(payload []byte) (int64, error) {
	wm, n := binary.Varint(payload)
	switch {
	case n == 0:
		return 0, &payloadError{t: TWatermark, what: fmt.Sprintf("truncated varint (%d bytes)", len(payload))}
	case n < 0:
		return 0, &payloadError{t: TWatermark, what: "varint overflows 64 bits"}
	case n != len(payload):
		return 0, &payloadError{t: TWatermark, what: fmt.Sprintf("%d bytes after the varint", len(payload)-n)}
	}
	return wm, nil
}
