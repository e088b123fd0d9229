package backup

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"spate/job"
)

// A step of a scripted case: it acts on the buffer and checks the outcome.
type step struct {
	name string
	do   func(t *testing.T, b *Buffer)
}

// app appends seqs from..to of (p, kg), expecting success.
func app(p job.Producer, kg job.KeyGroup, from, to uint64) step {
	return step{fmt.Sprintf("append %v %v %d..%d", p, kg, from, to), func(t *testing.T, b *Buffer) {
		for s := from; s <= to; s++ {
			if err := b.Append(p, kg, s, testRec(p, kg, s)); err != nil {
				t.Fatalf("seq %d: %v", s, err)
			}
		}
	}}
}

// appErr appends seq of (p, kg) expecting err, a *SeqError naming them,
// and no change.
func appErr(p job.Producer, kg job.KeyGroup, seq uint64, want error) step {
	return step{fmt.Sprintf("append %v %v %d fails", p, kg, seq), func(t *testing.T, b *Buffer) {
		lo, hi := b.Low(p, kg), b.High(p, kg)
		err := b.Append(p, kg, seq, testRec(p, kg, seq))
		if !errors.Is(err, want) {
			t.Fatalf("got %v, want %v", err, want)
		}
		var se *SeqError
		if !errors.As(err, &se) || se.P != p || se.KG != kg || se.Seq != seq {
			t.Fatalf("error %#v does not name (%v, %v, %d)", err, p, kg, seq)
		}
		for _, s := range []string{p.String(), kg.String(), fmt.Sprint(seq)} {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("message %q does not name %s", err, s)
			}
		}
		if b.Low(p, kg) != lo || b.High(p, kg) != hi {
			t.Fatalf("a refused append changed low/high to %d/%d", b.Low(p, kg), b.High(p, kg))
		}
	}}
}

func trim(p job.Producer, kg job.KeyGroup, upTo uint64) step {
	return step{fmt.Sprintf("trim %v %v %d", p, kg, upTo), func(t *testing.T, b *Buffer) { b.Trim(p, kg, upTo) }}
}

// trimFrees trims and checks whether bytes were released.
func trimFrees(p job.Producer, kg job.KeyGroup, upTo uint64, frees bool) step {
	return step{fmt.Sprintf("trim %v %v %d frees=%v", p, kg, upTo, frees), func(t *testing.T, b *Buffer) {
		if got := b.Trim(p, kg, upTo); (got > 0) != frees {
			t.Fatalf("freed %d bytes", got)
		}
	}}
}

func lowHigh(p job.Producer, kg job.KeyGroup, low, high uint64) step {
	return step{fmt.Sprintf("low/high %v %v", p, kg), func(t *testing.T, b *Buffer) {
		if lo, hi := b.Low(p, kg), b.High(p, kg); lo != low || hi != high {
			t.Fatalf("low/high %d/%d, want %d/%d", lo, hi, low, high)
		}
	}}
}

// ps is (producer, seq), for expected replays.
type ps struct {
	p   job.Producer
	seq uint64
}

func seqs(p job.Producer, from, to uint64) []ps {
	var out []ps
	for s := from; s <= to; s++ {
		out = append(out, ps{p, s})
	}
	return out
}

// replay replays kg after and expects exactly want, in this order per
// producer (the order across producers is not checked), with the right
// record content.
func replay(kg job.KeyGroup, after map[job.Producer]uint64, want ...[]ps) step {
	return step{fmt.Sprintf("replay %v after %v", kg, after), func(t *testing.T, b *Buffer) {
		got, err := replayAll(b, kg, after)
		if err != nil {
			t.Fatal(err)
		}
		got = byProducer(t, got)
		var w []entry
		for _, x := range want {
			for _, e := range x {
				w = append(w, mkEntry(e.p, kg, e.seq, testRec(e.p, kg, e.seq)))
			}
		}
		w = byProducer(t, w)
		if !slices.Equal(got, w) {
			t.Fatalf("got %v, want %v", got, w)
		}
	}}
}

