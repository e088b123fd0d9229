package backup

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"spate/internal/varint"
	"spate/job"
)

// A mark is what a buffer adds to its instance's checkpoint. Restore
// applies a chain of marks in order; the first is a full one.
//
//	"SPBK" | version 1 | flags (bit 0: full)
//	uvarint drops | drops × uvarint kg
//	uvarint sections | sections × section
//	crc32c of everything before, uint32 little-endian
//
//	section = uvarint kg | flags (bit 0: reset) |
//	          uvarint streams | streams × (uvarint producer, uvarint low, uvarint high) |
//	          uvarint len(records) | records (the chunk encoding)
//
// A full mark replaces everything; a drop removes a key group (it was
// extracted); a reset section replaces its key group, another section adds
// to it. A section lists every stream whose low or high changed, with their
// values, and carries the records appended since the previous mark, copied
// from the chunks as they are (some may be trimmed already: Restore drops
// them again); a reset section leaves out the records trimmed at the head
// of each chunk, and its records length is then a uvarint padded to five
// bytes (see MarkParts.Seal). Applying a section means: trim each listed stream to its
// low, append the records (a record may follow a gap only if the gap is
// trimmed), then check that each stream reached its high (or that its high
// is at or below its low: those records were trimmed before being stored).
const (
	markVersion = 1
	markHeader  = 4 + 1 + 1
	markTrailer = 4

	flagFull  = 1 // mark flags
	flagReset = 1 // section flags
)

var markMagic = []byte("SPBK")

// Mark returns what changed since the previous Mark, for the instance's
// checkpoint: the records appended, the streams whose watermarks moved, the
// key groups extracted and (whole) the key groups absorbed or new. The
// first Mark of a buffer made by New or Extract is a full one and starts a
// chain; Restore takes the chain of a checkpoint. Mark does no I/O (the
// records it copies are never spilled yet) and its result is the caller's.
func (b *Buffer) Mark() []byte {
	var mp MarkParts
	if err := b.MarkInParts(&mp); err != nil {
		panic("backup: Mark read a spilled chunk: " + err.Error()) // unmarked chunks are never spilled
	}
	return mp.bytes()
}

// MarkFull returns a full mark: everything the buffer holds, a new start
// for the chain (call it for the instance's full checkpoints, so that old
// marks can be dropped). Spilled records are read back for it; a spill file
// that cannot be read gives an error wrapping ErrSpill, and then nothing
// changes.
func (b *Buffer) MarkFull() ([]byte, error) {
	var mp MarkParts
	if err := b.MarkFullInParts(&mp); err != nil {
		return nil, err
	}
	return mp.bytes(), nil
}

// MarkInParts is Mark without the copy of the records: mp then holds the
// mark in pieces, most of them the buffer's own chunk storage, written one
// after the other by whoever stores the checkpoint. Taking a mark costs
// the instance's goroutine O(chunks), not O(bytes): the records of a
// second of output are megabytes, and their copy stalled every capture.
//
// The chunks a mark points into are pinned: until mp.Release, a chunk the
// buffer frees (trimmed, spilled, dropped) is left to the collector, never
// reused for new records, so the pieces keep their bytes. Records are only
// ever appended to a chunk, past what a mark took. mp.Seal, mp.Parts and
// mp.Release may run on any goroutine, one at a time; mp's previous mark
// must be released first.
func (b *Buffer) MarkInParts(mp *MarkParts) error { return b.mark(b.needFull, nil, mp) }

// MarkFullInParts is MarkFull in parts, as MarkInParts. Records read back
// from spill files are copies.
func (b *Buffer) MarkFullInParts(mp *MarkParts) error {
	return b.mark(true, func(c *chunk) ([]byte, error) { return b.readSpill(c, false) }, mp)
}

// MarkParts is a mark in pieces (see MarkInParts). Its storage is used
// again by the next mark made into it.
type MarkParts struct {
	hdr    []byte    // everything but the records: headers, stream lists, the checksum
	segs   []segment // the mark in order
	parts  [][]byte
	pinned []*chunk
	sealed bool
	// The whole key groups (reset sections) of the mark, whose chunks
	// may start with records trimmed since they were appended: Seal
	// leaves those out (see Seal).
	heads []sectionHead
	lows  []streamLow // the streams of heads, by section, each sorted by producer
}

// sectionHead is a reset section of a mark in parts: its records-length
// field (padded to lenWidth bytes) at hdr[lenAt:], its records in
// segs[from:to], its streams in lows[lowFrom:lowTo].
type sectionHead struct {
	lenAt, from, to, lowFrom, lowTo int
}

