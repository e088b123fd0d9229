package state

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
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
func Merge(chain []*Snapshot) (*Snapshot, error) {
	if len(chain) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBrokenChain)
	}
	base := chain[0]
	if !base.Full {
		return nil, fmt.Errorf("%w: %s checkpoint %d: starts with a delta", ErrBrokenChain, base.Instance, base.ID)
	}
	for i, s := range chain[1:] {
		prev := chain[i]
		switch {
		case s.Instance != base.Instance:
			return nil, fmt.Errorf("%w: checkpoint %d of %s follows one of %s", ErrBrokenChain, s.ID, s.Instance, base.Instance)
		case s.Full:
			return nil, fmt.Errorf("%w: %s checkpoint %d: a full snapshot inside the chain of %d", ErrBrokenChain, s.Instance, s.ID, base.ID)
		case s.Base > base.ID && !slices.ContainsFunc(chain[:i+1], func(p *Snapshot) bool { return p.ID == s.Base }):
			return nil, fmt.Errorf("%w: %s checkpoint %d: base %d is neither at or before %d nor in the chain", ErrBrokenChain, s.Instance, s.ID, s.Base, base.ID)
		case s.Parent != prev.ID:
			return nil, fmt.Errorf("%w: %s checkpoint %d: parent %d, want %d", ErrBrokenChain, s.Instance, s.ID, s.Parent, prev.ID)
		case s.Gen < prev.Gen:
			return nil, fmt.Errorf("%w: %s checkpoint %d: generation %d after %d", ErrBrokenChain, s.Instance, s.ID, s.Gen, prev.Gen)
		}
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
	if len(chain) == 1 {
		out.Groups = base.Groups
		if slices.ContainsFunc(out.Groups, func(g GroupData) bool { return len(g.Entries) == 0 }) {
			out.Groups = slices.DeleteFunc(slices.Clone(out.Groups), func(g GroupData) bool { return len(g.Entries) == 0 })
		}
		return out, nil
	}

	groups := make(map[int][]KV, len(base.Groups))
	for _, g := range base.Groups {
		groups[g.KG] = g.Entries
	}
	for _, s := range chain[1:] {
		for _, g := range s.Groups {
			if g.Reset {
				groups[g.KG] = live(g.Entries)
				continue
			}
			groups[g.KG] = mergeKVs(groups[g.KG], g.Entries)
		}
	}
	kgs := slices.Sorted(maps.Keys(groups))
	for _, kg := range kgs {
		if es := groups[kg]; len(es) > 0 {
			out.Groups = append(out.Groups, GroupData{KG: kg, Entries: es})
		}
	}
	return out, nil
}

// live returns es without its deletions (a copy if it has any).
func live(es []KV) []KV {
	if !slices.ContainsFunc(es, func(kv KV) bool { return kv.Deleted }) {
		return es
	}
	out := make([]KV, 0, len(es))
	for _, kv := range es {
		if !kv.Deleted {
			out = append(out, kv)
		}
	}
	return out
}

// mergeKVs applies the sorted changes ch to the sorted entries es (which
// hold no deletions) and returns a new sorted list.
func mergeKVs(es, ch []KV) []KV {
	if len(ch) == 0 {
		return es
	}
	out := make([]KV, 0, len(es)+len(ch))
	i, j := 0, 0
	for i < len(es) || j < len(ch) {
		var c int
		switch {
		case i == len(es):
			c = 1
		case j == len(ch):
			c = -1
		default:
			c = bytes.Compare(es[i].Key, ch[j].Key)
		}
		switch {
		case c < 0:
			out = append(out, es[i])
			i++
		case c > 0:
			if !ch[j].Deleted {
				out = append(out, ch[j])
			}
			j++
		default:
			if !ch[j].Deleted {
				out = append(out, ch[j])
			}
			i++
			j++
		}
	}
	return out
}
