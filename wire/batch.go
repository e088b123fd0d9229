package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"spate/internal/varint"
	"spate/job"
)

// The smallest encodings, used to reject counts that a payload cannot hold
// before looping over them.
const (
	minRecordSize = 4                 // keyLen, time, value, dataLen: one byte each
	minRunSize    = 4 + minRecordSize // four header varints and at least one record
)

// BatchBuilder accumulates records for one batch frame. Records of the same
// (producer, key group) with consecutive sequence numbers join one run, so
// interleaved appends of many (producer, key group) pairs still produce one
// run per pair.
//
// Each record is encoded once, on Append, at the end of one shared buffer,
// tagged with its run: the runs' sub-buffers are interleaved pieces of it.
// Encode lays the runs out (their sizes are known) and copies each piece to
// its run's place, in one pass. So memory stays within a few bytes per
// record of the largest batch held, whatever the number of runs, and Size
// is exact.
//
// Encode writes runs in the order they were started, so the records of one
// (producer, key group) keep their Append order; records of different pairs
// may be reordered. A sequence number that does not follow the pair's
// previous one starts a new run of that pair.
//
// The zero value is ready to use. Append allocates only while the builder
// grows to the largest batch it has held; Reset keeps the memory. A
// BatchBuilder is not safe for concurrent use.
type BatchBuilder struct {
	arena  []byte       // the records' encodings, in Append order
	pieces []batchPiece // arena split by run, in order
	runs   []batchRun   // in the order they were started
	n      int          // records
	size   int          // encoded size, less the run count
	table  batchTable   // (producer, key group) → index of its latest run
	last   uint64       // table key of the previous Append; 0: none
	lastR  int32        // its run
	slot   int          // its slot in table
}

// batchRun is one run being built.
type batchRun struct {
	p        job.Producer
	kg       job.KeyGroup
	first    uint64 // sequence number of the first record
	n        uint64 // records
	prevTime int64  // time of the last record, the base of the next delta
	bytes    int    // encoded records
	out      int    // Encode: where the run's next piece goes
}

// batchPiece is a stretch of the arena holding whole records of one run; it
// ends at end and starts where the previous piece ends.
type batchPiece struct {
	run int32
	end uint32
}

// maxRecordOverhead is the most a record's four varints take.
const maxRecordOverhead = 4 * binary.MaxVarintLen64

// Append adds a record. Its key and data are copied; rec may be reused
// once Append returns. A batch is limited to 4 GiB (far above any frame);
// Append panics past it.
func (b *BatchBuilder) Append(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) {
	k := batchKey(p, kg)
	ri := b.lastR
	if k != b.last {
		b.slot, ri = b.table.find(k)
		b.last = k
	}
	var r *batchRun
	if ri >= 0 {
		r = &b.runs[ri]
		// seq follows the run's last, first+n-1, without wrapping to 0.
		if seq-r.first != r.n || seq == 0 {
			r = nil
		}
	}
	if r == nil {
		ri = b.startRun(k, p, kg, seq)
		r = &b.runs[ri]
	} else {
		r.n++
		b.size += varint.Len(r.n) - varint.Len(r.n-1)
	}
	b.lastR = ri

	buf := b.arena
	start := len(buf)
	if need := maxRecordOverhead + len(rec.Key) + len(rec.Data); cap(buf)-start < need {
		buf = slices.Grow(buf, need)
	}
	buf = buf[:cap(buf)]
	i := start
	i += varint.Put(buf[i:], uint64(len(rec.Key)))
	i += copy(buf[i:], rec.Key)
	i += varint.Put(buf[i:], varint.Zigzag(rec.Time-r.prevTime))
	i += varint.Put(buf[i:], varint.Zigzag(rec.Value))
	i += varint.Put(buf[i:], uint64(len(rec.Data)))
	i += copy(buf[i:], rec.Data)
	if uint64(i) > math.MaxUint32 {
		panic("wire: batch over 4 GiB")
	}
	b.arena = buf[:i]
	r.prevTime = rec.Time
	r.bytes += i - start
	b.size += i - start
	b.n++

	if np := len(b.pieces); np > 0 && b.pieces[np-1].run == ri {
		b.pieces[np-1].end = uint32(i) // the run's previous record is just before
	} else {
		b.pieces = append(b.pieces, batchPiece{run: ri, end: uint32(i)})
	}
}

