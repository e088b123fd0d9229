package backup

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"spate/job"
)

// Buffer is the upstream backup of one output port of one operator
// instance: every record sent downstream, by (producer, destination key
// group) and sequence number, until it is trimmed.
//
// A Buffer is not safe for concurrent use: the instance goroutine owns it.
// Stats alone may be called from any goroutine at any time.
type Buffer struct {
	cfg   Config
	chunk int // largest regular chunk

	// mu guards the key-group table (logs: the slice and its entries),
	// slices and spillErr against Stats. The owner reads them without it
	// and writes them with it.
	mu       sync.Mutex
	logs     []*kgLog // by key group; nil: no state for it
	slices   []job.Range
	spillErr error // the last spill failure, for Stats

	serial    uint64   // the last chunk serial handed out
	mem       int64    // capacity of the chunks in memory
	sealed    []*chunk // sealed chunks in seal order, from qhead: the spill candidates
	qhead     int
	sealedCap int                   // compact sealed when it reaches this length
	pool      [poolClasses][][]byte // free chunks by size class (minChunk<<i), for reuse
	pooled    int64                 // bytes in pool, at most poolLimit
	scratch   []byte                // a spill file read back

	needFull bool                      // the next Mark starts a chain
	drops    map[job.KeyGroup]struct{} // key groups extracted since the last Mark
	stuck    atomic.Bool               // over MemLimit and spilling cannot help until a Mark or a trim

	trims   atomic.Int64 // Trim calls that moved a low watermark
	trimmed atomic.Int64 // records released by them
}

// kgLog is everything a buffer holds for one destination key group.
type kgLog struct {
	kg      job.KeyGroup
	owner   *Buffer
	streams []*stream // in order of creation
	index   map[job.Producer]*stream
	last    *stream // the stream of the previous lookup
	chunks  []*chunk
	open    *chunk // the last chunk, if it takes appends
	nextCap int    // capacity of the next chunk: doubles when one fills up, halves when one is trimmed before

	// What the last Mark covered: the chunks up to markSerial, the one of
	// markSerial up to markOff. reset: the next Mark carries the whole key
	// group (it is new to the chain). dirty: something changed since.
	markSerial uint64
	markOff    int
	reset      bool
	dirty      bool

	// For Stats. held is the number of records held (untrimmed), the
	// owner's; records is what Stats reads of it: published at every
	// change but an append, and at every publishEvery-th append: an
	// atomic add per record was a large part of what Append costs
	// (BenchmarkAppend*).
	held       int64
	records    atomic.Int64
	memBytes   atomic.Int64
	spillBytes atomic.Int64
	spillFiles atomic.Int64
}

// stream is one (producer, key group): records low+1..high are held.
type stream struct {
	p         job.Producer
	low       uint64 // highest trimmed seq (or first seq seen - 1)
	high      uint64 // highest appended seq; 0: none yet
	markLow   uint64 // low and high as of the last Mark
	markHigh  uint64
	refs      []chunkRef // the chunks holding records of this stream, from head
	head      int
	from      uint64 // Replay: records up to from are skipped
	section   int    // Restore: the section that listed it
	wantHigh  uint64 // Restore: the high its section says
	restoring bool   // Restore: relaxed sequence rule
	// jumped: records jumpFrom+1..jumpTo were numbered by another
	// instance (Jump): a Replay after jumpFrom or later lacks nothing here.
	jumpFrom, jumpTo uint64
}

// chunkRef says that a chunk holds records of a stream up to seq last.
type chunkRef struct {
	c    *chunk
	last uint64
}

// New returns an empty buffer.
func New(cfg Config) (*Buffer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.checkDir(); err != nil {
		return nil, err
	}
	return newBuffer(cfg), nil
}

func newBuffer(cfg Config) *Buffer {
	return &Buffer{cfg: cfg, chunk: cfg.chunkLimit(), needFull: true}
}

