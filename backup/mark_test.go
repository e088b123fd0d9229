package backup

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"spate/job"
)

// restoreChain restores a chain and checks it against want.
func restoreChain(t *testing.T, cfg Config, chain [][]byte, want *Buffer) *Buffer {
	t.Helper()
	r, err := Restore(cfg, chain)
	if err != nil {
		t.Fatalf("restore of %d marks: %v", len(chain), err)
	}
	t.Cleanup(func() { _ = r.Close() })
	sameBuffers(t, want, r)
	return r
}

func TestMarkRestoreScripted(t *testing.T) {
	cfg := DefaultConfig()
	b := mustNew(t, cfg)
	var chain [][]byte
	mark := func() { chain = append(chain, b.Mark()) }

	// An empty buffer, an empty chain.
	mark()
	restoreChain(t, cfg, chain, b)
	if r, err := Restore(cfg, nil); err != nil || len(r.KeyGroups()) != 0 {
		t.Fatalf("empty chain: %v", err)
	}

	app(1, 3, 1, 10).do(t, b)
	app(2, 3, 5, 8).do(t, b)
	mark()
	restoreChain(t, cfg, chain, b)

	trim(1, 3, 4).do(t, b)
	mark() // only watermarks
	restoreChain(t, cfg, chain, b)

	app(1, 3, 11, 20).do(t, b)
	trim(2, 3, 20).do(t, b) // past high
	app(2, 3, 9, 12).do(t, b)
	trim(7, 9, 3).do(t, b) // an unknown stream
	mark()
	r := restoreChain(t, cfg, chain, b)
	lowHigh(2, 3, 20, 12).do(t, r)
	lowHigh(7, 9, 3, 0).do(t, r)

	// The restored buffer continues the chain.
	app(1, 3, 21, 25).do(t, r)
	app(2, 3, 13, 22).do(t, r)
	app(7, 9, 1, 5).do(t, r)
	chain = append(chain, r.Mark())
	restoreChain(t, cfg, chain, r)

	// A mark with nothing new is small and changes nothing.
	if m := r.Mark(); len(m) > markHeader+markTrailer+2 {
		t.Fatalf("an idle mark takes %d bytes", len(m))
	} else {
		chain = append(chain, m)
	}
	restoreChain(t, cfg, chain, r)

	// Compact and MarkFull give one mark equal to the chain.
	c, err := Compact(chain)
	if err != nil {
		t.Fatal(err)
	}
	restoreChain(t, cfg, [][]byte{c}, r)
	full, err := r.MarkFull()
	if err != nil {
		t.Fatal(err)
	}
	restoreChain(t, cfg, [][]byte{full}, r)
	app(1, 3, 26, 26).do(t, r)
	restoreChain(t, cfg, [][]byte{full, r.Mark()}, r)
}

// Random appends, trims, marks, full marks and restores: after every mark
// the chain restores to exactly the buffer, and a restored buffer carries
// on with the chain.
func TestMarkRestoreRandom(t *testing.T) {
	for seed := uint64(1); seed <= seeds(10); seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := Config{MemLimit: 32 << 10}
		if seed%2 == 0 {
			cfg.SpillDir = t.TempDir()
		}
		b := mustNew(t, cfg)
		m := newModel()
		var chain [][]byte
		for i := range 2000 {
			p := job.Producer(rng.IntN(3))
			kg := job.KeyGroup(rng.IntN(6))
			switch x := rng.IntN(100); {
			case x < 80:
				s := m.get(p, kg)
				seq := s.high + 1
				if s.high == 0 {
					seq = 1 + uint64(rng.IntN(5))
				}
				if err := b.Append(p, kg, seq, testRec(p, kg, seq)); err != nil {
					t.Fatalf("seed %d op %d: %v", seed, i, err)
				}
				m.append(p, kg, seq)
			case x < 94:
				s := m.get(p, kg)
				upTo := uint64(rng.IntN(int(s.high) + 3))
				b.Trim(p, kg, upTo)
				m.trim(p, kg, upTo)
			case x < 98:
				chain = append(chain, b.Mark())
				restoreChain(t, cfg, chain, b)
				if rng.IntN(3) == 0 { // carry on with the restored buffer
					r, err := Restore(cfg, chain)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = r.Close() })
					b = r
				}
			case x < 99:
				full, err := b.MarkFull()
				if err != nil {
					t.Fatal(err)
				}
				chain = [][]byte{full}
				restoreChain(t, cfg, chain, b)
			default:
				c, err := Compact(chain)
				if err != nil {
					t.Fatal(err)
				}
				if len(chain) > 0 {
					restoreChain(t, Config{MemLimit: 1 << 30}, [][]byte{c}, mustRestore(t, cfg, chain))
				}
			}
		}
		m.check(t, b)
		chain = append(chain, b.Mark())
		restoreChain(t, cfg, chain, b)
	}
}

