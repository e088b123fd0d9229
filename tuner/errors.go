package tuner

import (
	"errors"
	"fmt"
)

var (
	// ErrSpec is wrapped by every error about a source spec or a flag: an
	// unknown scheme, a bad parameter, a value out of range.
	ErrSpec = errors.New("bad spec")
	// ErrMalformed is wrapped by every error about the content of a failure
	// trace (a *LineError, or a file with too little in it to fit).
	ErrMalformed = errors.New("malformed failure trace")
	// ErrParams is wrapped by every error about model parameters or
	// controller observations that are out of range (negative, NaN, ...).
	ErrParams = errors.New("bad model parameters")
)

// LineError is a malformed line of a failure trace. Its message is
// "PATH:LINE: what is wrong", LINE being the 1-based line of the
// decompressed file (the header is line 1).
type LineError struct {
	Path string
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg) }

// Unwrap makes errors.Is(err, ErrMalformed) true.
func (e *LineError) Unwrap() error { return ErrMalformed }

// wrapped is an error with its own text that wraps a sentinel.
type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }

func specErr(spec, format string, args ...any) error {
	return &wrapped{msg: spec + ": " + fmt.Sprintf(format, args...), err: ErrSpec}
}

func paramErr(format string, args ...any) error {
	return &wrapped{msg: fmt.Sprintf(format, args...), err: ErrParams}
}

func malformed(path, format string, args ...any) error {
	return &wrapped{msg: path + ": " + fmt.Sprintf(format, args...), err: ErrMalformed}
}
