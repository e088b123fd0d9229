package traces

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"spate/job"
)

// Record traces (trace:PATH?time=COL&key=COL[&value=COL][&sep=SEP]).
//
// Data row j (0-based, blank lines not counted) goes to partition j mod P:
// record i of partition p is data row i·P + p. Open reads the whole file
// once to check every line and to note the content offset of every
// indexEvery-th row; a reader starts at the nearest noted row before its
// position (seeking in a plain file, decompressing and discarding
// otherwise) and reads on.

const indexEvery = 4096

// rowMark is where a data row's line starts.
type rowMark struct {
	off  int64 // content offset
	line int   // its line number
}

// traceLayout is what the header says about the columns.
type traceLayout struct {
	sep    byte
	quote  bool
	header []string
	tcol   int
	kcol   int
	vcol   int // -1: value 1
}

// traceSource is an open record trace. It is immutable.
type traceSource struct {
	spec   string
	path   string
	name   string
	format string
	parts  int
	lay    traceLayout
	rows   uint64
	first  int64
	last   int64
	index  []rowMark // index[n]: data row n·indexEvery
}

func openTrace(spec, rest string, opt Options) (Source, error) {
	path, q, err := splitSpec(spec, rest)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, specErr(spec, "no file (want trace:PATH?time=COL&key=COL)")
	}
	tname, hasT := q.str("time")
	kname, hasK := q.str("key")
	vname, hasV := q.str("value")
	sepName, hasSep := q.str("sep")
	if err := q.done(); err != nil {
		return nil, err
	}
	var sep byte
	if hasSep {
		switch sepName {
		case "tab", "\t":
			sep = '\t'
		case "comma", ",":
			sep = ','
		case "semicolon", ";":
			sep = ';'
		case "pipe", "|":
			sep = '|'
		default:
			return nil, specErr(spec, "sep=%q: want tab, comma, semicolon or pipe", sepName)
		}
	}
	s := &traceSource{spec: spec, path: path, parts: opt.Partitions}
	in, err := openInput(path, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	defer in.Close()
	s.name, s.format = in.name, in.format
	sc := &lineScanner{r: in.r}
	header, err := readHeader(sc, in, sep)
	if err != nil {
		return nil, err
	}
	s.lay = header
	if !hasT || !hasK {
		miss := "time"
		if hasT {
			miss = "key"
		}
		return nil, specErr(spec, "missing %s=COL (columns: %s)", miss, columnList(header.header))
	}
	if s.lay.tcol, err = header.column(s.name, tname); err != nil {
		return nil, err
	}
	if s.lay.kcol, err = header.column(s.name, kname); err != nil {
		return nil, err
	}
	s.lay.vcol = -1
	if hasV {
		if s.lay.vcol, err = header.column(s.name, vname); err != nil {
			return nil, err
		}
	}
	if err := s.scan(sc, in); err != nil {
		return nil, err
	}
	return s, nil
}

// readHeader reads the header line and decides the separator (sep 0: from
// the file name, else from the header).
func readHeader(sc *lineScanner, in *input, sep byte) (traceLayout, error) {
	var line []byte
	var err error
	for {
		line, err = sc.next()
		if err == io.EOF {
			return traceLayout{}, &LineError{Path: in.name, Line: max(sc.line, 1), Msg: "no header line (want a header naming the columns)"}
		}
		if err != nil {
			return traceLayout{}, lineReadErr(in, sc, err)
		}
		if !isBlank(line) {
			break
		}
	}
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
		line = bytes.TrimLeft(t, "# ")
	}
	if sep == 0 {
		sep = guessSep(in.path, line)
	}
	lay := traceLayout{sep: sep, quote: sep != '\t'}
	fields, _, err := splitFields(line, sep, lay.quote, nil, nil)
	if err != nil {
		return lay, &LineError{Path: in.name, Line: sc.line, Msg: "header: " + err.Error()}
	}
	for _, f := range fields {
		lay.header = append(lay.header, string(f))
	}
	return lay, nil
}

// guessSep picks the separator: the one the header uses if it uses only
// one of tab and comma, else the file extension's, else comma.
func guessSep(path string, header []byte) byte {
	tabs, commas := bytes.Count(header, []byte{'\t'}), bytes.Count(header, []byte{','})
	switch {
	case tabs > 0 && commas == 0:
		return '\t'
	case commas > 0 && tabs == 0:
		return ','
	}
	name := strings.ToLower(path)
	for _, ext := range []string{".gz", ".gzip", ".bz2", ".bzip2"} {
		name = strings.TrimSuffix(name, ext)
	}
	if strings.HasSuffix(name, ".tsv") || strings.HasSuffix(name, ".tab") || (tabs > 0 && !strings.HasSuffix(name, ".csv")) {
		return '\t'
	}
	return ','
}

func (l *traceLayout) column(name, col string) (int, error) {
	for i, h := range l.header {
		if h == col {
			return i, nil
		}
	}
	for i, h := range l.header { // forgive case
		if strings.EqualFold(h, col) {
			return i, nil
		}
	}
	return 0, &LineError{Path: name, Line: 1, Msg: fmt.Sprintf("no column %q (have %s)", col, columnList(l.header))}
}

func columnList(h []string) string {
	if len(h) > 12 {
		return strings.Join(h[:12], ", ") + ", ..."
	}
	return strings.Join(h, ", ")
}

func lineReadErr(in *input, sc *lineScanner, err error) error {
	if err == errLongLine {
		return &LineError{Path: in.name, Line: sc.line, Msg: err.Error()}
	}
	return in.readErr(err)
}