func mustRestore(t *testing.T, cfg Config, chain [][]byte) *Buffer {
	t.Helper()
	r, err := Restore(cfg, chain)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRestoreCorrupt(t *testing.T) {
	b := mustNew(t, DefaultConfig())
	app(1, 3, 1, 10).do(t, b)
	m0 := b.Mark()
	app(1, 3, 11, 12).do(t, b)
	trim(1, 3, 5).do(t, b)
	m1 := b.Mark()

	fix := func(d []byte) []byte { return withCRC(d[:len(d)-markTrailer]) }

	cases := []struct {
		name  string
		chain [][]byte
		where string
	}{
		{"flipped bit", [][]byte{m0, flip(m1, 20)}, "mark 1"},
		{"truncated", [][]byte{m0[:len(m0)-1]}, "mark 0"},
		{"too short", [][]byte{m0[:5]}, "too short"},
		{"delta first", [][]byte{m1}, "full"},
		{"delta twice", [][]byte{m0, m1, m1}, "mark 2"},
		{"gap", [][]byte{m0, m1[:0:0]}, "mark 1"},
		{"bad magic", [][]byte{fix(append([]byte("XXXX"), m0[4:]...))}, "magic"},
		{"bad version", [][]byte{fix(append(append([]byte("SPBK"), 9), m0[5:]...))}, "version"},
		{"trailing bytes", [][]byte{withCRC(append(slices.Clone(m0[:len(m0)-markTrailer]), 0))}, "after the last section"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Restore(DefaultConfig(), c.chain)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.where) {
				t.Fatalf("got %v, want ErrCorrupt naming %q", err, c.where)
			}
		})
	}
	// The chain itself restores.
	restoreChain(t, DefaultConfig(), [][]byte{m0, m1}, b)
}

func flip(d []byte, i int) []byte {
	d = slices.Clone(d)
	d[i] ^= 1
	return d
}

