package job

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"spate/internal/varint"
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
	// Restore loads the state of whole key groups, from a merged chain
	// (state.MergeGroups) or a full snapshot (state.WholeGroups), into an
	// instance that does not hold them: a fresh one (recovery) or one that
	// takes them over (rescaling). It fails, and changes nothing, if a
	// group is already held, out of range, holds a deletion, a key of
	// another group or keys out of order, or does not decode (the error
	// then wraps state.ErrCorrupt).
	Restore(groups []state.MergedGroup) error
	// DropGroups forgets the state of key groups that moved away.
	DropGroups(kgs []KeyGroup)
	// Len returns the number of keys held: what a full capture holds.
	Len() int
}

// Captured is the state pinned by Stateful.Capture.
type Captured interface {
	// Encode returns the captured groups in snapshot form (values as of
	// the capture, keys sorted, deletions and resets of a delta) and ends
	// the capture. It may run concurrently with Process and Advance. With
	// sc non-nil the result lives in sc's storage (state.EncodeCapture).
	Encode(sc *state.Scratch) []state.GroupData
	// Done ends the capture without encoding it. Harmless after Encode.
	Done()
}

// GroupLoader is a Stateful whose key groups can also be restored one at
// a time while it runs: an early restore (node/doc.go) builds each group
// of a merged chain off the operator's state on any goroutine and
// attaches it on the owner's, which meanwhile processes the records of
// the groups attached before.
//
// BuildGroup may run on any goroutine, concurrently with other
// BuildGroup calls (distinct groups) and with the owner's Process,
// Advance and AttachGroup calls, provided the owner takes no Capture
// between a group's BuildGroup and its AttachGroup. It checks what
// Restore checks of a group and fails as Restore does, changing nothing.
// AttachGroup belongs to the owner: it puts the group into the state, as
// of the checkpoint it was restored from (the next delta capture holds
// what changes after it, not the group whole). It fails with ErrGroupHeld
// if the state holds the group already; a built group without keys
// attaches nothing.
type GroupLoader interface {
	Stateful
	BuildGroup(g *state.MergedGroup) (BuiltGroup, error)
	AttachGroup(b BuiltGroup) error
}

// BuiltGroup is a key group built by GroupLoader.BuildGroup and not yet
// attached.
type BuiltGroup interface {
	Group() KeyGroup
	Len() int // its keys
}

var (
	_ GroupLoader = (*Count)(nil)
	_ GroupLoader = (*Rollup)(nil)
	_ GroupFirer  = (*Count)(nil)
	_ GroupFirer  = (*Rollup)(nil)
)

// GroupFirer is an operator that can fire the windows of some of its key
// groups up to wm without moving its watermark: an instance held by a
// rescale (its watermark must not move) that gives those groups away to
// an instance already past wm fires them first, so that none of their
// windows reaches the new owner overdue (node/rescale.go, tryRelease).
// It fires them as Advance(wm) would have, in the same order.
type GroupFirer interface {
	FireGroups(only func(KeyGroup) bool, wm int64, out Emitter)
}

// built is a BuiltGroup over a state.GroupBuilder, with what the operator
// derives of the group (its open windows) to apply once it is attached.
type built[V any, X any] struct {
	kg      KeyGroup
	b       *state.GroupBuilder[V]
	derived X
}

func (x *built[V, X]) Group() KeyGroup { return x.kg }
func (x *built[V, X]) Len() int        { return x.b.Len() }

// buildOne is BuildGroup for a table: g checked as Restore checks it
// and built clean (state.Table.BuildClean); dec derives, from derived
// up, what the operator applies at the attach.
func buildOne[V any, X any](op string, ngroups int, tab *state.Table[V], g *state.MergedGroup, derived X,
	dec func(kg KeyGroup, key, b []byte, e *state.Entry[V], x *X) error) (*built[V, X], error) {
	if g.KG < 0 || g.KG >= ngroups {
		return nil, fmt.Errorf("%s: restore: key group %d out of range 0..%d", op, g.KG, ngroups-1)
	}
	x := &built[V, X]{kg: KeyGroup(g.KG), derived: derived}
	b, err := buildGroup(op, ngroups, tab, g, true, func(kg KeyGroup, key, v []byte, e *state.Entry[V]) error {
		return dec(kg, key, v, e, &x.derived)
	})
	if err != nil {
		return nil, err
	}
	x.b = b
	return x, nil
}

