package backup

import (
	"math"

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
}

// maxRecordOverhead bounds the varints of one record.
const maxRecordOverhead = 6 * 10

// putRecord encodes a record at d[i:], which has room for it, and returns
// the end.
func putRecord(d []byte, i int, p job.Producer, seq uint64, rec *job.Record) int {
	i += putUvarint(d[i:], uint64(p))
	i += putUvarint(d[i:], seq)
	i += putUvarint(d[i:], uint64(len(rec.Key)))
	i += copy(d[i:], rec.Key)
	i += putUvarint(d[i:], zigzag(rec.Time))
	i += putUvarint(d[i:], zigzag(rec.Value))
	i += putUvarint(d[i:], uint64(len(rec.Data)))
	i += copy(d[i:], rec.Data)
	return i
}

// decodeRecord decodes the record at d[i:]. Key and Data alias d (nil when
// empty). On a malformed record it returns next < 0 and the field at fault
// (at: its offset).
func decodeRecord(d []byte, i int) (p job.Producer, seq uint64, rec job.Record, next int, field string, at int) {
	at = i
	v, w := uvarintAt(d, i)
	if w <= 0 || v > math.MaxUint32 {
		return 0, 0, rec, -1, "producer", at
	}
	p = job.Producer(v)
	i += w
	at = i
	seq, w = uvarintAt(d, i)
	if w <= 0 || seq == 0 {
		return 0, 0, rec, -1, "seq", at
	}
	i += w
	at = i
	n, w := uvarintAt(d, i)
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
	v, w = uvarintAt(d, i)
	if w <= 0 {
		return 0, 0, rec, -1, "time", at
	}
	rec.Time = unzigzag(v)
	i += w
	at = i
	v, w = uvarintAt(d, i)
	if w <= 0 {
		return 0, 0, rec, -1, "value", at
	}
	rec.Value = unzigzag(v)
	i += w
	at = i
	n, w = uvarintAt(d, i)
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

// uvarintAt decodes the uvarint at b[i:] and returns it and its width; a
// width of 0 means truncated, below 0 an overflow of 64 bits.
func uvarintAt(b []byte, i int) (uint64, int) {
	var x uint64
	var s uint
	for j := i; j < len(b); j++ {
		c := b[j]
		if c < 0x80 {
			if s == 63 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<s, j - i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
		if s > 63 {
			return 0, -1
		}
	}
	return 0, 0
}

// putUvarint is binary.PutUvarint, small enough to inline.
func putUvarint(b []byte, x uint64) int {
	i := 0
	for x >= 0x80 {
		b[i] = byte(x) | 0x80
		x >>= 7
		i++
	}
	b[i] = byte(x)
	return i + 1
}

func zigzag(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
