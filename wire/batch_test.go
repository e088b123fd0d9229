package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"spate/internal/varint"
	"spate/job"
)

// entry is one appended or decoded record, with copies of its slices.
type entry struct {
	p   job.Producer
	kg  job.KeyGroup
	seq uint64
	rec job.Record
}

func (e entry) String() string {
	return fmt.Sprintf("%v/%v#%d{%q t=%d v=%d %q}", e.p, e.kg, e.seq, e.rec.Key, e.rec.Time, e.rec.Value, e.rec.Data)
}

func equalEntry(a, b entry) bool {
	return a.p == b.p && a.kg == b.kg && a.seq == b.seq &&
		bytes.Equal(a.rec.Key, b.rec.Key) && a.rec.Time == b.rec.Time &&
		a.rec.Value == b.rec.Value && bytes.Equal(a.rec.Data, b.rec.Data)
}

func cloneEntry(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) entry {
	rec.Key = bytes.Clone(rec.Key)
	rec.Data = bytes.Clone(rec.Data)
	return entry{p, kg, seq, rec}
}

// decodeAll decodes a batch into copies.
func decodeAll(payload []byte) ([]entry, error) {
	var out []entry
	err := DecodeBatch(payload, func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
		out = append(out, cloneEntry(p, kg, seq, rec))
		return nil
	})
	return out, err
}

// byPair groups entries by (producer, key group), keeping their order.
func byPair(es []entry) map[uint64][]entry {
	m := map[uint64][]entry{}
	for _, e := range es {
		k := batchKey(e.p, e.kg)
		m[k] = append(m[k], e)
	}
	return m
}

// checkSamePerPair fails unless got and want hold the same records per
// (producer, key group), in the same order.
func checkSamePerPair(t *testing.T, got, want []entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("decoded %d records, appended %d", len(got), len(want))
	}
	g, w := byPair(got), byPair(want)
	if len(g) != len(w) {
		t.Fatalf("decoded %d (producer, kg) pairs, appended %d", len(g), len(w))
	}
	for k, ws := range w {
		gs := g[k]
		if len(gs) != len(ws) {
			t.Fatalf("pair %v/%v: decoded %d records, appended %d", ws[0].p, ws[0].kg, len(gs), len(ws))
		}
		for i := range ws {
			if !equalEntry(gs[i], ws[i]) {
				t.Fatalf("pair %v/%v record %d: decoded %v, appended %v", ws[0].p, ws[0].kg, i, gs[i], ws[i])
			}
		}
	}
}

func rec(key string, tm, v int64, data string) job.Record {
	r := job.Record{Time: tm, Value: v}
	if key != "" {
		r.Key = []byte(key)
	}
	if data != "" {
		r.Data = []byte(data)
	}
	return r
}

