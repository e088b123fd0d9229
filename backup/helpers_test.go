package backup

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"testing"

	"spate/job"
)

// testRec is the deterministic record seq of (p, kg): its content depends on
// all three, so a record replayed in the wrong place shows.
func testRec(p job.Producer, kg job.KeyGroup, seq uint64) job.Record {
	r := job.Record{
		Key:   fmt.Appendf(nil, "k%d.%d.%d", p, kg, seq),
		Time:  int64(seq)*10 - 500,
		Value: int64(p)*1_000_003 - int64(seq),
	}
	if n := seq % 5; n > 0 {
		r.Data = make([]byte, n*7)
		for i := range r.Data {
			r.Data[i] = byte(seq) + byte(i)
		}
	}
	return r
}

// entry is a replayed record, copied.
type entry struct {
	P     job.Producer
	KG    job.KeyGroup
	Seq   uint64
	Key   string
	Time  int64
	Value int64
	Data  string
}

func (e entry) String() string { return fmt.Sprintf("%v/%v#%d", e.P, e.KG, e.Seq) }

func mkEntry(p job.Producer, kg job.KeyGroup, seq uint64, r job.Record) entry {
	return entry{P: p, KG: kg, Seq: seq, Key: string(r.Key), Time: r.Time, Value: r.Value, Data: string(r.Data)}
}

// replayAll replays kg from after and returns the records.
func replayAll(b *Buffer, kg job.KeyGroup, after map[job.Producer]uint64) ([]entry, error) {
	var out []entry
	err := b.Replay(kg, after, func(p job.Producer, g job.KeyGroup, seq uint64, r job.Record) error {
		out = append(out, mkEntry(p, g, seq, r))
		return nil
	})
	return out, err
}

// byProducer sorts replayed records by (producer, seq), checking on the way
// that each producer's records came in increasing seq order.
func byProducer(t *testing.T, es []entry) []entry {
	t.Helper()
	last := map[job.Producer]uint64{}
	for _, e := range es {
		if e.Seq <= last[e.P] {
			t.Fatalf("replay out of order: %v after seq %d", e, last[e.P])
		}
		last[e.P] = e.Seq
	}
	es = slices.Clone(es)
	slices.SortFunc(es, func(a, b entry) int {
		if a.P != b.P {
			return int(a.P) - int(b.P)
		}
		return int(a.Seq) - int(b.Seq)
	})
	return es
}

// model is the reference for a set of buffers: every stream's watermarks
// (records are testRec, so held ones follow from them).
type model struct {
	streams map[skey]*mstream
}

type skey struct {
	p  job.Producer
	kg job.KeyGroup
}

type mstream struct{ low, high uint64 }

func newModel() *model { return &model{streams: map[skey]*mstream{}} }

func (m *model) get(p job.Producer, kg job.KeyGroup) *mstream {
	s := m.streams[skey{p, kg}]
	if s == nil {
		s = &mstream{}
		m.streams[skey{p, kg}] = s
	}
	return s
}

// append applies a successful Append to the model.
func (m *model) append(p job.Producer, kg job.KeyGroup, seq uint64) {
	s := m.get(p, kg)
	if s.high == 0 && seq-1 > s.low {
		s.low = seq - 1
	}
	s.high = seq
}

func (m *model) trim(p job.Producer, kg job.KeyGroup, upTo uint64) {
	if upTo == 0 {
		return
	}
	s := m.get(p, kg)
	s.low = max(s.low, upTo)
}

