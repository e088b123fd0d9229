package state

import (
	"bytes"
	"fmt"
	"iter"
	"maps"
	"slices"

	"spate/internal/varint"
)

// Merge folds a chain, a full snapshot followed by its deltas in order,
// into one full snapshot equal to the state after the last one: later
// values win, deletions remove keys, a reset group starts over from its
// entries. The result takes Instance, Gen and ID from the last snapshot
// (Full, Base == ID, Parent 0) and, per name, the latest snapshot's
// section. It holds no empty group. Keys, values and sections alias the
// inputs.
//
// It fails with ErrBrokenChain if the chain is empty, does not start with
// a full snapshot, mixes instances, or if a delta's Parent is not the
// previous snapshot's ID, its generation is older than its parent's, or its
// Base is neither at or before the first snapshot's ID nor the ID of an
// earlier snapshot of the chain. (Base names the full snapshot the writer's
// chain started at, or the checkpoint a restored writer continued from; the
// first snapshot may come after it when it is a compaction.)
//
// A restore, which reads every key once, uses MergeGroups instead: it
// spares the copy of the merged entries.
func Merge(chain []*Snapshot) (*Snapshot, error) {
	groups, err := MergeGroups(chain)
	if err != nil {
		return nil, err
	}
	last := chain[len(chain)-1]
	out := &Snapshot{Instance: last.Instance, Gen: last.Gen, ID: last.ID, Full: true, Base: last.ID}
	for _, s := range chain {
		if len(s.Sections) > 0 && out.Sections == nil {
			out.Sections = make(map[string][]byte)
		}
		maps.Copy(out.Sections, s.Sections)
		for name := range s.Sections {
			if s.Plain[name] {
				if out.Plain == nil {
					out.Plain = map[string]bool{}
				}
				out.Plain[name] = true
			} else {
				delete(out.Plain, name)
			}
		}
	}
	out.Groups = make([]GroupData, len(groups))
	for i := range groups {
		out.Groups[i] = GroupData{KG: groups[i].KG, Entries: groups[i].entries()}
	}
	return out, nil
}

// MergedGroup is one key group of a merged chain, its entries merged as
// they are read: what Merge gives for that key group, without the copy.
// A MergedGroup is not safe for concurrent use; distinct ones are.
type MergedGroup struct {
	KG    int
	parts []*GroupData // oldest first: the group whole, then later changes
	n     int          // keys
	size  int          // bytes of keys
}

// count sets n and size.
func (g *MergedGroup) count() {
	for kv := range g.All() {
		if !kv.Deleted {
			g.n++
			g.size += len(kv.Key)
		}
	}
}

// MergeGroups checks a chain as Merge does and returns the key groups
// Merge would give, ascending, none empty, their entries merged only when
// read (All).
func MergeGroups(chain []*Snapshot) ([]MergedGroup, error) {
	if err := checkChain(chain); err != nil {
		return nil, err
	}
	parts := make(map[int][]*GroupData, len(chain[0].Groups))
	for i := range chain[0].Groups {
		g := &chain[0].Groups[i]
		parts[g.KG] = []*GroupData{g}
	}
	for _, s := range chain[1:] {
		for i := range s.Groups {
			switch g := &s.Groups[i]; {
			case g.Reset:
				parts[g.KG] = []*GroupData{g}
			case parts[g.KG] == nil:
				parts[g.KG] = []*GroupData{{KG: g.KG}, g} // changes to nothing
			default:
				parts[g.KG] = append(parts[g.KG], g)
			}
		}
	}
	out := make([]MergedGroup, 0, len(parts))
	for _, kg := range slices.Sorted(maps.Keys(parts)) {
		g := MergedGroup{KG: kg, parts: parts[kg]}
		if g.count(); g.n > 0 {
			out = append(out, g)
		}
	}
	return out, nil
}

// WholeGroups returns groups, each whole (as a full snapshot holds them),
// as MergedGroups: what the restore of a full snapshot reads.
func WholeGroups(groups []GroupData) []MergedGroup {
	out := make([]MergedGroup, len(groups))
	for i := range groups {
		g := &out[i]
		g.KG, g.parts = groups[i].KG, []*GroupData{&groups[i]}
		g.count()
	}
	return out
}

// Len returns the number of keys of the group (what All yields, but for
// the deletions of an unchecked whole group).
func (g *MergedGroup) Len() int { return g.n }

// KeyBytes returns the total size of the group's keys.
func (g *MergedGroup) KeyBytes() int { return g.size }

