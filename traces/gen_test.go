package traces

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"spate/job"
)

// rec is a record with its key copied.
type rec struct {
	Key   string
	Time  int64
	Value int64
}

func (r rec) String() string { return fmt.Sprintf("{%s %d %d}", r.Key, r.Time, r.Value) }

// readN reads up to n records of partition p from pos.
func readN(t testing.TB, src Source, p int, pos uint64, n int) []rec {
	t.Helper()
	r, err := src.Open(p, pos)
	if err != nil {
		t.Fatalf("Open(%d, %d): %v", p, pos, err)
	}
	defer r.Close()
	var out []rec
	for len(out) < n {
		x, ok, err := r.Next()
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if !ok {
			break
		}
		out = append(out, rec{string(x.Key), x.Time, x.Value})
	}
	return out
}

func mustOpen(t testing.TB, spec string, opt Options) Source {
	t.Helper()
	src, err := Open(spec, opt)
	if err != nil {
		t.Fatalf("Open(%q): %v", spec, err)
	}
	return src
}

func equalRecs(t *testing.T, what string, got, want []rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: record %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

var genCases = []struct {
	name string
	spec string
	opt  Options
	n    int // records read from 0 per partition
}{
	{"diurnal default rate", "gen:diurnal", Options{Seed: 1, Partitions: 2}, 30000},
	{"diurnal moderate", "gen:diurnal", Options{Seed: 7, Rate: 1000, Partitions: 2}, 70000},
	{"diurnal sparse", "gen:diurnal?day=60s", Options{Seed: 3, Rate: 3, Partitions: 3}, 3000},
	{"diurnal steep bursts", "gen:diurnal?burst=1&burstx=10&amp=0.95", Options{Seed: 5, Rate: 200, Partitions: 1}, 50000},
	{"constant", "gen:constant", Options{Seed: 2, Rate: 2000, Partitions: 3}, 40000},
	{"constant sparse", "gen:constant", Options{Seed: 2, Rate: 0.25, Partitions: 1}, 500},
}

func TestGenDeterministic(t *testing.T) {
	for _, c := range genCases {
		t.Run(c.name, func(t *testing.T) {
			a, b := mustOpen(t, c.spec, c.opt), mustOpen(t, c.spec, c.opt)
			for p := range c.opt.Partitions {
				equalRecs(t, fmt.Sprintf("partition %d", p), readN(t, a, p, 0, 2000), readN(t, b, p, 0, 2000))
			}
			other := c.opt
			other.Seed++
			x := readN(t, mustOpen(t, c.spec, other), 0, 0, 100)
			y := readN(t, a, 0, 0, 100)
			same := 0
			for i := range x {
				if x[i].Key == y[i].Key && x[i].Value == y[i].Value {
					same++
				}
			}
			if same > 50 {
				t.Errorf("seed %d and %d agree on %d of 100 records", c.opt.Seed, other.Seed, same)
			}
		})
	}
}

func TestGenSeekEqualsSkip(t *testing.T) {
	for _, c := range genCases {
		t.Run(c.name, func(t *testing.T) {
			src := mustOpen(t, c.spec, c.opt)
			for p := range c.opt.Partitions {
				all := readN(t, src, p, 0, c.n)
				if len(all) != c.n {
					t.Fatalf("partition %d ended after %d records", p, len(all))
				}
				positions := []int{0, 1, 2, 17, c.n / 3, c.n / 2, c.n - 40, c.n - 1}
				if c.n <= 3000 {
					positions = positions[:0]
					for pos := 0; pos < c.n; pos += 7 {
						positions = append(positions, pos)
					}
				}
				for _, pos := range positions {
					got := readN(t, src, p, uint64(pos), min(40, c.n-pos))
					equalRecs(t, fmt.Sprintf("partition %d from %d", p, pos), got, all[pos:pos+len(got)])
				}
			}
		})
	}
}

// TestGenSkip: a reader moved on by Skip reads the records at the
// positions it was moved to, whatever it skipped (a tick, a burst, a
// period, nothing), as a full read gives them.
func TestGenSkip(t *testing.T) {
	for _, c := range genCases {
		t.Run(c.name, func(t *testing.T) {
			src := mustOpen(t, c.spec, c.opt)
			all := readN(t, src, 0, 0, c.n)
			r, err := src.Open(0, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			sk, ok := r.(Skipper)
			if !ok {
				t.Fatalf("%s: the reader is no Skipper", c.spec)
			}
			rng := rand.New(rand.NewPCG(uint64(c.n), 7))
			for pos := 3; pos < c.n; {
				x, ok, err := r.Next()
				if err != nil || !ok {
					t.Fatalf("at %d: %v %v", pos, ok, err)
				}
				equalRecs(t, fmt.Sprintf("at %d", pos), []rec{{string(x.Key), x.Time, x.Value}}, all[pos:pos+1])
				n := rng.IntN(3)
				if rng.IntN(8) == 0 {
					n = rng.IntN(c.n/4 + 1)
				}
				sk.Skip(uint64(n))
				pos += 1 + n
			}
		})
	}
}

func TestGenTimesNonDecreasing(t *testing.T) {
	for _, c := range genCases {
		t.Run(c.name, func(t *testing.T) {
			src := mustOpen(t, c.spec, c.opt)
			for p := range c.opt.Partitions {
				r, err := src.Open(p, 0)
				if err != nil {
					t.Fatal(err)
				}
				prev := int64(0)
				for i := range c.n {
					x, ok, err := r.Next()
					if !ok || err != nil {
						t.Fatalf("Next: %v %v", ok, err)
					}
					if x.Time < prev {
						t.Fatalf("partition %d: record %d at %d ms after one at %d ms", p, i, x.Time, prev)
					}
					if x.Value < 1 || x.Value > 100 {
						t.Fatalf("value %d out of 1..100", x.Value)
					}
					prev = x.Time
				}
			}
		})
	}
}

// TestGenRate checks the number of records before a time against the
// integral of the rate.
func TestGenRate(t *testing.T) {
	// constant: exactly rate/P per second.
	src := mustOpen(t, "gen:constant", Options{Rate: 3000, Partitions: 3})
	recs := readN(t, src, 1, 0, 5000)
	n := 0
	for _, r := range recs {
		if r.Time < 4000 {
			n++
		}
	}
	if n != 4000 {
		t.Errorf("constant 1000/s per partition: %d records before 4 s, want 4000", n)
	}
	// diurnal without bursts over one whole day: the sine integrates to 0.
	src = mustOpen(t, "gen:diurnal?burst=0&day=10s", Options{Rate: 1000})
	recs = readN(t, src, 0, 0, 20000)
	n = 0
	for _, r := range recs {
		if r.Time < 10000 {
			n++
		}
	}
	if n != 10000 {
		t.Errorf("diurnal, no bursts, 1000/s over one day of 10 s: %d records, want 10000", n)
	}
	// the first quarter of the day is above the mean: ∫ 1+0.6 sin = day/4 + 0.6·day/(2π)
	q := 0
	for _, r := range recs {
		if r.Time < 2500 {
			q++
		}
	}
	if want := 2500 + 0.6*10000/(2*math.Pi); math.Abs(float64(q)-want) > 1 {
		t.Errorf("first quarter: %d records, want %.1f", q, want)
	}
}

func TestGenBursts(t *testing.T) {
	c := newCurve(1000, 120e9, 0.6, 0.2, 3, 42)
	bursts := 0
	for k := int64(0); k < 5000; k++ {
		if bs := c.burstStart(k); bs >= 0 {
			bursts++
			if bs < k*burstPeriod || bs+burstLen > (k+1)*burstPeriod || bs%burstLen != 0 {
				t.Fatalf("period %d: burst at %d ms", k, bs)
			}
		}
	}
	if f := float64(bursts) / 5000; math.Abs(f-0.2) > 0.02 {
		t.Errorf("burst fraction %.3f, want 0.2", f)
	}
	// in a burst second the rate is 3x its neighbours (flat curve).
	src := mustOpen(t, "gen:constant?burst=1", Options{Rate: 100, Seed: 9})
	recs := readN(t, src, 0, 0, 2000)
	perSec := map[int64]int{}
	for _, r := range recs {
		perSec[r.Time/1000]++
	}
	c9 := newCurve(100, 0, 0, 1, 3, 9)
	burstSec := c9.burstStart(0) / 1000
	for s := int64(0); s < 10; s++ {
		want := 100
		if s == burstSec {
			want = 300
		}
		if perSec[s] != want {
			t.Errorf("second %d: %d records, want %d (burst in second %d)", s, perSec[s], want, burstSec)
		}
	}
}

func TestZipfSkew(t *testing.T) {
	const n = 200000
	src := mustOpen(t, "gen:constant", Options{Seed: 11, Keys: 10000})
	recs := readN(t, src, 0, 0, n)
	counts := map[string]int{}
	sum := 0
	for _, r := range recs {
		counts[r.Key]++
		sum += int(r.Value)
	}
	h := 0.0
	for k := 1; k <= 10000; k++ {
		h += math.Pow(float64(k), -1.1)
	}
	for _, rank := range []int{0, 1, 9, 99} {
		want := n * math.Pow(float64(rank+1), -1.1) / h
		got := float64(counts[KeyName(rank, 10000)])
		if math.Abs(got-want) > 5*math.Sqrt(want)+0.01*want {
			t.Errorf("key of rank %d: %v records, want about %.0f", rank, got, want)
		}
	}
	if counts["k000000"] <= counts["k000001"] || counts["k000001"] <= counts["k000009"] || counts["k000009"] <= counts["k000099"] {
		t.Errorf("counts not decreasing with rank: %d %d %d %d", counts["k000000"], counts["k000001"], counts["k000009"], counts["k000099"])
	}
	if len(counts) < 5000 {
		t.Errorf("only %d distinct keys of 10000", len(counts))
	}
	if mean := float64(sum) / n; math.Abs(mean-50.5) > 0.5 {
		t.Errorf("mean value %.2f, want 50.5", mean)
	}
}

// TestZipfSplitTable: past splitAt keys, drawing from the head's table or
// the tail's by their shares gives the Zipf distribution still: the head
// keys' and the tail's frequencies, and ranks on both sides of the split.
func TestZipfSplitTable(t *testing.T) {
	const n, draws, s = 300_000, 2_000_000, 1.1
	d := zipfDist(n, s)
	if d.head == 0 {
		t.Fatal("one table past splitAt keys")
	}
	w := func(j int) float64 { return math.Pow(float64(j+1), -s) }
	total, head := 0.0, 0.0
	for j := range n {
		total += w(j)
		if j < headKeys {
			head += w(j)
		}
	}
	counts := make([]int, n)
	inTail := 0
	for i := range uint64(draws) {
		j, _ := d.draw(mix(i * golden))
		counts[j]++
		if j >= headKeys {
			inTail++
		}
	}
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 5*math.Sqrt(want)+0.01*want {
			t.Errorf("%s: %.0f draws, want about %.0f", what, got, want)
		}
	}
	near("the tail", float64(inTail), draws*(total-head)/total)
	for _, rank := range []int{0, 1, 99, headKeys - 1} {
		near(fmt.Sprintf("key of rank %d", rank), float64(counts[rank]), draws*w(rank)/total)
	}
	// Tail keys one at a time are too rare to check: in blocks of 1000.
	for _, from := range []int{headKeys, 150_000, n - 1000} {
		got, want := 0, 0.0
		for j := from; j < from+1000; j++ {
			got += counts[j]
			want += draws * w(j) / total
		}
		near(fmt.Sprintf("keys of ranks %d..%d", from, from+999), float64(got), want)
	}
}

func TestKeyNames(t *testing.T) {
	for _, c := range []struct {
		j, n int
		want string
	}{{42, 10000, "k000042"}, {0, 1, "k000000"}, {1234567, 2000000, "k1234567"}, {5, 10000000, "k0000005"}} {
		if got := KeyName(c.j, c.n); got != c.want {
			t.Errorf("KeyName(%d, %d) = %q, want %q", c.j, c.n, got, c.want)
		}
	}
	d := zipfDist(100, 1.1)
	if got := string(d.key(42)); got != "k000042" {
		t.Errorf("key 42 = %q", got)
	}
	k := d.key(3)
	k = append(k, 'x') // must not overwrite key 4
	if !bytes.Equal(d.key(4), []byte("k000004")) || len(k) != 8 {
		t.Errorf("append to a key changed the next one: %q", d.key(4))
	}
}

func TestGenNoAlloc(t *testing.T) {
	src := mustOpen(t, "gen:diurnal", Options{Rate: 5000})
	r, _ := src.Open(0, 0)
	var sink job.Record
	allocs := testing.AllocsPerRun(100000, func() {
		sink, _, _ = r.Next()
	})
	if allocs != 0 {
		t.Errorf("Next allocates %v times per call", allocs)
	}
	_ = sink
}

func TestGenFarSeek(t *testing.T) {
	// a day of event time at 1M/s: the seek must not generate 8.6e10 records.
	src := mustOpen(t, "gen:diurnal?day=24h", Options{Seed: 1})
	pos := uint64(86_400_000_000)
	a := readN(t, src, 0, pos, 100)
	b := readN(t, src, 0, pos+50, 50)
	equalRecs(t, "far seek", b, a[50:])
	if a[0].Time < 80_000_000 || a[0].Time > 92_000_000 {
		t.Errorf("record %d at %d ms, want about one day", pos, a[0].Time)
	}
	if _, err := src.Open(0, math.MaxUint64); err == nil {
		t.Errorf("Open at MaxUint64: no error")
	}
}

func TestDetMath(t *testing.T) {
	for _, den := range []int64{7, 1000, 120000, 86400000} {
		for i := int64(0); i < 2000; i++ {
			num := i * den / 2000
			got, want := cos2pi(num, den), math.Cos(2*math.Pi*float64(num)/float64(den))
			if math.Abs(got-want) > 1e-14 {
				t.Fatalf("cos2pi(%d, %d) = %v, want %v", num, den, got, want)
			}
		}
	}
	for _, s := range []float64{0, 0.5, 1, 1.1, 2, 3.7} {
		for _, k := range []int{1, 2, 3, 10, 999, 10000, 1 << 24} {
			got, want := detPow(k, s), math.Pow(float64(k), -s)
			if math.Abs(got-want) > 1e-13*want {
				t.Fatalf("detPow(%d, %v) = %v, want %v", k, s, got, want)
			}
		}
	}
}

func BenchmarkGenNext(b *testing.B) {
	for _, c := range []struct {
		name string
		spec string
		rate float64
	}{
		{"diurnal", "gen:diurnal", 0},
		{"constant", "gen:constant", 0},
		{"diurnal_1k", "gen:diurnal", 1000},
		{"constant_1M_keys", "gen:constant?keys=1000000", 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			src := mustOpen(b, c.spec, Options{Seed: 1, Rate: c.rate, Partitions: 2})
			r, _ := src.Open(0, 0)
			b.ReportAllocs()
			var sum int64
			for b.Loop() {
				x, _, _ := r.Next()
				sum += x.Value
			}
			_ = sum
		})
	}
}

