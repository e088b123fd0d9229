package job

import (
	"bufio"
	"io"
)

// Sink is an instance of the sink operator: it writes the Data of every
// record it gets, one line each, through a buffer. The runtime de-duplicates
// its input by sequence number, so each result is written once. Advance
// does nothing; call Flush to push the buffered lines out.
//
// Sink is not safe for concurrent use.
type Sink struct {
	w     *bufio.Writer
	lines uint64
}

// NewSink returns a sink that writes to w.
func NewSink(w io.Writer) *Sink { return &Sink{w: bufio.NewWriterSize(w, 64<<10)} }

// Process writes rec.Data and a newline. A write error is kept and returned
// by Flush.
func (s *Sink) Process(_ KeyGroup, rec Record, _ Emitter) {
	s.w.Write(rec.Data)
	s.w.WriteByte('\n')
	s.lines++
}

// Advance does nothing: the sink has no windows.
func (s *Sink) Advance(int64, Emitter) {}

// Lines returns the number of lines written (or buffered) so far.
func (s *Sink) Lines() uint64 { return s.lines }

// Flush writes the buffered lines to the underlying writer and returns the
// first write error seen, if any.
func (s *Sink) Flush() error { return s.w.Flush() }
