package job

import (
	"bufio"
	"fmt"
	"io"
)

// Sink is an instance of the sink operator: it writes the result every
// record carries as one JSON line, through a buffer. The runtime de-duplicates
// its input by sequence number, so each result is written once. Advance
// does nothing; call Flush to push the buffered lines out.
//
// Sink is not safe for concurrent use.
type Sink struct {
	w     *bufio.Writer
	lines uint64
	res   Result
	line  []byte
	err   error // the first malformed record
}

// NewSink returns a sink that writes to w.
func NewSink(w io.Writer) *Sink { return &Sink{w: bufio.NewWriterSize(w, 64<<10)} }

// Process writes the result rec carries (see ResultOf) as one JSON line.
// A malformed record is skipped; the first one is kept and returned by
// Flush, like a write error.
func (s *Sink) Process(_ KeyGroup, rec Record, _ Emitter) {
	if err := ResultOf(rec, &s.res); err != nil {
		if s.err == nil {
			s.err = fmt.Errorf("sink: record %q: %w", rec.Key, err)
		}
		return
	}
	s.line = append(s.res.AppendJSON(s.line[:0]), '\n')
	s.w.Write(s.line)
	s.lines++
}

// Advance does nothing: the sink has no windows.
func (s *Sink) Advance(int64, Emitter) {}

// Lines returns the number of lines written (or buffered) so far.
func (s *Sink) Lines() uint64 { return s.lines }

// Flush writes the buffered lines to the underlying writer and returns the
// first write error seen, if any.
func (s *Sink) Flush() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.err
}
