package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// tval is a test value with a slice, so that a shallow copy is not a clone.
type tval struct {
	n  int64
	xs []int64
}

func cloneT(v *tval) tval { return tval{n: v.n, xs: slices.Clone(v.xs)} }

func encT(dst []byte, v *tval) []byte {
	dst = binary.AppendVarint(dst, v.n)
	dst = binary.AppendUvarint(dst, uint64(len(v.xs)))
	for _, x := range v.xs {
		dst = binary.AppendVarint(dst, x)
	}
	return dst
}

func (v *tval) String() string { return string(encT(nil, v)) }

// bump changes v the way the tests do: through Mut.
func bump(e *Entry[tval], x int64) {
	v := e.Mut()
	v.n += x
	if len(v.xs) < 8 {
		v.xs = append(v.xs, x)
	} else {
		v.xs[int(x)&7] = x // in place: only a clone protects a capture from this
	}
}

// model is the expected table: key group -> key -> encoded value.
type model map[int]map[string]string

func (m model) clone() model {
	out := make(model, len(m))
	for kg, g := range m {
		out[kg] = maps.Clone(g)
	}
	return out
}

func (m model) set(kg int, key string, v *tval) {
	if m[kg] == nil {
		m[kg] = map[string]string{}
	}
	m[kg][key] = v.String()
}

// fromSnapshot turns a full snapshot into a model.
func fromSnapshot(t *testing.T, s *Snapshot) model {
	t.Helper()
	m := model{}
	for _, g := range s.Groups {
		if g.Len() == 0 {
			t.Fatalf("full snapshot %d: empty group %d", s.ID, g.KG)
		}
		m[g.KG] = map[string]string{}
		for _, kv := range g.KVs() {
			if kv.Deleted {
				t.Fatalf("full snapshot %d: deletion of %q", s.ID, kv.Key)
			}
			m[g.KG][string(kv.Key)] = string(kv.Value)
		}
	}
	return m
}

func (m model) diff(o model) string {
	var b strings.Builder
	for _, kg := range slices.Sorted(maps.Keys(m)) {
		for _, k := range slices.Sorted(maps.Keys(m[kg])) {
			if ov, ok := o[kg][k]; !ok || ov != m[kg][k] {
				fmt.Fprintf(&b, "kg %d key %q: want %x, got %x (present %v)\n", kg, k, m[kg][k], ov, ok)
			}
		}
	}
	for kg, g := range o {
		for k := range g {
			if _, ok := m[kg][k]; !ok {
				fmt.Fprintf(&b, "kg %d key %q: unexpected\n", kg, k)
			}
		}
	}
	return b.String()
}

// normalize drops empty groups: a snapshot does not hold them.
func (m model) normalize() model {
	for kg, g := range m {
		if len(g) == 0 {
			delete(m, kg)
		}
	}
	return m
}

func TestTableBasics(t *testing.T) {
	tab := NewTable(cloneT)
	if tab.Get(3, []byte("a")) != nil || tab.Get(-1, nil) != nil || tab.Get(1<<20, nil) != nil {
		t.Fatal("Get on an empty table found something")
	}
	e, created := tab.Upsert(3, []byte("a"))
	if !created || e.Key() != "a" {
		t.Fatalf("Upsert: %v %v", e, created)
	}
	bump(e, 5)
	if e2, created := tab.Upsert(3, []byte("a")); created || e2 != e || e2.Val().n != 5 {
		t.Fatalf("second Upsert: created %v, same %v, n %d", created, e2 == e, e2.Val().n)
	}
	tab.Upsert(1, []byte("b"))
	tab.Upsert(3, []byte("c"))
	if got := tab.Groups(); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("Groups() = %v", got)
	}
	if tab.Len() != 3 || tab.GroupLen(3) != 2 || !tab.Has(1) || tab.Has(2) {
		t.Fatalf("Len %d, GroupLen(3) %d", tab.Len(), tab.GroupLen(3))
	}
	var keys []string
	tab.Range(3, func(e *Entry[tval]) bool { keys = append(keys, e.Key()); return true })
	if !slices.Equal(keys, []string{"a", "c"}) {
		t.Fatalf("Range: %v", keys)
	}
	tab.Delete(3, "a")
	tab.Delete(3, "nope")
	tab.Delete(9, "nope")
	if tab.Get(3, []byte("a")) != nil || tab.Len() != 2 {
		t.Fatal("Delete did not delete")
	}
	keys = nil
	tab.Range(3, func(e *Entry[tval]) bool { keys = append(keys, e.Key()); return true })
	if !slices.Equal(keys, []string{"c"}) {
		t.Fatalf("Range after Delete: %v", keys)
	}
	tab.DropGroup(1)
	tab.DropGroup(7)
	if got := tab.Groups(); !slices.Equal(got, []int{3}) || tab.Len() != 1 {
		t.Fatalf("after DropGroup: Groups %v, Len %d", got, tab.Len())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Upsert with a key group out of range did not panic")
		}
	}()
	tab.Upsert(MaxGroups, []byte("x"))
}

