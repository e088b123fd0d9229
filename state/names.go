package state

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Ref names one checkpoint file: the snapshot of Instance with checkpoint
// ID, written by generation Gen. Its store name is FileName(...).
type Ref struct {
	Instance string
	Gen      uint64
	ID       uint64
	Full     bool
}

// Name returns the store name of r.
func (r Ref) Name() string { return FileName(r.Instance, r.Gen, r.ID, r.Full) }

func (r Ref) String() string { return r.Name() }

// FileName returns the store name of a checkpoint file:
// "INSTANCE/gGEN-cID-full.ckpt" or "INSTANCE/gGEN-cID-delta.ckpt", with GEN
// and ID in decimal, zero-padded to 8 and 9 digits, e.g.
// "count#0/g00000002-c000000017-full.ckpt". The generation is in the name,
// so a zombie of an older generation never overwrites its successor's
// files. instance must be a valid store path element (no "/", not empty,
// not starting with ".").
func FileName(instance string, gen, id uint64, full bool) string {
	kind := "delta"
	if full {
		kind = "full"
	}
	return fmt.Sprintf("%s/g%08d-c%09d-%s.ckpt", instance, gen, id, kind)
}

// ParseFileName parses a name made by FileName. Errors wrap ErrBadName.
func ParseFileName(name string) (instance string, gen, id uint64, full bool, err error) {
	r, err := ParseRef(name)
	return r.Instance, r.Gen, r.ID, r.Full, err
}

// ParseRef parses a name made by FileName. Errors wrap ErrBadName.
func ParseRef(name string) (Ref, error) {
	bad := func(what string) (Ref, error) {
		return Ref{}, fmt.Errorf("%w: checkpoint file %q: %s", ErrBadName, name, what)
	}
	inst, file, ok := strings.Cut(name, "/")
	if !ok || inst == "" || strings.HasPrefix(inst, ".") || strings.Contains(file, "/") {
		return bad("want INSTANCE/FILE")
	}
	rest, ok := strings.CutSuffix(file, ".ckpt")
	if !ok {
		return bad("want suffix .ckpt")
	}
	var r Ref
	r.Instance = inst
	switch {
	case strings.HasSuffix(rest, "-full"):
		r.Full, rest = true, strings.TrimSuffix(rest, "-full")
	case strings.HasSuffix(rest, "-delta"):
		rest = strings.TrimSuffix(rest, "-delta")
	default:
		return bad("want -full or -delta")
	}
	g, c, ok := strings.Cut(rest, "-")
	if !ok || len(g) < 9 || g[0] != 'g' || len(c) < 10 || c[0] != 'c' {
		return bad("want gGEN-cID")
	}
	var err error
	if r.Gen, err = parseDigits(g[1:]); err != nil {
		return bad("generation: " + err.Error())
	}
	if r.ID, err = parseDigits(c[1:]); err != nil {
		return bad("id: " + err.Error())
	}
	if r.Name() != name { // not in canonical form, e.g. over-padded
		return bad("not canonical")
	}
	return r, nil
}

func parseDigits(s string) (uint64, error) {
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not decimal", s)
		}
	}
	return strconv.ParseUint(s, 10, 64)
}

// ParseRefs parses the names that are checkpoint files and skips the
// others.
func ParseRefs(names []string) []Ref {
	var out []Ref
	for _, n := range names {
		if r, err := ParseRef(n); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// better reports whether a is preferred to b as the file of one checkpoint
// id: a higher generation (up to the target's), then a full snapshot (the
// compaction of a chain) over a delta.
func better(a, b Ref) bool {
	if a.Gen != b.Gen {
		return a.Gen > b.Gen
	}
	return a.Full && !b.Full
}

// Chain returns the files that restore checkpoint target, oldest first:
// the latest full snapshot at or before it and every delta after that, up
// to target. For each id it takes, among refs of target's instance, the
// file of the highest generation not above target's (a newer generation
// that continued the chain replaces a zombie's files), and, in one
// generation, a full snapshot over a delta. Ids in a chain are consecutive:
// a missing one is ErrBrokenChain. target itself must be among refs,
// unless a full file of the same generation and id is.
//
// Chain looks at names only; Merge checks the links stored in the files.
func Chain(refs []Ref, target Ref) ([]Ref, error) {
	best := make(map[uint64]Ref)
	found := false
	for _, r := range refs {
		if r.Instance != target.Instance || r.Gen > target.Gen || r.ID > target.ID {
			continue
		}
		if r.ID == target.ID {
			if r.Gen != target.Gen || !(r == target || r.Full) {
				continue
			}
			found = true
		}
		if b, ok := best[r.ID]; !ok || better(r, b) {
			best[r.ID] = r
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: %s: no file", ErrBrokenChain, target)
	}
	var chain []Ref
	for id := target.ID; ; id-- {
		r, ok := best[id]
		if !ok {
			return nil, fmt.Errorf("%w: %s: checkpoint %d of the chain is missing", ErrBrokenChain, target, id)
		}
		chain = append(chain, r)
		if r.Full {
			break
		}
		if id == 1 {
			return nil, fmt.Errorf("%w: %s: no full snapshot", ErrBrokenChain, target)
		}
	}
	slices.Reverse(chain)
	return chain, nil
}

// Collectable returns the files of keep's instance that garbage collection
// may delete, given the checkpoints that must stay restorable (the latest
// complete one and the one before it, the fallback if the latest is
// corrupt). A file is kept if a chain of keep needs it, or if it may belong
// to a checkpoint in flight: an id above every kept one, in the newest
// kept generation or a newer one. Everything else (older chains, a zombie
// generation's files) may go. It fails, deleting nothing, if a kept chain
// is broken or keep is empty or mixes instances. The result is sorted by
// (id, gen).
func Collectable(refs []Ref, keep []Ref) ([]Ref, error) {
	if len(keep) == 0 {
		return nil, fmt.Errorf("%w: nothing to keep", ErrBrokenChain)
	}
	inst := keep[0].Instance
	needed := make(map[Ref]bool)
	var maxGen, maxID uint64
	for _, k := range keep {
		if k.Instance != inst {
			return nil, fmt.Errorf("%w: keep mixes %s and %s", ErrBrokenChain, inst, k.Instance)
		}
		chain, err := Chain(refs, k)
		if err != nil {
			return nil, err
		}
		for _, r := range chain {
			needed[r] = true
		}
		maxGen, maxID = max(maxGen, k.Gen), max(maxID, k.ID)
	}
	var out []Ref
	for _, r := range refs {
		if r.Instance != inst || needed[r] {
			continue
		}
		if r.Gen < maxGen || r.Gen == maxGen && r.ID < maxID {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Ref) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Gen, b.Gen), cmp.Compare(b2i(a.Full), b2i(b.Full)))
	})
	return slices.Compact(out), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