func TestBatchRoundTrip(t *testing.T) {
	long := strings.Repeat("k", 300)
	cases := []struct {
		name string
		in   []entry
		runs int
	}{
		{"empty batch", nil, 0},
		{"one record", []entry{{1, 2, 3, rec("a", 10, 20, "")}}, 1},
		{"empty key and data", []entry{{0, 0, 0, rec("", 0, 0, "")}}, 1},
		{"data", []entry{{1, 1, 1, rec("k", 5, -5, "payload")}}, 1},
		{"long key and data", []entry{{1, 1, 1, rec(long, 5, 5, long+long)}}, 1},
		{"consecutive seqs", []entry{
			{7, 3, 100, rec("a", 1000, 1, "")},
			{7, 3, 101, rec("b", 999, 2, "")},
			{7, 3, 102, rec("c", 2000, 3, "")},
		}, 1},
		{"seq gap starts a run", []entry{
			{7, 3, 100, rec("a", 1, 1, "")},
			{7, 3, 105, rec("b", 2, 2, "")},
			{7, 3, 106, rec("c", 3, 3, "")},
		}, 2},
		{"seq going back starts a run", []entry{
			{7, 3, 100, rec("a", 1, 1, "")},
			{7, 3, 50, rec("b", 2, 2, "")},
		}, 2},
		{"repeated seq starts a run", []entry{
			{7, 3, 100, rec("a", 1, 1, "")},
			{7, 3, 100, rec("a", 1, 1, "")},
		}, 2},
		{"seq at the top", []entry{
			{1, 1, math.MaxUint64 - 1, rec("a", 1, 1, "")},
			{1, 1, math.MaxUint64, rec("b", 2, 2, "")},
			{1, 1, 0, rec("c", 3, 3, "")}, // wraps: a new run
		}, 2},
		{"interleaved pairs join their runs", []entry{
			{1, 1, 0, rec("a", 1, 1, "")},
			{1, 2, 0, rec("b", 1, 1, "")},
			{2, 1, 0, rec("c", 1, 1, "")},
			{1, 1, 1, rec("d", 2, 2, "")},
			{1, 2, 1, rec("e", 2, 2, "")},
			{2, 1, 1, rec("f", 2, 2, "")},
			{1, 1, 2, rec("g", 3, 3, "")},
		}, 3},
		{"same key group, other producer", []entry{
			{1, 5, 0, rec("a", 1, 1, "")},
			{2, 5, 0, rec("a", 1, 1, "")},
		}, 2},
		{"extreme times", []entry{
			{1, 1, 0, rec("a", math.MinInt64, 0, "")},
			{1, 1, 1, rec("b", math.MaxInt64, 0, "")},
			{1, 1, 2, rec("c", math.MinInt64, 0, "")},
			{1, 1, 3, rec("d", 0, 0, "")},
			{1, 1, 4, rec("e", -1, 0, "")},
		}, 1},
		{"extreme values", []entry{
			{1, 1, 0, rec("a", 0, math.MinInt64, "")},
			{1, 1, 1, rec("b", 0, math.MaxInt64, "")},
			{1, 1, 2, rec("c", 0, -1, "")},
		}, 1},
		{"extreme ids", []entry{
			{math.MaxUint32, math.MaxUint16, math.MaxUint64, rec("a", 1, 1, "")},
			{0, 0, 0, rec("b", 1, 1, "")},
		}, 2},
	}
	var b BatchBuilder // reused: Reset must leave nothing behind
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.Reset()
			for _, e := range c.in {
				b.Append(e.p, e.kg, e.seq, e.rec)
			}
			if b.Len() != len(c.in) {
				t.Errorf("Len = %d, want %d", b.Len(), len(c.in))
			}
			if b.Runs() != c.runs {
				t.Errorf("Runs = %d, want %d", b.Runs(), c.runs)
			}
			prefix := []byte("prefix")
			out := b.Encode(bytes.Clone(prefix))
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("Encode did not append to dst")
			}
			payload := out[len(prefix):]
			if n, _ := binary.Uvarint(payload); n != uint64(c.runs) {
				t.Errorf("payload says %d runs, want %d", n, c.runs)
			}
			if b.Size() != len(payload) {
				t.Errorf("Size = %d, encoded %d bytes", b.Size(), len(payload))
			}
			got, err := decodeAll(payload)
			if err != nil {
				t.Fatal(err)
			}
			checkSamePerPair(t, got, c.in)
			if again := b.Encode(nil); !bytes.Equal(again, payload) {
				t.Fatalf("a second Encode differs")
			}
		})
	}
}

// TestBatchLayout pins the byte layout of SPEC.md with a worked example.
func TestBatchLayout(t *testing.T) {
	var b BatchBuilder
	b.Append(3, 200, 7, rec("ab", 1000, -1, ""))
	b.Append(3, 200, 8, rec("c", 990, 64, "x"))
	want := []byte{
		0x01,       // nRuns 1
		0x03,       // producer 3
		0xc8, 0x01, // kg 200
		0x07,           // firstSeq 7
		0x02,           // n 2
		0x02, 'a', 'b', // keyLen 2, key
		0xd0, 0x0f, // time 1000 - 0 = 1000, zigzag 2000
		0x01,      // value -1, zigzag 1
		0x00,      // dataLen 0
		0x01, 'c', // keyLen 1, key
		0x13,       // time 990 - 1000 = -10, zigzag 19
		0x80, 0x01, // value 64, zigzag 128
		0x01, 'x', // dataLen 1, data
	}
	if got := b.Encode(nil); !bytes.Equal(got, want) {
		t.Fatalf("encoded\n% x\nwant\n% x", got, want)
	}
}

// pb builds payloads by hand for the error cases.
type pb []byte

func (p pb) u(xs ...uint64) pb {
	for _, x := range xs {
		p = binary.AppendUvarint(p, x)
	}
	return p
}

func (p pb) z(xs ...int64) pb {
	for _, x := range xs {
		p = binary.AppendVarint(p, x)
	}
	return p
}