// All yields the group's keys in ascending order, each with its latest
// entry: its value, the keys a later snapshot deleted left out. Keys and
// values are the snapshots': do not change them. A whole group holds no
// deletion; if one does (a snapshot that was not checked), All yields it as
// it is, for the caller to refuse.
func (g *MergedGroup) All() iter.Seq[KV] {
	return func(yield func(KV) bool) {
		var few [4]cursor // a chain rarely has more deltas: no allocation
		cs := few[:0]
		if len(g.parts) > len(few) {
			cs = make([]cursor, 0, len(g.parts))
		}
		for _, p := range g.parts {
			cs = append(cs, cursor{g: p})
			cs[len(cs)-1].next()
		}
		for {
			// The smallest current key; of the parts that hold it, the
			// latest wins and the earlier ones move past it.
			src := -1
			for p := range cs {
				if !cs[p].ok {
					continue
				}
				if src < 0 {
					src = p
					continue
				}
				switch c := bytes.Compare(cs[p].kv.Key, cs[src].kv.Key); {
				case c < 0:
					src = p
				case c == 0:
					cs[src].next()
					src = p
				}
			}
			if src < 0 {
				return
			}
			c := &cs[src]
			if !c.kv.Deleted || src == 0 {
				if !yield(c.kv) {
					return
				}
			}
			c.next()
		}
	}
}

// cursor reads the entries of one group of a snapshot in order, from its
// Entries or, decoded lazily, from the body.
type cursor struct {
	g   *GroupData
	i   int // the next entry
	off int // in g.raw: where the next entry starts
	kv  KV  // the current entry
	ok  bool
}

// next moves to the next entry; ok is false past the last.
func (c *cursor) next() {
	g := c.g
	if c.ok = c.i < len(g.Entries) || c.i < g.n; !c.ok {
		return
	}
	c.i++
	if g.raw == nil {
		c.kv = g.Entries[c.i-1]
		return
	}
	// DecodeLazy checked the entries: they parse. (This is str, inlined.)
	b, off := g.raw, c.off
	c.kv.Deleted = b[off]&flagDeleted != 0
	n, w := varint.At(b, off+1)
	off += 1 + w
	c.kv.Key = b[off : off+int(n) : off+int(n)]
	off += int(n)
	c.kv.Value = nil
	if !c.kv.Deleted {
		n, w = varint.At(b, off)
		off += w
		c.kv.Value = b[off : off+int(n) : off+int(n)]
		off += int(n)
	}
	c.off = off
}

// entries returns the group's keys, deletions left out, as a list: the
// whole group's own if it is all there is, else a new one.
func (g *MergedGroup) entries() []KV {
	if len(g.parts) == 1 && g.parts[0].raw == nil && len(g.parts[0].Entries) == g.n { // no deletion
		return g.parts[0].Entries
	}
	out := make([]KV, 0, g.n)
	for kv := range g.All() {
		if !kv.Deleted {
			out = append(out, kv)
		}
	}
	return out
}

// checkChain checks what Merge says a chain must be.
func checkChain(chain []*Snapshot) error {
	if len(chain) == 0 {
		return fmt.Errorf("%w: empty", ErrBrokenChain)
	}
	base := chain[0]
	if !base.Full {
		return fmt.Errorf("%w: %s checkpoint %d: starts with a delta", ErrBrokenChain, base.Instance, base.ID)
	}
	for i, s := range chain[1:] {
		prev := chain[i]
		switch {
		case s.Instance != base.Instance:
			return fmt.Errorf("%w: checkpoint %d of %s follows one of %s", ErrBrokenChain, s.ID, s.Instance, base.Instance)
		case s.Full:
			return fmt.Errorf("%w: %s checkpoint %d: a full snapshot inside the chain of %d", ErrBrokenChain, s.Instance, s.ID, base.ID)
		case s.Base > base.ID && !slices.ContainsFunc(chain[:i+1], func(p *Snapshot) bool { return p.ID == s.Base }):
			return fmt.Errorf("%w: %s checkpoint %d: base %d is neither at or before %d nor in the chain", ErrBrokenChain, s.Instance, s.ID, s.Base, base.ID)
		case s.Parent != prev.ID:
			return fmt.Errorf("%w: %s checkpoint %d: parent %d, want %d", ErrBrokenChain, s.Instance, s.ID, s.Parent, prev.ID)
		case s.Gen < prev.Gen:
			return fmt.Errorf("%w: %s checkpoint %d: generation %d after %d", ErrBrokenChain, s.Instance, s.ID, s.Gen, prev.Gen)
		}
	}
	return nil
}