func TestGetDoesNotAllocate(t *testing.T) {
	tab := NewTable(cloneT)
	key := []byte("some-key")
	tab.Upsert(5, key)
	if n := testing.AllocsPerRun(100, func() {
		if e := tab.Get(5, key); e == nil {
			t.Fatal("lost")
		}
		e, _ := tab.Upsert(5, key)
		e.Mut().n++
	}); n != 0 {
		t.Fatalf("Get+Upsert+Mut of an existing key: %v allocations", n)
	}
}

func TestRangeDuringChanges(t *testing.T) {
	tab := NewTable(cloneT)
	for i := range 100 {
		tab.Upsert(0, fmt.Appendf(nil, "k%03d", i))
	}
	n := 0
	tab.Range(0, func(e *Entry[tval]) bool {
		n++
		if n == 1 {
			for i := range 100 { // deletes and compacts while iterating
				if i%2 == 1 {
					tab.Delete(0, fmt.Sprintf("k%03d", i))
				}
			}
			tab.Upsert(0, []byte("new"))
		}
		return true
	})
	if n != 50 || tab.GroupLen(0) != 51 {
		t.Fatalf("visited %d, GroupLen %d; want 50, 51", n, tab.GroupLen(0))
	}
	n = 0
	tab.Range(0, func(*Entry[tval]) bool { n++; return n < 3 })
	if n != 3 {
		t.Fatalf("Range did not stop: %d", n)
	}
}

// capture takes a capture and returns a function that encodes it, as a
// background goroutine would.
func encodeNow(c *Capture[tval]) []GroupData { return EncodeCapture(c, encT, nil) }

func TestCaptureDeltaContents(t *testing.T) {
	tab := NewTable(cloneT)
	for i := range 10 {
		e, _ := tab.Upsert(i%2, fmt.Appendf(nil, "k%d", i))
		bump(e, int64(i))
	}
	full := encodeNow(tab.Capture(true))
	if len(full) != 2 || full[0].Len() != 5 || full[1].Len() != 5 || full[0].Reset || full[1].Reset {
		t.Fatalf("full capture: %+v", full)
	}

	delta := encodeNow(tab.Capture(false))
	if len(delta) != 0 {
		t.Fatalf("delta with no change: %+v", delta)
	}

	bump(tab.Get(0, []byte("k2")), 1)
	bump(tab.Get(0, []byte("k2")), 1) // twice: once in the delta
	tab.Delete(1, "k3")
	tab.Upsert(1, []byte("k3")) // re-created: a value, not a deletion
	tab.Delete(1, "k5")
	tab.Upsert(4, []byte("n1")) // a new group: reset
	tab.DropGroup(0)
	tab.Upsert(0, []byte("z")) // dropped and created again: reset, whole
	c := tab.Capture(false)
	if got := c.Resets(); !slices.Equal(got, []int{0, 4}) {
		t.Fatalf("Resets() = %v", got)
	}
	delta = encodeNow(c)
	type kv struct {
		kg  int
		key string
		del bool
	}
	var got []kv
	for _, g := range delta {
		if g.Reset != (g.KG == 0 || g.KG == 4) {
			t.Fatalf("group %d: Reset %v", g.KG, g.Reset)
		}
		for _, e := range g.KVs() {
			got = append(got, kv{g.KG, string(e.Key), e.Deleted})
		}
	}
	want := []kv{{0, "z", false}, {1, "k3", false}, {1, "k5", true}, {4, "n1", false}}
	if !slices.Equal(got, want) {
		t.Fatalf("delta %v, want %v", got, want)
	}

	// A dropped group and nothing else: a reset with no entries.
	tab.DropGroup(4)
	delta = encodeNow(tab.Capture(false))
	if len(delta) != 1 || delta[0].KG != 4 || !delta[0].Reset || delta[0].Len() != 0 {
		t.Fatalf("delta after dropping group 4: %+v", delta)
	}
}

