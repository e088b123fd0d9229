package state

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"spate/internal/benchutil"
)

// bval is a benchmark value shaped like count's: a few integers and a
// small slice.
type bval struct {
	total int64
	wins  []int64
}

func cloneB(v *bval) bval { return bval{total: v.total, wins: append([]int64(nil), v.wins...)} }

func encB(dst []byte, v *bval) []byte {
	dst = binary.AppendVarint(dst, v.total)
	dst = binary.AppendUvarint(dst, uint64(len(v.wins)))
	for _, w := range v.wins {
		dst = binary.AppendVarint(dst, w)
	}
	return dst
}

func benchTable(n int) (*Table[bval], []*Entry[bval]) {
	tab := NewTable(cloneB)
	ents := make([]*Entry[bval], n)
	for i := range ents {
		e, _ := tab.Upsert(i%128, fmt.Appendf(nil, "user-%08d", i))
		v := e.Mut()
		v.total = int64(i)
		v.wins = []int64{int64(i), 1, 2}
		ents[i] = e
	}
	return tab, ents
}

// BenchmarkMut is the owner's hot path: Mut on an entry, no capture
// running, entries already dirty (the common case between checkpoints).
// The baseline "plain" is the same update without Mut.
func BenchmarkMut(b *testing.B) {
	_, ents := benchTable(1 << 16)
	b.Run("mut", func(b *testing.B) {
		for i := range b.N {
			ents[i&(len(ents)-1)].Mut().total++
		}
	})
	b.Run("plain", func(b *testing.B) {
		for i := range b.N {
			ents[i&(len(ents)-1)].Val().total++
		}
	})
}

// BenchmarkMutDuringCapture is Mut while a full capture is pinned and Each
// has not run: the first Mut of each entry clones it (the copy-on-write
// cost), the next ones take the fast path.
func BenchmarkMutDuringCapture(b *testing.B) {
	b.Run("first", func(b *testing.B) {
		tab, ents := benchTable(1 << 16)
		c := tab.Capture(true)
		b.ResetTimer()
		for i := range b.N {
			if i&(len(ents)-1) == 0 && i > 0 {
				b.StopTimer()
				c.Done()
				c = tab.Capture(true)
				b.StartTimer()
			}
			ents[i&(len(ents)-1)].Mut().total++
		}
		c.Done()
	})
	b.Run("again", func(b *testing.B) {
		tab, ents := benchTable(1 << 16)
		c := tab.Capture(true)
		for _, e := range ents {
			e.Mut()
		}
		b.ResetTimer()
		for i := range b.N {
			ents[i&(len(ents)-1)].Mut().total++
		}
		c.Done()
	})
}

// BenchmarkCaptureStall is the time the owner is stopped by Capture, with
// 1M keys: a delta with none dirty, with 1% dirty, with all dirty, and a
// full capture. Each op dirties the keys, then captures; stall-ns (median)
// and worst-ns are the Capture call alone.
func BenchmarkCaptureStall(b *testing.B) {
	const n = 1 << 20
	tab, ents := benchTable(n)
	tab.Capture(true).Done()
	for _, bc := range []struct {
		name  string
		full  bool
		dirty int
	}{
		{"delta/dirty=0", false, 0},
		{"delta/dirty=1%", false, n / 100},
		{"delta/dirty=100%", false, n},
		{"full/dirty=0", true, 0},
		{"full/dirty=100%", true, n},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var stalls []time.Duration
			for range b.N {
				for i := range bc.dirty {
					ents[i*(n/bc.dirty)].Mut().total++
				}
				start := time.Now()
				c := tab.Capture(bc.full)
				stalls = append(stalls, time.Since(start))
				c.Done()
			}
			slices.Sort(stalls)
			b.ReportMetric(float64(stalls[len(stalls)/2].Nanoseconds()), "stall-ns")
			b.ReportMetric(float64(stalls[len(stalls)-1].Nanoseconds()), "worst-ns")
		})
	}
}