// Append adds the record seq of (p, kg), copying rec's key and data. seq
// must be the next one of (p, kg), or, for the first record of (p, kg), any
// number from 1 on: the buffer then holds nothing before it (Low becomes
// seq-1). A gap or a repeat is refused with a *SeqError, and nothing
// changes.
//
// A record at or below Low (trimmed before it was appended, as after a
// recovery that regenerates what downstream already checkpointed) advances
// High but is not stored.
//
// When the records in memory exceed MemLimit and SpillDir is set, Append
// spills the oldest marked chunks. If that fails, the record is still
// appended and Append returns an error wrapping ErrSpill; the buffer stays
// consistent, Full reports true while over the limit, and spilling is tried
// again after the next Mark or freeing Trim.
func (b *Buffer) Append(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
	var lg *kgLog
	if int(kg) < len(b.logs) {
		lg = b.logs[kg]
	}
	var st *stream
	if lg != nil {
		if st = lg.last; st == nil || st.p != p {
			st = lg.index[p]
		}
	}
	switch {
	case st != nil && st.high != 0:
		if seq != st.high+1 || seq == 0 { // seq 0: high+1 wrapped
			return &SeqError{P: p, KG: kg, Seq: seq, Next: st.high + 1}
		}
	case seq == 0:
		return &SeqError{P: p, KG: kg, Seq: 0, Next: 1}
	}
	if lg == nil {
		lg = b.newLog(kg)
	}
	if st == nil {
		st = lg.newStream(p)
	}
	lg.last = st
	lg.dirty = true
	if st.high == 0 && seq-1 > st.low {
		st.low = seq - 1
	}
	st.high = seq
	if seq <= st.low {
		return nil
	}
	b.store(lg, st, seq, &rec)
	if b.mem > b.cfg.MemLimit && b.cfg.SpillDir != "" && !b.stuck.Load() {
		return b.spill()
	}
	return nil
}

// store copies the record into the log's open chunk.
func (b *Buffer) store(lg *kgLog, st *stream, seq uint64, rec *job.Record) {
	c := b.room(lg, maxRecordOverhead+len(rec.Key)+len(rec.Data))
	d := c.data[:cap(c.data)]
	c.data = d[:putRecord(d, len(c.data), st.p, seq, rec)]
	c.stored(st, seq)
	if lg.held++; lg.held%publishEvery == 0 {
		lg.records.Store(lg.held)
	}
}

// publishEvery is how many appends to a key group Stats' figure of its
// records may lag behind.
const publishEvery = 64

// count adds d to the log's records held and publishes them.
func (lg *kgLog) count(d int64) {
	lg.held += d
	lg.records.Store(lg.held)
}

// storeEncoded is store for record seq of st already in the chunk
// encoding (a mark's, at a restore): it copies the bytes as they are. rest
// is the size of the records still to be restored in lg, this one
// included: a chunk it opens is sized for them (up to the largest chunk),
// as it knows what is coming. It leaves lg.records to the caller.
func (b *Buffer) storeEncoded(lg *kgLog, st *stream, seq uint64, enc []byte, rest int) {
	c := lg.open
	if c == nil || cap(c.data)-len(c.data) < len(enc) {
		c = b.openChunk(lg, max(len(enc), min(rest, b.chunk)))
	}
	n := len(c.data)
	c.data = c.data[:n+len(enc)] // within its capacity: no write barrier
	copy(c.data[n:], enc)
	c.stored(st, seq)
}

// room returns the log's open chunk, opening one if it has less than need
// bytes free.
func (b *Buffer) room(lg *kgLog, need int) *chunk {
	if c := lg.open; c != nil && cap(c.data)-len(c.data) >= need {
		return c
	}
	return b.openChunk(lg, need)
}

// stored counts record seq of st, just written at the end of c.
func (c *chunk) stored(st *stream, seq uint64) {
	c.n++
	if n := len(st.refs); n > st.head && st.refs[n-1].c == c {
		st.refs[n-1].last = seq
	} else {
		st.refs = append(st.refs, chunkRef{c: c, last: seq})
		c.live++
	}
}

// openChunk seals the log's open chunk and opens one with room for need
// bytes.
func (b *Buffer) openChunk(lg *kgLog, need int) *chunk {
	if c := lg.open; c != nil {
		if sizeClass(cap(c.data)) >= 0 { // it filled up: the log needs more room
			lg.nextCap = min(2*cap(c.data), b.chunk)
		}
		b.seal(c)
	}
	size := max(lg.nextCap, minChunk)
	var data []byte
	switch {
	case need > size:
		data = make([]byte, 0, need)
	case b.fromPool(size) != nil:
		i := sizeClass(size)
		data = b.pool[i][len(b.pool[i])-1]
		b.pool[i] = b.pool[i][:len(b.pool[i])-1]
		b.pooled -= int64(size)
	default:
		data = make([]byte, 0, size)
	}
	b.serial++
	c := &chunk{lg: lg, serial: b.serial, data: data}
	lg.chunks = append(lg.chunks, c)
	lg.open = c
	b.mem += int64(cap(data))
	lg.memBytes.Add(int64(cap(data)))
	return c
}

