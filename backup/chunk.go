package backup

import (
	"math"
	"sync/atomic"

	"spate/internal/varint"
	"spate/job"
)

// A chunk is a run of encoded records of one key group, of any producers,
// in the order they were appended. It is in memory (data) or, once spilled,
// in a file. The same encoding is used in memory, in spill files and in
// marks, so a mark copies chunk bytes as they are:
//
//	uvarint producer | uvarint seq | uvarint len(key) | key |
//	zigzag time | zigzag value | uvarint len(data) | data
//
// The records of one producer in a key group are in seq order along the
// key group's chunks. A chunk is freed once every record in it is trimmed:
// each stream keeps, per chunk it has records in, its last seq there, and
// a chunk counts the streams whose last record in it is not trimmed yet
// (live).
type chunk struct {
	lg     *kgLog
	serial uint64 // creation order within the owning buffer; increasing along a log
	data   []byte // the records; nil once spilled
	size   int    // len(data), kept when spilled
	n      int    // records
	live   int    // streams with untrimmed records here
	sealed bool   // no more appends: a later chunk of the log is open
	freed  bool
	file   string // spill file, "" while in memory
	crc    uint32 // of the records, set when spilled
	// pins counts the marks in parts (MarkInParts) that point into data
	// and are not released yet: while it is not zero, freed data is not
	// reused for new records. Released on any goroutine.
	pins atomic.Int32
}

// maxRecordOverhead bounds the varints of one record.
const maxRecordOverhead = 6 * 10

// putRecord encodes a record at d[i:], which has room for it, and returns
// the end.
func putRecord(d []byte, i int, p job.Producer, seq uint64, rec *job.Record) int {
	i += varint.Put(d[i:], uint64(p))
	i += varint.Put(d[i:], seq)
	i += varint.Put(d[i:], uint64(len(rec.Key)))
	i += copy(d[i:], rec.Key)
	i += varint.Put(d[i:], varint.Zigzag(rec.Time))
	i += varint.Put(d[i:], varint.Zigzag(rec.Value))
	i += varint.Put(d[i:], uint64(len(rec.Data)))
	i += copy(d[i:], rec.Data)
	return i
}

// decodeRecord decodes the record at d[i:]. Key and Data alias d (nil when
// empty). On a malformed record it returns next < 0 and the field at fault
// (at: its offset).
func decodeRecord(d []byte, i int) (p job.Producer, seq uint64, rec job.Record, next int, field string, at int) {
	at = i
	v, w := varint.At(d, i)
	if w <= 0 || v > math.MaxUint32 {
		return 0, 0, rec, -1, "producer", at
	}
	p = job.Producer(v)
	i += w
	at = i
	seq, w = varint.At(d, i)
	if w <= 0 || seq == 0 {
		return 0, 0, rec, -1, "seq", at
	}
	i += w
	at = i
	n, w := varint.At(d, i)
	if w <= 0 || n > uint64(len(d)-i-w) {
		return 0, 0, rec, -1, "key length", at
	}
	i += w
	if n > 0 {
		e := i + int(n)
		rec.Key = d[i:e:e]
		i = e
	}
	at = i
	v, w = varint.At(d, i)
	if w <= 0 {
		return 0, 0, rec, -1, "time", at
	}
	rec.Time = varint.Unzigzag(v)
	i += w
	at = i
	v, w = varint.At(d, i)
	if w <= 0 {
		return 0, 0, rec, -1, "value", at
	}
	rec.Value = varint.Unzigzag(v)
	i += w
	at = i
	n, w = varint.At(d, i)
	if w <= 0 || n > uint64(len(d)-i-w) {
		return 0, 0, rec, -1, "data length", at
	}
	i += w
	if n > 0 {
		e := i + int(n)
		rec.Data = d[i:e:e]
		i = e
	}
	return p, seq, rec, i, "", 0
}
