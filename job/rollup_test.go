package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func rollupIn(group, key string, window, count, sum int64) Record {
	return Record{Key: []byte(group), Time: window, Value: count, Data: appendRollupInput(nil, key, count, sum)}
}

func rollupOut(kg KeyGroup, group string, window, count, sum int64, top ...TopKey) emitted {
	res := Result{Op: KindRollup, Key: group, Window: window, Count: count, Sum: sum, Top: top}
	return emitted{Port: 0, From: kg, Key: group, Time: window, Value: count, Data: string(res.AppendCompact(nil))}
}

func TestRollup(t *testing.T) {
	spec := testSpec(10, 0, 8, 4)
	r := NewRollup(spec)
	var out recorder
	in := func(kg KeyGroup, group, key string, window, count, sum int64) {
		r.Process(kg, rollupIn(group, key, window, count, sum), &out)
	}
	// g01 (kg 2), window 0: x and z tie at 5, w and y tie at 3: top is x,
	// z, w. v is below the top.
	in(2, "g01", "y", 0, 3, 30)
	in(2, "g01", "v", 0, 1, 10)
	in(2, "g01", "z", 0, 5, 50)
	in(2, "g01", "w", 0, 3, 30)
	in(2, "g01", "x", 0, 5, 50)
	// g00 (kg 5), window 0 and window 10; g01 window 10.
	in(5, "g00", "k", 0, 2, -4)
	in(5, "g00", "k", 10, 1, 1)
	in(2, "g01", "y", 10, 4, 8)
	in(2, "g01", "x", 10, 4, 6)
	checkEmitted(t, "process", out.take(), nil)
	if got := r.Groups(); !slices.Equal(got, []KeyGroup{2, 5}) {
		t.Fatalf("Groups() = %v, want [kg2 kg5]", got)
	}

	r.Advance(9, &out)
	checkEmitted(t, "advance(9)", out.take(), nil)
	r.Advance(10, &out)
	checkEmitted(t, "advance(10)", out.take(), []emitted{
		rollupOut(5, "g00", 0, 2, -4, TopKey{"k", 2}),
		rollupOut(2, "g01", 0, 17, 170, TopKey{"x", 5}, TopKey{"z", 5}, TopKey{"w", 3}),
	})
	r.Advance(10, &out)
	checkEmitted(t, "advance(10) again", out.take(), nil)

	in(2, "g01", "late", 0, 1, 1)
	if r.Late() != 1 {
		t.Fatalf("Late() = %d, want 1", r.Late())
	}
	r.Process(2, Record{Key: []byte("g01"), Time: 10, Value: 1, Data: []byte{0xff}}, &out)
	r.Process(2, Record{Key: []byte("g01"), Time: 10, Value: 1}, &out)
	if r.Malformed() != 2 {
		t.Fatalf("Malformed() = %d, want 2", r.Malformed())
	}

	r.Advance(MaxWatermark, &out)
	checkEmitted(t, "advance(max)", out.take(), []emitted{
		rollupOut(5, "g00", 10, 1, 1, TopKey{"k", 1}),
		rollupOut(2, "g01", 10, 8, 14, TopKey{"x", 4}, TopKey{"y", 4}),
	})
}

func TestRollupTopIsOrderIndependent(t *testing.T) {
	type kc struct {
		key   string
		count int64
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		var ins []kc
		for i := range 1 + rng.IntN(8) {
			ins = append(ins, kc{string(rune('a' + i)), 1 + rng.Int64N(3)})
		}
		// The expected top: sort by count descending, key ascending.
		want := slices.Clone(ins)
		slices.SortFunc(want, func(a, b kc) int {
			if a.count != b.count {
				return int(b.count - a.count)
			}
			return strings.Compare(a.key, b.key)
		})
		var wantTop []TopKey
		for _, x := range want[:min(3, len(want))] {
			wantTop = append(wantTop, TopKey{x.key, x.count})
		}
		rng.Shuffle(len(ins), func(i, j int) { ins[i], ins[j] = ins[j], ins[i] })
		var w rollupWin
		for _, x := range ins {
			w.offer([]byte(x.key), x.count)
		}
		if got := w.top[:w.ntop]; !slices.Equal(got, wantTop) {
			t.Fatalf("offers %v: top %v, want %v", ins, got, wantTop)
		}
	}
}

func TestSink(t *testing.T) {
	var buf bytes.Buffer
	s := NewSink(&buf)
	var out recorder
	a := Result{Op: KindCount, Key: "a", Window: 1000, Count: 2, Sum: 5, Total: 9}
	b := Result{Op: KindRollup, Key: "g1", Window: 0, Count: 7, Sum: -3, Top: []TopKey{{"x", 4}, {"<y>", 3}}}
	s.Process(0, Record{Key: []byte(a.Key), Time: a.Window, Value: a.Count, Data: a.AppendCompact(nil)}, &out)
	s.Advance(MaxWatermark, &out)
	s.Process(3, Record{Key: []byte(b.Key), Time: b.Window, Value: b.Count, Data: b.AppendCompact(nil)}, &out)
	s.Process(3, Record{Key: []byte("bad"), Data: []byte("x")}, &out) // skipped, reported by Flush
	if buf.Len() != 0 {
		t.Fatalf("sink wrote %q before Flush", buf.String())
	}
	if err := s.Flush(); err == nil || !strings.Contains(err.Error(), `record "bad"`) {
		t.Fatalf("Flush() = %v, want the malformed record reported", err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if got, want := buf.String(), string(ja)+"\n"+string(jb)+"\n"; got != want {
		t.Fatalf("sink wrote %q, want %q", got, want)
	}
	if s.Lines() != 2 || len(out.out) != 0 {
		t.Fatalf("Lines() = %d, emitted %v", s.Lines(), out.out)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errSinkTest }

var errSinkTest = errors.New("disk full")

func TestSinkReportsWriteErrors(t *testing.T) {
	s := NewSink(failWriter{})
	r := Result{Op: KindCount, Key: "k", Count: 1}
	s.Process(0, Record{Key: []byte("k"), Value: 1, Data: r.AppendCompact(nil)}, nil)
	if err := s.Flush(); err != errSinkTest {
		t.Fatalf("Flush() = %v, want %v", err, errSinkTest)
	}
}
