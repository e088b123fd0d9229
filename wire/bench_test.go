package wire

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"spate/job"
)

const benchBatch = 1024 // records per batch

// benchRecords is one batch of the default job's traffic: 10-byte keys
// spread over 128 key groups, times a few ms apart, small values, and
// dataLen bytes of operator payload.
type benchRecords struct {
	p    []job.Producer
	kg   []job.KeyGroup
	seq  []uint64
	recs []job.Record
}

func makeBenchRecords(producers, dataLen int) *benchRecords {
	br := &benchRecords{}
	next := map[uint64]uint64{}
	data := bytes.Repeat([]byte{0xab}, dataLen)
	for i := range benchBatch {
		key := fmt.Appendf(nil, "key-%06d", (i*7919)%100000) // 10 bytes
		kg := job.GroupOf(key, job.DefaultGroups)
		p := job.MakeProducer(0, i%producers)
		k := batchKey(p, kg)
		br.p = append(br.p, p)
		br.kg = append(br.kg, kg)
		br.seq = append(br.seq, next[k])
		next[k]++
		br.recs = append(br.recs, job.Record{Key: key, Time: 1_700_000_000_000 + int64(i*3), Value: int64(i % 100), Data: data})
	}
	return br
}

// reportPerRecord reports wall time and thread CPU time per record (the
// latter is what to compare on a shared machine).
func reportPerRecord(b *testing.B, cpu0 time.Duration) {
	records := float64(b.N * benchBatch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
	if cpu := threadCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/records, "cpu-ns/record")
	}
}

var benchCases = []struct {
	name      string
	producers int
	dataLen   int
}{
	{"source", 1, 0},             // one source partition to a keyed operator
	{"keyed/data16", 64, 16},     // a keyed operator's output: many producers, a small payload
	{"interleaved/data0", 16, 0}, // many runs, no payload
}

// BenchmarkAppendEncode measures building and encoding a batch, per record.
func BenchmarkAppendEncode(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			br := makeBenchRecords(c.producers, c.dataLen)
			var bb BatchBuilder
			var dst []byte
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for b.Loop() {
				bb.Reset()
				for i := range br.recs {
					bb.Append(br.p[i], br.kg[i], br.seq[i], br.recs[i])
				}
				dst = bb.Encode(dst[:0])
			}
			reportPerRecord(b, cpu0)
			b.ReportMetric(float64(len(dst))/benchBatch, "bytes/record")
			b.ReportMetric(float64(benchBatch)/float64(bb.Runs()), "records/run")
			b.SetBytes(int64(len(dst)))
		})
	}
}

// BenchmarkDecodeBatch measures decoding a batch, per record, with a
// callback that touches every field.
func BenchmarkDecodeBatch(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			br := makeBenchRecords(c.producers, c.dataLen)
			var bb BatchBuilder
			for i := range br.recs {
				bb.Append(br.p[i], br.kg[i], br.seq[i], br.recs[i])
			}
			payload := bb.Encode(nil)
			var sink int64
			fn := func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
				sink += int64(p) + int64(kg) + int64(seq) + rec.Time + rec.Value + int64(len(rec.Key)+len(rec.Data))
				return nil
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for b.Loop() {
				if err := DecodeBatch(payload, fn); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRecord(b, cpu0)
			_ = sink
		})
	}
}

// BenchmarkFrameRoundTrip measures writing and reading one batch frame
// through an in-memory pipe of bytes.
func BenchmarkFrameRoundTrip(b *testing.B) {
	br := makeBenchRecords(1, 0)
	var bb BatchBuilder
	for i := range br.recs {
		bb.Append(br.p[i], br.kg[i], br.seq[i], br.recs[i])
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	src := bytes.NewReader(nil)
	r := NewReader(src, 0)
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := w.WriteBatch(&bb); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		src.Reset(buf.Bytes())
		if _, _, err := r.ReadFrame(); err != nil {
			b.Fatal(err)
		}
		if _, _, err := r.ReadFrame(); err != io.EOF {
			b.Fatal(err)
		}
		r.err = nil
	}
}
