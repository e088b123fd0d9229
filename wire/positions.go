package wire

import (
	"fmt"

	"spate/internal/varint"
	"spate/job"
)

// Position says how far the records of one (producer, key group) go: the
// last sequence number applied (in a resume or a checkpoint) or no longer
// needed (in a trim).
type Position struct {
	P   job.Producer
	KG  job.KeyGroup
	Seq uint64
}

// EncodePositions appends the positions payload: uvarint count, then per
// position uvarint producer, uvarint key group, uvarint seq.
func EncodePositions(dst []byte, ps []Position) []byte {
	var tmp [10]byte
	dst = append(dst, tmp[:varint.Put(tmp[:], uint64(len(ps)))]...)
	for _, p := range ps {
		dst = append(dst, tmp[:varint.Put(tmp[:], uint64(p.P))]...)
		dst = append(dst, tmp[:varint.Put(tmp[:], uint64(p.KG))]...)
		dst = append(dst, tmp[:varint.Put(tmp[:], p.Seq)]...)
	}
	return dst
}

// DecodePositions parses a positions payload. A malformed one is an error
// wrapping ErrMalformed that says where.
func DecodePositions(b []byte) ([]Position, error) {
	n, w := varint.At(b, 0)
	if w <= 0 {
		return nil, fmt.Errorf("%w: positions: count: %s", ErrMalformed, varintProblem(w))
	}
	// Each position takes at least 3 bytes: bound the allocation by the payload.
	if n > uint64(len(b)-w)/3 {
		return nil, fmt.Errorf("%w: positions: count %d too large for %d bytes", ErrMalformed, n, len(b))
	}
	out := make([]Position, 0, n)
	i := w
	for k := uint64(0); k < n; k++ {
		var v [3]uint64
		for f := range v {
			x, w := varint.At(b, i)
			if w <= 0 {
				return nil, fmt.Errorf("%w: positions: entry %d field %d at byte %d: %s", ErrMalformed, k, f, i, varintProblem(w))
			}
			v[f], i = x, i+w
		}
		if v[0] > 0xffffffff || v[1] > 0xffff {
			return nil, fmt.Errorf("%w: positions: entry %d: producer %d or key group %d out of range", ErrMalformed, k, v[0], v[1])
		}
		out = append(out, Position{P: job.Producer(v[0]), KG: job.KeyGroup(v[1]), Seq: v[2]})
	}
	if i != len(b) {
		return nil, fmt.Errorf("%w: positions: %d trailing bytes", ErrMalformed, len(b)-i)
	}
	return out, nil
}