func (p pb) raw(bs ...byte) pb { return append(p, bs...) }

// rec1 appends a record with a one-byte key and no data.
func (p pb) rec1() pb { return p.u(1).raw('k').z(0, 0).u(0) }

func TestDecodeBatchErrors(t *testing.T) {
	over := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f} // 10 bytes, overflows
	cut := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}              // 8 continuation bytes
	hdr := func(n uint64) pb { return pb{}.u(1, 1, 1, 0, n) }                  // one run: p1 kg1 seq0, n records
	cases := []struct {
		name string
		in   pb
		msg  string
	}{
		{"empty payload", nil, "run count at byte 0: truncated varint"},
		{"run count cut", pb{0x80}, "run count at byte 0: truncated varint"},
		{"run count overflow", pb{}.raw(over...), "run count at byte 0: varint overflows"},
		{"run count absurd", pb{}.u(1000).rec1(), "1000 runs cannot fit"},
		{"run count past the payload", pb{}.u(2).u(1, 1, 0, 1).rec1(), "2 runs cannot fit in 9 bytes"},
		{"producer cut", pb{}.u(1).raw(cut...), "run 0 producer at byte 1: truncated varint"},
		{"producer overflow", pb{}.u(1).raw(over...).u(1, 0, 1).rec1(), "run 0 producer at byte 1: varint overflows"},
		{"producer above 32 bits", pb{}.u(1, 1<<32, 1, 0, 1).rec1(), "run 0 producer at byte 1: 4294967296 overflows 32 bits"},
		{"key group above 16 bits", pb{}.u(1, 1, 1<<16, 0, 1).rec1(), "run 0 key group at byte 2: 65536 overflows 16 bits"},
		{"key group cut", pb{}.u(1, 1).raw(cut...), "run 0 key group at byte 2: truncated"},
		{"first seq overflow", pb{}.u(1, 1, 1).raw(over...).u(1).rec1(), "run 0 first seq at byte 3: varint overflows"},
		{"record count cut", pb{}.u(1, 1, 1, 0).raw(cut...), "run 0 record count at byte 4: truncated"},
		{"record count zero", pb{}.u(1, 1, 1, 0, 0).raw(0, 0, 0, 0), "run 0 record count at byte 4: 0"},
		{"record count absurd", hdr(1 << 40).rec1(), "1099511627776 records cannot fit in 5 bytes"},
		{"record count past the payload", hdr(2).rec1(), "2 records cannot fit in 5 bytes"},
		{"seqs wrap", pb{}.u(1, 1, 1, math.MaxUint64, 2).rec1().rec1(), "2 records from seq 18446744073709551615 overflow"},
		{"key length cut", hdr(1).raw(0x80, 0x80, 0x80, 0x80), "run 0 record 0 key length at byte 5: truncated"},
		{"key length past the end", hdr(1).u(9).raw('k').z(0, 0).u(0), "run 0 record 0 key length at byte 5: 9 past the end (4 bytes left)"},
		{"key length huge", hdr(1).u(math.MaxUint64).raw(0, 0, 0), "past the end"},
		{"time cut", hdr(1).u(1).raw('k', 0x80, 0x80, 0x80), "run 0 record 0 time at byte 7: truncated"},
		{"time overflow", hdr(1).u(1).raw('k').raw(over...).z(0).u(0), "run 0 record 0 time at byte 7: varint overflows"},
		{"value cut", hdr(1).u(1).raw('k').z(0).raw(0x80, 0x80), "run 0 record 0 value at byte 8: truncated"},
		{"data length cut", hdr(1).u(1).raw('k').z(0, 0).raw(0x80), "run 0 record 0 data length at byte 9: truncated"},
		{"data length past the end", hdr(1).u(1).raw('k').z(0, 0).u(5).raw('d'), "run 0 record 0 data length at byte 9: 5 past the end (1 bytes left)"},
		{"trailing bytes", hdr(1).rec1().raw(0), "end at byte 10: 1 bytes after the last run"},
		{"trailing bytes after an empty batch", pb{}.u(0).raw(1, 2), "2 bytes after the last run"},
		{"second run", pb{}.u(2).u(1, 1, 0, 1).rec1().u(1, 1, 0, 1).u(1).raw('k').z(0, 0).u(3).raw(0), "run 1 record 0 data length"},
		{"third record", hdr(3).rec1().rec1().u(9).raw('k').z(0, 0).u(0), "run 0 record 2 key length"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := DecodeBatch(c.in, nil)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
			if !strings.HasPrefix(err.Error(), "wire: batch frame: ") || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %q\ndoes not say %q", err, c.msg)
			}
			var calls int
			err2 := DecodeBatch(c.in, func(job.Producer, job.KeyGroup, uint64, job.Record) error { calls++; return nil })
			if err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("with a callback: %v; without: %v", err2, err)
			}
		})
	}
}