func TestCaptureSeesCaptureTimeValues(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			tab := NewTable(cloneT)
			m := model{}
			for i := range 200 {
				e, _ := tab.Upsert(i%4, fmt.Appendf(nil, "k%d", i))
				bump(e, int64(i))
				m.set(i%4, e.Key(), e.Val())
			}
			if !full {
				encodeNow(tab.Capture(true)) // so that the delta below holds only what changes next
				m = model{}
				for i := 0; i < 200; i += 3 {
					e := tab.Get(i%4, fmt.Appendf(nil, "k%d", i))
					bump(e, 1000)
					m.set(i%4, e.Key(), e.Val())
				}
			}
			c := tab.Capture(full)
			// The owner goes on before the capture is encoded: changes in
			// place, deletions, new keys, a dropped group.
			for i := range 200 {
				switch i % 5 {
				case 0, 1:
					bump(tab.Get(i%4, fmt.Appendf(nil, "k%d", i)), -7)
				case 2:
					tab.Delete(i%4, fmt.Sprintf("k%d", i))
				}
			}
			for i := range 50 {
				e, _ := tab.Upsert(i%4, fmt.Appendf(nil, "new%d", i))
				bump(e, 3)
			}
			tab.DropGroup(3)
			got := model{}
			c.Each(func(kg int, key string, v *tval, deleted bool) {
				if deleted {
					t.Fatalf("deletion of %q in the capture", key)
				}
				got.set(kg, key, v)
			})
			if d := m.diff(got); d != "" {
				t.Fatal(d)
			}
			if tab.Busy() {
				t.Fatal("Busy after Each")
			}
		})
	}
}

// TestCaptureClonesOnlyWhatItNeeds: the owner clones a value only if the
// running capture holds it and has not visited it yet, and only once.
func TestCaptureClonesOnlyWhatItNeeds(t *testing.T) {
	clones := 0
	tab := NewTable(func(v *tval) tval { clones++; return cloneT(v) })
	var ents []*Entry[tval]
	for i := range 100 {
		e, _ := tab.Upsert(i%3, fmt.Appendf(nil, "k%d", i))
		ents = append(ents, e)
	}
	tab.Capture(true).Done()
	for _, e := range ents[:10] {
		bump(e, 1)
	}
	c := tab.Capture(false) // holds 10 entries
	for range 2 {
		for _, e := range ents {
			bump(e, 2)
		}
	}
	if clones != 10 {
		t.Fatalf("delta capture of 10 entries: %d clones", clones)
	}
	c.Each(func(int, string, *tval, bool) {})
	clones = 0
	c = tab.Capture(true) // holds all 100
	for _, e := range ents[:50] {
		bump(e, 3)
		bump(e, 3)
	}
	n := 0
	c.Each(func(int, string, *tval, bool) { n++ })
	for _, e := range ents {
		bump(e, 4)
	}
	if clones != 50 || n != 100 {
		t.Fatalf("full capture: %d clones, want 50; %d entries, want 100", clones, n)
	}
	e, _ := tab.Upsert(0, []byte("new"))
	c = tab.Capture(false)
	e2, _ := tab.Upsert(0, []byte("newer"))
	bump(e, 5)
	bump(e2, 5)
	c.Done()
	if clones != 51 {
		t.Fatalf("after a delta holding one entry: %d clones, want 51", clones)
	}
}