// replayTrimmed expects a *TrimmedError for (p, kg, wanted, low) and no
// call of fn.
func replayTrimmed(kg job.KeyGroup, after map[job.Producer]uint64, p job.Producer, wanted, low uint64) step {
	return step{fmt.Sprintf("replay %v after %v is trimmed", kg, after), func(t *testing.T, b *Buffer) {
		calls := 0
		err := b.Replay(kg, after, func(job.Producer, job.KeyGroup, uint64, job.Record) error { calls++; return nil })
		var te *TrimmedError
		if !errors.Is(err, ErrTrimmed) || !errors.As(err, &te) {
			t.Fatalf("got %v, want ErrTrimmed", err)
		}
		if want := (TrimmedError{P: p, KG: kg, Wanted: wanted, Low: low}); *te != want {
			t.Fatalf("got %+v, want %+v", *te, want)
		}
		if calls != 0 {
			t.Fatalf("fn called %d times before the error", calls)
		}
	}}
}

func TestAppendReplayTrim(t *testing.T) {
	const p1, p2 = job.Producer(1), job.Producer(2<<16 | 7)
	const g, h = job.KeyGroup(3), job.KeyGroup(99)
	cases := []struct {
		name  string
		steps []step
	}{
		{"append then replay all", []step{
			app(p1, g, 1, 5), lowHigh(p1, g, 0, 5), replay(g, nil, seqs(p1, 1, 5)),
		}},
		{"replay after a position", []step{
			app(p1, g, 1, 5), replay(g, map[job.Producer]uint64{p1: 3}, seqs(p1, 4, 5)),
			replay(g, map[job.Producer]uint64{p1: 5}), replay(g, map[job.Producer]uint64{p1: 9}),
		}},
		{"first record may start anywhere", []step{
			app(p1, g, 10, 12), lowHigh(p1, g, 9, 12), replay(g, nil, seqs(p1, 10, 12)),
			replay(g, map[job.Producer]uint64{p1: 9}, seqs(p1, 10, 12)),
			replayTrimmed(g, map[job.Producer]uint64{p1: 5}, p1, 6, 9),
		}},
		{"gap rejected", []step{
			app(p1, g, 1, 2), appErr(p1, g, 4, ErrGap), app(p1, g, 3, 3), replay(g, nil, seqs(p1, 1, 3)),
		}},
		{"repeat rejected", []step{
			app(p1, g, 1, 2), appErr(p1, g, 2, ErrRepeat), appErr(p1, g, 1, ErrRepeat), replay(g, nil, seqs(p1, 1, 2)),
		}},
		{"seq 0 rejected", []step{
			appErr(p1, g, 0, ErrRepeat), lowHigh(p1, g, 0, 0),
			func() step {
				return step{"no state", func(t *testing.T, b *Buffer) {
					if kgs := b.KeyGroups(); len(kgs) != 0 {
						t.Fatalf("a refused append created key groups %v", kgs)
					}
				}}
			}(),
		}},
		{"replay after trim", []step{
			app(p1, g, 1, 5), trim(p1, g, 3), lowHigh(p1, g, 3, 5),
			replayTrimmed(g, map[job.Producer]uint64{p1: 2}, p1, 3, 3),
			replayTrimmed(g, map[job.Producer]uint64{p1: 0}, p1, 1, 3),
			replay(g, map[job.Producer]uint64{p1: 3}, seqs(p1, 4, 5)),
			replay(g, nil, seqs(p1, 4, 5)),
		}},
		{"trim idempotent and never backward", []step{
			app(p1, g, 1, 5), trim(p1, g, 3), trimFrees(p1, g, 3, false), trim(p1, g, 1), lowHigh(p1, g, 3, 5),
			trim(p1, g, 0), lowHigh(p1, g, 3, 5), replay(g, nil, seqs(p1, 4, 5)),
		}},
		{"trim everything", []step{
			app(p1, g, 1, 5), trim(p1, g, 5), lowHigh(p1, g, 5, 5), replay(g, nil),
			app(p1, g, 6, 6), replay(g, nil, seqs(p1, 6, 6)),
		}},
		{"trim past high", []step{
			app(p1, g, 1, 5), trim(p1, g, 10), lowHigh(p1, g, 10, 5), replay(g, nil),
			replayTrimmed(g, map[job.Producer]uint64{p1: 5}, p1, 6, 10),
			appErr(p1, g, 7, ErrGap), app(p1, g, 6, 10), lowHigh(p1, g, 10, 10), replay(g, nil),
			app(p1, g, 11, 12), replay(g, map[job.Producer]uint64{p1: 10}, seqs(p1, 11, 12)),
		}},
		{"trim an unknown stream", []step{
			trim(p1, g, 4), lowHigh(p1, g, 4, 0), app(p1, g, 2, 6), lowHigh(p1, g, 4, 6),
			replay(g, nil, seqs(p1, 5, 6)),
		}},
		{"producers are independent", []step{
			app(p1, g, 1, 3), app(p2, g, 7, 9), app(p1, g, 4, 6), app(p2, g, 10, 10),
			appErr(p2, g, 4, ErrRepeat), trim(p2, g, 8),
			replay(g, nil, seqs(p1, 1, 6), seqs(p2, 9, 10)),
			replay(g, map[job.Producer]uint64{p1: 4}, seqs(p1, 5, 6), seqs(p2, 9, 10)),
			replay(g, map[job.Producer]uint64{p2: 9}, seqs(p1, 1, 6), seqs(p2, 10, 10)),
			replayTrimmed(g, map[job.Producer]uint64{p1: 0, p2: 6}, p2, 7, 8),
		}},
		{"key groups are independent", []step{
			app(p1, g, 1, 3), app(p1, h, 1, 2), trim(p1, h, 2), appErr(p1, h, 2, ErrRepeat),
			replay(g, nil, seqs(p1, 1, 3)), replay(h, nil), replay(7, nil), lowHigh(p1, 7, 0, 0),
			replay(7, map[job.Producer]uint64{p1: 3}),
		}},
		{"unknown producer in after", []step{
			app(p1, g, 1, 2), replay(g, map[job.Producer]uint64{p2: 5}, seqs(p1, 1, 2)),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := mustNew(t, DefaultConfig())
			for i, s := range c.steps {
				t.Logf("step %d: %s", i, s.name)
				s.do(t, b)
			}
		})
	}
}

