package job

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"spate/internal/benchutil"
	"spate/state"
)

// nopEmitter discards what it gets.
type nopEmitter struct{ n int }

func (e *nopEmitter) Emit(int, KeyGroup, Record) { e.n++ }

// benchStream is a generator-like stream: keys drawn from nkeys, event
// time advancing 1 ms per record.
func benchStream(nkeys, n int) ([][]byte, []KeyGroup, []int) {
	keys := make([][]byte, nkeys)
	kgs := make([]KeyGroup, nkeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user-%06d", i)
		kgs[i] = GroupOf(keys[i], DefaultGroups)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	seq := make([]int, n)
	for i := range seq {
		seq[i] = rng.IntN(nkeys)
	}
	return keys, kgs, seq
}

// BenchmarkCountProcess is count's per-record cost, firing included, on a
// generator-like stream: keys drawn uniformly, event time advancing so that
// each key gets perWindow records per 1 s window on average, and a
// watermark every 1000 records. ns/op is per record.
func BenchmarkCountProcess(b *testing.B) {
	for _, bc := range []struct{ keys, perWindow int }{{1_000, 100}, {10_000, 10}, {100_000, 1}} {
		b.Run(fmt.Sprintf("keys=%d/per-window=%d", bc.keys, bc.perWindow), func(b *testing.B) {
			spec := WindowCount(nil, 1000, 0)
			keys, kgs, seq := benchStream(bc.keys, 1<<16)
			perMs := bc.keys * bc.perWindow / 1000 // records per ms of event time
			c := NewCount(&spec)
			var out nopEmitter
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := seq[i&(len(seq)-1)]
				t := int64(i / perMs)
				c.Process(kgs[k], Record{Key: keys[k], Time: t, Value: 1}, &out)
				if i%1000 == 999 {
					c.Advance(t, &out)
				}
			}
		})
	}
}

// BenchmarkCountProcessOnly leaves out firing: the cost of Process alone.
func BenchmarkCountProcessOnly(b *testing.B) {
	spec := WindowCount(nil, 1<<40, 0)
	keys, kgs, seq := benchStream(10_000, 1<<16)
	c := NewCount(&spec)
	var out nopEmitter
	for _, k := range seq {
		c.Process(kgs[k], Record{Key: keys[k], Time: 0, Value: 1}, &out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := seq[i&(len(seq)-1)]
		c.Process(kgs[k], Record{Key: keys[k], Time: int64(i), Value: 1}, &out)
	}
}

// BenchmarkCountFire is the cost of firing one (key, window): two records
// emitted, the JSON line and the rollup input encoded.
func BenchmarkCountFire(b *testing.B) {
	spec := WindowCount(nil, 1, 0)
	keys, kgs, _ := benchStream(1000, 0)
	c := NewCount(&spec)
	var out nopEmitter
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := i % len(keys)
		t := int64(i / len(keys))
		c.Process(kgs[k], Record{Key: keys[k], Time: t, Value: 1}, &out)
		if k == len(keys)-1 {
			c.Advance(t+1, &out)
		}
	}
}

func BenchmarkRollupProcess(b *testing.B) {
	spec := WindowCount(nil, 1000, 0)
	keys, _, seq := benchStream(10_000, 1<<16)
	data := make([][]byte, len(keys))
	groups := make([][]byte, len(keys))
	kgs := make([]KeyGroup, len(keys))
	for i, k := range keys {
		data[i] = appendRollupInput(nil, string(k), int64(1+i%50), 7)
		groups[i] = []byte(GroupName(k, spec.Rollups))
		kgs[i] = GroupOf(groups[i], spec.Groups)
	}
	r := NewRollup(&spec)
	var out nopEmitter
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := seq[i&(len(seq)-1)]
		w := int64(i/len(keys)) * 1000
		r.Process(kgs[k], Record{Key: groups[k], Time: w, Value: 1, Data: data[k]}, &out)
		if i%len(keys) == len(keys)-1 {
			r.Advance(w+1000, &out)
		}
	}
}