// seal closes c to appends; it becomes a spill candidate, or is freed at
// once if all its records are trimmed.
func (b *Buffer) seal(c *chunk) {
	c.sealed = true
	c.size = len(c.data)
	if c.lg.open == c {
		c.lg.open = nil
	}
	if c.live == 0 {
		b.free(c)
		return
	}
	if b.cfg.SpillDir == "" {
		return
	}
	if len(b.sealed) >= b.sealedCap {
		b.compactSealed()
	}
	b.sealed = append(b.sealed, c)
}

// compactSealed drops from the spill queue the chunks freed, spilled or
// moved since they were sealed, so that the queue stays in proportion to
// the chunks held.
func (b *Buffer) compactSealed() {
	q := b.sealed[:0]
	for _, c := range b.sealed[b.qhead:] {
		if !c.freed && c.file == "" && c.lg.owner == b {
			q = append(q, c)
		}
	}
	clear(b.sealed[len(q):])
	b.sealed, b.qhead = q, 0
	b.sealedCap = 2*len(q) + 64
}

// free releases a chunk (memory or spill file) and returns its size.
func (b *Buffer) free(c *chunk) int64 {
	lg := c.lg
	if i := slices.Index(lg.chunks, c); i >= 0 {
		lg.chunks = slices.Delete(lg.chunks, i, i+1)
	}
	if lg.open == c {
		lg.open = nil
	}
	c.freed = true
	if c.file != "" {
		n := int64(spillHeader + c.size)
		lg.spillBytes.Add(-n)
		lg.spillFiles.Add(-1)
		if err := os.Remove(c.file); err != nil && !errors.Is(err, os.ErrNotExist) {
			b.setSpillErr(fmt.Errorf("%w: removing %s: %v", ErrSpill, c.file, err))
		}
		c.file = ""
		return n
	}
	n := int64(cap(c.data))
	b.release(c)
	c.data = nil
	return n
}

// release gives back a chunk's memory: to the pool for new chunks, unless
// a mark not yet released points into it (or the pool is full).
func (b *Buffer) release(c *chunk) {
	lg, data := c.lg, c.data
	b.mem -= int64(cap(data))
	lg.memBytes.Add(-int64(cap(data)))
	if c.pins.Load() > 0 {
		return
	}
	if i := sizeClass(cap(data)); i >= 0 && b.pooled+int64(cap(data)) <= b.poolLimit() {
		b.pool[i] = append(b.pool[i], data[:0])
		b.pooled += int64(cap(data))
	}
}

// poolClasses is the number of chunk size classes: minChunk<<i up to maxChunk.
const poolClasses = 7

// sizeClass returns the pool class of a chunk capacity, or -1.
func sizeClass(n int) int {
	for i := range poolClasses {
		if n == minChunk<<i {
			return i
		}
	}
	return -1
}

// fromPool returns a pooled chunk of capacity size, or nil.
func (b *Buffer) fromPool(size int) []byte {
	if i := sizeClass(size); i >= 0 {
		if n := len(b.pool[i]); n > 0 {
			return b.pool[i][n-1]
		}
	}
	return nil
}

// poolLimit bounds the memory kept for reuse: MemLimit/16 within [4 chunks,
// 4 MiB].
func (b *Buffer) poolLimit() int64 {
	return max(min(b.cfg.MemLimit/16, 4<<20), 4*int64(b.chunk))
}

// Trim releases the records of (p, kg) up to seq upTo: they are no longer
// needed by any checkpoint downstream may restore. It is idempotent and
// never moves backward: a lower upTo than Low does nothing. Trimming past
// High is allowed (records up to upTo that are appended later are not
// stored), and so is trimming a (p, kg) never seen, which records the
// watermark. It returns the bytes released (memory and spill files): a
// chunk is released once all its records, of every producer, are trimmed.
func (b *Buffer) Trim(p job.Producer, kg job.KeyGroup, upTo uint64) (freedBytes int64) {
	lg := b.log(kg)
	if lg == nil {
		if upTo == 0 {
			return 0
		}
		lg = b.newLog(kg)
	}
	st := lg.find(p)
	if st == nil {
		if upTo == 0 {
			return 0
		}
		st = lg.newStream(p)
	}
	if upTo <= st.low {
		return 0
	}
	b.trims.Add(1)
	freed := b.trim(lg, st, upTo)
	if freed > 0 {
		b.stuck.Store(false)
	}
	return freed
}

