package job

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"spate/state"
)

// TestIncrementalPays: with a warm state (every key seen, its windows
// fired) and 1% of the keys written in an interval, the delta checkpoint
// of count is at most 5% of a full one's stored bytes.
func TestIncrementalPays(t *testing.T) {
	const keys = 200_000
	spec := WindowCount(map[string]int{"source": 1, "count": 1, "rollup": 1, "sink": 1}, 1000, 0)
	c := NewCount(&spec)
	out := &recorder{}
	key := func(i int) []byte { return []byte(fmt.Sprintf("user-%07d", i)) }
	for i := range keys {
		k := key(i)
		c.Process(GroupOf(k, spec.Groups), Record{Key: k, Time: 500, Value: int64(i % 97)}, out)
	}
	c.Advance(1000, out) // the warm state: lifetime totals, no open window
	size := func(full bool) (int, int) {
		cap := c.Capture(full)
		snap := &state.Snapshot{Instance: "count#0", Gen: 1, ID: 1, Full: full, Base: 1, Sections: map[string][]byte{}}
		if !full {
			snap.ID, snap.Parent = 2, 1
		}
		snap.Groups = cap.Encode(nil)
		n := 0
		for _, g := range snap.Groups {
			n += g.Len()
		}
		b, err := state.Encode(snap)
		if err != nil {
			t.Fatal(err)
		}
		return len(b), n
	}
	fullBytes, fullKeys := size(true)
	rng := rand.New(rand.NewPCG(1, 2))
	for range keys / 100 {
		k := key(rng.IntN(keys))
		c.Process(GroupOf(k, spec.Groups), Record{Key: k, Time: 1500, Value: 3}, out)
	}
	c.Advance(2000, out)
	deltaBytes, deltaKeys := size(false)
	ratio := float64(deltaBytes) / float64(fullBytes)
	t.Logf("full %d keys, %d bytes; delta %d keys, %d bytes: %.2f%% of the full one", fullKeys, fullBytes, deltaKeys, deltaBytes, 100*ratio)
	if deltaKeys > keys/100 || ratio > 0.05 {
		t.Fatalf("delta: %d keys, %.2f%% of a full checkpoint's bytes; want at most %d keys and 5%%", deltaKeys, 100*ratio, keys/100)
	}
}