// Many records over many chunks: trimming frees whole chunks, and only
// once every producer's records in them are trimmed.
func TestTrimFreesChunks(t *testing.T) {
	b := mustNew(t, Config{MemLimit: 1 << 20})
	m := newModel()
	const n = 3000
	for s := uint64(1); s <= n; s++ {
		for _, p := range []job.Producer{1, 2} {
			if err := b.Append(p, 5, s, testRec(p, 5, s)); err != nil {
				t.Fatal(err)
			}
			m.append(p, 5, s)
		}
	}
	mem := b.Stats().MemBytes
	if freed := b.Trim(1, 5, n); freed != 0 {
		t.Fatalf("trimming one producer freed %d bytes while the other still holds the chunks", freed)
	}
	m.trim(1, 5, n)
	m.check(t, b)
	freed := b.Trim(2, 5, n-10)
	m.trim(2, 5, n-10)
	if freed == 0 {
		t.Fatal("trimming both producers freed nothing")
	}
	st := b.Stats()
	if st.MemBytes != mem-freed {
		t.Fatalf("MemBytes %d, want %d-%d", st.MemBytes, mem, freed)
	}
	if st.Trims != 2 || st.Trimmed != 2*n-10 {
		t.Fatalf("Trims %d Trimmed %d", st.Trims, st.Trimmed)
	}
	m.check(t, b)
}

