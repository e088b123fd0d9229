package state

import (
	"fmt"
	"strings"
)

// Load reads, checks and merges the chain that restores checkpoint target
// from s: the result is one full snapshot (see Chain and Merge). A file
// that does not decode, or whose contents do not match its name, fails
// with ErrCorrupt; the caller falls back to an earlier checkpoint.
func Load(s Store, target Ref) (*Snapshot, error) {
	names, err := s.List(target.Instance + "/")
	if err != nil {
		return nil, err
	}
	chain, err := Chain(ParseRefs(names), target)
	if err != nil {
		return nil, err
	}
	snaps := make([]*Snapshot, len(chain))
	for i, r := range chain {
		b, err := s.Get(r.Name())
		if err != nil {
			return nil, err
		}
		snap, err := Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name(), err)
		}
		if err := Holds(r.Name(), snap); err != nil {
			return nil, err
		}
		snaps[i] = snap
	}
	return Merge(snaps)
}

// Put encodes snap and stores it under its file name; it returns the name
// and the stored size.
func Put(s Store, snap *Snapshot) (name string, size int, err error) {
	if strings.ContainsAny(snap.Instance, "/") {
		return "", 0, fmt.Errorf("%w: instance %q", ErrBadName, snap.Instance)
	}
	b, err := Encode(snap)
	if err != nil {
		return "", 0, err
	}
	name = FileName(snap.Instance, snap.Gen, snap.ID, snap.Full)
	if err := s.Put(name, b); err != nil {
		return "", 0, err
	}
	return name, len(b), nil
}

// Holds checks that snap, decoded from the file name, is the checkpoint
// the name says: a file copied or renamed over another would otherwise be
// restored as it. The error wraps ErrCorrupt and names both.
func Holds(name string, snap *Snapshot) error {
	got := Ref{snap.Instance, snap.Gen, snap.ID, snap.Full}
	if r, err := ParseRef(name); err != nil || got != r {
		return fmt.Errorf("%s: %w: holds %s", name, ErrCorrupt, got.Name())
	}
	return nil
}