func TestCaptureWaitsForThePreviousOne(t *testing.T) {
	tab := NewTable(cloneT)
	tab.Upsert(0, []byte("a"))
	c := tab.Capture(true)
	if !tab.Busy() {
		t.Fatal("not Busy with a capture in flight")
	}
	ended := make(chan struct{})
	go func() {
		time.Sleep(20 * time.Millisecond)
		close(ended)
		c.Done()
	}()
	c2 := tab.Capture(false)
	select {
	case <-ended:
	default:
		t.Fatal("Capture did not wait for the previous capture to end")
	}
	c2.Done()
	c2.Done() // idempotent
	defer func() {
		if recover() == nil {
			t.Fatal("Each after Done did not panic")
		}
	}()
	c2.Each(func(int, string, *tval, bool) {})
}

func TestEachTwicePanics(t *testing.T) {
	tab := NewTable(cloneT)
	c := tab.Capture(true)
	c.Each(func(int, string, *tval, bool) {})
	c.Done() // harmless after Each
	defer func() {
		if recover() == nil {
			t.Fatal("second Each did not panic")
		}
	}()
	c.Each(func(int, string, *tval, bool) {})
}

// chainer turns the captures of a table into snapshots, through the
// stored form, and checks that the chain merges into the model.
type chainer struct {
	t     *testing.T
	chain []*Snapshot
	lazy  []*Snapshot // the same, decoded for a restore (DecodeLazy)
	id    uint64
	sc    *Scratch // nil: Encode; else EncodeParts with it
}

func (ch *chainer) add(full bool, groups []GroupData) *Snapshot {
	ch.t.Helper()
	ch.id++
	s := &Snapshot{Instance: "op#0", Gen: 1, ID: ch.id, Full: full, Groups: groups,
		Sections: map[string][]byte{"pos": fmt.Appendf(nil, "%d", ch.id)}}
	if full {
		s.Base = s.ID
		ch.chain, ch.lazy = nil, nil
	} else {
		s.Base, s.Parent = ch.chain[0].ID, ch.chain[len(ch.chain)-1].ID
	}
	var b []byte
	var err error
	if ch.sc == nil {
		b, err = Encode(s)
	} else {
		var parts [][]byte
		parts, err = EncodeParts(s, ch.sc)
		b = slices.Concat(parts...)
	}
	if err != nil {
		ch.t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		ch.t.Fatal(err)
	}
	lazy, err := DecodeLazy(b)
	if err != nil {
		ch.t.Fatal(err)
	}
	ch.chain, ch.lazy = append(ch.chain, back), append(ch.lazy, lazy)
	return back
}

func (ch *chainer) check(want model, what string) {
	ch.t.Helper()
	merged, err := Merge(ch.chain)
	if err != nil {
		ch.t.Fatalf("%s: %v", what, err)
	}
	if string(merged.Sections["pos"]) != fmt.Sprint(ch.id) || merged.ID != ch.id || !merged.Full {
		ch.t.Fatalf("%s: merged %+v", what, merged)
	}
	if d := want.normalize().diff(fromSnapshot(ch.t, merged)); d != "" {
		ch.t.Fatalf("%s: merged chain of %d differs:\n%s", what, len(ch.chain), d)
	}
}