// startRun starts a run of (p, kg) at seq and makes it the pair's latest.
func (b *BatchBuilder) startRun(k uint64, p job.Producer, kg job.KeyGroup, seq uint64) int32 {
	ri := int32(len(b.runs))
	b.runs = append(b.runs, batchRun{p: p, kg: kg, first: seq, n: 1})
	b.slot = b.table.set(b.slot, k, ri)
	b.size += varint.Len(uint64(p)) + varint.Len(uint64(kg)) + varint.Len(seq) + 1
	return ri
}

// Len returns the number of records appended since the last Reset.
func (b *BatchBuilder) Len() int { return b.n }

// Runs returns the number of runs Encode will write.
func (b *BatchBuilder) Runs() int { return len(b.runs) }

// Size returns the size of the payload Encode will write.
func (b *BatchBuilder) Size() int { return varint.Len(uint64(len(b.runs))) + b.size }

// Encode appends the batch payload (the layout of SPEC.md) to dst and
// returns the extended slice.
func (b *BatchBuilder) Encode(dst []byte) []byte {
	size := b.Size()
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	out := dst[start:]
	pos := varint.Put(out, uint64(len(b.runs)))
	for i := range b.runs {
		r := &b.runs[i]
		pos += varint.Put(out[pos:], uint64(r.p))
		pos += varint.Put(out[pos:], uint64(r.kg))
		pos += varint.Put(out[pos:], r.first)
		pos += varint.Put(out[pos:], r.n)
		r.out = pos
		pos += r.bytes
	}
	from := uint32(0)
	for _, pc := range b.pieces {
		r := &b.runs[pc.run]
		r.out += copy(out[r.out:], b.arena[from:pc.end])
		from = pc.end
	}
	return dst
}

// Reset empties the builder and keeps its memory for the next batch.
func (b *BatchBuilder) Reset() {
	b.arena = b.arena[:0]
	b.pieces = b.pieces[:0]
	b.runs = b.runs[:0]
	b.n = 0
	b.size = 0
	b.table.reset()
	b.last = 0
	b.lastR = -1
}

// batchKey is the table key of (p, kg); never 0.
func batchKey(p job.Producer, kg job.KeyGroup) uint64 { return (uint64(p)<<16 | uint64(kg)) + 1 }

// batchTable maps a batchKey to a run index: open addressing with linear
// probing, at most half full. Key 0 marks an empty slot.
type batchTable struct {
	slots []batchSlot
	used  int
	shift uint8 // 64 - log2(len(slots))
}

type batchSlot struct {
	k uint64
	v int32
}