func TestFullWithoutSpill(t *testing.T) {
	b := mustNew(t, Config{MemLimit: 64 << 10})
	s := uint64(0)
	for !b.Full() {
		s++
		if err := b.Append(1, 0, s, testRec(1, 0, s)); err != nil {
			t.Fatal(err)
		}
		if s > 1e6 {
			t.Fatal("never full")
		}
	}
	if st := b.Stats(); !st.Full || st.MemBytes <= 64<<10 || st.Spilling {
		t.Fatalf("stats %+v", st)
	}
	b.Trim(1, 0, s)
	if b.Full() {
		t.Fatalf("still full after trimming everything: %+v", b.Stats())
	}
}

func TestAppendCopies(t *testing.T) {
	b := mustNew(t, DefaultConfig())
	key, data := []byte("key"), []byte("data")
	if err := b.Append(1, 1, 1, job.Record{Key: key, Data: data, Time: 1, Value: 2}); err != nil {
		t.Fatal(err)
	}
	copy(key, "XXX")
	copy(data, "YYYY")
	got, _ := replayAll(b, 1, nil)
	if len(got) != 1 || got[0].Key != "key" || got[0].Data != "data" || got[0].Time != 1 || got[0].Value != 2 {
		t.Fatalf("got %+v", got)
	}
}

func TestReplayStopsOnError(t *testing.T) {
	b := mustNew(t, DefaultConfig())
	for s := uint64(1); s <= 10; s++ {
		_ = b.Append(1, 1, s, testRec(1, 1, s))
	}
	stop := errors.New("stop")
	n := 0
	err := b.Replay(1, nil, func(job.Producer, job.KeyGroup, uint64, job.Record) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Fatalf("err %v after %d calls", err, n)
	}
}

func TestLargeRecord(t *testing.T) {
	b := mustNew(t, Config{MemLimit: 1 << 20})
	big := job.Record{Key: []byte("big"), Data: make([]byte, 3*maxChunk)}
	for i := range big.Data {
		big.Data[i] = byte(i * 7)
	}
	for s := uint64(1); s <= 3; s++ {
		r := testRec(1, 0, s)
		if s == 2 {
			r = big
		}
		if err := b.Append(1, 0, s, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := replayAll(b, 0, nil)
	if err != nil || len(got) != 3 || got[1].Data != string(big.Data) {
		t.Fatalf("err %v, %d records", err, len(got))
	}
}

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if DefaultConfig().MemLimit != 64<<20 || DefaultConfig().SpillDir != "" {
		t.Fatalf("default %+v", DefaultConfig())
	}
	for _, c := range []Config{{MemLimit: 0}, {MemLimit: -1}} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Fatalf("%+v: %v", c, err)
		}
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	if _, err := New(Config{MemLimit: 1, SpillDir: t.TempDir() + "/nope"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("missing SpillDir: %v", err)
	}
}

// Stats may be called from another goroutine while the owner works (run
// with -race).
func TestStatsConcurrent(t *testing.T) {
	b := mustNew(t, Config{MemLimit: 256 << 10, SpillDir: t.TempDir()})
	if err := b.SetSlices([]job.Range{{Lo: 0, Hi: 4}, {Lo: 4, Hi: 8}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				st := b.Stats()
				var recs int64
				for _, s := range st.Slices {
					recs += s.Records
				}
				_ = recs
			}
		}
	}()
	var other *Buffer
	for s := uint64(1); s <= 20000; s++ {
		kg := job.KeyGroup(s % 8)
		seq := (s-1)/8 + 1
		owner := b
		if other != nil && kg >= 6 {
			owner = other
		}
		if err := owner.Append(1, kg, seq, testRec(1, kg, seq)); err != nil {
			t.Fatal(err)
		}
		switch s % 5000 {
		case 1000:
			b.Mark()
		case 2000:
			b.Trim(1, kg, seq/2)
		case 3000:
			var err error
			if other, err = b.Extract(job.Range{Lo: 6, Hi: 8}); err != nil {
				t.Fatal(err)
			}
		case 4000:
			if err := b.Absorb(other); err != nil {
				t.Fatal(err)
			}
			other = nil
		}
	}
	close(done)
	wg.Wait()
	st := b.Stats()
	// Extract cut the declared [4,8) at 6; Absorb brought [6,8) back as it was.
	if st.KeyGroups != 8 || len(st.Slices) != 3 || st.Slices[0].KeyGroups != 4 || st.Slices[1].KeyGroups != 2 || st.Slices[2].Range != (job.Range{Lo: 6, Hi: 8}) {
		t.Fatalf("stats %+v", st)
	}
	var recs int64
	for _, s := range st.Slices {
		recs += s.Records
	}
	if recs != st.Records {
		t.Fatalf("slices hold %d records, total %d", recs, st.Records)
	}
}

