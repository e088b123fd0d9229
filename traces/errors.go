package traces

import (
	"errors"
	"fmt"
)

var (
	// ErrSpec is wrapped by every error about a spec itself: an unknown
	// scheme, a bad or unknown query parameter, bad Options.
	ErrSpec = errors.New("bad source spec")
	// ErrMalformed is wrapped by every error about the content of a trace
	// file (a *LineError, or a file that is not a trace at all).
	ErrMalformed = errors.New("malformed trace")
	// ErrPartition is returned by Source.Open for a partition out of range.
	ErrPartition = errors.New("partition out of range")
	// ErrPosition is returned by Source.Open for a generator position too
	// far away to seek to (beyond about 35,000 years of event time).
	ErrPosition = errors.New("position out of range")
)

// LineError is a malformed line of a trace file. Its message is
// "PATH:LINE: what is wrong", LINE being the 1-based line of the
// (decompressed) file, the header being line 1.
type LineError struct {
	Path string // the file as named in the spec; for a tar member "ARCHIVE(MEMBER)"
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg) }

// Unwrap makes errors.Is(err, ErrMalformed) true.
func (e *LineError) Unwrap() error { return ErrMalformed }

// specError is an error about a spec; it wraps ErrSpec without repeating
// its text.
type specError struct{ msg string }

func (e *specError) Error() string { return e.msg }
func (e *specError) Unwrap() error { return ErrSpec }

// specErr formats "SPEC: what is wrong".
func specErr(spec, format string, args ...any) error {
	return &specError{msg: spec + ": " + fmt.Sprintf(format, args...)}
}