func BenchmarkGenOpen(b *testing.B) {
	src := mustOpen(b, "gen:diurnal", Options{Seed: 1, Partitions: 2})
	pos := uint64(3_600 * 500_000) // one hour of event time in a partition
	b.ReportAllocs()
	for b.Loop() {
		r, _ := src.Open(1, pos)
		r.Next()
	}
}

// refTimes computes the times of the first n records of a partition from
// the definition, tick by tick: ⌊Λ(t+1)⌋ − ⌊Λ(t)⌋ records at tick t.
func refTimes(c curve, n int) []int64 {
	var out []int64
	pd := c.enter(0, 0)
	prev := uint64(0)
	for t := int64(0); len(out) < n; t++ {
		if t+1 > pd.start+burstPeriod {
			pd = c.enter(pd.k+1, pd.e1)
		}
		cur := count(c.lam(&pd, t+1))
		for ; prev < cur && len(out) < n; prev++ {
			out = append(out, t)
		}
	}
	return out
}

func TestGenMatchesDefinition(t *testing.T) {
	for _, c := range genCases {
		t.Run(c.name, func(t *testing.T) {
			src := mustOpen(t, c.spec, c.opt).(*genSource)
			want := refTimes(src.c, c.n)
			for p := range c.opt.Partitions {
				r, _ := src.Open(p, 0)
				for i, wt := range want {
					x, _, _ := r.Next()
					if x.Time != wt {
						t.Fatalf("partition %d: record %d at %d ms, the definition says %d", p, i, x.Time, wt)
					}
				}
			}
		})
	}
}