// trim moves st's low watermark up to upTo (> st.low) and frees the chunks
// that become fully trimmed.
func (b *Buffer) trim(lg *kgLog, st *stream, upTo uint64) int64 {
	if st.high > st.low {
		n := int64(min(upTo, st.high) - st.low)
		lg.count(-n)
		b.trimmed.Add(n)
	}
	st.low = upTo
	lg.dirty = true
	var freed int64
	for st.head < len(st.refs) && st.refs[st.head].last <= upTo {
		c := st.refs[st.head].c
		st.refs[st.head] = chunkRef{}
		st.head++
		c.live--
		if c.live > 0 {
			continue
		}
		if c == lg.open { // trimmed before it filled up: the log needs less room
			if sizeClass(cap(c.data)) >= 0 {
				lg.nextCap = max(cap(c.data)/2, minChunk)
			}
			c.sealed = true
			c.size = len(c.data)
			lg.open = nil
		}
		if c.sealed {
			freed += b.free(c)
		}
	}
	switch {
	case st.head == len(st.refs):
		st.refs = st.refs[:0]
		st.head = 0
	case st.head >= 16 && 2*st.head >= len(st.refs):
		n := copy(st.refs, st.refs[st.head:])
		clear(st.refs[n:])
		st.refs = st.refs[:n]
		st.head = 0
	}
	return freed
}

// Low returns the low watermark of (p, kg): records up to it are not held
// (trimmed, or older than the first record appended). 0 for an unknown
// (p, kg).
func (b *Buffer) Low(p job.Producer, kg job.KeyGroup) uint64 {
	if st := b.stream(p, kg); st != nil {
		return st.low
	}
	return 0
}

// High returns the highest sequence number appended for (p, kg); 0 if none.
func (b *Buffer) High(p job.Producer, kg job.KeyGroup) uint64 {
	if st := b.stream(p, kg); st != nil {
		return st.high
	}
	return 0
}

// Producers returns the producers with state in key group kg, in the order
// they appeared.
func (b *Buffer) Producers(kg job.KeyGroup) []job.Producer {
	lg := b.log(kg)
	if lg == nil {
		return nil
	}
	out := make([]job.Producer, len(lg.streams))
	for i, st := range lg.streams {
		out[i] = st.p
	}
	return out
}

// KeyGroups returns the key groups this buffer has state for (records or
// watermarks), in increasing order: the key groups it owns.
func (b *Buffer) KeyGroups() []job.KeyGroup {
	var out []job.KeyGroup
	for kg, lg := range b.logs {
		if lg != nil {
			out = append(out, job.KeyGroup(kg))
		}
	}
	return out
}

// Full reports whether the caller should stop sending (and so appending)
// until trims or a Mark make room: the records in memory exceed MemLimit and
// spilling cannot bring them down, because there is no SpillDir, or the
// excess is not marked yet (only marked chunks are spilled, so that Mark
// never reads a spill file), or spilling failed.
func (b *Buffer) Full() bool {
	return b.mem > b.cfg.MemLimit && (b.cfg.SpillDir == "" || b.stuck.Load())
}