// TestTableModel drives a table with random operations and random full and
// delta captures, each encoded after more operations, and checks every
// capture, and the merge of its chain, against a model.
func TestTableModel(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 1))
		tab := NewTable(cloneT)
		m := model{}
		ch := &chainer{t: t, sc: &Scratch{}} // one scratch for every encoding, as an instance has
		needFull := true
		var pending *Capture[tval]
		var pendingWant model
		var pendingFull bool
		finish := func() {
			if pending == nil {
				return
			}
			if rng.IntN(10) == 0 {
				pending.Done() // abandoned: the chain is broken
				needFull = true
			} else {
				groups := EncodeCapture(pending, encT, ch.sc)
				ch.add(pendingFull, groups)
				ch.check(pendingWant, fmt.Sprintf("seed %d capture %d", seed, ch.id))
			}
			pending = nil
		}
		nkeys := 1 + rng.IntN(60)
		for step := range 400 {
			kg := rng.IntN(6)
			key := fmt.Sprintf("k%d", rng.IntN(nkeys))
			switch r := rng.IntN(100); {
			case r < 50:
				e, _ := tab.Upsert(kg, []byte(key))
				bump(e, int64(step))
				m.set(kg, key, e.Val())
			case r < 65:
				tab.Delete(kg, key)
				delete(m[kg], key)
			case r < 67:
				tab.DropGroup(kg)
				delete(m, kg)
			case r < 75:
				finish()
				full := needFull || rng.IntN(4) == 0
				pending, pendingWant, pendingFull = tab.Capture(full), m.clone(), full
				needFull = false
			case r < 80:
				finish()
			case r < 82:
				// A crash: the table is restored from its chain, taken
				// now, and goes on (its next capture continues the chain).
				finish()
				full := needFull || rng.IntN(4) == 0
				ch.add(full, EncodeCapture(tab.Capture(full), encT, ch.sc))
				groups, err := MergeGroups(ch.lazy)
				if err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				tab = restoreTable(t, groups)
				needFull = false
				if d := m.clone().normalize().diff(tableModel(tab)); d != "" {
					t.Fatalf("seed %d step %d: the restored table differs:\n%s", seed, step, d)
				}
			default:
				if e := tab.Get(kg, []byte(key)); e != nil {
					if v := e.Val(); v.n != 0 || len(v.xs) > 0 {
						bump(e, -1)
						m.set(kg, key, e.Val())
					}
				}
			}
			if n := tab.Len(); n != countModel(m) {
				t.Fatalf("seed %d step %d: Len %d, model %d", seed, step, n, countModel(m))
			}
		}
		finish()
	}
}

// TestGroupBuilder: a group built off the table changes nothing until it
// is attached; then it is a group like any other, new to the chain (the
// next delta capture takes it whole), and a repeated key or a held group
// is refused.
func TestGroupBuilder(t *testing.T) {
	tab := NewTable(cloneT)
	bump(first(tab.Upsert(1, []byte("old"))), 1)
	tab.Capture(true).Done()

	b := tab.Build(2, 2, 2)
	for i, k := range []string{"a", "bb", "ccc"} { // one key more than announced
		b.Add([]byte(k)).Val().n = int64(i + 1)
	}
	if tab.Has(2) || tab.Len() != 1 || tab.Get(2, []byte("a")) != nil {
		t.Fatal("the table changed before Attach")
	}
	tab.Attach(b)
	if !tab.Has(2) || tab.Len() != 4 || tab.GroupLen(2) != 3 || tab.Get(2, []byte("ccc")).Val().n != 3 {
		t.Fatalf("after Attach: Len %d, GroupLen %d", tab.Len(), tab.GroupLen(2))
	}
	mustPanic(t, "Attach of a held group", func() { tab.Attach(tab.Build(2, 0, 0)) })
	mustPanic(t, "a repeated key", func() {
		b := tab.Build(3, 2, 0)
		b.Add([]byte("x"))
		b.Add([]byte("x"))
	})

	c := tab.Capture(false)
	bump(tab.Get(2, []byte("a")), 10) // while the capture is pinned
	delta := encodeNow(c)
	if len(delta) != 1 || delta[0].KG != 2 || !delta[0].Reset || delta[0].Len() != 3 {
		t.Fatalf("the delta after Attach: %+v", delta)
	}
	if v, _ := decT(delta[0].KVs()[0].Value); v.n != 1 {
		t.Fatalf("the delta holds a = %d, want its value at the capture, 1", v.n)
	}
	delta = encodeNow(tab.Capture(false))
	if len(delta) != 1 || delta[0].Reset || delta[0].Len() != 1 || string(delta[0].KVs()[0].Key) != "a" {
		t.Fatalf("the next delta: %+v", delta)
	}
}