func TestGenBatchEqualsNext(t *testing.T) {
	src := mustOpen(t, "gen:diurnal", Options{Seed: 4, Rate: 2000, Partitions: 2})
	want := readN(t, src, 1, 100, 5000)
	r, _ := src.Open(1, 100)
	buf := make([]job.Record, 777)
	var got []rec
	for len(got) < len(want) {
		n, err := r.(BatchReader).NextBatch(buf)
		if err != nil || n != len(buf) {
			t.Fatalf("NextBatch = %d, %v", n, err)
		}
		for _, x := range buf[:n] {
			got = append(got, rec{string(x.Key), x.Time, x.Value})
		}
	}
	equalRecs(t, "batch", got[:len(want)], want)
}

func BenchmarkGenNextBatch(b *testing.B) {
	src := mustOpen(b, "gen:diurnal", Options{Seed: 1, Partitions: 2})
	r, _ := src.Open(0, 0)
	br := r.(BatchReader)
	buf := make([]job.Record, 1024)
	b.ReportAllocs()
	for b.Loop() {
		br.NextBatch(buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1024, "ns/record")
}

// floorReader returns a constant record: BenchmarkReaderCallFloor measures
// what a job.Reader call costs by itself, to read BenchmarkGenNext against.
type floorReader struct {
	k []byte
	i int64
}

func (f *floorReader) Next() (job.Record, bool, error) {
	f.i++
	return job.Record{Key: f.k, Time: f.i, Value: 1}, true, nil
}

func BenchmarkReaderCallFloor(b *testing.B) {
	var r job.Reader = &floorReader{k: []byte("k000001")}
	var sum int64
	for b.Loop() {
		x, _, _ := r.Next()
		sum += x.Value
	}
	_ = sum
}

// digest hashes the first n records of partition p.
func digest(t *testing.T, src Source, p int, n int) uint64 {
	t.Helper()
	r, err := src.Open(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	var h uint64
	for range n {
		x, ok, err := r.Next()
		if !ok || err != nil {
			t.Fatalf("Next: %v %v", ok, err)
		}
		b = fmt.Appendf(b[:0], "%s %d %d", x.Key, x.Time, x.Value)
		h = (h ^ job.Hash(b)) * 1099511628211
	}
	return h
}

// TestGenGolden pins the generators' output: a change here changes every
// replay and every recorded run, so it must be deliberate. It also holds
// across platforms and GOAMD64 levels (see detmath.go): run it with
// GOAMD64=v3 to check that no fused multiply-add changed a bit.
func TestGenGolden(t *testing.T) {
	for _, c := range []struct {
		spec string
		opt  Options
		want uint64
	}{
		{"gen:diurnal", Options{Seed: 42, Partitions: 2}, 0xcec20682eb1d8cc3},
		{"gen:diurnal?day=10s", Options{Seed: 42, Rate: 700, Partitions: 2}, 0x8b0bae19978d8a3b},
		{"gen:constant?zipf=0.7&keys=1000", Options{Seed: -3, Rate: 12345}, 0x7a5758b535738791},
		{"gen:constant?keys=300000", Options{Seed: 5, Rate: 50000}, 0x26ace4899fdbcfee}, // two alias tables
	} {
		src := mustOpen(t, c.spec, c.opt)
		var h uint64
		for p := range src.Partitions() {
			h = h*31 + digest(t, src, p, 20000)
		}
		if h != c.want {
			t.Errorf("%s %+v: digest %#x, want %#x", c.spec, c.opt, h, c.want)
		}
	}
}

// TestGroupsEqualBatchAndHash: NextGroups gives NextBatch's records and, for
// each, the key group hashing its key gives, for gen: and rate: alike and
// for several group counts, up to the end of a finite partition.
func TestGroupsEqualBatchAndHash(t *testing.T) {
	rate := write(t, "w.txt", []byte("5 0 3000 12 7"))
	for _, spec := range []string{"gen:diurnal", "gen:constant", "rate:" + rate} {
		for _, groups := range []int{1, 7, 128} {
			src := mustOpen(t, spec, Options{Seed: 3, Rate: 2000, Keys: 5000, Partitions: 2})
			a, _ := src.Open(1, 10)
			b, _ := src.Open(1, 10)
			gr, ok := b.(GroupReader)
			if !ok {
				t.Fatalf("%s: no GroupReader", spec)
			}
			want := make([]job.Record, 300)
			got := make([]job.Record, 300)
			kgs := make([]job.KeyGroup, 300)
			for round := 0; round < 10; round++ {
				n, err := a.(BatchReader).NextBatch(want)
				m, err2 := gr.NextGroups(got, kgs, groups)
				if n != m || err != nil || err2 != nil {
					t.Fatalf("%s: NextBatch %d, %v; NextGroups %d, %v", spec, n, err, m, err2)
				}
				for i := range n {
					if string(got[i].Key) != string(want[i].Key) || got[i].Time != want[i].Time || got[i].Value != want[i].Value {
						t.Fatalf("%s: record %d: %+v, want %+v", spec, i, got[i], want[i])
					}
					if h := job.GroupOf(want[i].Key, groups); kgs[i] != h {
						t.Fatalf("%s, %d groups: key %s in group %d, its hash says %d", spec, groups, want[i].Key, kgs[i], h)
					}
				}
				if n < len(want) {
					break // a finite partition's end
				}
			}
		}
	}
}

// plainReader hides every interface of a reader but job.Reader.
type plainReader struct{ r job.Reader }

func (p plainReader) Next() (job.Record, bool, error) { return p.r.Next() }

// TestNumberedReaders: NextNumbered is Next with the key's number, a
// number always names the same key, and the oracle, which takes the
// numbers for the keys, computes over them what it computes from the keys.
func TestNumberedReaders(t *testing.T) {
	rate := write(t, "w.txt", []byte("5 0 3000 12 7"))
	for _, spec := range []string{"gen:diurnal", "gen:constant", "rate:" + rate} {
		src := mustOpen(t, spec, Options{Seed: 3, Rate: 2000, Keys: 500, Partitions: 2})
		a, _ := src.Open(1, 10)
		b, _ := src.Open(1, 10)
		nr, ok := b.(job.NumberedReader)
		if !ok {
			t.Fatalf("%s: no NumberedReader", spec)
		}
		names := map[int]string{}
		for i := range 3000 {
			want, ok1, err1 := a.Next()
			got, num, ok2, err2 := nr.NextNumbered()
			if ok1 != ok2 || err1 != nil || err2 != nil {
				t.Fatalf("%s: record %d: Next %v, %v; NextNumbered %v, %v", spec, i, ok1, err1, ok2, err2)
			}
			if !ok1 {
				break
			}
			if string(got.Key) != string(want.Key) || got.Time != want.Time || got.Value != want.Value {
				t.Fatalf("%s: record %d: %+v, want %+v", spec, i, got, want)
			}
			if num < 0 || num >= nr.Keys() {
				t.Fatalf("%s: record %d: key number %d of %d", spec, i, num, nr.Keys())
			}
			if k, seen := names[num]; seen && k != string(got.Key) {
				t.Fatalf("%s: key number %d names %s and %s", spec, num, k, got.Key)
			}
			names[num] = string(got.Key)
		}

		jspec := job.WindowCount(nil, 1000, 200)
		limits := []uint64{4000, 3000}
		open := func(plain bool) []job.Reader {
			var rs []job.Reader
			for p := range 2 {
				r, err := src.Open(p, 0)
				if err != nil {
					t.Fatal(err)
				}
				if plain {
					rs = append(rs, plainReader{r})
				} else {
					rs = append(rs, r)
				}
			}
			return rs
		}
		want, err := job.Oracle(&jspec, open(true), limits)
		if err != nil {
			t.Fatal(err)
		}
		got, err := job.Oracle(&jspec, open(false), limits)
		if err != nil {
			t.Fatal(err)
		}
		if rep := job.Compare(want, got); !rep.OK() || len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: the oracle over numbered readers: %v, %d results, want %d", spec, rep, len(got), len(want))
		}
	}
}