// Replay calls fn for every held record of key group kg with a sequence
// number above after[p] (producers absent from after: every held record),
// in sequence order per producer; the records of different producers are
// interleaved in the order they were appended. rec's key and data are
// valid only during the call (empty ones are nil). fn must not modify b.
//
// If a record that after asks for is no longer held (after[p] < Low(p,
// kg), unless every record from after[p]+1 to Low was numbered by another
// instance: see Jump), Replay returns a *TrimmedError (naming the lowest such producer)
// before calling fn at all. If fn returns an error, Replay stops and
// returns it. A spill file that cannot be read back gives an error wrapping
// ErrSpill (and ErrCorrupt if its checksum fails), possibly after some
// calls of fn.
func (b *Buffer) Replay(kg job.KeyGroup, after map[job.Producer]uint64, fn func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error) error {
	lg := b.log(kg)
	if lg == nil {
		return nil
	}
	var bad *TrimmedError
	for p, a := range after {
		if st := lg.index[p]; st != nil && a < st.low && !st.elsewhere(a) && (bad == nil || p < bad.P) {
			bad = &TrimmedError{P: p, KG: kg, Wanted: a + 1, Low: st.low}
		}
	}
	if bad != nil {
		return bad
	}
	for _, st := range lg.streams {
		st.from = st.low
		if a, ok := after[st.p]; ok && a > st.from {
			st.from = a
		}
	}
	var st *stream
	for _, c := range lg.chunks {
		if c.live == 0 {
			continue
		}
		data := c.data
		if c.file != "" {
			var err error
			if data, err = b.readSpill(c, true); err != nil {
				return err
			}
		}
		for i := 0; i < len(data); {
			p, seq, rec, next, field, at := decodeRecord(data, i)
			if next < 0 {
				return fmt.Errorf("%w: %v chunk %d: %s at byte %d", ErrCorrupt, kg, c.serial, field, at)
			}
			i = next
			if st == nil || st.p != p {
				if st = lg.index[p]; st == nil {
					return fmt.Errorf("%w: %v chunk %d: record of unknown producer %v", ErrCorrupt, kg, c.serial, p)
				}
			}
			if seq <= st.from {
				continue
			}
			if err := fn(p, kg, seq, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close removes the buffer's spill files and empties it. It returns the
// first removal error (wrapping ErrSpill).
func (b *Buffer) Close() error {
	var first error
	b.mu.Lock()
	logs := b.logs
	b.logs = nil
	b.mu.Unlock()
	for _, lg := range logs {
		if lg == nil {
			continue
		}
		for _, c := range lg.chunks {
			if c.file != "" {
				if err := os.Remove(c.file); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
					first = fmt.Errorf("%w: removing %s: %v", ErrSpill, c.file, err)
				}
			}
			c.freed = true
		}
	}
	b.mem = 0
	b.sealed, b.qhead = nil, 0
	b.pool, b.pooled = [poolClasses][][]byte{}, 0
	return first
}

// log returns the log of kg, or nil.
func (b *Buffer) log(kg job.KeyGroup) *kgLog {
	if int(kg) < len(b.logs) {
		return b.logs[kg]
	}
	return nil
}

// stream returns the stream of (p, kg), or nil.
func (b *Buffer) stream(p job.Producer, kg job.KeyGroup) *stream {
	if lg := b.log(kg); lg != nil {
		return lg.find(p)
	}
	return nil
}

// newLog creates the log of kg, new to the buffer's mark chain.
func (b *Buffer) newLog(kg job.KeyGroup) *kgLog {
	lg := &kgLog{kg: kg, index: make(map[job.Producer]*stream), reset: true, dirty: true}
	b.putLog(lg)
	return lg
}

// putLog installs lg as the log of its key group.
func (b *Buffer) putLog(lg *kgLog) {
	lg.owner = b
	b.mu.Lock()
	if int(lg.kg) >= len(b.logs) {
		n := max(int(lg.kg)+1, 2*len(b.logs), 128)
		n = min(n, 1<<16)
		logs := make([]*kgLog, n)
		copy(logs, b.logs)
		b.logs = logs
	}
	b.logs[lg.kg] = lg
	b.mu.Unlock()
}

// takeLog removes the log of kg from the table and returns it (nil if none).
func (b *Buffer) takeLog(kg job.KeyGroup) *kgLog {
	lg := b.log(kg)
	if lg == nil {
		return nil
	}
	b.mu.Lock()
	b.logs[kg] = nil
	b.mu.Unlock()
	return lg
}

// find returns the stream of p, or nil.
func (lg *kgLog) find(p job.Producer) *stream {
	if st := lg.last; st != nil && st.p == p {
		return st
	}
	return lg.index[p]
}

func (lg *kgLog) newStream(p job.Producer) *stream {
	st := &stream{p: p}
	lg.streams = append(lg.streams, st)
	lg.index[p] = st
	lg.dirty = true
	return st
}

func (b *Buffer) setSpillErr(err error) {
	b.mu.Lock()
	b.spillErr = err
	b.mu.Unlock()
}
