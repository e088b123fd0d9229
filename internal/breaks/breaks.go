// Package breaks is the registry of the protocol's broken variants: each
// one mechanism deliberately wrong (`spate sim --break NAME`, `spate up
// --break NAME`), for teaching and to prove that the nemesis and the
// oracle can catch a wrong protocol. A variant is on only when its name
// was given: the zero Set has none, and code asks Set.Has at the one
// place where the variant differs from the protocol.
//
// A Set travels as its names, comma separated: in run.json (`break`), in
// the plan the coordinator sends its nodes (wire.Deploy), in verdicts.
// It is a value: safe to copy and to read from any goroutine.
package breaks

import (
	"fmt"
	"strings"
)

// Break is one broken variant.
type Break uint8

// The variants; List describes them.
const (
	TrimNewest   Break = iota // upstream backups trimmed at the newest checkpoint, not its fallback
	AcceptFenced              // the coordinator counts reports of a fenced generation
	EarlyCommit               // a sink commits output its checkpoint does not cover yet
	ReplayLate                // an upstream replays from one record too late
	StaleSlice                // a moved slice restored from before its move
	count
)

// Info names and describes one variant.
type Info struct {
	Break Break
	Name  string
	Desc  string // one line: what is wrong, and where
}

var infos = [count]Info{
	{TrimNewest, "trim-newest", "upstream backups are trimmed at the newest complete checkpoint instead of its fallback, so a damaged newest checkpoint has nothing to fall back to (node: onCompleted)"},
	{AcceptFenced, "accept-fenced", "the coordinator counts the checkpoint reports (a sink's commits with them) and drain reports of a fenced, older generation (coord: acceptFenced)"},
	{EarlyCommit, "early-commit", "a sink's output counts as committed as it is written, before a durable checkpoint covers it: a restore bounds no older file, and the replay writes its results again (coord: restoreSink)"},
	{ReplayLate, "replay-late", "an upstream replays to a reconnecting downstream from one record past what it lacks, per producer and key group (node: oneLate)"},
	{StaleSlice, "stale-slice", "a slice moved by a live rescale gets its state from before the move (its chain without the capture) but the capture's positions, so what the old owner applied in between is lost (node: sliceState)"},
}

// List is every variant, in a fixed order.
func List() []Info { return append([]Info(nil), infos[:]...) }

// Names is every variant's name, comma separated.
func Names() string {
	names := make([]string, len(infos))
	for i, in := range infos {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}

// String is b's name.
func (b Break) String() string {
	if b >= count {
		return fmt.Sprintf("break(%d)", uint8(b))
	}
	return infos[b].Name
}

// Set is a set of variants; the zero Set is the protocol as it should be.
type Set uint32

// Of is the set of bs.
func Of(bs ...Break) Set {
	var s Set
	for _, b := range bs {
		s |= 1 << b
	}
	return s
}

// Has reports whether b is on.
func (s Set) Has(b Break) bool { return s&(1<<b) != 0 }

// Empty reports whether no variant is on.
func (s Set) Empty() bool { return s == 0 }

// String is the names of s, comma separated ("" for none).
func (s Set) String() string {
	var names []string
	for _, in := range infos {
		if s.Has(in.Break) {
			names = append(names, in.Name)
		}
	}
	return strings.Join(names, ",")
}

// Parse reads names, comma separated ("" is none); an unknown name is an
// error naming the --break flag and listing the names.
func Parse(v string) (Set, error) {
	var s Set
	for _, w := range strings.Split(v, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		found := false
		for _, in := range infos {
			if in.Name == w {
				s |= Of(in.Break)
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("--break: %q is not a broken variant (have %s; --break list describes them)", w, Names())
		}
	}
	return s, nil
}

// MarshalText writes s as its names.
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads names, as Parse does.
func (s *Set) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Help is the text of `--break list`: one line per variant, its name and
// what is wrong.
func Help() string {
	var b strings.Builder
	b.WriteString("broken variants (--break NAME): the protocol with one mechanism deliberately wrong\n")
	for _, in := range infos {
		fmt.Fprintf(&b, "  %-14s %s\n", in.Name, in.Desc)
	}
	return b.String()
}

// Banner is what a run with s on says of itself ("" with none):
// "BROKEN ON PURPOSE: trim-newest".
func (s Set) Banner() string {
	if s.Empty() {
		return ""
	}
	return "BROKEN ON PURPOSE: " + s.String()
}
