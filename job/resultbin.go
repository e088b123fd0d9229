package job

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Results travel from the windowed operators to the sink in a compact form:
// the record carries the key (Record.Key), the window start (Record.Time)
// and the count (Record.Value); Record.Data carries the rest, which
// AppendCompact writes and ResultOf reads:
//
//	kind   1 byte: 'c' count, 'r' rollup
//	sum    varint
//	total  varint (count only)
//	ntop   uvarint, then ntop × (key length uvarint, key, count varint) (rollup only)
//
// It is about a fifth of the JSON line, and the upstream backup, the
// network and every checkpoint of the operators carry these bytes, so the
// sink formats the JSON once, at the end.

// AppendCompact appends the parts of r that its record does not carry.
func (r *Result) AppendCompact(b []byte) []byte {
	switch r.Op {
	case KindCount:
		b = append(b, 'c')
		b = binary.AppendVarint(b, r.Sum)
		return binary.AppendVarint(b, r.Total)
	default:
		b = append(b, 'r')
		b = binary.AppendVarint(b, r.Sum)
		b = binary.AppendUvarint(b, uint64(len(r.Top)))
		for _, t := range r.Top {
			b = binary.AppendUvarint(b, uint64(len(t.Key)))
			b = append(b, t.Key...)
			b = binary.AppendVarint(b, t.Count)
		}
		return b
	}
}

var errCompact = errors.New("malformed result record")

// ResultOf rebuilds the result a record carries into r, reusing r.Top's
// array.
func ResultOf(rec Record, r *Result) error {
	d := rec.Data
	if len(d) == 0 {
		return fmt.Errorf("%w: empty", errCompact)
	}
	kind := d[0]
	d = d[1:]
	varint := func() int64 {
		v, n := binary.Varint(d)
		if n <= 0 {
			d = nil
			return 0
		}
		d = d[n:]
		return v
	}
	r.Key, r.Window, r.Count, r.Total, r.Top = string(rec.Key), rec.Time, rec.Value, 0, r.Top[:0]
	switch kind {
	case 'c':
		r.Op = KindCount
		r.Sum = varint()
		if d == nil {
			return fmt.Errorf("%w: count: truncated sum", errCompact)
		}
		r.Total = varint()
		if d == nil {
			return fmt.Errorf("%w: count: truncated total", errCompact)
		}
	case 'r':
		r.Op = KindRollup
		r.Sum = varint()
		n, k := binary.Uvarint(d)
		if d == nil || k <= 0 || n > uint64(len(d)) {
			return fmt.Errorf("%w: rollup: bad top length", errCompact)
		}
		d = d[k:]
		for range n {
			l, k := binary.Uvarint(d)
			if k <= 0 || l > uint64(len(d)-k) {
				return fmt.Errorf("%w: rollup: bad top key", errCompact)
			}
			key := string(d[k : k+int(l)])
			d = d[k+int(l):]
			c := varint()
			if d == nil {
				return fmt.Errorf("%w: rollup: truncated top count", errCompact)
			}
			r.Top = append(r.Top, TopKey{Key: key, Count: c})
		}
	default:
		return fmt.Errorf("%w: kind %q", errCompact, kind)
	}
	if len(d) != 0 {
		return fmt.Errorf("%w: %d bytes left over", errCompact, len(d))
	}
	return nil
}