// BenchmarkOracle is the oracle's cost per record (ns/record).
func BenchmarkOracle(b *testing.B) {
	spec := WindowCount(nil, 1000, 0)
	// 10,000 keys, 10 records per key and window on average
	keys, _, seq := benchStream(10_000, 1<<18)
	recs := make([]Record, len(seq))
	for i, k := range seq {
		recs[i] = Record{Key: keys[k], Time: int64(i / 100), Value: 1}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := Oracle(&spec, []Reader{&sliceReader{recs: recs}}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}

// BenchmarkCountAdvanceLarge is the cost, per (key, window) fired, of one
// Advance that fires a window of many keys, as at 1 M keys: collecting
// the firings, putting them in their canonical order, and emitting them.
// With a capture running, every fired key is saved first (copy-on-write).
func BenchmarkCountAdvanceLarge(b *testing.B) {
	for _, capturing := range []bool{false, true} {
		b.Run(fmt.Sprintf("capturing=%v", capturing), func(b *testing.B) {
			const nkeys = 500_000
			spec := WindowCount(nil, 1000, 0)
			keys, kgs, _ := benchStream(nkeys, 0)
			perm := rand.New(rand.NewPCG(2, 2)).Perm(nkeys)
			c := NewCount(&spec)
			var out nopEmitter
			b.ReportAllocs()
			for i := range b.N {
				b.StopTimer()
				t := int64(i) * 1000
				for _, k := range perm {
					c.Process(kgs[k], Record{Key: keys[k], Time: t, Value: 1}, &out)
				}
				var capt Captured
				if capturing {
					capt = c.Capture(false)
				}
				b.StartTimer()
				c.Advance(t+1000, &out)
				if capt != nil {
					b.StopTimer()
					capt.Done()
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nkeys), "ns/fired")
		})
	}
}

// BenchmarkReadResults reads sink output: count and rollup lines as the
// sink writes them (b.N lines of a fixed mix).
func BenchmarkReadResults(b *testing.B) {
	var buf []byte
	for i := range 1000 {
		r := Result{Op: KindCount, Key: fmt.Sprintf("k%06d", i), Window: int64(i) * 200, Count: int64(i % 7), Sum: int64(i * 31), Total: int64(i)}
		if i%4 == 0 {
			r = Result{Op: KindRollup, Key: fmt.Sprintf("g%02d", i%64), Window: int64(i) * 200, Count: 9, Sum: 400,
				Top: []TopKey{{"k000001", 3}, {"k000002", 2}, {"k000003", 1}}}
		}
		buf = append(r.AppendJSON(buf), '\n')
	}
	b.SetBytes(int64(len(buf) / 1000))
	b.ReportAllocs()
	for range b.N / 1000 {
		if _, err := ReadResults(bytes.NewReader(buf), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCountPersist is what an instance's persist goroutine spends
// on count's state at a million keys (500,000 on this instance, named as
// the generator names them, created in a random order as a skewed load
// creates them), the store aside: the capture's visit and encoding, the
// sort, and state.EncodeParts (body, compression, checksum), with one
// Scratch as an instance keeps. Before each delta 30 % of the keys get a
// record in a new window, in a random order, and the window before
// fires, as in a second of the generator's load; the caches are
// emptied first, as a worker's other work empties them. cpu-ns/op is the
// process's CPU time per checkpoint (on a shared machine the wall time
// counts others' work).
func BenchmarkCountPersist(b *testing.B) {
	const nkeys = 500_000
	spec := WindowCount(nil, 1000, 0)
	keys := make([][]byte, nkeys)
	kgs := make([]KeyGroup, nkeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%07d", 2*i)
		kgs[i] = GroupOf(keys[i], spec.Groups)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	c := NewCount(&spec)
	var out nopEmitter
	for _, k := range rng.Perm(nkeys) {
		c.Process(kgs[k], Record{Key: keys[k], Time: 0, Value: 1}, &out)
	}
	c.Capture(true).Done()
	dirty := rng.Perm(nkeys)[:3*nkeys/10]
	t := int64(0)
	for _, kind := range []string{"delta", "full"} {
		b.Run(kind, func(b *testing.B) {
			sc := &state.Scratch{}
			var cpu time.Duration
			var keysN, raw int
			for range b.N {
				b.StopTimer()
				t += 1000
				for _, k := range dirty {
					c.Process(kgs[k], Record{Key: keys[k], Time: t, Value: 1}, &out)
				}
				c.Advance(t, &out)
				benchutil.Evict()
				b.StartTimer()
				c0 := benchutil.CPUTime()
				s := &state.Snapshot{Instance: "count#0", ID: 2, Full: kind == "full", Base: 1, Parent: 1}
				if s.Full {
					s.Base, s.Parent = 2, 0
				}
				capt := c.Capture(s.Full)
				s.Groups = capt.Encode(sc)
				parts, err := state.EncodeParts(s, sc)
				if err != nil {
					b.Fatal(err)
				}
				cpu += benchutil.CPUTime() - c0
				keysN = 0
				for _, g := range s.Groups {
					keysN += g.Len()
				}
				h, _ := state.ReadHeader(parts[0])
				raw = int(h.Raw)
			}
			b.SetBytes(int64(raw))
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(keysN), "keys")
		})
	}
}