func TestSlices(t *testing.T) {
	b := mustNew(t, DefaultConfig())
	for _, kg := range []job.KeyGroup{1, 2, 3, 7, 9, 10} {
		_ = b.Append(1, kg, 1, testRec(1, kg, 1))
	}
	want := []job.Range{{Lo: 1, Hi: 4}, {Lo: 7, Hi: 8}, {Lo: 9, Hi: 11}}
	if got := b.Slices(); !slices.Equal(got, want) {
		t.Fatalf("undeclared slices %v, want %v", got, want)
	}
	if err := b.SetSlices([]job.Range{{Lo: 0, Hi: 4}, {Lo: 3, Hi: 8}}); !errors.Is(err, ErrOverlap) {
		t.Fatalf("overlap: %v", err)
	}
	if err := b.SetSlices([]job.Range{{Lo: 4, Hi: 4}}); !errors.Is(err, ErrRange) {
		t.Fatalf("empty: %v", err)
	}
	if err := b.SetSlices([]job.Range{{Lo: 8, Hi: 16}, {Lo: 0, Hi: 8}}); err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	if len(st.Slices) != 2 || st.Slices[0].Range != (job.Range{Lo: 0, Hi: 8}) || st.Slices[0].KeyGroups != 4 || st.Slices[1].KeyGroups != 2 {
		t.Fatalf("stats slices %+v", st.Slices)
	}
	nb, err := b.Extract(job.Range{Lo: 2, Hi: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Slices(), []job.Range{{Lo: 0, Hi: 2}, {Lo: 10, Hi: 16}}; !slices.Equal(got, want) {
		t.Fatalf("after extract %v, want %v", got, want)
	}
	if got, want := nb.Slices(), []job.Range{{Lo: 2, Hi: 8}, {Lo: 8, Hi: 10}}; !slices.Equal(got, want) {
		t.Fatalf("extracted %v, want %v", got, want)
	}
	if got, want := nb.KeyGroups(), []job.KeyGroup{2, 3, 7, 9}; !slices.Equal(got, want) {
		t.Fatalf("extracted key groups %v, want %v", got, want)
	}
	if err := b.Absorb(nb); err != nil {
		t.Fatal(err)
	}
	if got := b.Slices(); len(got) != 4 || got[0].Lo != 0 || got[3].Hi != 16 {
		t.Fatalf("after absorb %v", got)
	}
	if len(nb.KeyGroups()) != 0 || len(nb.Slices()) != 0 {
		t.Fatalf("absorbed buffer not empty: %v", nb.KeyGroups())
	}
	if _, err := b.Extract(job.Range{Lo: 5, Hi: 4}); !errors.Is(err, ErrRange) {
		t.Fatalf("bad range: %v", err)
	}
	if err := b.Absorb(b); !errors.Is(err, ErrOverlap) {
		t.Fatalf("self absorb: %v", err)
	}
	o := mustNew(t, DefaultConfig())
	_ = o.Append(2, 9, 1, testRec(2, 9, 1))
	_ = o.Append(2, 50, 1, testRec(2, 50, 1))
	if err := b.Absorb(o); !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), "kg9") {
		t.Fatalf("overlap: %v", err)
	}
	if len(o.KeyGroups()) != 2 || b.High(2, 50) != 0 {
		t.Fatal("a refused Absorb changed something")
	}
}