// TestGroupBuilderClean: a group built clean (an early restore's, as of
// the checkpoint the table continues) and attached while the owner goes
// on is not new to the chain: the next delta capture holds the keys
// changed after the attach, not the group whole, and a pinned value is
// still saved for the capture.
func TestGroupBuilderClean(t *testing.T) {
	tab := NewTable(cloneT)
	bump(first(tab.Upsert(1, []byte("old"))), 1)
	tab.Capture(true).Done()
	b := tab.BuildClean(2, 3, 6)
	for i, k := range []string{"a", "bb", "ccc"} {
		b.Add([]byte(k)).Val().n = int64(i + 1)
	}
	bump(tab.Get(1, []byte("old")), 1) // the owner goes on meanwhile
	tab.Attach(b)
	if delta := encodeNow(tab.Capture(false)); len(delta) != 1 || delta[0].KG != 1 {
		t.Fatalf("the delta after a clean Attach and no change in it: %+v", delta)
	}
	bump(tab.Get(2, []byte("bb")), 10)
	c := tab.Capture(false)
	bump(tab.Get(2, []byte("bb")), 100) // while the capture is pinned
	delta := encodeNow(c)
	if len(delta) != 1 || delta[0].KG != 2 || delta[0].Reset || delta[0].Len() != 1 || string(delta[0].KVs()[0].Key) != "bb" {
		t.Fatalf("the delta after a change in a clean group: %+v", delta)
	}
	if v, _ := decT(delta[0].KVs()[0].Value); v.n != 12 {
		t.Fatalf("the delta holds bb = %d, want its value at the capture, 12", v.n)
	}
}

func first[A, B any](a A, _ B) A { return a }

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s: no panic", what)
		}
	}()
	f()
}

// restoreTable builds a table from a merged chain, as a restore does:
// each group off the table, then attached.
func restoreTable(t *testing.T, groups []MergedGroup) *Table[tval] {
	t.Helper()
	tab := NewTable(cloneT)
	for _, g := range groups {
		b := tab.Build(g.KG, g.Len(), g.KeyBytes())
		for kv := range g.All() {
			if kv.Deleted {
				t.Fatalf("key group %d: a deletion of %q", g.KG, kv.Key)
			}
			v, err := decT(kv.Value)
			if err != nil {
				t.Fatalf("key group %d, key %q: %v", g.KG, kv.Key, err)
			}
			*b.Add(kv.Key).Val() = v
		}
		tab.Attach(b)
	}
	return tab
}

// decT decodes what encT wrote.
func decT(b []byte) (tval, error) {
	var v tval
	n, w := binary.Varint(b)
	if w <= 0 {
		return v, fmt.Errorf("bad n")
	}
	b = b[w:]
	m, w := binary.Uvarint(b)
	if w <= 0 || m > uint64(len(b)) {
		return v, fmt.Errorf("bad length")
	}
	b = b[w:]
	v.n = n
	for range m {
		x, w := binary.Varint(b)
		if w <= 0 {
			return v, fmt.Errorf("bad x")
		}
		b = b[w:]
		v.xs = append(v.xs, x)
	}
	if len(b) != 0 {
		return v, fmt.Errorf("%d trailing bytes", len(b))
	}
	return v, nil
}

// tableModel reads a table into a model, without a capture.
func tableModel(tab *Table[tval]) model {
	m := model{}
	for _, kg := range tab.Groups() {
		tab.Range(kg, func(e *Entry[tval]) bool {
			m.set(kg, e.Key(), e.Val())
			return true
		})
	}
	return m.normalize()
}

func countModel(m model) int {
	n := 0
	for _, g := range m {
		n += len(g)
	}
	return n
}