// kgs returns the key groups with state in the model.
func (m *model) kgs() []job.KeyGroup {
	set := map[job.KeyGroup]bool{}
	for k := range m.streams {
		set[k.kg] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// want returns the records of kg the model holds, by (producer, seq).
func (m *model) want(kg job.KeyGroup) []entry {
	var out []entry
	keys := slices.SortedFunc(maps.Keys(m.streams), func(a, b skey) int { return int(a.p) - int(b.p) })
	for _, k := range keys {
		if k.kg != kg {
			continue
		}
		s := m.streams[k]
		for seq := s.low + 1; seq <= s.high; seq++ {
			out = append(out, mkEntry(k.p, kg, seq, testRec(k.p, kg, seq)))
		}
	}
	return out
}

// checkKG checks that b holds exactly what the model holds for kg.
func (m *model) checkKG(t *testing.T, b *Buffer, kg job.KeyGroup) {
	t.Helper()
	got, err := replayAll(b, kg, nil)
	if err != nil {
		t.Fatalf("replay %v: %v", kg, err)
	}
	got = byProducer(t, got)
	want := m.want(kg)
	if !slices.Equal(got, want) {
		t.Fatalf("replay %v: got %d records %v, want %d %v", kg, len(got), head(got), len(want), head(want))
	}
	for k, s := range m.streams {
		if k.kg != kg {
			continue
		}
		if lo, hi := b.Low(k.p, kg), b.High(k.p, kg); lo != s.low || hi != s.high {
			t.Fatalf("%v %v: low/high %d/%d, want %d/%d", k.p, kg, lo, hi, s.low, s.high)
		}
	}
	if n, want := len(b.Producers(kg)), m.producers(kg); n != want {
		t.Fatalf("%v: %d producers, want %d", kg, n, want)
	}
}

func (m *model) producers(kg job.KeyGroup) int {
	n := 0
	for k := range m.streams {
		if k.kg == kg {
			n++
		}
	}
	return n
}

// check checks that b holds exactly the model (all of it).
func (m *model) check(t *testing.T, b *Buffer) {
	t.Helper()
	if got, want := b.KeyGroups(), m.kgs(); !slices.Equal(got, want) {
		t.Fatalf("key groups %v, want %v", got, want)
	}
	var records int64
	for _, kg := range m.kgs() {
		m.checkKG(t, b, kg)
		records += int64(len(m.want(kg)))
	}
	var held int64
	for _, lg := range b.logs {
		if lg != nil {
			held += lg.held
		}
	}
	if held != records {
		t.Fatalf("%d records held, want %d", held, records)
	}
	if got, lag := b.Stats().Records, int64(publishEvery-1)*int64(len(m.kgs())); got > records || got < records-lag {
		t.Fatalf("Stats.Records %d, want %d or up to %d fewer", got, records, lag)
	}
}

func head(es []entry) []entry {
	if len(es) > 6 {
		return es[:6]
	}
	return es
}

// sameBuffers checks that two buffers hold the same key groups, streams,
// watermarks and records.
func sameBuffers(t *testing.T, a, b *Buffer) {
	t.Helper()
	if ka, kb := a.KeyGroups(), b.KeyGroups(); !slices.Equal(ka, kb) {
		t.Fatalf("key groups %v vs %v", ka, kb)
	}
	for _, kg := range a.KeyGroups() {
		pa, pb := slices.Sorted(slices.Values(a.Producers(kg))), slices.Sorted(slices.Values(b.Producers(kg)))
		if !slices.Equal(pa, pb) {
			t.Fatalf("%v: producers %v vs %v", kg, pa, pb)
		}
		for _, p := range pa {
			if a.Low(p, kg) != b.Low(p, kg) || a.High(p, kg) != b.High(p, kg) {
				t.Fatalf("%v %v: low/high %d/%d vs %d/%d", p, kg, a.Low(p, kg), a.High(p, kg), b.Low(p, kg), b.High(p, kg))
			}
		}
		ra, err := replayAll(a, kg, nil)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := replayAll(b, kg, nil)
		if err != nil {
			t.Fatal(err)
		}
		ra, rb = byProducer(t, ra), byProducer(t, rb)
		if !slices.Equal(ra, rb) {
			t.Fatalf("%v: %d records %v vs %d %v", kg, len(ra), head(ra), len(rb), head(rb))
		}
	}
}

func mustNew(t testing.TB, cfg Config) *Buffer {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// withCRC returns a mark body followed by its checksum.
func withCRC(body []byte) []byte {
	out := slices.Clone(body)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// seeds is n, or fewer with -short.
func seeds(n uint64) uint64 {
	if testing.Short() {
		return max(1, n/5)
	}
	return n
}