// find returns the slot of k (where it is, or where it would go) and its
// value, or -1 if k is absent.
func (t *batchTable) find(k uint64) (int, int32) {
	if len(t.slots) == 0 {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := int((k * 0x9e3779b97f4a7c15) >> t.shift)
	for {
		s := &t.slots[i]
		if s.k == k {
			return i, s.v
		}
		if s.k == 0 {
			return i, -1
		}
		i = (i + 1) & mask
	}
}

// set stores v for k at slot i, a result of find(k) with no change to the
// table since, and returns the slot k ended up in.
func (t *batchTable) set(i int, k uint64, v int32) int {
	if t.slots[i].k == 0 {
		if 2*(t.used+1) > len(t.slots) {
			t.grow()
			i, _ = t.find(k)
		}
		t.used++
	}
	t.slots[i] = batchSlot{k: k, v: v}
	return i
}

func (t *batchTable) grow() {
	old := t.slots
	t.slots = make([]batchSlot, max(64, 2*len(old)))
	t.shift = uint8(64 - bits.TrailingZeros(uint(len(t.slots))))
	for _, s := range old {
		if s.k != 0 {
			i, _ := t.find(s.k)
			t.slots[i] = s
		}
	}
}

func (t *batchTable) reset() {
	if t.used != 0 {
		clear(t.slots)
		t.used = 0
	}
}

// DecodeBatch decodes a batch payload and calls fn for each record, run by
// run, in the order of the payload. A record's Key and Data alias payload
// (nil when empty). fn may be nil: DecodeBatch then only validates, so a
// caller that must apply a batch all or nothing can check it first, since
// fn may already have been called for earlier records when a malformation
// is found. If fn returns an error, decoding stops and DecodeBatch returns
// it unchanged.
//
// A malformed payload (a truncated or overflowing varint, a producer or key
// group out of range, a run without records, sequence numbers that wrap, a
// length past the end, a run or record count the remaining bytes cannot
// hold, bytes after the last run) gives an error wrapping ErrMalformed that
// names the run, the record, the field and the byte offset. DecodeBatch
// does not allocate, except for that error.
func DecodeBatch(payload []byte, fn func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error) error {
	b := payload
	nRuns, w := varint.At(b, 0)
	if w <= 0 {
		return batchErr(-1, -1, "run count", 0, varintProblem(w))
	}
	pos := w
	if nRuns > uint64(len(b)-pos)/minRunSize {
		return batchErr(-1, -1, "run count", 0, fmt.Sprintf("%d runs cannot fit in %d bytes", nRuns, len(b)-pos))
	}
	for run := 0; run < int(nRuns); run++ {
		at := pos
		p, w := varint.At(b, pos)
		if w <= 0 {
			return batchErr(run, -1, "producer", at, varintProblem(w))
		}
		if p > math.MaxUint32 {
			return batchErr(run, -1, "producer", at, fmt.Sprintf("%d overflows 32 bits", p))
		}
		pos += w
		at = pos
		kg, w := varint.At(b, pos)
		if w <= 0 {
			return batchErr(run, -1, "key group", at, varintProblem(w))
		}
		if kg > math.MaxUint16 {
			return batchErr(run, -1, "key group", at, fmt.Sprintf("%d overflows 16 bits", kg))
		}
		pos += w
		at = pos
		first, w := varint.At(b, pos)
		if w <= 0 {
			return batchErr(run, -1, "first seq", at, varintProblem(w))
		}
		pos += w
		at = pos
		n, w := varint.At(b, pos)
		if w <= 0 {
			return batchErr(run, -1, "record count", at, varintProblem(w))
		}
		pos += w
		switch {
		case n == 0:
			return batchErr(run, -1, "record count", at, "0 (a run has at least one record)")
		case n > uint64(len(b)-pos)/minRecordSize:
			return batchErr(run, -1, "record count", at, fmt.Sprintf("%d records cannot fit in %d bytes", n, len(b)-pos))
		case n-1 > math.MaxUint64-first:
			return batchErr(run, -1, "record count", at, fmt.Sprintf("%d records from seq %d overflow 64 bits", n, first))
		}

		var t int64
		for i := 0; i < int(n); i++ {
			at = pos
			keyLen, w := varint.At(b, pos)
			if w <= 0 {
				return batchErr(run, i, "key length", at, varintProblem(w))
			}
			pos += w
			if keyLen > uint64(len(b)-pos) {
				return batchErr(run, i, "key length", at, fmt.Sprintf("%d past the end (%d bytes left)", keyLen, len(b)-pos))
			}
			var key []byte
			if keyLen > 0 {
				end := pos + int(keyLen)
				key = b[pos:end:end]
				pos = end
			}
			at = pos
			dt, w := varint.At(b, pos)
			if w <= 0 {
				return batchErr(run, i, "time", at, varintProblem(w))
			}
			pos += w
			t += varint.Unzigzag(dt)
			at = pos
			v, w := varint.At(b, pos)
			if w <= 0 {
				return batchErr(run, i, "value", at, varintProblem(w))
			}
			pos += w
			at = pos
			dataLen, w := varint.At(b, pos)
			if w <= 0 {
				return batchErr(run, i, "data length", at, varintProblem(w))
			}
			pos += w
			if dataLen > uint64(len(b)-pos) {
				return batchErr(run, i, "data length", at, fmt.Sprintf("%d past the end (%d bytes left)", dataLen, len(b)-pos))
			}
			var data []byte
			if dataLen > 0 {
				end := pos + int(dataLen)
				data = b[pos:end:end]
				pos = end
			}
			if fn != nil {
				rec := job.Record{Key: key, Time: t, Value: varint.Unzigzag(v), Data: data}
				if err := fn(job.Producer(p), job.KeyGroup(kg), first+uint64(i), rec); err != nil {
					return err
				}
			}
		}
	}
	if pos != len(b) {
		return batchErr(-1, -1, "end", pos, fmt.Sprintf("%d bytes after the last run", len(b)-pos))
	}
	return nil
}

// batchErr describes a malformed batch: where (run and record indexes, -1
// when not inside one; the field; the byte offset) and what.
func batchErr(run, rec int, field string, offset int, problem string) error {
	var what string
	switch {
	case run < 0:
		what = fmt.Sprintf("%s at byte %d: %s", field, offset, problem)
	case rec < 0:
		what = fmt.Sprintf("run %d %s at byte %d: %s", run, field, offset, problem)
	default:
		what = fmt.Sprintf("run %d record %d %s at byte %d: %s", run, rec, field, offset, problem)
	}
	return &payloadError{t: TBatch, what: what}
}

// varintProblem says why uvarintAt returned w <= 0.
func varintProblem(w int) string {
	if w == 0 {
		return "truncated varint"
	}
	return "varint overflows 64 bits"
}
