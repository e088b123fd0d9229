package traces

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Line and field parsing of record traces. Nothing here allocates per
// line once the buffers have grown.

// maxLine bounds one line of a record trace.
const maxLine = 1 << 20

var errLongLine = errors.New("line longer than 1 MiB")

// lineScanner reads lines, counting them and their bytes.
type lineScanner struct {
	r    *bufio.Reader
	line int   // number of the last line returned (1-based)
	off  int64 // content offset of the next line
	long []byte
}

// next returns the next line without its "\n" or "\r\n", valid until the
// next call, or io.EOF.
func (s *lineScanner) next() ([]byte, error) {
	b, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], b...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > maxLine {
				s.line++
				return nil, errLongLine
			}
			b, err = s.r.ReadSlice('\n')
			s.long = append(s.long, b...)
		}
		b = s.long
	}
	if err != nil && (err != io.EOF || len(b) == 0) {
		return nil, err
	}
	s.line++
	s.off += int64(len(b))
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return b, nil
}

// isBlank reports whether a line holds only spaces.
func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// splitFields splits line at sep into out (reused), trimming spaces around
// each field. With quote set (CSV), a field may be "quoted", with "" for a
// quote inside; quoted fields cannot span lines. scratch holds unescaped
// fields; the fields are valid until scratch or line change.
func splitFields(line []byte, sep byte, quote bool, out [][]byte, scratch []byte) ([][]byte, []byte, error) {
	out = out[:0]
	if cap(scratch) < len(line) {
		scratch = make([]byte, 0, len(line))
	}
	scratch = scratch[:0]
	for i := 0; ; {
		// one field starts at i
		j := i
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') && line[j] != sep {
			j++
		}
		if quote && j < len(line) && line[j] == '"' {
			start := len(scratch)
			k := j + 1
			for {
				q := bytes.IndexByte(line[k:], '"')
				if q < 0 {
					return out, scratch, fmt.Errorf("field %d: unterminated quote (quoted fields cannot span lines)", len(out)+1)
				}
				scratch = append(scratch, line[k:k+q]...)
				k += q + 1
				if k < len(line) && line[k] == '"' {
					scratch = append(scratch, '"')
					k++
					continue
				}
				break
			}
			for k < len(line) && (line[k] == ' ' || line[k] == '\t') && line[k] != sep {
				k++
			}
			if k < len(line) && line[k] != sep {
				return out, scratch, fmt.Errorf("field %d: text after the closing quote", len(out)+1)
			}
			out = append(out, scratch[start:len(scratch):len(scratch)])
			if k >= len(line) {
				return out, scratch, nil
			}
			i = k + 1
			continue
		}
		e := bytes.IndexByte(line[i:], sep)
		if e < 0 {
			out = append(out, bytes.TrimSpace(line[i:]))
			return out, scratch, nil
		}
		out = append(out, bytes.TrimSpace(line[i:i+e]))
		i += e + 1
	}
}

const timeFormats = "not epoch seconds, RFC 3339 or 2006-01-02 15:04:05"

// parseTime reads an event time in ms: epoch seconds (integer or
// fractional), RFC 3339, or "2006-01-02 15:04:05[.fraction]" (UTC unless a
// zone follows). Fractions are truncated to the millisecond.
func parseTime(b []byte) (int64, bool) {
	if ms, ok := parseEpoch(b); ok {
		return ms, true
	}
	return parseDate(b)
}

func parseEpoch(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	intPart, frac, dot := bytes.Cut(b, []byte{'.'})
	if len(intPart) == 0 || len(intPart) > 15 {
		return 0, false
	}
	var sec int64
	for _, c := range intPart {
		if c < '0' || c > '9' {
			return 0, false
		}
		sec = sec*10 + int64(c-'0')
	}
	ms := sec * 1000
	if dot {
		for i, c := range frac {
			if c < '0' || c > '9' {
				return 0, false
			}
			if i < 3 {
				ms += int64(c-'0') * [3]int64{100, 10, 1}[i]
			}
		}
	}
	if neg {
		ms = -ms
	}
	return ms, true
}

// parseDate reads YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|±hh:mm].
func parseDate(b []byte) (int64, bool) {
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, len(s) > 0
	}
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	switch b[10] {
	case 'T', 't', ' ':
	default:
		return 0, false
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	s, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 {
		return 0, false
	}
	if d > time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return 0, false
	}
	rest := b[19:]
	ms := 0
	if len(rest) > 0 && rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			if i <= 3 {
				ms += int(rest[i]-'0') * [3]int{100, 10, 1}[i-1]
			}
			i++
		}
		if i == 1 {
			return 0, false
		}
		rest = rest[i:]
	}
	off := 0
	switch {
	case len(rest) == 0:
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		zh, ok1 := num(rest[1:3])
		zm, ok2 := num(rest[4:6])
		if !ok1 || !ok2 || zh > 23 || zm > 59 {
			return 0, false
		}
		off = zh*3600 + zm*60
		if rest[0] == '-' {
			off = -off
		}
	default:
		return 0, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC).Unix() - int64(off)
	return t*1000 + int64(ms), true
}

// parseInt reads a decimal int64 with an optional sign.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if (!neg && n > 1<<63-1) || (neg && n > 1<<63) {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// quoteField quotes a field for a message, cut to 40 bytes.
func quoteField(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])+"...") + " (cut)"
	}
	return strconv.Quote(string(b))
}