// TestMarkInPartsKeepsItsBytes: a mark in parts, sealed and read on
// another goroutine while its buffer trims everything it points into and
// appends far more, is the mark Mark makes of the same records; the chunks
// freed meanwhile are not reused. A full one likewise, and it restores.
func TestMarkInPartsKeepsItsBytes(t *testing.T) {
	cfg := Config{MemLimit: 64 << 20}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	fill := func(from, to uint64, bufs ...*Buffer) {
		for seq := from; seq <= to; seq++ {
			for kg := range job.KeyGroup(4) {
				for _, buf := range bufs {
					if err := buf.Append(1, kg, seq, testRec(1, kg, seq)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	trim := func(upTo uint64, bufs ...*Buffer) {
		for kg := range job.KeyGroup(4) {
			for _, buf := range bufs {
				buf.Trim(1, kg, upTo)
			}
		}
	}
	// read seals mp and joins its parts on another goroutine, while the
	// owner goes on with work.
	read := func(mp *MarkParts, work func()) []byte {
		got := make(chan []byte)
		go func() {
			mp.Seal()
			got <- slices.Concat(mp.Parts()...)
		}()
		work()
		return <-got
	}

	fill(1, 500, a, b)
	want := a.Mark()
	var mp MarkParts
	if err := b.MarkInParts(&mp); err != nil {
		t.Fatal(err)
	}
	if n := len(mp.Parts()); n < 4 {
		t.Fatalf("a mark of 4 key groups in %d parts: the records were copied", n)
	}
	got := read(&mp, func() {
		trim(500, b)
		if b.pooled != 0 {
			t.Errorf("%d bytes of pinned chunks went back to the pool", b.pooled)
		}
		fill(501, 3000, b)
	})
	mp.Release()
	if !slices.Equal(got, want) {
		t.Fatalf("the mark in parts, read after its chunks were freed and refilled, differs from Mark's (%d bytes, want %d)", len(got), len(want))
	}

	trim(500, a)
	fill(501, 3000, a)
	wantFull, err := a.MarkFull()
	if err != nil {
		t.Fatal(err)
	}
	restored := restoreChain(t, cfg, [][]byte{wantFull}, a)
	if err := b.MarkFullInParts(&mp); err != nil { // the same storage, used again
		t.Fatal(err)
	}
	gotFull := read(&mp, func() {
		trim(3000, b)
		fill(3001, 6000, b)
	})
	mp.Release()
	if !slices.Equal(gotFull, wantFull) {
		t.Fatalf("the full mark in parts differs from MarkFull's (%d bytes, want %d)", len(gotFull), len(wantFull))
	}
	sameBuffers(t, mustRestore(t, cfg, [][]byte{gotFull}), restored)

	// Released, freed chunks are reused again.
	trim(6000, b)
	if b.pooled == 0 {
		t.Fatal("no chunk went back to the pool after the mark was released")
	}
}

// TestFullMarkLeavesOutTrimmedHeads: a chunk that trims have emptied at
// its head but not whole (two producers interleaved, one trimmed further
// than the other) gives a full mark without those records, in one piece
// (MarkFull) and in parts (sealed, read from Parts): the records from the
// first one still needed on, and the buffer restored from it, and from it
// with a delta after, is the buffer that made it.
func TestFullMarkLeavesOutTrimmedHeads(t *testing.T) {
	cfg := DefaultConfig()
	b := mustNew(t, cfg)
	rec := func(p job.Producer, seq uint64) []byte {
		r := testRec(p, 3, seq)
		d := make([]byte, maxRecordOverhead+len(r.Key)+len(r.Data))
		return d[:putRecord(d, 0, p, seq, &r)]
	}
	var kept []byte // the records of key group 3 from p2's 31st on
	for seq := uint64(1); seq <= 100; seq++ {
		for _, p := range []job.Producer{1, 2} {
			if err := b.Append(p, 3, seq, testRec(p, 3, seq)); err != nil {
				t.Fatal(err)
			}
			if seq > 31 || seq == 31 && p == 2 {
				kept = append(kept, rec(p, seq)...)
			}
		}
	}
	// p1's 31st, trimmed, comes before p2's, which is not: the head ends
	// there.
	b.Trim(1, 3, 50)
	b.Trim(2, 3, 30)
	full, err := b.MarkFull()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(full), string(kept)) {
		t.Fatal("the full mark does not hold the records still needed, in order")
	}
	if strings.Contains(string(full), string(rec(2, 30))) || strings.Contains(string(full), string(rec(1, 1))) {
		t.Fatal("the full mark holds records trimmed at the head of its chunk")
	}
	restoreChain(t, cfg, [][]byte{full}, b)

	var mp MarkParts
	if err := b.MarkFullInParts(&mp); err != nil {
		t.Fatal(err)
	}
	parts := mp.Parts()
	mp.Seal()
	got := slices.Concat(parts...)
	mp.Release()
	if !slices.Equal(got, full) {
		t.Fatalf("the full mark in parts, read from the slice Parts gave before Seal, is not MarkFull's (%d bytes, want %d)", len(got), len(full))
	}
	if err := b.Append(1, 3, 101, testRec(1, 3, 101)); err != nil {
		t.Fatal(err)
	}
	b.Trim(2, 3, 60)
	restoreChain(t, cfg, [][]byte{got, b.Mark()}, b)
}