func TestDecodeBatchStopsOnCallbackError(t *testing.T) {
	var b BatchBuilder
	for i := range 10 {
		b.Append(1, 1, uint64(i), rec("k", int64(i), 0, ""))
	}
	stop := errors.New("stop")
	var seen []uint64
	err := DecodeBatch(b.Encode(nil), func(_ job.Producer, _ job.KeyGroup, seq uint64, _ job.Record) error {
		seen = append(seen, seq)
		if seq == 3 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("got %v, want the callback's error unchanged", err)
	}
	if len(seen) != 4 {
		t.Fatalf("callback ran for %v, want seqs 0..3", seen)
	}
}

func TestDecodeBatchAliasesPayload(t *testing.T) {
	var b BatchBuilder
	b.Append(1, 1, 0, rec("key", 1, 1, "data"))
	payload := b.Encode(nil)
	err := DecodeBatch(payload, func(_ job.Producer, _ job.KeyGroup, _ uint64, r job.Record) error {
		if cap(r.Key) != len(r.Key) || cap(r.Data) != len(r.Data) {
			t.Errorf("slices can grow into the payload: key cap %d, data cap %d", cap(r.Key), cap(r.Data))
		}
		r.Key[0] = 'K'
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(payload, []byte("Key")) {
		t.Fatalf("Key does not alias the payload")
	}
}

// randomRecord makes a record with lengths and numbers from the edges and
// the middle.
func randomRecord(rng *rand.Rand, prevTime int64) job.Record {
	var r job.Record
	if n := rng.IntN(24); n > 0 {
		r.Key = make([]byte, n)
		for i := range r.Key {
			r.Key[i] = byte(rng.Uint32())
		}
	}
	if rng.IntN(3) == 0 {
		n := rng.IntN(200)
		if rng.IntN(50) == 0 {
			n = rng.IntN(20000)
		}
		r.Data = make([]byte, n)
		for i := range r.Data {
			r.Data[i] = byte(rng.Uint32())
		}
	}
	edges := []int64{0, -1, 1, 63, 64, -64, -65, math.MinInt64, math.MaxInt64, math.MinInt64 + 1, math.MaxInt64 - 1}
	switch rng.IntN(10) {
	case 0:
		r.Time = edges[rng.IntN(len(edges))]
	case 1:
		r.Time = int64(rng.Uint64())
	default:
		r.Time = prevTime + rng.Int64N(100) - 10
	}
	switch rng.IntN(4) {
	case 0:
		r.Value = edges[rng.IntN(len(edges))]
	case 1:
		r.Value = int64(rng.Uint64())
	default:
		r.Value = rng.Int64N(1000)
	}
	return r
}

// TestBatchProperty: whatever is appended, Encode then DecodeBatch returns
// exactly those records, in Append order per (producer, key group), in one
// run per pair and stretch of consecutive sequence numbers.
func TestBatchProperty(t *testing.T) {
	var b BatchBuilder
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		b.Reset()
		type pair struct {
			p   job.Producer
			kg  job.KeyGroup
			seq uint64
			t   int64
		}
		pairs := make([]pair, 1+rng.IntN(40))
		for i := range pairs {
			pairs[i] = pair{p: job.Producer(rng.Uint32N(8)), kg: job.KeyGroup(rng.IntN(200)), seq: rng.Uint64N(1 << 40)}
			if rng.IntN(10) == 0 {
				pairs[i].p = job.Producer(rng.Uint32())
				pairs[i].kg = job.KeyGroup(rng.Uint32())
				pairs[i].seq = math.MaxUint64 - rng.Uint64N(5)
			}
		}
		var want []entry
		runs := 0
		last := map[uint64]uint64{} // pair → last seq appended
		for range rng.IntN(600) {
			pr := &pairs[rng.IntN(len(pairs))]
			if rng.IntN(20) == 0 {
				pr.seq = rng.Uint64() // a jump
			}
			r := randomRecord(rng, pr.t)
			pr.t = r.Time
			k := batchKey(pr.p, pr.kg)
			if l, ok := last[k]; !ok || l == math.MaxUint64 || pr.seq != l+1 {
				runs++
			}
			last[k] = pr.seq
			b.Append(pr.p, pr.kg, pr.seq, r)
			want = append(want, cloneEntry(pr.p, pr.kg, pr.seq, r))
			// The builder copies: scribbling on the caller's slices changes nothing.
			clear(r.Key)
			clear(r.Data)
			pr.seq++
		}
		payload := b.Encode(nil)
		if b.Runs() != runs {
			t.Fatalf("seed %d: %d runs, want %d", seed, b.Runs(), runs)
		}
		if s := b.Size(); s != len(payload) {
			t.Fatalf("seed %d: Size %d, encoded %d bytes", seed, s, len(payload))
		}
		got, err := decodeAll(payload)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkSamePerPair(t, got, want)
		if err := DecodeBatch(payload, nil); err != nil {
			t.Fatalf("seed %d: validate only: %v", seed, err)
		}
	}
}

func TestBatchAppendAllocs(t *testing.T) {
	var b BatchBuilder
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%06d", i)
	}
	seqs := make([]uint64, 128)
	fill := func() {
		b.Reset()
		for i, k := range keys {
			kg := job.GroupOf(k, 128)
			b.Append(job.Producer(i%3), kg, seqs[kg], job.Record{Key: k, Time: int64(i), Value: 1})
			seqs[kg]++
		}
	}
	fill() // warm up
	var buf []byte
	buf = b.Encode(buf[:0])
	allocs := testing.AllocsPerRun(20, func() {
		fill()
		buf = b.Encode(buf[:0])
	})
	if allocs != 0 {
		t.Fatalf("Append+Encode allocate %v times per batch in steady state", allocs)
	}
	payload := bytes.Clone(buf)
	allocs = testing.AllocsPerRun(20, func() {
		if err := DecodeBatch(payload, func(job.Producer, job.KeyGroup, uint64, job.Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("DecodeBatch allocates %v times per batch", allocs)
	}
}

func TestWriteBatch(t *testing.T) {
	var b BatchBuilder
	b.Append(1, 2, 3, rec("k", 4, 5, "d"))
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.WriteBatch(&b); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	typ, p, err := NewReader(&buf, 0).ReadFrame()
	if err != nil || typ != TBatch {
		t.Fatalf("got %v, %v", typ, err)
	}
	got, err := decodeAll(p)
	if err != nil {
		t.Fatal(err)
	}
	checkSamePerPair(t, got, []entry{{1, 2, 3, rec("k", 4, 5, "d")}})
	if b.Len() != 1 {
		t.Fatalf("WriteBatch reset the builder")
	}
}

// TestUvarintAt checks the inlined decoder against encoding/binary.
func TestUvarintAt(t *testing.T) {
	inputs := [][]byte{
		nil, {0}, {0x7f}, {0x80}, {0x80, 0x01}, {0xff, 0x7f},
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},       // 1<<63
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},       // MaxUint64
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},       // overflow
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, // too long
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},       // non-minimal zero
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		x := rng.Uint64() >> rng.UintN(64)
		b := binary.AppendUvarint(nil, x)
		inputs = append(inputs, b, b[:len(b)-1], append(b, 0x55))
	}
	for _, in := range inputs {
		for i := 0; i <= len(in); i++ {
			x, n := varint.At(in, i)
			wx, wn := binary.Uvarint(in[i:])
			if (n > 0) != (wn > 0) || (n > 0 && (x != wx || n != wn)) || (n == 0) != (wn == 0 && len(in)-i < binary.MaxVarintLen64) {
				t.Fatalf("varint.At(% x, %d) = %d, %d; binary.Uvarint: %d, %d", in, i, x, n, wx, wn)
			}
		}
	}
	for _, x := range []uint64{0, 1, 127, 128, 1 << 14, 1<<63 - 1, 1 << 63, math.MaxUint64} {
		var buf [binary.MaxVarintLen64]byte
		n := varint.Put(buf[:], x)
		if want := binary.AppendUvarint(nil, x); !bytes.Equal(buf[:n], want) || varint.Len(x) != n {
			t.Fatalf("varint.Put(%d) = % x (uvarintLen %d), want % x", x, buf[:n], varint.Len(x), want)
		}
	}
}
