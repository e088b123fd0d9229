package backup

import (
	"math/rand/v2"
	"slices"
	"testing"

	"spate/job"
)

// Random appends, trims, extracts, absorbs and marks over a set of
// buffers: every key group with state is owned by exactly one buffer, the
// one the moves put it in; replay results and watermarks are those of the
// model; and every buffer's mark chain restores to it.
func TestExtractAbsorbProperty(t *testing.T) {
	const G = 16
	for seed := uint64(1); seed <= seeds(10); seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		cfg := Config{MemLimit: 16 << 10}
		if seed%2 == 1 {
			cfg.SpillDir = t.TempDir()
		}
		bufs := []*buf{{b: mustNew(t, cfg)}}
		owner := map[job.KeyGroup]*buf{}
		m := newModel()
		pick := func() *buf { return bufs[rng.IntN(len(bufs))] }
		ownerOf := func(kg job.KeyGroup) *buf {
			if o := owner[kg]; o != nil {
				return o
			}
			return pick()
		}

		checkAll := func(step int) {
			t.Helper()
			seen := map[job.KeyGroup]*buf{}
			for _, x := range bufs {
				for _, kg := range x.b.KeyGroups() {
					if seen[kg] != nil {
						t.Fatalf("seed %d step %d: %v owned twice", seed, step, kg)
					}
					seen[kg] = x
					if owner[kg] != x {
						t.Fatalf("seed %d step %d: %v is in the wrong buffer", seed, step, kg)
					}
					m.checkKG(t, x.b, kg)
				}
			}
			for _, kg := range m.kgs() {
				if seen[kg] == nil {
					t.Fatalf("seed %d step %d: %v lost", seed, step, kg)
				}
			}
		}
		markCheck := func(x *buf) {
			t.Helper()
			x.chain = append(x.chain, x.b.Mark())
			restoreChain(t, cfg, x.chain, x.b)
			if len(x.chain) > 4 { // keep restores short: a compacted base carries on the chain
				c, err := Compact(x.chain)
				if err != nil {
					t.Fatal(err)
				}
				x.chain = [][]byte{c}
			}
		}

		for step := range 1000 {
			switch r := rng.IntN(100); {
			case r < 70:
				p, kg := job.Producer(rng.IntN(3)), job.KeyGroup(rng.IntN(G))
				s := m.get(p, kg)
				seq := s.high + 1
				if s.high == 0 {
					seq = 1 + uint64(rng.IntN(4))
				}
				o := ownerOf(kg)
				for n := 1 + rng.IntN(20); n > 0; n-- {
					if err := o.b.Append(p, kg, seq, testRec(p, kg, seq)); err != nil {
						t.Fatalf("seed %d step %d: %v", seed, step, err)
					}
					m.append(p, kg, seq)
					seq++
				}
				owner[kg] = o
			case r < 82:
				p, kg := job.Producer(rng.IntN(3)), job.KeyGroup(rng.IntN(G))
				upTo := uint64(rng.IntN(int(m.get(p, kg).high) + 3))
				if upTo == 0 && m.get(p, kg).high == 0 && m.get(p, kg).low == 0 {
					delete(m.streams, skey{p, kg}) // nothing to trim, no state
					continue
				}
				o := ownerOf(kg)
				o.b.Trim(p, kg, upTo)
				owner[kg] = o
				m.trim(p, kg, upTo)
			case r < 88:
				src := pick()
				lo := rng.IntN(G + 1)
				hi := lo + rng.IntN(G+1-lo)
				rg := job.Range{Lo: job.KeyGroup(lo), Hi: job.KeyGroup(hi)}
				nb, err := src.b.Extract(rg)
				if err != nil {
					t.Fatalf("seed %d step %d: extract %v: %v", seed, step, rg, err)
				}
				t.Cleanup(func() { _ = nb.Close() })
				x := &buf{b: nb}
				bufs = append(bufs, x)
				for kg, o := range owner {
					if rg.Contains(kg) && o == src {
						owner[kg] = x
					}
				}
				if got := len(nb.KeyGroups()); got != countIn(owner, x) {
					t.Fatalf("seed %d step %d: extracted %d key groups, want %d", seed, step, got, countIn(owner, x))
				}
			case r < 94:
				if len(bufs) < 2 {
					continue
				}
				i, j := rng.IntN(len(bufs)), rng.IntN(len(bufs)-1)
				if j >= i {
					j++
				}
				dst, src := bufs[i], bufs[j]
				if err := dst.b.Absorb(src.b); err != nil {
					t.Fatalf("seed %d step %d: absorb: %v", seed, step, err)
				}
				if len(src.b.KeyGroups()) != 0 {
					t.Fatalf("seed %d step %d: absorbed buffer still holds %v", seed, step, src.b.KeyGroups())
				}
				for kg, o := range owner {
					if o == src {
						owner[kg] = dst
					}
				}
				bufs = slices.Delete(bufs, j, j+1)
			case r < 99:
				markCheck(pick())
			default:
				checkAll(step)
			}
		}
		spills := 0
		for _, x := range bufs {
			spills += int(x.b.Stats().SpillFiles)
		}
		t.Logf("seed %d: %d buffers, %d spill files", seed, len(bufs), spills)
		checkAll(-1)
		for _, x := range bufs {
			markCheck(x)
		}
	}
}

// buf is a buffer of the property test and its mark chain.
type buf struct {
	b     *Buffer
	chain [][]byte
}

func countIn(owner map[job.KeyGroup]*buf, x *buf) int {
	n := 0
	for _, o := range owner {
		if o == x {
			n++
		}
	}
	return n
}
