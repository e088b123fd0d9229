package radix

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortIsStableByKey: for every size around the comparison-sort cutoff
// and key spreads from one byte to all eight, Sort gives the order of a
// stable comparison sort.
func TestSortIsStableByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{0, 1, 2, 255, 256, 1000, 5000} {
		for _, mask := range []uint64{0, 0xff, 0xff00ff, 1<<64 - 1} {
			hs := make([]Handle, n)
			for i := range hs {
				hs[i] = Handle{Key: rng.Uint64() & mask, I: i}
			}
			want := slices.Clone(hs)
			slices.SortStableFunc(want, func(a, b Handle) int { return cmp.Compare(a.Key, b.Key) })
			Sort(hs)
			if !slices.Equal(hs, want) {
				t.Fatalf("n %d mask %#x: not the stable order", n, mask)
			}
		}
	}
}
