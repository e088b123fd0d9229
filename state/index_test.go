package state

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestIndexAgainstAMap drives one key group with random upserts and
// deletes, short keys and keys too long for an entry, and after every step
// looks up every key it ever used: each present key must find its own
// entry, each deleted one nothing. A deletion that closed its hole wrongly
// (a slot moved off its probe path, or left behind a free slot that cuts a
// run) loses keys here.
func TestIndexAgainstAMap(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tab := NewTable(cloneT)
		want := map[string]*Entry[tval]{}
		nkeys := 8 + rng.IntN(300)
		key := func(i int) string {
			if i%3 == 0 {
				return fmt.Sprintf("long-key-%s-%d", strings.Repeat("x", i%20), i) // > shortKey bytes
			}
			return fmt.Sprintf("k%d", i)
		}
		for step := range 3000 {
			k := key(rng.IntN(nkeys))
			if rng.IntN(3) == 0 {
				tab.Delete(0, k)
				delete(want, k)
			} else {
				e, created := tab.Upsert(0, []byte(k))
				if old, ok := want[k]; ok && (created || e != old) {
					t.Fatalf("seed %d step %d: Upsert(%q) made a new entry for a key it holds", seed, step, k)
				}
				if e.Key() != k {
					t.Fatalf("seed %d step %d: Upsert(%q) returned the entry of %q", seed, step, k, e.Key())
				}
				want[k] = e
			}
			if step%10 != 0 {
				continue
			}
			for i := range nkeys {
				k := key(i)
				if got := tab.Get(0, []byte(k)); got != want[k] {
					t.Fatalf("seed %d step %d: Get(%q) = %v, want %v", seed, step, k, got, want[k])
				}
			}
			if tab.GroupLen(0) != len(want) {
				t.Fatalf("seed %d step %d: GroupLen %d, want %d", seed, step, tab.GroupLen(0), len(want))
			}
		}
	}
}

// TestReadAheadChangesNothing: a batch read ahead (keys present, absent,
// in groups the table lacks or out of range) leaves every lookup as it was.
func TestReadAheadChangesNothing(t *testing.T) {
	tab := NewTable(cloneT)
	for i := range 500 {
		tab.Upsert(i%4, fmt.Appendf(nil, "k%d", i))
	}
	keys := [][]byte{[]byte("k1"), []byte("k2"), []byte("absent"), []byte("k3"), []byte("k4")}
	kgs := []int{1, 2, 1, 9, -1}
	before := make([]*Entry[tval], len(keys))
	for i := range keys {
		before[i] = tab.Get(kgs[i], keys[i])
	}
	tab.ReadAhead(len(keys), func(i int) (int, []byte) { return kgs[i], keys[i] })
	for i := range keys {
		if got := tab.Get(kgs[i], keys[i]); got != before[i] {
			t.Errorf("Get(%d, %s) after ReadAhead: %v, before %v", kgs[i], keys[i], got, before[i])
		}
	}
	if tab.Len() != 500 {
		t.Errorf("Len %d after ReadAhead, want 500", tab.Len())
	}
}