// BenchmarkEncode is the background half of a full checkpoint of 1M keys:
// EncodeCapture (visiting, encoding, sorting) and Encode (zstd, CRC).
// MB/s is of the raw body.
func BenchmarkEncode(b *testing.B) {
	tab, _ := benchTable(1 << 20)
	gd := EncodeCapture(tab.Capture(true), encB, nil)
	s := &Snapshot{Instance: "x", ID: 1, Full: true, Base: 1, Groups: gd}
	raw := len(rawBody(s))
	var stored int
	b.Run("capture", func(b *testing.B) {
		b.SetBytes(int64(raw))
		for range b.N {
			EncodeCapture(tab.Capture(true), encB, nil)
		}
	})
	b.Run("zstd", func(b *testing.B) {
		b.SetBytes(int64(raw))
		for range b.N {
			out, err := Encode(s)
			if err != nil {
				b.Fatal(err)
			}
			stored = len(out)
		}
		b.ReportMetric(float64(raw)/float64(stored), "ratio")
	})
}

// BenchmarkSortEntries is the sort of one key group's entries at
// encoding: a capture of count at a million keys writes key groups of
// 2,000 to 5,000 keys, named as the generator names them, in hash order.
func BenchmarkSortEntries(b *testing.B) {
	var buf []byte
	var offs []int
	for i := range 4000 {
		j := (i * 7919) % 1_000_000 // scattered over the key space
		k := fmt.Appendf(nil, "k%06d", j*251%1_000_000)
		offs = append(offs, len(buf))
		buf = appendBytes(append(appendEntry(buf, len(k), false), k...), []byte{1, 2, 3, 4})
	}
	offs = append(offs, len(buf))
	dst := make([]byte, len(buf))
	sc := &Scratch{}
	b.ResetTimer()
	for range b.N {
		sortEntries(buf, offs, dst, sc)
	}
}

// BenchmarkPersist is what an instance's persist goroutine spends on the
// state of a checkpoint of count at a million keys (half of them on this
// instance), the store aside: EncodeCapture (visit, encode, sort) and
// EncodeParts (body, compression, checksum), with one Scratch as an
// instance keeps. A delta holds 30 % of the keys, dirtied in a random
// order, as a second of the generator's Zipf load dirties them; MB/s is
// of the raw body.
func BenchmarkPersist(b *testing.B) {
	const n = 500_000
	tab := NewTable(cloneB)
	ents := make([]*Entry[bval], n)
	for i, j := range rand.New(rand.NewPCG(3, 3)).Perm(n) {
		e, _ := tab.Upsert(i%64, fmt.Appendf(nil, "k%06d", 2*j))
		v := e.Mut()
		v.total, v.wins = int64(j), []int64{int64(j % 1000), 3, 250}
		ents[i] = e
	}
	tab.Capture(true).Done()
	dirty := rand.New(rand.NewPCG(4, 4)).Perm(n)[:3*n/10]
	for _, kind := range []string{"delta", "full"} {
		b.Run(kind, func(b *testing.B) {
			sc := &Scratch{}
			var raw, stored int
			var cpu time.Duration
			for range b.N {
				b.StopTimer()
				for _, i := range dirty {
					ents[i].Mut().total++
				}
				benchutil.Evict()
				b.StartTimer()
				c0 := benchutil.CPUTime()
				s := &Snapshot{Instance: "count#0", ID: 2, Full: kind == "full", Base: 1, Parent: 1}
				if s.Full {
					s.Base, s.Parent = 2, 0
				}
				s.Groups = EncodeCapture(tab.Capture(s.Full), encB, sc)
				parts, err := EncodeParts(s, sc)
				if err != nil {
					b.Fatal(err)
				}
				cpu += benchutil.CPUTime() - c0
				h, _ := ReadHeader(parts[0])
				raw, stored = int(h.Raw), int(h.Stored)
			}
			b.SetBytes(int64(raw))
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(raw)/float64(stored), "ratio")
		})
	}
}

// BenchmarkDirStorePut is the write of a checkpoint of 10 MiB in the
// pieces a backup's marks give (700 of 15 kB), and in one: CPU time.
func BenchmarkDirStorePut(b *testing.B) {
	st, err := NewDirStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	whole := make([]byte, 10<<20)
	for i := range whole {
		whole[i] = byte(i * 7)
	}
	var parts [][]byte
	for off := 0; off < len(whole); off += 15000 {
		parts = append(parts, whole[off:min(off+15000, len(whole))])
	}
	for _, bc := range []struct {
		name  string
		parts [][]byte
	}{{"parts", parts}, {"one", [][]byte{whole}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(whole)))
			var cpu time.Duration
			for range b.N {
				c0 := benchutil.CPUTime()
				if err := st.Put("count#0/x.ckpt", bc.parts...); err != nil {
					b.Fatal(err)
				}
				cpu += benchutil.CPUTime() - c0
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
