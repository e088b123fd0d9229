package state

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestFileName(t *testing.T) {
	if got, want := FileName("count#0", 2, 17, true), "count#0/g00000002-c000000017-full.ckpt"; got != want {
		t.Fatalf("FileName = %q, want %q", got, want)
	}
	for _, r := range []Ref{
		{"count#0", 2, 17, true},
		{"rollup#12", 0, 1, false},
		{"x", 1 << 62, 1 << 63, false},
	} {
		inst, gen, id, full, err := ParseFileName(r.Name())
		if err != nil || (Ref{inst, gen, id, full}) != r {
			t.Fatalf("%s parses as %v %v %v %v, %v", r.Name(), inst, gen, id, full, err)
		}
		if err := CheckName(r.Name()); err != nil {
			t.Fatalf("%s is not a valid store name: %v", r.Name(), err)
		}
	}
	for _, bad := range []string{
		"", "count#0", "count#0/", "/g00000002-c000000017-full.ckpt",
		"count#0/g00000002-c000000017-full",
		"count#0/g00000002-c000000017-half.ckpt",
		"count#0/g0000002-c000000017-full.ckpt",
		"count#0/g000000002-c000000017-full.ckpt", // over-padded
		"count#0/g0000000x-c000000017-full.ckpt",
		"count#0/g00000002-c00000001+-full.ckpt",
		"count#0/g00000002_c000000017-full.ckpt",
		"count#0/x/g00000002-c000000017-full.ckpt",
		".hidden/g00000002-c000000017-full.ckpt",
		"count#0/g00000002-c99999999999999999999-full.ckpt",
	} {
		if _, _, _, _, err := ParseFileName(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("ParseFileName(%q) = %v, want ErrBadName", bad, err)
		}
	}
}

func ref(gen, id uint64, full bool) Ref { return Ref{"op#0", gen, id, full} }

func names(rs []Ref) string {
	var s []string
	for _, r := range rs {
		kind := "d"
		if r.Full {
			kind = "F"
		}
		s = append(s, strings.Join([]string{"g", string(rune('0' + r.Gen)), ":", itoa(r.ID), kind}, ""))
	}
	return strings.Join(s, " ")
}

func itoa(n uint64) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestChain(t *testing.T) {
	files := []Ref{
		ref(1, 1, true), ref(1, 2, false), ref(1, 3, false), ref(1, 4, true), ref(1, 5, false), ref(1, 6, false),
		// generation 2 restored checkpoint 5 and went on from 6; the
		// zombie of generation 1 still wrote 6 and 7
		ref(1, 7, false), ref(2, 6, false), ref(2, 7, false), ref(2, 8, true), ref(2, 9, false),
		// a compaction of the chain up to 3
		ref(1, 3, true),
		{"other#0", 2, 10, false},
	}
	cases := []struct {
		target Ref
		want   string
		err    bool
	}{
		{ref(1, 1, true), "g1:1F", false},
		{ref(1, 2, false), "g1:1F g1:2d", false},
		{ref(1, 3, false), "g1:3F", false}, // the compaction replaces the chain
		{ref(1, 6, false), "g1:4F g1:5d g1:6d", false},
		{ref(1, 7, false), "g1:4F g1:5d g1:6d g1:7d", false},
		{ref(2, 7, false), "g1:4F g1:5d g2:6d g2:7d", false},
		{ref(2, 9, false), "g2:8F g2:9d", false},
		{ref(2, 5, false), "", true},  // no such file
		{ref(2, 10, false), "", true}, // no such file
		{Ref{"other#0", 2, 10, false}, "", true},
	}
	for _, c := range cases {
		got, err := Chain(files, c.target)
		if c.err {
			if !errors.Is(err, ErrBrokenChain) {
				t.Errorf("Chain(%v) = %v, %v; want ErrBrokenChain", c.target, names(got), err)
			}
			continue
		}
		if err != nil || names(got) != c.want {
			t.Errorf("Chain(%v) = %q, %v; want %q", c.target, names(got), err, c.want)
		}
	}
	// a hole in the chain
	holed := slices.DeleteFunc(slices.Clone(files), func(r Ref) bool { return r == ref(1, 5, false) })
	if _, err := Chain(holed, ref(2, 7, false)); !errors.Is(err, ErrBrokenChain) {
		t.Errorf("Chain with a hole: %v", err)
	}
	if _, err := Chain([]Ref{ref(1, 1, false)}, ref(1, 1, false)); !errors.Is(err, ErrBrokenChain) {
		t.Errorf("Chain without a full snapshot: %v", err)
	}
}

func TestCollectable(t *testing.T) {
	files := []Ref{
		ref(1, 1, true), ref(1, 2, false), ref(1, 3, false), ref(1, 4, true), ref(1, 5, false), ref(1, 6, false),
		ref(1, 7, false), ref(2, 6, false), ref(2, 7, false), ref(2, 8, true), ref(2, 9, false),
		ref(2, 10, false), ref(3, 11, false), // in flight
		ref(1, 3, true),
		{"other#0", 1, 1, true},
	}
	cases := []struct {
		keep []Ref
		want string
	}{
		// keeping 7 and 9 of generation 2: the chain 4..7 and 8..9
		{[]Ref{ref(2, 7, false), ref(2, 9, false)}, "g1:1F g1:2d g1:3d g1:3F g1:6d g1:7d"},
		// keeping 9 and 10: everything before 8 goes, 11 of gen 3 stays
		{[]Ref{ref(2, 9, false), ref(2, 10, false)}, "g1:1F g1:2d g1:3d g1:3F g1:4F g1:5d g1:6d g2:6d g1:7d g2:7d"},
		// keeping 3 (compacted) and 2 of generation 1
		{[]Ref{ref(1, 2, false), ref(1, 3, false)}, ""},
	}
	for _, c := range cases {
		got, err := Collectable(files, c.keep)
		if err != nil || names(got) != c.want {
			t.Errorf("Collectable(keep %v) = %q, %v; want %q", c.keep, names(got), err, c.want)
		}
	}
	if _, err := Collectable(files, nil); err == nil {
		t.Error("Collectable with nothing to keep: no error")
	}
	if _, err := Collectable(files, []Ref{ref(2, 12, false)}); !errors.Is(err, ErrBrokenChain) {
		t.Errorf("Collectable keeping a missing checkpoint: %v", err)
	}
	if _, err := Collectable(files, []Ref{ref(2, 9, false), {"other#0", 1, 1, true}}); err == nil {
		t.Error("Collectable keeping two instances: no error")
	}
}