// streamLow is a stream's low watermark as a mark took it.
type streamLow struct {
	p   job.Producer
	low uint64
}

// lenWidth is the width of a reset section's records-length field: a
// uvarint padded with continuation bytes (Restore reads it as any
// uvarint), so that Seal can write a shorter length in its place.
const lenWidth = 5

// segment is a piece of a mark: hdr[start:end], or data.
type segment struct {
	start, end int
	data       []byte
}

// Seal computes the mark's checksum, over the pieces before it. It reads
// the pinned chunks, so it runs before Release; a second Seal does nothing,
// nor does a Seal of a mark that failed (no pieces).
//
// First it leaves out, from each chunk of a whole key group, the records
// at its head that were trimmed when the mark was taken: those a chunk
// still held only because records after them in it were not trimmed. A
// full mark would otherwise carry, for every key group, up to a chunk of
// records nobody needs (Restore drops them again). It shortens the pieces
// of Parts' slice in place: read them from it after Seal.
func (mp *MarkParts) Seal() {
	parts := mp.Parts()
	if mp.sealed || len(parts) == 0 {
		return
	}
	for _, h := range mp.heads {
		lows := mp.lows[h.lowFrom:h.lowTo]
		n := 0
		for i := h.from; i < h.to; i++ {
			d := parts[i]
			parts[i] = d[trimmedHead(d, lows):]
			n += len(parts[i])
		}
		putPadded(mp.hdr[h.lenAt:h.lenAt+lenWidth], uint64(n))
	}
	var crc uint32
	for _, p := range parts[:len(parts)-1] {
		crc = crc32.Update(crc, castagnoli, p)
	}
	binary.LittleEndian.PutUint32(parts[len(parts)-1], crc)
	mp.sealed = true
}

// Parts returns the mark's pieces, in order; the last one is the checksum,
// which Seal fills in. Their total length is the mark's.
func (mp *MarkParts) Parts() [][]byte {
	if mp.parts == nil {
		for _, sg := range mp.segs {
			if sg.data != nil {
				mp.parts = append(mp.parts, sg.data)
			} else {
				mp.parts = append(mp.parts, mp.hdr[sg.start:sg.end:sg.end])
			}
		}
	}
	return mp.parts
}

// trimmedHead is the length of the records at the head of d that are at
// or below their stream's low in lows (sorted by producer); it stops at
// the first record that is not, or that does not decode.
func trimmedHead(d []byte, lows []streamLow) int {
	at := 0
	for at < len(d) {
		p, seq, _, next, _, _ := decodeRecord(d, at)
		if next < 0 {
			break
		}
		i, ok := slices.BinarySearchFunc(lows, p, func(s streamLow, p job.Producer) int { return cmp.Compare(s.p, p) })
		if !ok || seq > lows[i].low {
			break
		}
		at = next
	}
	return at
}

// putPadded writes v into b as a uvarint of exactly len(b) bytes.
func putPadded(b []byte, v uint64) {
	for i := range len(b) - 1 {
		b[i] = byte(v) | 0x80
		v >>= 7
	}
	b[len(b)-1] = byte(v)
}

// Release unpins the chunks the mark points into: its pieces must not be
// read after it. It is idempotent.
func (mp *MarkParts) Release() {
	for i, c := range mp.pinned {
		c.pins.Add(-1)
		mp.pinned[i] = nil
	}
	mp.pinned = mp.pinned[:0]
}

// bytes seals the mark and returns it in one piece, a copy, and releases it.
func (mp *MarkParts) bytes() []byte {
	mp.Seal()
	out := slices.Concat(mp.Parts()...)
	mp.Release()
	return out
}

// reset empties mp for a new mark, keeping its storage.
func (mp *MarkParts) reset() {
	mp.Release()
	mp.hdr = mp.hdr[:0]
	clear(mp.segs)
	mp.segs = mp.segs[:0]
	clear(mp.parts)
	mp.parts = nil
	mp.sealed = false
	mp.heads, mp.lows = mp.heads[:0], mp.lows[:0]
}

// cut ends the header piece that started at from.
func (mp *MarkParts) cut(from int) int {
	if from < len(mp.hdr) {
		mp.segs = append(mp.segs, segment{start: from, end: len(mp.hdr)})
	}
	return len(mp.hdr)
}

// Compact merges a chain of marks (as Restore takes them) into one full
// mark equivalent to it. It does no I/O.
func Compact(deltas [][]byte) ([]byte, error) {
	b, err := Restore(Config{MemLimit: math.MaxInt64}, deltas)
	if err != nil {
		return nil, err
	}
	return b.MarkFull()
}