// TestCaptureRace runs Each on another goroutine while the owner keeps
// changing, deleting, creating and dropping entries, and checks that every
// capture saw exactly the values as of the capture. Run it with -race.
func TestCaptureRace(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	rng := rand.New(rand.NewPCG(5, 5))
	tab := NewTable(cloneT)
	m := model{}
	type job struct {
		c    *Capture[tval]
		want model
		full bool
	}
	jobs := make(chan job)
	results := make(chan error)
	go func() {
		for j := range jobs {
			got := model{}
			var bad error
			j.c.Each(func(kg int, key string, v *tval, deleted bool) {
				if deleted {
					if _, ok := j.want[kg][key]; ok && bad == nil {
						bad = fmt.Errorf("kg %d key %q: deleted in the capture, present at capture time", kg, key)
					}
					return
				}
				got.set(kg, key, v)
				if w, ok := j.want[kg][key]; (!ok || w != v.String()) && bad == nil {
					bad = fmt.Errorf("kg %d key %q: captured %x, at capture time %x (present %v)", kg, key, v.String(), w, ok)
				}
			})
			if j.full && bad == nil {
				bad = diffErr(j.want.normalize(), got)
			}
			results <- bad
		}
		close(results)
	}()
	const nkeys, groups = 3000, 8
	keys := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	for round := range rounds {
		full := round%3 == 0 || round < 2
		c := tab.Capture(full)
		jobs <- job{c, m.clone(), full}
		// Mutate while Each runs, until it reports.
		var err error
	loop:
		for {
			select {
			case err = <-results:
				break loop
			default:
			}
			for range 50 {
				i := rng.IntN(nkeys)
				kg := i % groups
				switch r := rng.IntN(100); {
				case r < 80:
					e, _ := tab.Upsert(kg, keys[i])
					bump(e, int64(rng.IntN(1000)))
					m.set(kg, string(keys[i]), e.Val())
				case r < 98:
					tab.Delete(kg, string(keys[i]))
					delete(m[kg], string(keys[i]))
				default:
					if rng.IntN(20) == 0 {
						tab.DropGroup(kg)
						delete(m, kg)
					}
				}
			}
		}
		if err != nil {
			t.Fatalf("round %d (full %v): %v", round, full, err)
		}
	}
	close(jobs)
	for range results {
	}
}

func diffErr(want, got model) error {
	if d := want.diff(got); d != "" {
		if len(d) > 2000 {
			d = d[:2000] + "..."
		}
		return fmt.Errorf("capture differs from the state at capture time:\n%s", d)
	}
	return nil
}

// TestCaptureRaceDeltaChain is TestCaptureRace for deltas: each capture is
// encoded concurrently with the owner's changes, and the merged chain must
// equal the state at the latest capture.
func TestCaptureRaceDeltaChain(t *testing.T) {
	var touched byte // the owner reads entries ahead (Touch) while the capture runs: -race checks it
	defer func() { _ = touched }()
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	rng := rand.New(rand.NewPCG(9, 9))
	tab := NewTable(cloneT)
	m := model{}
	ch := &chainer{t: t}
	const nkeys, groups = 2000, 8
	for round := range rounds {
		full := round%10 == 0
		c := tab.Capture(full)
		want := m.clone()
		done := make(chan []GroupData)
		go func() { done <- EncodeCapture(c, encT, nil) }()
		var gd []GroupData
	loop:
		for {
			select {
			case gd = <-done:
				break loop
			default:
			}
			for range 20 {
				i := rng.IntN(nkeys)
				kg, key := i%groups, fmt.Appendf(nil, "k%d", i)
				if rng.IntN(10) < 8 {
					e, _ := tab.Upsert(kg, key)
					touched += e.Touch()
					bump(e, int64(round))
					m.set(kg, string(key), e.Val())
				} else {
					tab.Delete(kg, string(key))
					delete(m[kg], string(key))
				}
			}
		}
		ch.add(full, gd)
		ch.check(want, fmt.Sprintf("round %d", round))
	}
}

// TestTouchEmptyKey: Touch reads a key's first byte only if it has one.
func TestTouchEmptyKey(t *testing.T) {
	tab := NewTable(cloneT)
	e, _ := tab.Upsert(0, nil)
	_ = e.Touch()
}

func TestEncodeCaptureSortsKeys(t *testing.T) {
	tab := NewTable(cloneT)
	for _, k := range []string{"b", "a", "\xff", "", "ab"} {
		tab.Upsert(2, []byte(k))
	}
	gd := EncodeCapture(tab.Capture(true), encT, nil)
	var keys []string
	for _, kv := range gd[0].KVs() {
		keys = append(keys, string(kv.Key))
	}
	if !slices.Equal(keys, []string{"", "a", "ab", "b", "\xff"}) {
		t.Fatalf("keys %q", keys)
	}
	for _, kv := range gd[0].KVs() {
		if !bytes.Equal(kv.Value, encT(nil, &tval{})) {
			t.Fatalf("value %x", kv.Value)
		}
	}
}