// decoder turns the lines of one trace into records.
type decoder struct {
	lay     *traceLayout
	fields  [][]byte
	scratch []byte
}

// decode parses one data line; the message of an error has no position.
func (d *decoder) decode(line []byte) (job.Record, string) {
	var err error
	d.fields, d.scratch, err = splitFields(line, d.lay.sep, d.lay.quote, d.fields, d.scratch)
	if err != nil {
		return job.Record{}, err.Error()
	}
	if len(d.fields) != len(d.lay.header) {
		return job.Record{}, fmt.Sprintf("%d fields, the header has %d", len(d.fields), len(d.lay.header))
	}
	tf := d.fields[d.lay.tcol]
	t, ok := parseTime(tf)
	if !ok {
		return job.Record{}, fmt.Sprintf("time %s: %s", quoteField(tf), timeFormats)
	}
	rec := job.Record{Key: d.fields[d.lay.kcol], Time: t, Value: 1}
	if d.lay.vcol >= 0 {
		vf := d.fields[d.lay.vcol]
		if rec.Value, ok = parseInt(vf); !ok {
			return job.Record{}, fmt.Sprintf("value %s: not an integer", quoteField(vf))
		}
	}
	return rec, ""
}

// scan checks every data line and notes rows, times and the index.
func (s *traceSource) scan(sc *lineScanner, in *input) error {
	d := decoder{lay: &s.lay}
	for {
		off := sc.off
		line, err := sc.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return lineReadErr(in, sc, err)
		}
		if isBlank(line) {
			continue
		}
		rec, msg := d.decode(line)
		if msg != "" {
			return &LineError{Path: s.name, Line: sc.line, Msg: msg}
		}
		if s.rows%indexEvery == 0 {
			s.index = append(s.index, rowMark{off: off, line: sc.line})
		}
		if s.rows == 0 || rec.Time < s.first {
			s.first = rec.Time
		}
		if s.rows == 0 || rec.Time > s.last {
			s.last = rec.Time
		}
		s.rows++
	}
}

func (s *traceSource) Partitions() int { return s.parts }
func (s *traceSource) Finite() bool    { return true }
func (s *traceSource) String() string  { return s.spec }

// Stats implements Sized.
func (s *traceSource) Stats() Stats { return Stats{Records: s.rows, First: s.first, Last: s.last} }

// PartitionLen implements Sized.
func (s *traceSource) PartitionLen(p int) uint64 { return partLen(s.rows, s.parts, p) }

func (s *traceSource) Open(p int, pos uint64) (Reader, error) {
	if err := checkPartition(s, p); err != nil {
		return nil, err
	}
	n := partLen(s.rows, s.parts, p)
	if pos >= n {
		return &traceReader{}, nil
	}
	target := pos*uint64(s.parts) + uint64(p)
	m := s.index[target/indexEvery]
	in, err := openInput(s.path, m.off)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.spec, err)
	}
	return &traceReader{
		s:      s,
		in:     in,
		sc:     lineScanner{r: in.r, line: m.line - 1, off: m.off},
		d:      decoder{lay: &s.lay},
		row:    target / indexEvery * indexEvery,
		target: target,
		left:   n - pos,
		p:      uint64(p),
	}, nil
}

// traceReader reads one partition of a record trace.
type traceReader struct {
	s       *traceSource
	in      *input
	sc      lineScanner
	d       decoder
	row     uint64 // data row of the next non-blank line
	target  uint64 // first row to return
	left    uint64 // records still to return
	p       uint64
	err     error
	arena   []byte // keys of the last NextBatch
	keyEnds []int
}

func (r *traceReader) Next() (job.Record, bool, error) {
	if r.err != nil {
		return job.Record{}, false, r.err
	}
	for r.left > 0 {
		line, err := r.sc.next()
		if err == io.EOF {
			r.err = fmt.Errorf("%s: ended after %d data rows, %d were there when it was opened (changed?)", r.s.name, r.row, r.s.rows)
			return job.Record{}, false, r.err
		}
		if err != nil {
			r.err = lineReadErr(r.in, &r.sc, err)
			return job.Record{}, false, r.err
		}
		if isBlank(line) {
			continue
		}
		row := r.row
		r.row++
		if row < r.target || row%uint64(r.s.parts) != r.p {
			continue
		}
		rec, msg := r.d.decode(line)
		if msg != "" {
			r.err = &LineError{Path: r.s.name, Line: r.sc.line, Msg: msg}
			return job.Record{}, false, r.err
		}
		r.left--
		return rec, true, nil
	}
	return job.Record{}, false, nil
}

// NextBatch implements BatchReader; the keys are copied into one buffer
// that is reused by the next call.
func (r *traceReader) NextBatch(buf []job.Record) (int, error) {
	r.arena = r.arena[:0]
	for n := range buf {
		rec, ok, err := r.Next()
		if err != nil || !ok {
			r.fixKeys(buf[:n])
			return n, err
		}
		buf[n] = rec
		r.arena = append(r.arena, rec.Key...)
		r.keyEnds = append(r.keyEnds[:n], len(r.arena))
	}
	r.fixKeys(buf)
	return len(buf), nil
}

// fixKeys points the keys of buf into the arena once it has stopped growing.
func (r *traceReader) fixKeys(buf []job.Record) {
	start := 0
	for n := range buf {
		end := r.keyEnds[n]
		buf[n].Key = r.arena[start:end:end]
		start = end
	}
}

func (r *traceReader) Close() error {
	if r.in == nil {
		return nil
	}
	err := r.in.Close()
	r.in = nil
	return err
}
