package job

import (
	"fmt"
	"math"
)

// DefaultGroups is the number of key groups of a job (G), fixed for the
// job's lifetime like Flink's max parallelism.
const DefaultGroups = 128

// KeyGroup is the unit of keyed state and of routing: kg = hash(key) mod G.
type KeyGroup uint16

func (g KeyGroup) String() string { return fmt.Sprintf("kg%d", uint16(g)) }

// Record is one element of a stream. Key and Data are borrowed: they are
// valid only until the call that handed the record over returns; keep a
// copy to hold on to them.
type Record struct {
	Key   []byte // the routing key
	Time  int64  // event time, milliseconds
	Value int64
	Data  []byte // operator-specific payload (empty for source records)
}

// MaxWatermark is the watermark of a stream that has ended: every window fires.
const MaxWatermark = math.MaxInt64

// NoWatermark is the watermark of a stream that has not said anything yet.
const NoWatermark = math.MinInt64

// Hash is the key hash used for key groups (FNV-1a, 64 bit). It is part of
// the job's contract: a key's group never changes.
func Hash(key []byte) uint64 { return fnv(key) }

// fnv is FNV-1a of a key in either form, without copying it.
func fnv[K string | []byte](key K) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h
}

// GroupOf returns the key group of key among g groups.
func GroupOf(key []byte, g int) KeyGroup { return KeyGroup(Hash(key) % uint64(g)) }

// Producer names the origin of a sequence of records: a source partition or,
// for a keyed operator, the key group a record was computed from. Sequence
// numbers are kept per (Producer, destination KeyGroup), so they survive
// replay, recovery and rescaling unchanged.
type Producer uint32

// MakeProducer packs an operator index and a unit (partition or key group).
func MakeProducer(op int, unit int) Producer { return Producer(uint32(op)<<16 | uint32(unit)&0xffff) }

// Op is the operator index of p.
func (p Producer) Op() int { return int(p >> 16) }

// Unit is the partition or key group of p.
func (p Producer) Unit() int { return int(p & 0xffff) }

func (p Producer) String() string { return fmt.Sprintf("p%d.%d", p.Op(), p.Unit()) }

// WindowStart returns the start of the tumbling window of size w holding t.
func WindowStart(t, w int64) int64 {
	s := t - t%w
	if t < 0 && t%w != 0 {
		s -= w
	}
	return s
}

// State returns the clock's state, for a checkpoint.
func (c *SourceClock) State() (max int64, started bool) { return c.max, c.started }

// Restore sets the clock's state from a checkpoint.
func (c *SourceClock) Restore(max int64, started bool) { c.max, c.started = max, started }
