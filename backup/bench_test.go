package backup

import (
	"fmt"
	"testing"

	"spate/job"
)

// benchKeys are generator-like keys.
var benchKeys = func() [][]byte {
	ks := make([][]byte, 1024)
	for i := range ks {
		ks[i] = fmt.Appendf(nil, "k%06d", i*37)
	}
	return ks
}()

// benchAppend appends b.N records from producers to 128 key groups,
// trimming everything every 64Ki records as a checkpoint cycle would (so
// memory stays bounded and chunks are recycled).
func benchAppend(b *testing.B, producers int) {
	buf, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Close()
	const G = 128
	next := make([]uint64, producers*G)
	rec := job.Record{Time: 1_700_000_000_000}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := i % producers
		kg := (i / producers * 7) % G
		k := p*G + kg
		next[k]++
		rec.Key = benchKeys[i&1023]
		rec.Time++
		rec.Value = int64(i & 127)
		if err := buf.Append(job.Producer(p), job.KeyGroup(kg), next[k], rec); err != nil {
			b.Fatal(err)
		}
		if i&(1<<16-1) == 1<<16-1 {
			for k, n := range next {
				buf.Trim(job.Producer(k/G), job.KeyGroup(k%G), n)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}

// Two source partitions into 128 key groups.
func BenchmarkAppendSource(b *testing.B) { benchAppend(b, 2) }

// 128 producer key groups (a keyed upstream) into 128 key groups.
func BenchmarkAppendKeyed(b *testing.B) { benchAppend(b, 128) }

// benchReplay replays one key group of n records from 8 producers.
func benchReplay(b *testing.B, spill bool) {
	cfg := DefaultConfig()
	if spill {
		cfg = Config{MemLimit: 64 << 10, SpillDir: b.TempDir()}
	}
	buf, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Close()
	const n = 1 << 16
	for i := range n {
		p := job.Producer(i % 8)
		_ = buf.Append(p, 3, uint64(i/8+1), job.Record{Key: benchKeys[i&1023], Time: int64(i), Value: 1})
		if spill && i == n/2 {
			buf.Mark()
		}
	}
	if spill && !buf.Stats().Spilling {
		b.Fatal("not spilling")
	}
	after := map[job.Producer]uint64{0: 10, 1: 20}
	var sum int64
	fn := func(_ job.Producer, _ job.KeyGroup, _ uint64, r job.Record) error {
		sum += r.Value
		return nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	records := 0
	for records < b.N {
		before := sum
		if err := buf.Replay(3, after, fn); err != nil {
			b.Fatal(err)
		}
		records += int(sum - before)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
}

func BenchmarkReplay(b *testing.B)        { benchReplay(b, false) }
func BenchmarkReplaySpilled(b *testing.B) { benchReplay(b, true) }

// BenchmarkMark marks 64Ki new records of 128 key groups.
func BenchmarkMark(b *testing.B) {
	buf, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Close()
	next := make([]uint64, 128)
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		for i := range 1 << 16 {
			kg := i % 128
			next[kg]++
			_ = buf.Append(1, job.KeyGroup(kg), next[kg], job.Record{Key: benchKeys[i&1023], Time: int64(i)})
		}
		b.StartTimer()
		m := buf.Mark()
		b.SetBytes(int64(len(m)))
		b.StopTimer()
		for kg := range next {
			buf.Trim(1, job.KeyGroup(kg), next[kg])
		}
		b.StartTimer()
	}
}

// BenchmarkRestore rebuilds a buffer from a full mark of 128Ki records of
// 128 producers in 128 key groups and a delta of 32Ki more, as the restore
// of a keyed instance does. ns/record is per record restored.
func BenchmarkRestore(b *testing.B) {
	buf, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Close()
	next := make([]uint64, 128*128)
	data := []byte("k000042 7 1700000000000")
	appendN := func(n int) {
		for i := range n {
			p, kg := (i/128)%128, (i*7)%128
			next[p*128+kg]++
			rec := job.Record{Key: benchKeys[i&1023], Time: 1_700_000_000_000 + int64(i), Value: int64(i & 127), Data: data}
			if err := buf.Append(job.Producer(p), job.KeyGroup(kg), next[p*128+kg], rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	appendN(1 << 17)
	full, err := buf.MarkFull()
	if err != nil {
		b.Fatal(err)
	}
	appendN(1 << 15)
	chain := [][]byte{full, buf.Mark()}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := Restore(DefaultConfig(), chain)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(1<<17+1<<15)), "ns/record")
}
