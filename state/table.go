package state

import (
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Concurrency. A Table has one owner goroutine, which calls every method of
// Table and Entry, and at most one background goroutine at a time, which
// runs Capture.Each (or Capture.Done). The only lock is Table.mu; nothing
// else is ever held with it.
//
// Epochs. t.seq is the number of the latest capture (0: none yet); the
// owner's changes between capture s and capture s+1 happen in epoch s+1
// (t.epoch). An entry records the epoch of its latest Mut (dirtyAt: it is
// dirty if that is the current epoch, so a capture resets every dirty flag
// at once by moving to the next epoch) and of its deletion (gone). Capture
// s contains, for a group taken whole, the group's entry list as it is at
// the capture (a slice cut at its length: entries appended later are not
// in it, and compaction writes a new array); for another group, its dirty
// list (the entries with dirtyAt == s) and the keys deleted in epoch s; in
// both cases without the entries gone by s. Capture itself touches no
// entry: it hands each group's lists over, so it costs O(groups).
//
// An entry e is pinned by the running capture r (t.run == r) if r includes
// it and e.saved < r: its live value is still the value as of the capture.
// Before the owner changes a pinned value (Mut), it stores a clone in
// e.old under mu and sets saved = r. Each reads the live value of an entry
// only under mu and only while saved < r, then sets saved = r itself, so
// the owner stops caring about that entry. Deleting an entry or dropping
// its group never writes its value, so neither needs to save anything.
// Because saved, gone and run are atomics, and every other field that both
// goroutines touch is either immutable (key) or guarded by mu (old, and a
// pinned value), the scheme is race free.

// MaxGroups bounds the key-group indices of a Table: 0 <= kg < MaxGroups.
const MaxGroups = 1 << 16

// eachBatch is the number of entries Each visits per lock hold: the owner,
// saving a pinned entry, waits for at most this many fn calls.
const eachBatch = 64

// Entry is one key of a Table and its value. Read the value with Val;
// call Mut before every change, and change it only through the pointer Mut
// returns (or Val's, after Mut, within the same owner step).
//
// An entry belongs to the Table's owner goroutine. It stays valid until it
// is deleted or its group is dropped; after that it must not be used.
type Entry[V any] struct {
	// What Mut reads comes first, with the value, to share its cache line.
	g       *group[V]
	dirtyAt uint32 // epoch of the latest Mut
	saved   atomic.Uint32
	val     V
	key     string
	gone    atomic.Uint32 // epoch of deletion; 0 while live
	old     *V            // the value as of the running capture, saved by Mut; guarded by mu
}

// Key returns the entry's key.
func (e *Entry[V]) Key() string { return e.key }

// Val returns the entry's value for reading.
func (e *Entry[V]) Val() *V { return &e.val }

// Touch reads what Key, Val and Mut read of e (every cache line of an
// entry whose value is up to 65 bytes, and the key's first byte) and
// returns a byte of it. An owner about to use many entries that lie
// anywhere in the heap touches a few first, one after the other: their
// misses then overlap, where using each in turn waits for each in turn
// (Capture.visit reads ahead the same way).
func (e *Entry[V]) Touch() byte {
	b := byte(uintptr(unsafe.Pointer(e.g))) + byte(e.dirtyAt) + byte(e.gone.Load()) + touch(&e.val)
	if len(e.key) > 0 {
		b += e.key[0]
	}
	return b
}

// Mut returns the entry's value for changing. It marks the entry dirty
// and, if a running capture still needs the value as it is, saves a clone
// first. Call it before every mutation. On the hot path (no capture
// running, the entry already dirty) it costs one atomic load and an epoch
// comparison.
func (e *Entry[V]) Mut() *V {
	// The rest is in mutSlow. (A capture's entries that have been saved
	// or seen could take the fast path too, saved >= run, but the second
	// load cost every other Mut more than it spared those.)
	if t := e.g.t; t.run.Load() != 0 || e.dirtyAt != t.epoch {
		e.mutSlow()
	}
	return &e.val
}

// mutSlow is Mut when a capture is running or the entry is not yet dirty.
func (e *Entry[V]) mutSlow() {
	g := e.g
	t := g.t
	if r := t.run.Load(); r != 0 && e.saved.Load() < r {
		e.secure(r)
	}
	if e.dirtyAt != t.epoch {
		e.dirtyAt = t.epoch
		g.dirty = append(g.dirty, e)
	}
}

// secure is Mut's slow path: capture r is running and has not yet seen e.
func (e *Entry[V]) secure(r uint32) {
	g := e.g
	// Entries created after r start with saved == r: r includes e if it
	// took e's group whole, or if e was dirty in r's epoch.
	if g.wholeAt != r && e.dirtyAt != r {
		e.saved.Store(r) // r does not include e: nothing to save
		return
	}
	t := g.t
	t.mu.Lock()
	if c := t.cur; c != nil && c.seq == r && !c.ended && e.saved.Load() < r {
		v := t.clone(&e.val)
		e.old = &v
		c.secured = append(c.secured, e)
	}
	e.saved.Store(r)
	t.mu.Unlock()
}

// group is the state of one key group.
type group[V any] struct {
	t       *Table[V]
	kg      int
	m       map[string]*Entry[V]
	ents    []*Entry[V]         // in creation order; deleted ones stay until compaction
	ndead   int                 // deleted entries in ents
	dirty   []*Entry[V]         // entries changed in this epoch
	deleted map[string]struct{} // keys deleted in this epoch
	fresh   bool                // created since the last capture: the next one takes it whole
	wholeAt uint32              // the last capture that took the group whole
}

// Table is keyed state partitioned by key group, with dirty tracking and a
// copy-on-write capture.
//
// A Table is not safe for concurrent use, with one exception: while a
// Capture is in flight, one other goroutine may run its Each (or Done)
// concurrently with the owner's calls. See Capture.
type Table[V any] struct {
	clone   func(*V) V
	groups  []*group[V] // by key group; nil where the table holds nothing
	n       int         // live entries
	seq     uint32      // the latest capture
	epoch   uint32      // seq + 1
	run     atomic.Uint32
	cur     *Capture[V]   // the latest capture; owner only
	dropped []int         // groups dropped since the last capture
	spare   [][]*Entry[V] // by key group: an ended capture's dirty list, emptied, for the next epoch's

	mu sync.Mutex // guards Entry.old, Capture.secured and ended, and the reads of pinned values
}

// NewTable returns an empty table. clone returns a deep copy of a value:
// one that shares nothing the owner may change later. It is called only for
// values that are changed while a capture still needs them.
func NewTable[V any](clone func(*V) V) *Table[V] {
	return &Table[V]{clone: clone, epoch: 1}
}

// Get returns the entry of key in group kg, or nil. It does not allocate.
func (t *Table[V]) Get(kg int, key []byte) *Entry[V] {
	if kg < 0 || kg >= len(t.groups) {
		return nil
	}
	g := t.groups[kg]
	if g == nil {
		return nil
	}
	return g.m[string(key)]
}

// Upsert returns the entry of key in group kg, creating it (with the zero
// value, dirty) if it is absent. It allocates only when it creates. kg must
// be in [0, MaxGroups).
func (t *Table[V]) Upsert(kg int, key []byte) (e *Entry[V], created bool) {
	// The lookup of an existing key is small enough to be inlined.
	if uint(kg) < uint(len(t.groups)) {
		if g := t.groups[kg]; g != nil {
			if e := g.m[string(key)]; e != nil {
				return e, false
			}
		}
	}
	return t.insert(kg, key)
}

// insert is Upsert for a key that may be absent.
func (t *Table[V]) insert(kg int, key []byte) (e *Entry[V], created bool) {
	g := t.group(kg)
	if e := g.m[string(key)]; e != nil {
		return e, false
	}
	e = &Entry[V]{key: string(key), g: g, dirtyAt: t.epoch}
	e.saved.Store(t.seq) // no capture up to now needs it
	g.m[e.key] = e
	g.ents = append(g.ents, e)
	g.dirty = append(g.dirty, e)
	if len(g.deleted) > 0 {
		delete(g.deleted, e.key)
	}
	t.n++
	return e, true
}

func (t *Table[V]) group(kg int) *group[V] {
	if kg < len(t.groups) && kg >= 0 {
		if g := t.groups[kg]; g != nil {
			return g
		}
	}
	if kg < 0 || kg >= MaxGroups {
		panic("state: key group out of range")
	}
	if kg >= len(t.groups) {
		t.groups = append(t.groups, make([]*group[V], kg+1-len(t.groups))...)
	}
	g := &group[V]{t: t, kg: kg, m: make(map[string]*Entry[V]), fresh: true}
	t.groups[kg] = g
	return g
}

// GroupBuilder builds the content of one key group off its table, for a
// restore: Table.Build makes it, Add adds the keys, Table.Attach puts the
// group into the table. Until Attach the table is unchanged, so a restore
// that fails halfway drops its builders and leaves nothing behind.
//
// Build and Add only read the table: they may run on other goroutines
// while the owner waits, and builders of different groups may be filled
// concurrently. Attach belongs to the owner goroutine, which must not call
// Capture between a builder's Build and its Attach.
type GroupBuilder[V any] struct {
	g     *group[V]
	slab  []Entry[V]      // the entries, made in one allocation; slab[len(g.ents):] are still to be added
	keys  strings.Builder // the keys, back to back
	clean bool            // BuildClean: the group is as of the table's latest checkpoint
}

// Build returns a builder of group kg for n keys of keyBytes bytes in all
// (more keys or bytes only cost more allocations). The group's index and
// entries are sized once, and its keys share one allocation: it lives as
// long as any of them. kg must be in [0, MaxGroups).
func (t *Table[V]) Build(kg, n, keyBytes int) *GroupBuilder[V] {
	if kg < 0 || kg >= MaxGroups {
		panic("state: key group out of range")
	}
	b := &GroupBuilder[V]{
		g:    &group[V]{t: t, kg: kg, m: make(map[string]*Entry[V], n), ents: make([]*Entry[V], 0, n), fresh: true},
		slab: make([]Entry[V], n),
	}
	b.keys.Grow(keyBytes)
	return b
}

// BuildClean is Build for a group restored as of the checkpoint the
// table's owner continues from, attached while the owner goes on
// (an early restore: the owner processes the groups attached before it
// while this one is built): the group is not fresh and its entries are
// not dirty, so the next delta capture holds only what changes after the
// group's Attach, as it does for the groups of a restore followed by an
// empty capture. It reads nothing of the table but Capture writes, so it
// may run while the owner runs, if the owner takes no Capture between it
// and the Attach.
func (t *Table[V]) BuildClean(kg, n, keyBytes int) *GroupBuilder[V] {
	b := t.Build(kg, n, keyBytes)
	b.g.fresh, b.clean = false, true
	return b
}

// Add adds key (copied) with the zero value and returns its entry. Until
// Attach, set the value through Val; the group is new, so the next capture
// takes it whole and no dirty tracking is needed. A key must be added once:
// Add panics on a repeat, and the builder is then unusable.
func (b *GroupBuilder[V]) Add(key []byte) *Entry[V] {
	g, t := b.g, b.g.t
	var e *Entry[V]
	if i := len(g.ents); i < len(b.slab) {
		e = &b.slab[i]
	} else {
		e = new(Entry[V])
	}
	at := b.keys.Len()
	b.keys.Write(key)
	e.key = b.keys.String()[at:] // earlier keys stay valid: the builder only appends
	e.g, e.dirtyAt = g, t.epoch
	if b.clean {
		e.dirtyAt = 0 // no epoch: the first Mut marks it dirty
	}
	if t.seq != 0 {
		e.saved.Store(t.seq) // no capture up to now needs it
	}
	g.m[e.key] = e
	g.ents = append(g.ents, e)
	if len(g.m) != len(g.ents) {
		panic("state: GroupBuilder.Add: a key added twice")
	}
	return e
}

// Len returns the number of keys added.
func (b *GroupBuilder[V]) Len() int { return len(b.g.ents) }

// Attach puts the group built by b into the table, which must not hold it
// (Attach panics if it does). b must not be used afterwards.
func (t *Table[V]) Attach(b *GroupBuilder[V]) {
	g := b.g
	if g == nil || g.t != t {
		panic("state: Attach of a builder of another table, or attached already")
	}
	if t.Has(g.kg) {
		panic("state: Attach of a key group the table holds")
	}
	if g.kg >= len(t.groups) {
		t.groups = append(t.groups, make([]*group[V], g.kg+1-len(t.groups))...)
	}
	t.groups[g.kg] = g
	t.n += len(g.ents)
	b.g, b.slab = nil, nil
}

// Delete removes key from group kg, if present. The next delta capture
// records the deletion. A running capture that includes the entry still
// sees its value as of the capture.
func (t *Table[V]) Delete(kg int, key string) {
	if kg < 0 || kg >= len(t.groups) || t.groups[kg] == nil {
		return
	}
	g := t.groups[kg]
	e := g.m[key]
	if e == nil {
		return
	}
	delete(g.m, key)
	e.gone.Store(t.epoch)
	if !g.fresh { // a fresh group is captured whole: no need to list deletions
		if g.deleted == nil {
			g.deleted = make(map[string]struct{})
		}
		g.deleted[key] = struct{}{}
	}
	t.n--
	g.ndead++
	if g.ndead >= 32 && 2*g.ndead > len(g.ents) {
		// A new array: a running capture may still read the old one.
		live := make([]*Entry[V], 0, len(g.ents)-g.ndead)
		for _, e := range g.ents {
			if e.gone.Load() == 0 {
				live = append(live, e)
			}
		}
		g.ents, g.ndead = live, 0
	}
}

// Range calls fn for every entry of group kg, in creation order, until fn
// returns false. fn may call Mut, Upsert and Delete; entries created during
// Range are not visited, entries deleted during Range are not visited
// after their deletion.
func (t *Table[V]) Range(kg int, fn func(e *Entry[V]) bool) {
	if kg < 0 || kg >= len(t.groups) || t.groups[kg] == nil {
		return
	}
	for _, e := range t.groups[kg].ents {
		if e.gone.Load() != 0 {
			continue
		}
		if !fn(e) {
			return
		}
	}
}

// Groups returns the key groups the table holds, ascending: those that
// were created (by Upsert) and not dropped since, even if now empty.
func (t *Table[V]) Groups() []int { return t.AppendGroups(nil) }

// AppendGroups appends the key groups the table holds to dst, ascending.
func (t *Table[V]) AppendGroups(dst []int) []int {
	for kg, g := range t.groups {
		if g != nil {
			dst = append(dst, kg)
		}
	}
	return dst
}

// Has reports whether the table holds group kg.
func (t *Table[V]) Has(kg int) bool {
	return kg >= 0 && kg < len(t.groups) && t.groups[kg] != nil
}

// Len returns the number of entries.
func (t *Table[V]) Len() int { return t.n }

// GroupLen returns the number of entries of group kg.
func (t *Table[V]) GroupLen(kg int) int {
	if !t.Has(kg) {
		return 0
	}
	return len(t.groups[kg].m)
}

// DropGroup forgets group kg (it moved to another instance). The next
// delta capture records the group as reset with no entries. A running
// capture still sees the group's entries as of the capture.
func (t *Table[V]) DropGroup(kg int) {
	if !t.Has(kg) {
		return
	}
	t.n -= len(t.groups[kg].m)
	t.groups[kg] = nil
	t.dropped = append(t.dropped, kg)
}

// Busy reports whether a capture is in flight (taken, and neither Each
// has returned nor Done been called).
func (t *Table[V]) Busy() bool { return t.run.Load() != 0 }

// Capture pins a consistent view of the table and resets dirty tracking.
// A full capture holds every entry; a delta capture holds the entries
// created or changed (Mut) since the previous capture, the keys deleted
// since then, and, whole, every group created or restored since then; the
// groups dropped or created since then are listed by Resets.
//
// It costs O(key groups): it hands each group's list of entries (full, or
// a group taken whole) or of dirty entries and deletions (delta) over to
// the capture, touches no entry and copies no value. After it returns, the
// owner goes on; it saves a clone of a captured value only if it changes
// it (Mut) before Each has visited it.
//
// At most one capture is in flight: if the previous one has not ended
// (Each has not returned and Done has not been called), Capture waits for
// it. Use Busy to skip a checkpoint instead of waiting.
//
// If what a delta capture held is not made durable, the next capture must
// be full: the table no longer tracks those changes.
func (t *Table[V]) Capture(full bool) *Capture[V] {
	if c := t.cur; c != nil {
		<-c.done
		t.cur = nil
		t.keepSpare(c)
	}
	if t.seq >= math.MaxUint32-2 {
		panic("state: too many captures of one table")
	}
	t.seq++
	t.epoch++
	seq := t.seq
	c := &Capture[V]{t: t, seq: seq, full: full, done: make(chan struct{})}
	if !full {
		for _, kg := range t.dropped {
			if !t.Has(kg) {
				c.resets = append(c.resets, kg)
			}
		}
	}
	t.dropped = t.dropped[:0]
	for kg, g := range t.groups {
		if g == nil {
			continue
		}
		switch {
		case full || g.fresh:
			g.wholeAt = seq
			c.parts = append(c.parts, part[V]{kg: kg, whole: true, ents: g.ents[:len(g.ents):len(g.ents)]})
			c.n += len(g.ents) - g.ndead
			if !full {
				c.resets = append(c.resets, kg)
			}
		case len(g.dirty) > 0 || len(g.deleted) > 0:
			c.parts = append(c.parts, part[V]{kg: kg, ents: g.dirty, deleted: g.deleted})
			c.n += len(g.dirty) + len(g.deleted)
		}
		// Handed over (or not needed): the next epoch starts empty, on
		// the array of an ended capture's list if there is one.
		g.dirty, g.deleted, g.fresh = nil, nil, false
		if kg < len(t.spare) {
			g.dirty, t.spare[kg] = t.spare[kg], nil
		}
	}
	if len(c.resets) > 1 {
		slices.Sort(c.resets)
		c.resets = slices.Compact(c.resets)
	}
	t.run.Store(seq)
	t.cur = c
	return c
}

// keepSpare keeps the dirty lists of the ended capture c, emptied, for
// the next epoch: a list grows to the number of keys an interval changes
// (thousands per key group), and growing it anew by appends every epoch
// moved and zeroed it several times over.
func (t *Table[V]) keepSpare(c *Capture[V]) {
	if len(t.spare) < len(t.groups) {
		t.spare = slices.Grow(t.spare[:0], len(t.groups))[:len(t.groups)]
	}
	for i := range c.parts {
		p := &c.parts[i]
		if p.whole || cap(p.ents) == 0 || p.kg >= len(t.spare) {
			continue
		}
		clear(p.ents) // no ended capture keeps entries alive
		t.spare[p.kg], p.ents = p.ents[:0], nil
	}
}

// Capture is a consistent view of a Table taken by Table.Capture: the
// values of the captured entries as of the capture, whatever the owner
// does afterwards.
//
// Each and Done may run on another goroutine than the owner's, concurrently
// with the owner's calls on the table and its entries. Call Each at most
// once; call Done if Each is not called (it is harmless after Each).
type Capture[V any] struct {
	t       *Table[V]
	seq     uint32
	full    bool
	parts   []part[V] // by key group, ascending
	resets  []int
	n       int
	done    chan struct{}
	state   atomic.Int32 // captPinned, captRunning, captEnded
	secured []*Entry[V]  // entries whose old value the owner saved; guarded by t.mu
	ended   bool         // guarded by t.mu
	touched byte         // Each's: what visit reads ahead, kept so that the reads stay
}

const (
	captPinned = iota
	captRunning
	captEnded
)

// part is what a capture holds of one key group.
type part[V any] struct {
	kg      int
	whole   bool                // ents is the group's entry list
	ents    []*Entry[V]         // whole: the group's entries; else the dirty ones
	deleted map[string]struct{} // keys deleted in the capture's epoch
}

// Full reports whether the capture is a full one.
func (c *Capture[V]) Full() bool { return c.full }

// Len returns the number of entries and deletions the capture holds (an
// upper bound for groups taken whole while entries are being deleted).
func (c *Capture[V]) Len() int { return c.n }

// Resets returns, for a delta capture, the key groups whose earlier state
// is discarded, ascending: the groups dropped since the previous capture
// (and not created again), which Each does not mention, and the groups
// created since, which Each gives whole. It is nil for a full capture.
func (c *Capture[V]) Resets() []int { return c.resets }

// Each calls fn for every captured entry, group by group in ascending key
// group order: first the keys deleted since the previous capture (v nil,
// deleted true, in key order), then the entries, with v the value as of
// the capture (v is valid only during the call; fn must not change *v or
// keep it). fn is called with the table's lock held, so it must not call
// the table or Mut; it must be quick (it delays the owner only if the
// owner is changing an entry of the same batch).
//
// Each ends the capture when it returns: the owner's entries are unpinned.
// It panics if called twice or after Done.
func (c *Capture[V]) Each(fn func(kg int, key string, v *V, deleted bool)) {
	if !c.state.CompareAndSwap(captPinned, captRunning) {
		panic("state: Capture.Each called twice or after Done")
	}
	defer c.end()
	var del []string
	for i := range c.parts {
		p := &c.parts[i]
		if len(p.deleted) > 0 {
			del = del[:0]
			for k := range p.deleted {
				del = append(del, k)
			}
			slices.Sort(del)
			for _, k := range del {
				fn(p.kg, k, nil, true)
			}
		}
		for j := 0; j < len(p.ents); j += eachBatch {
			c.visit(p, p.ents[j:min(j+eachBatch, len(p.ents))], fn)
		}
	}
}

// visit calls fn for a batch of entries of p under the table's lock.
//
// The entries of a batch are all over the heap, and so are their keys,
// and an entry spans two or three cache lines (count's is 112 bytes): read
// one after the other, every entry costs several misses in a row, and at a
// million keys those misses were most of what the persist goroutine spent
// (BenchmarkCountPersist in package job). So each line is read once first,
// every read independent of the others, which brings the batch's lines in
// together: the key, saved and gone before the lock (keys never change,
// saved and gone are atomics), the value under it, and only where it is
// pinned (saved < seq): the owner then cannot change it until the lock is
// released, so reading it is no race.
func (c *Capture[V]) visit(p *part[V], batch []*Entry[V], fn func(kg int, key string, v *V, deleted bool)) {
	for _, e := range batch {
		c.touched += byte(e.saved.Load() + e.gone.Load())
		if len(e.key) > 0 {
			c.touched += e.key[0]
		}
	}
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	for _, e := range batch {
		if e.saved.Load() < c.seq {
			c.touched += touch(&e.val)
		}
	}
	for _, e := range batch {
		if gone := e.gone.Load(); gone != 0 && gone <= c.seq {
			continue
		}
		if e.saved.Load() < c.seq {
			// Not changed since the capture, and it cannot be while we hold
			// the lock: the live value is the captured one.
			fn(p.kg, e.key, &e.val, false)
			e.saved.Store(c.seq)
			continue
		}
		v := e.old
		if v == nil {
			panic("state: a captured entry changed without being saved") // an internal invariant
		}
		e.old = nil
		fn(p.kg, e.key, v, false)
	}
}

// touch reads the first and the last byte of *v, and so every cache line
// of a value of up to 65 bytes: what fn will read of it (a value's slices
// and maps aside).
func touch[V any](v *V) byte {
	n := unsafe.Sizeof(*v)
	if n == 0 {
		return 0
	}
	p := unsafe.Pointer(v)
	return *(*byte)(p) + *(*byte)(unsafe.Add(p, n-1))
}

// Done ends the capture without (or after) Each: the owner's entries are
// unpinned, and a waiting Table.Capture goes on. It is idempotent.
func (c *Capture[V]) Done() {
	if c.state.CompareAndSwap(captPinned, captEnded) {
		c.end()
	}
}

func (c *Capture[V]) end() {
	c.state.Store(captEnded)
	t := c.t
	t.mu.Lock()
	if t.run.Load() == c.seq {
		t.run.Store(0)
	}
	for _, e := range c.secured {
		e.old = nil
	}
	c.secured, c.ended = nil, true
	t.mu.Unlock()
	close(c.done)
}