// TestEncodeCaptureReusesScratch: full captures encoded one after the
// other with one Scratch are what they are without one, and the later
// ones write into the earlier ones' storage. (TestTableModel encodes its
// deltas with a scratch too.)
func TestEncodeCaptureReusesScratch(t *testing.T) {
	tab := NewTable(cloneT)
	for i := range 5000 {
		e, _ := tab.Upsert(i%7, fmt.Appendf(nil, "key-%06d", i))
		for x := range 8 {
			bump(e, int64(i*x))
		}
	}
	sc := &Scratch{}
	var first *byte
	for round := range 4 {
		for i := round; i < 5000; i += 3 {
			e, _ := tab.Upsert(i%7, fmt.Appendf(nil, "key-%06d", i))
			bump(e, int64(round))
		}
		got := EncodeCapture(tab.Capture(true), encT, sc)
		// A second capture of the same state, encoded without a scratch.
		want := EncodeCapture(tab.Capture(true), encT, nil)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d groups, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i].KG != want[i].KG || got[i].Reset != want[i].Reset || !equalKVs(got[i].KVs(), want[i].KVs()) {
				t.Fatalf("round %d: group %d differs from the encoding without a scratch", round, got[i].KG)
			}
		}
		if round == 0 {
			first = &got[0].raw[0]
		} else if &got[0].raw[0] != first {
			t.Fatalf("round %d: the entries are in new storage, not the scratch's", round)
		}
	}
}

// TestEncodeCaptureOfAGrowingStateSizesItsStorageOnce: a capture of a
// state eight times the size of the previous one (every run starts
// empty and grows) is encoded into storage sized once from the previous
// capture's bytes per entry, not into arrays that appending outgrows
// again and again, each new one zeroed and copied into.
func TestEncodeCaptureOfAGrowingStateSizesItsStorageOnce(t *testing.T) {
	tab := NewTable(cloneT)
	add := func(from, to int) {
		for i := from; i < to; i++ {
			e, _ := tab.Upsert(i%7, fmt.Appendf(nil, "key-%06d", i))
			bump(e, int64(i))
		}
	}
	add(0, 1000)
	sc := &Scratch{}
	EncodeCapture(tab.Capture(true), encT, sc)
	add(1000, 8000)
	c := tab.Capture(true)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	gd := EncodeCapture(c, encT, sc)
	runtime.ReadMemStats(&after)
	n := 0
	for _, g := range gd {
		n += g.Len()
	}
	if n != 8000 {
		t.Fatalf("%d entries encoded, want 8000", n)
	}
	// The entries, their offsets, the sorted copy, the sort's handles
	// (two arrays), the groups' spans and the result: each once.
	if m := after.Mallocs - before.Mallocs; m > 10 {
		t.Fatalf("encoding a capture 8x the previous one allocated %d times, want at most 10", m)
	}
}

// TestDeltaEpochReusesTheDirtyLists: an epoch that changes the same keys
// as the one before lists them in the array of the ended capture's list,
// not in one grown anew by appends (each growth a new array, zeroed and
// copied into), and its delta still holds exactly the keys it changed.
func TestDeltaEpochReusesTheDirtyLists(t *testing.T) {
	tab := NewTable(cloneT)
	keys := make([][]byte, 4000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%06d", i)
		tab.Upsert(i%4, keys[i])
	}
	tab.Capture(true).Done()
	epoch := func(round int) {
		for i := round % 2; i < len(keys); i += 2 {
			e, _ := tab.Upsert(i%4, keys[i])
			e.Mut().n++
		}
	}
	for round := range 3 { // the lists reach their size
		epoch(round)
		tab.Capture(false).Done()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	epoch(3)
	runtime.ReadMemStats(&after)
	if m := after.Mallocs - before.Mallocs; m > 0 {
		t.Fatalf("an epoch changing 2000 keys of 4 groups allocated %d times, want none", m)
	}
	n := 0
	tab.Capture(false).Each(func(kg int, key string, v *tval, deleted bool) {
		var i int
		if _, err := fmt.Sscanf(key, "key-%06d", &i); err != nil || i%2 != 1 || kg != i%4 || deleted {
			t.Fatalf("the delta holds %s of group %d (deleted %v), which the epoch did not change", key, kg, deleted)
		}
		n++
	})
	if n != 2000 {
		t.Fatalf("the delta holds %d keys, want 2000", n)
	}
}