// attachOne is AttachGroup for a table: apply runs after the attach.
func attachOne[V any, X any](op string, tab *state.Table[V], bg BuiltGroup, apply func(kg KeyGroup, x *X)) error {
	x, ok := bg.(*built[V, X])
	if !ok || x.b == nil {
		return fmt.Errorf("%s: attach of a group built by another operator, or attached already", op)
	}
	if tab.Has(int(x.kg)) {
		return fmt.Errorf("%s: restore: %w: %v", op, ErrGroupHeld, x.kg)
	}
	b := x.b
	x.b = nil
	if b.Len() > 0 { // an empty group is not held
		tab.Attach(b)
		apply(x.kg, &x.derived)
	}
	return nil
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

func (x captured[V]) Encode(sc *state.Scratch) []state.GroupData {
	return state.EncodeCapture(x.c, x.enc, sc)
}
func (x captured[V]) Done() { x.c.Done() }

// restoreGroups builds every group of groups off the table (see
// state.GroupBuilder), checking what Restore promises and calling dec for
// each key's new entry (its value zero) to decode the value into it; only
// then does it attach the groups, calling apply after each. On an error the
// table is unchanged (the error is that of the first group that fails).
// The groups are built on up to GOMAXPROCS goroutines, each group by one:
// dec is called concurrently for distinct groups.
func restoreGroups[V any](op string, ngroups int, tab *state.Table[V], groups []state.MergedGroup,
	dec func(kg KeyGroup, key, b []byte, e *state.Entry[V]) error, apply func(kg KeyGroup)) error {
	seen := make(map[int]bool, len(groups))
	for _, g := range groups {
		if g.KG < 0 || g.KG >= ngroups {
			return fmt.Errorf("%s: restore: key group %d out of range 0..%d", op, g.KG, ngroups-1)
		}
		if tab.Has(g.KG) || seen[g.KG] {
			return fmt.Errorf("%s: restore: %w: %v", op, ErrGroupHeld, KeyGroup(g.KG))
		}
		seen[g.KG] = true
	}
	built := make([]*state.GroupBuilder[V], len(groups))
	errs := make([]error, len(groups))
	var failed atomic.Bool
	inParallel(len(groups), func(i int) {
		if !failed.Load() { // after a failure, the rest is wasted work
			if built[i], errs[i] = buildGroup(op, ngroups, tab, &groups[i], false, dec); errs[i] != nil {
				failed.Store(true)
			}
		}
	})
	if failed.Load() {
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	for i, b := range built {
		if b.Len() > 0 { // an empty group is not held
			tab.Attach(b)
			apply(KeyGroup(groups[i].KG))
		}
	}
	return nil
}

// inParallel calls fn(i) for every i in [0, n) on up to GOMAXPROCS
// goroutines and returns when every call has returned.
func inParallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// buildGroup decodes and checks the entries of g into a builder of its
// key group (clean: state.Table.BuildClean).
func buildGroup[V any](op string, ngroups int, tab *state.Table[V], g *state.MergedGroup, clean bool,
	dec func(kg KeyGroup, key, b []byte, e *state.Entry[V]) error) (*state.GroupBuilder[V], error) {
	var b *state.GroupBuilder[V]
	if clean {
		b = tab.BuildClean(g.KG, g.Len(), g.KeyBytes())
	} else {
		b = tab.Build(g.KG, g.Len(), g.KeyBytes())
	}
	kgOf := KeyGroup(g.KG)
	var prev []byte
	for kv := range g.All() {
		if kv.Deleted {
			return nil, fmt.Errorf("%s: restore: %v: %w: deletion of %q in a full snapshot", op, kgOf, state.ErrCorrupt, kv.Key)
		}
		if b.Len() > 0 && bytes.Compare(prev, kv.Key) >= 0 {
			return nil, fmt.Errorf("%s: restore: %v: %w: key %q after %q", op, kgOf, state.ErrCorrupt, kv.Key, prev)
		}
		prev = kv.Key
		if kg := GroupOf(kv.Key, ngroups); kg != kgOf {
			return nil, fmt.Errorf("%s: restore: %v: %w: key %q belongs to %v", op, kgOf, state.ErrCorrupt, kv.Key, kg)
		}
		if err := dec(kgOf, kv.Key, kv.Value, b.Add(kv.Key)); err != nil {
			return nil, fmt.Errorf("%s: restore: %v: key %q: %w: %v", op, kgOf, kv.Key, state.ErrCorrupt, err)
		}
	}
	return b, nil
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
	u, n := varint.At(r.b, 0)
	if n <= 0 || r.err != nil {
		r.fail("bad " + what)
		return 0
	}
	r.b = r.b[n:]
	return varint.Unzigzag(u)
}

// uvarint reads a uvarint no larger than limit.
func (r *valReader) uvarint(what string, limit uint64) uint64 {
	v, n := varint.At(r.b, 0)
	if n <= 0 || v > limit || r.err != nil {
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
