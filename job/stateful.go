package job

import (
	"encoding/binary"
	"errors"
	"fmt"

	"spate/state"
)

// Stateful is a keyed operator whose state can be checkpointed and
// restored per key group.
//
// Capture, Restore and DropGroups are called on the goroutine that drives
// the operator, between Process and Advance calls (at a batch boundary).
// The Captured's Encode and Done may run on another goroutine, concurrently
// with the operator's Process and Advance.
type Stateful interface {
	Keyed
	// Capture pins the operator's state for a checkpoint: all of it (full)
	// or what changed since the previous capture (a delta, see
	// state.Table.Capture). It is quick: no value is copied or encoded. If
	// the previous capture has not ended, it waits for it.
	Capture(full bool) Captured
	// Restore loads the state of whole key groups, from a merged (full)
	// snapshot, into an instance that does not hold them: a fresh one
	// (recovery) or one that takes them over (rescaling). It fails, and
	// changes nothing, if a group is already held, out of range, holds a
	// deletion or a key of another group, or does not decode (the error
	// then wraps state.ErrCorrupt).
	Restore(groups []state.GroupData) error
	// DropGroups forgets the state of key groups that moved away.
	DropGroups(kgs []KeyGroup)
}

// Captured is the state pinned by Stateful.Capture.
type Captured interface {
	// Encode returns the captured groups in snapshot form (values as of
	// the capture, keys sorted, deletions and resets of a delta) and ends
	// the capture. It may run concurrently with Process and Advance.
	Encode() []state.GroupData
	// Done ends the capture without encoding it. Harmless after Encode.
	Done()
}

// ErrGroupHeld is returned by Restore for a key group the instance
// already holds.
var ErrGroupHeld = errors.New("job: key group already held")

var (
	_ Stateful = (*Count)(nil)
	_ Stateful = (*Rollup)(nil)
)

// captured is a Captured over a state.Table capture.
type captured[V any] struct {
	c   *state.Capture[V]
	enc func(dst []byte, v *V) []byte
}

func (x captured[V]) Encode() []state.GroupData { return state.EncodeCapture(x.c, x.enc) }
func (x captured[V]) Done()                     { x.c.Done() }

// restoreGroups decodes every entry of groups with dec before anything is
// applied, checking what Restore promises; then it calls apply per key.
func restoreGroups[V any](op string, ngroups int, tab *state.Table[V], groups []state.GroupData,
	dec func(key, b []byte) (V, error), apply func(kg KeyGroup, key []byte, v V)) error {
	vals := make([][]V, len(groups))
	seen := make(map[int]bool, len(groups))
	for i, g := range groups {
		if g.KG < 0 || g.KG >= ngroups {
			return fmt.Errorf("%s: restore: key group %d out of range 0..%d", op, g.KG, ngroups-1)
		}
		if tab.Has(g.KG) || seen[g.KG] {
			return fmt.Errorf("%s: restore: %w: %v", op, ErrGroupHeld, KeyGroup(g.KG))
		}
		seen[g.KG] = true
		vals[i] = make([]V, len(g.Entries))
		for j, kv := range g.Entries {
			if kv.Deleted {
				return fmt.Errorf("%s: restore: %v: %w: deletion of %q in a full snapshot", op, KeyGroup(g.KG), state.ErrCorrupt, kv.Key)
			}
			if kg := GroupOf(kv.Key, ngroups); int(kg) != g.KG {
				return fmt.Errorf("%s: restore: %v: %w: key %q belongs to %v", op, KeyGroup(g.KG), state.ErrCorrupt, kv.Key, kg)
			}
			v, err := dec(kv.Key, kv.Value)
			if err != nil {
				return fmt.Errorf("%s: restore: %v: key %q: %w: %v", op, KeyGroup(g.KG), kv.Key, state.ErrCorrupt, err)
			}
			vals[i][j] = v
		}
	}
	for i, g := range groups {
		tab.Reserve(g.KG, len(g.Entries))
		for j, kv := range g.Entries {
			apply(KeyGroup(g.KG), kv.Key, vals[i][j])
		}
	}
	return nil
}

// valReader decodes a value. The first error sticks.
type valReader struct {
	b   []byte
	err error
}

func (r *valReader) fail(msg string) {
	if r.err == nil {
		r.err = errors.New(msg)
	}
}

func (r *valReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad " + what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// uvarint reads a uvarint no larger than limit.
func (r *valReader) uvarint(what string, limit uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > limit {
		r.fail("bad " + what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *valReader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.b)))
	}
	return r.err
}