// mark makes a mark (full: everything) in mp and, once it is complete,
// records that the buffer's state is marked. load reads back a spilled
// chunk.
func (b *Buffer) mark(full bool, load func(*chunk) ([]byte, error), mp *MarkParts) error {
	type section struct {
		lg      *kgLog
		reset   bool
		streams int
		from    []int // per chunk of lg: where its unmarked records start; -1: none
		bytes   int
	}
	var secs []section
	var drops []job.KeyGroup
	if !full {
		for kg := range b.drops {
			drops = append(drops, kg)
		}
		slices.Sort(drops)
	}
	for _, lg := range b.logs {
		if lg == nil {
			continue
		}
		s := section{lg: lg, reset: full || lg.reset}
		if !s.reset && !lg.dirty {
			continue
		}
		for _, st := range lg.streams {
			if s.reset || st.low != st.markLow || st.high != st.markHigh {
				s.streams++
			}
		}
		s.from = make([]int, len(lg.chunks))
		for i, c := range lg.chunks {
			s.from[i] = -1
			if c.live == 0 {
				continue
			}
			n := c.size
			if c.data != nil {
				n = len(c.data)
			}
			from := 0
			if !s.reset {
				switch {
				case c.serial < lg.markSerial:
					from = n
				case c.serial == lg.markSerial:
					from = lg.markOff
				}
			}
			if from < n {
				s.from[i] = from
				s.bytes += n - from
			}
		}
		secs = append(secs, s)
	}

	mp.reset()
	out := append(mp.hdr, markMagic...)
	flags := byte(0)
	if full {
		flags = flagFull
	}
	out = append(out, markVersion, flags)
	out = binary.AppendUvarint(out, uint64(len(drops)))
	for _, kg := range drops {
		out = binary.AppendUvarint(out, uint64(kg))
	}
	out = binary.AppendUvarint(out, uint64(len(secs)))
	mp.hdr = out
	from := 0
	for _, s := range secs {
		lg := s.lg
		out = binary.AppendUvarint(mp.hdr, uint64(lg.kg))
		if s.reset {
			out = append(out, flagReset)
		} else {
			out = append(out, 0)
		}
		out = binary.AppendUvarint(out, uint64(s.streams))
		for _, st := range lg.streams {
			if s.reset || st.low != st.markLow || st.high != st.markHigh {
				out = binary.AppendUvarint(out, uint64(st.p))
				out = binary.AppendUvarint(out, st.low)
				out = binary.AppendUvarint(out, st.high)
			}
		}
		var head *sectionHead
		if s.reset && s.bytes < 1<<(7*lenWidth) {
			lowFrom := len(mp.lows)
			for _, st := range lg.streams {
				mp.lows = append(mp.lows, streamLow{st.p, st.low})
			}
			slices.SortFunc(mp.lows[lowFrom:], func(a, b streamLow) int { return cmp.Compare(a.p, b.p) })
			mp.heads = append(mp.heads, sectionHead{lenAt: len(out), lowFrom: lowFrom, lowTo: len(mp.lows)})
			head = &mp.heads[len(mp.heads)-1]
			mp.hdr = append(out, make([]byte, lenWidth)...)
			putPadded(mp.hdr[len(out):], uint64(s.bytes))
		} else {
			mp.hdr = binary.AppendUvarint(out, uint64(s.bytes))
		}
		from = mp.cut(from)
		if head != nil {
			head.from = len(mp.segs)
		}
		for i, c := range lg.chunks {
			if s.from[i] < 0 {
				continue
			}
			data := c.data
			if data == nil {
				if load == nil {
					mp.reset()
					return fmt.Errorf("%v chunk %d is spilled", lg.kg, c.serial)
				}
				var err error
				if data, err = load(c); err != nil {
					mp.reset()
					return err
				}
			} else {
				c.pins.Add(1)
				mp.pinned = append(mp.pinned, c)
			}
			mp.segs = append(mp.segs, segment{data: data[s.from[i]:len(data):len(data)]})
		}
		if head != nil {
			head.to = len(mp.segs)
		}
	}
	from = mp.cut(from)
	mp.hdr = append(mp.hdr, 0, 0, 0, 0) // the checksum, by Seal
	mp.cut(from)

	for _, s := range secs {
		s.lg.marked()
	}
	for _, lg := range b.logs {
		if lg != nil {
			lg.count(0) // Stats exact at every checkpoint
		}
	}
	b.drops = nil
	b.needFull = false
	b.stuck.Store(false)
	return nil
}

