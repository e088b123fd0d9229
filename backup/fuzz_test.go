package backup

import (
	"errors"
	"testing"

	"spate/job"
)

// fuzzChain is a chain of marks covering every kind of section: a full
// mark, appends, trims (past high, of unknown streams), drops and resets.
func fuzzChain(t testing.TB) [][]byte {
	b, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var chain [][]byte
	for s := uint64(1); s <= 6; s++ {
		for _, kg := range []job.KeyGroup{1, 2, 300} {
			_ = b.Append(3, kg, s, testRec(3, kg, s))
			_ = b.Append(1<<16|4, kg, s+10, testRec(1<<16|4, kg, s+10))
		}
	}
	chain = append(chain, b.Mark())
	b.Trim(3, 1, 2)
	b.Trim(9, 2, 5)
	b.Trim(3, 300, 9)
	_ = b.Append(3, 1, 7, testRec(3, 1, 7))
	chain = append(chain, b.Mark())
	o, _ := b.Extract(job.Range{Lo: 2, Hi: 3})
	_ = o.Append(5, 2, 1, testRec(5, 2, 1))
	_ = b.Absorb(o)
	chain = append(chain, b.Mark())
	return chain
}

// FuzzRestore restores arbitrary marks. Restore must never panic and must
// fail only with ErrCorrupt; what it accepts must survive MarkFull and
// Restore unchanged, and a mark of it with nothing new must change
// nothing. With fix set, the fuzzer's bytes get a valid checksum, so that
// it reaches the decoder.
func FuzzRestore(f *testing.F) {
	chain := fuzzChain(f)
	for i := range chain {
		f.Add(chain[0], chain[i], false)
		f.Add(chain[0][:len(chain[0])-markTrailer], chain[i][:len(chain[i])-markTrailer], true)
	}
	f.Add([]byte("SPBK\x01\x01\x00\x00"), []byte{}, true)
	f.Add([]byte("SPBK\x01\x01\x00\x01\x05\x01\x01\x07\x03\x02\x00"), []byte("SPBK\x01\x00\x01\x05\x00"), true)
	f.Fuzz(func(t *testing.T, a, b []byte, fix bool) {
		if fix {
			a, b = withCRC(a), withCRC(b)
		}
		for _, c := range [][][]byte{{a}, {a, b}} {
			r, err := Restore(DefaultConfig(), c)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error without ErrCorrupt: %v", err)
				}
				continue
			}
			full, err := r.MarkFull()
			if err != nil {
				t.Fatal(err)
			}
			again, err := Restore(DefaultConfig(), [][]byte{full})
			if err != nil {
				t.Fatalf("restoring MarkFull of an accepted chain: %v", err)
			}
			sameBuffers(t, r, again)
			again2, err := Restore(DefaultConfig(), [][]byte{full, again.Mark()})
			if err != nil {
				t.Fatalf("restoring an idle mark: %v", err)
			}
			sameBuffers(t, r, again2)
		}
	})
}
