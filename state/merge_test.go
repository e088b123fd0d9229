package state

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func kvs(pairs ...string) []KV {
	var out []KV
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		if v == "-" {
			out = append(out, KV{Key: []byte(k), Deleted: true})
		} else {
			out = append(out, KV{Key: []byte(k), Value: []byte(v)})
		}
	}
	return out
}

func show(s *Snapshot) string {
	var b strings.Builder
	for _, g := range s.Groups {
		fmt.Fprintf(&b, "%d:", g.KG)
		for _, kv := range g.Entries {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value)
		}
		b.WriteString("; ")
	}
	return b.String()
}

func TestMerge(t *testing.T) {
	full := &Snapshot{Instance: "a", ID: 4, Full: true, Base: 4, Sections: map[string][]byte{"pos": []byte("4"), "keep": []byte("k")},
		Groups: []GroupData{{KG: 1, Entries: kvs("a=1", "b=1", "c=1")}, {KG: 2, Entries: kvs("x=1")}, {KG: 3, Entries: kvs("q=1")}}}
	d5 := &Snapshot{Instance: "a", Gen: 1, ID: 5, Base: 4, Parent: 4, Sections: map[string][]byte{"pos": []byte("5")},
		Groups: []GroupData{
			{KG: 1, Entries: kvs("0=5", "b=-", "c=5", "d=5", "zz=-")},
			{KG: 2, Reset: true},                       // dropped
			{KG: 7, Reset: true, Entries: kvs("n=5")},  // new
			{KG: 3, Reset: true, Entries: kvs("r=5")}}} // dropped and re-created
	slices.SortFunc(d5.Groups, func(a, b GroupData) int { return a.KG - b.KG })
	d6 := &Snapshot{Instance: "a", Gen: 1, ID: 6, Base: 4, Parent: 5,
		Groups: []GroupData{{KG: 1, Entries: kvs("a=-", "d=6")}, {KG: 7, Entries: kvs("n=-")}}}

	got, err := Merge([]*Snapshot{full, d5, d6})
	if err != nil {
		t.Fatal(err)
	}
	if want := "1: 0=5 c=5 d=6; 3: r=5; "; show(got) != want {
		t.Fatalf("merged %q, want %q", show(got), want)
	}
	if got.ID != 6 || got.Base != 6 || got.Parent != 0 || !got.Full || got.Gen != 1 || got.Instance != "a" {
		t.Fatalf("merged header %+v", got)
	}
	if string(got.Sections["pos"]) != "5" || string(got.Sections["keep"]) != "k" {
		t.Fatalf("merged sections %q", got.Sections)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	// A compaction (a full snapshot at 5) starts the chain after the
	// delta's base; a restored writer continues with its restore point as
	// base.
	compacted := &Snapshot{Instance: "a", ID: 5, Full: true, Base: 5, Groups: []GroupData{{KG: 1, Entries: kvs("a=1")}}}
	after := &Snapshot{Instance: "a", ID: 6, Base: 4, Parent: 5, Groups: []GroupData{{KG: 1, Entries: kvs("b=6")}}}
	restored := &Snapshot{Instance: "a", Gen: 2, ID: 7, Base: 6, Parent: 6, Groups: []GroupData{{KG: 1, Entries: kvs("c=7")}}}
	if got, err := Merge([]*Snapshot{compacted, after, restored}); err != nil || show(got) != "1: a=1 b=6 c=7; " {
		t.Fatalf("compacted and continued chain: %q, %v", show(got), err)
	}
	if one, err := Merge([]*Snapshot{full}); err != nil || show(one) != show(full) {
		t.Fatalf("merge of a full snapshot alone: %v %v", show(one), err)
	}

	broken := map[string][]*Snapshot{
		"empty":             nil,
		"starts with delta": {d5, d6},
		"skips a delta":     {full, d6},
		"wrong base":        {full, d5, {Instance: "a", ID: 7, Base: 6, Parent: 5}},
		"other instance":    {full, {Instance: "b", ID: 5, Base: 4, Parent: 4}},
		"full inside":       {full, {Instance: "a", ID: 5, Full: true, Base: 5}},
		"older generation":  {{Instance: "a", Gen: 2, ID: 4, Full: true, Base: 4}, {Instance: "a", Gen: 1, ID: 5, Base: 4, Parent: 4}},
	}
	for name, chain := range broken {
		if _, err := Merge(chain); !errors.Is(err, ErrBrokenChain) {
			t.Errorf("%s: Merge error %v, want ErrBrokenChain", name, err)
		}
	}
}

// TestMergeRandom checks Merge against a map model on random chains.
func TestMergeRandom(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		m := model{}
		var chain []*Snapshot
		for id := uint64(1); id <= 1+uint64(rng.IntN(8)); id++ {
			s := &Snapshot{Instance: "i", ID: id, Full: id == 1, Base: 1}
			if id > 1 {
				s.Parent = id - 1
			}
			for kg := range 4 {
				if rng.IntN(3) == 0 {
					continue
				}
				g := GroupData{KG: kg, Reset: id > 1 && rng.IntN(6) == 0}
				if g.Reset {
					delete(m, kg)
				}
				for k := range 6 {
					key := fmt.Sprintf("k%d", k)
					switch r := rng.IntN(4); {
					case r == 0 && id > 1 && !g.Reset:
						g.Entries = append(g.Entries, KV{Key: []byte(key), Deleted: true})
						delete(m[kg], key)
					case r == 1:
						v := fmt.Sprintf("%d.%d", id, rng.IntN(100))
						g.Entries = append(g.Entries, KV{Key: []byte(key), Value: []byte(v)})
						if m[kg] == nil {
							m[kg] = map[string]string{}
						}
						m[kg][key] = v
					}
				}
				s.Groups = append(s.Groups, g)
			}
			chain = append(chain, s)
		}
		got, err := Merge(chain)
		if err != nil {
			t.Fatal(err)
		}
		if d := m.normalize().diff(fromSnapshot(t, got)); d != "" {
			t.Fatalf("seed %d:\n%s", seed, d)
		}
		// The same chain stored and read back for a restore.
		lazy := make([]*Snapshot, len(chain))
		for i, s := range chain {
			b, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			if lazy[i], err = DecodeLazy(b); err != nil {
				t.Fatal(err)
			}
		}
		if got, err = Merge(lazy); err != nil {
			t.Fatal(err)
		}
		if d := m.diff(fromSnapshot(t, got)); d != "" {
			t.Fatalf("seed %d, decoded lazily:\n%s", seed, d)
		}
	}
}