// marked records that the log's current state is in the chain.
func (lg *kgLog) marked() {
	if n := len(lg.chunks); n > 0 {
		c := lg.chunks[n-1]
		lg.markSerial = c.serial
		lg.markOff = c.size
		if c.data != nil {
			lg.markOff = len(c.data)
		}
	}
	for _, st := range lg.streams {
		st.markLow, st.markHigh = st.low, st.high
	}
	lg.reset = false
	lg.dirty = false
}

// Restore rebuilds a buffer from the chain of marks of a restored
// checkpoint (oldest first; the first must be a full mark). The result
// holds what the buffer that made them held at the last one, with the same
// watermarks, and its next Mark continues the chain. An empty chain gives
// an empty buffer. Restore never panics: a mark that does not decode, fails
// its checksum or does not fit the marks before it gives an error wrapping
// ErrCorrupt that names the mark, the byte offset and the field.
func Restore(cfg Config, deltas [][]byte) (*Buffer, error) {
	b, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if len(deltas) == 0 {
		return b, nil
	}
	r := restorer{b: b}
	for i, d := range deltas {
		if err := r.apply(i, d); err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	for _, lg := range b.logs {
		if lg != nil {
			lg.marked()
			for _, st := range lg.streams {
				st.section = 0
			}
		}
	}
	b.needFull = false
	b.drops = nil
	if b.mem > b.cfg.MemLimit && b.cfg.SpillDir != "" {
		_ = b.spill() // a failure is in Stats, and Full reports it
	}
	return b, nil
}

// restorer applies marks to a buffer.
type restorer struct {
	b        *Buffer
	sections int // sections applied, for stream.section
	delta    int
	d        []byte
	pos      int
}

func (r *restorer) fail(at int, format string, args ...any) error {
	return fmt.Errorf("%w: mark %d at byte %d: %s", ErrCorrupt, r.delta, at, fmt.Sprintf(format, args...))
}

// uvarint reads a uvarint field, at most max. On a problem it returns an
// error naming the field, which where formats (only then).
func (r *restorer) uvarint(max uint64, where func() string) (uint64, error) {
	v, w := varint.At(r.d, r.pos)
	switch {
	case w == 0:
		return 0, r.fail(r.pos, "%s: truncated varint", where())
	case w < 0:
		return 0, r.fail(r.pos, "%s: varint overflows 64 bits", where())
	case v > max:
		return 0, r.fail(r.pos, "%s: %d, at most %d", where(), v, max)
	}
	r.pos += w
	return v, nil
}

// named returns a where function for uvarint.
func named(s string) func() string { return func() string { return s } }

func (r *restorer) apply(i int, d []byte) error {
	r.delta, r.pos = i, 0
	if len(d) < markHeader+markTrailer+2 {
		return r.fail(0, "%d bytes, too short for a mark", len(d))
	}
	body := d[:len(d)-markTrailer]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(d[len(body):]); got != want {
		return r.fail(len(body), "checksum mismatch (%08x, computed %08x)", want, got)
	}
	r.d = body
	switch {
	case string(body[:4]) != string(markMagic):
		return r.fail(0, "bad magic %q", body[:4])
	case body[4] != markVersion:
		return r.fail(4, "unknown version %d", body[4])
	case body[5]&^flagFull != 0:
		return r.fail(5, "unknown flags %#x", body[5])
	}
	full := body[5]&flagFull != 0
	if i == 0 && !full {
		return r.fail(5, "the first mark of a chain must be a full one")
	}
	b := r.b
	if full {
		for kg, lg := range b.logs {
			if lg != nil {
				b.dropLog(job.KeyGroup(kg))
			}
		}
	}
	r.pos = markHeader
	n, err := r.uvarint(uint64(len(body)-r.pos), named("drop count"))
	if err != nil {
		return err
	}
	for range n {
		kg, err := r.uvarint(math.MaxUint16, named("dropped key group"))
		if err != nil {
			return err
		}
		b.dropLog(job.KeyGroup(kg))
	}
	n, err = r.uvarint(uint64(len(body)-r.pos)/4, named("section count"))
	if err != nil {
		return err
	}
	seen := make(map[job.KeyGroup]bool, n)
	for j := range n {
		if err := r.section(int(j), seen); err != nil {
			return err
		}
	}
	if r.pos != len(body) {
		return r.fail(r.pos, "%d bytes after the last section", len(body)-r.pos)
	}
	return nil
}

func (r *restorer) section(j int, seen map[job.KeyGroup]bool) error {
	b := r.b
	at := r.pos
	v, err := r.uvarint(math.MaxUint16, func() string { return fmt.Sprintf("section %d key group", j) })
	if err != nil {
		return err
	}
	kg := job.KeyGroup(v)
	if seen[kg] {
		return r.fail(at, "section %d: %v appears twice", j, kg)
	}
	seen[kg] = true
	if r.pos >= len(r.d) {
		return r.fail(r.pos, "section %d (%v) flags: truncated", j, kg)
	}
	flags := r.d[r.pos]
	if flags&^flagReset != 0 {
		return r.fail(r.pos, "section %d (%v): unknown flags %#x", j, kg, flags)
	}
	r.pos++
	if flags&flagReset != 0 {
		b.dropLog(kg)
	}
	lg := b.log(kg)
	if lg == nil {
		lg = b.newLog(kg)
	}
	r.sections++
	id := r.sections
	n, err := r.uvarint(uint64(len(r.d)-r.pos)/3, func() string { return fmt.Sprintf("section %d (%v) stream count", j, kg) })
	if err != nil {
		return err
	}
	listed := make([]*stream, 0, n)
	for s := range n {
		where := func() string { return fmt.Sprintf("section %d (%v) stream %d", j, kg, s) }
		at := r.pos
		p, err := r.uvarint(math.MaxUint32, func() string { return where() + " producer" })
		if err != nil {
			return err
		}
		low, err := r.uvarint(math.MaxUint64, func() string { return where() + " low" })
		if err != nil {
			return err
		}
		high, err := r.uvarint(math.MaxUint64, func() string { return where() + " high" })
		if err != nil {
			return err
		}
		st := lg.find(job.Producer(p))
		if st == nil {
			st = lg.newStream(job.Producer(p))
		}
		switch {
		case st.section == id:
			return r.fail(at, "%s: %v listed twice", where(), st.p)
		case low < st.low:
			return r.fail(at, "%s: %v low %d is below the previous %d", where(), st.p, low, st.low)
		case high < st.high:
			return r.fail(at, "%s: %v high %d is below the previous %d", where(), st.p, high, st.high)
		}
		st.section = id
		st.wantHigh = high
		if low > st.low {
			b.trim(lg, st, low)
		}
		listed = append(listed, st)
	}
	size, err := r.uvarint(uint64(len(r.d)-r.pos), func() string { return fmt.Sprintf("section %d (%v) records length", j, kg) })
	if err != nil {
		return err
	}
	if size > uint64(len(r.d)-r.pos) {
		return r.fail(r.pos, "section %d (%v) records length: %d past the end (%d bytes left)", j, kg, size, len(r.d)-r.pos)
	}
	end := r.pos + int(size)
	recs := r.d[:end]
	stored := int64(0)
	var st *stream // the previous record's, most often the next one's too
	for k := 0; r.pos < end; k++ {
		at := r.pos
		p, seq, _, next, field, fat := decodeRecord(recs, r.pos)
		if next < 0 {
			return r.fail(fat, "section %d (%v) record %d: bad %s", j, kg, k, field)
		}
		if st == nil || st.p != p {
			st = lg.index[p]
		}
		if st == nil || st.section != id {
			return r.fail(at, "section %d (%v) record %d: %v is not listed in the section", j, kg, k, p)
		}
		switch {
		case seq > st.wantHigh:
			return r.fail(at, "section %d (%v) record %d: %v seq %d is past the listed high %d", j, kg, k, p, seq, st.wantHigh)
		case st.high == 0:
			if seq-1 > st.low {
				st.low = seq - 1
			}
		case seq > st.high && (seq-st.high == 1 || seq-1 <= st.low): // next, or after a trimmed gap
		default:
			return r.fail(at, "section %d (%v) record %d: %v seq %d does not follow %d (low %d)", j, kg, k, p, seq, st.high, st.low)
		}
		st.high = seq
		if seq > st.low {
			b.storeEncoded(lg, st, seq, recs[at:next], end-at)
			stored++
		}
		r.pos = next
	}
	lg.count(stored)
	if st != nil {
		lg.last = st
	}
	for _, st := range listed {
		if st.high < st.wantHigh {
			if st.wantHigh > st.low {
				return r.fail(end, "section %d (%v): %v records %d..%d are missing", j, kg, st.p, max(st.high, st.low)+1, st.wantHigh)
			}
			st.high = st.wantHigh
		}
	}
	lg.dirty = true
	return nil
}

// dropLog removes key group kg and everything held for it.
func (b *Buffer) dropLog(kg job.KeyGroup) {
	lg := b.takeLog(kg)
	if lg == nil {
		return
	}
	for _, c := range slices.Clone(lg.chunks) {
		c.sealed = true
		b.free(c)
	}
	lg.count(-lg.held)
}
