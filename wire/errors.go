package wire

import (
	"errors"
	"fmt"
	"io"
)

// Errors of the frame layer and the payload decoders. They are returned
// wrapped (test with errors.Is); the wrapping message says where the problem
// is: the frame length, the batch run and record, the field.
var (
	// ErrFrameTooLarge is returned by Reader.ReadFrame for a length field
	// above the reader's maximum (checked before anything is allocated),
	// and by Writer.WriteFrame for a payload that would exceed the
	// writer's maximum.
	ErrFrameTooLarge = errors.New("wire: frame too large")

	// ErrTruncated is returned by Reader.ReadFrame when the stream ends
	// inside a frame (in its header or its payload). It wraps
	// io.ErrUnexpectedEOF.
	ErrTruncated = fmt.Errorf("wire: truncated frame: %w", io.ErrUnexpectedEOF)

	// ErrUnknownType is returned for a frame whose type byte is not one of
	// the types in SPEC.md, and by Writer.WriteFrame for such a type.
	ErrUnknownType = errors.New("wire: unknown frame type")

	// ErrEmptyFrame is returned by Reader.ReadFrame for a length field of
	// zero: every frame has at least its type byte.
	ErrEmptyFrame = errors.New("wire: empty frame (length 0)")

	// ErrMalformed is returned when a frame is well delimited but its
	// payload does not decode: a bad batch, watermark or JSON payload, or
	// an end frame with a payload.
	ErrMalformed = errors.New("wire: malformed payload")

	// ErrWrongType is returned when a call does not fit the frame type it
	// is given: DecodeJSON or Writer.WriteJSON with a binary frame type.
	ErrWrongType = errors.New("wire: wrong frame type for this call")
)

// payloadError is a decoding error of one frame's payload. It prints as
// "wire: TYPE frame: WHAT" and matches both ErrMalformed and the cause (if
// any) with errors.Is.
type payloadError struct {
	t     Type
	what  string
	cause error
}

func (e *payloadError) Error() string {
	s := "wire: " + e.t.String() + " frame: " + e.what
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *payloadError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrMalformed}
	}
	return []error{ErrMalformed, e.cause}
}
