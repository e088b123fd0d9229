package tui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"spate/events"
)

// bigRecording writes a synthetic events.jsonl of a 10-minute run at
// 10,000 events/s (6 M events, as the coordinator writes them, with the
// schema version) once per test binary, and returns its path.
var (
	bigOnce sync.Once
	bigFile string
	bigKept string // SPATE_VIEW_BENCH_FILE
	bigErr  error
)

// The kinds of the recorded runs by when a run has them.
var (
	// once, at the start, in the recorded order
	startKinds = map[events.Kind]bool{events.RunStarted: true, events.NodeSpawned: true, events.NodeJoined: true,
		events.InstancePlaced: true, events.JobStarted: true}
	// once, at the end
	endKinds = map[events.Kind]bool{events.DrainStarted: true, events.InstanceDone: true, events.RunFinished: true}
	// all the time: what most of a run is
	steadyKinds = map[events.Kind]bool{events.Metrics: true, events.Checkpoint: true, events.Trim: true,
		events.WindowFired: true}
)

// writeSynthetic writes d of events at rate per second to path, the
// recorded runs' events (run-kill and future) re-stamped as a run has
// them: the start's events, then the steady kinds (metrics, checkpoints,
// trims, windows) cycled, a throughput sample every 100 ms, the other
// kinds (a node lost and its recovery, a frame error, faults, a
// partition, a rescale, the interval tuner, a backup spill...) every 30
// s, and the end's events. Each event is encoded once; a line is its seq
// and time followed by the rest of its encoding.
func writeSynthetic(tb testing.TB, path string, d time.Duration, rate int) error {
	return writeSyntheticOdd(tb, path, d, rate, false)
}

// writeSyntheticOdd is writeSynthetic; with odd, the first event is a
// steady one, one line in 997 is not in the coordinator's shape (a space
// after the colon of its time), one in 1499 is stamped 150 ms before the
// line above it, and one throughput sample in 7 has another just under
// 100 ms before it (the chart keeps the later of the two).
func writeSyntheticOdd(tb testing.TB, path string, d time.Duration, rate int, odd bool) error {
	src := loadEvents(tb, "run-kill.jsonl", "future.jsonl")
	var start, steady, other, end, tput [][]byte
	for _, e := range src {
		e.Seq, e.Time = 0, time.Time{}
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		// {"seq":0,"time":"0001-01-01T00:00:00Z","kind":... -> ,"kind":...
		const head = `{"seq":0,"time":"0001-01-01T00:00:00Z"`
		tail := b[len(head):]
		switch {
		case startKinds[e.Kind]:
			start = append(start, tail)
		case endKinds[e.Kind]:
			end = append(end, tail)
		case steadyKinds[e.Kind]:
			steady = append(steady, tail)
		case e.Kind == events.Throughput:
			tput = append(tput, tail)
		default:
			other = append(other, tail)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n := int(d.Seconds()) * rate
	perSample, perOther := rate/10, 30*rate
	var buf []byte
	si, oi := 0, len(other)
	for i := 1; i <= n; i++ {
		t := clock.Add(time.Duration(int64(i) * int64(time.Second) / int64(rate)))
		var tail []byte
		switch {
		case odd && i == 1:
			tail = steady[0] // the first event is not the run's start
		case i <= len(start):
			tail = start[i-1]
		case i > n-len(end):
			tail = end[i-1-(n-len(end))]
		case i%perSample == 0, odd && i%(7*perSample) == perSample-1:
			tail = tput[(i/perSample)%len(tput)]
		case i%perOther == 0:
			oi = 0
			fallthrough
		case oi < len(other):
			tail = other[oi]
			oi++
		default:
			tail = steady[si%len(steady)]
			si++
		}
		at := t
		if odd && i%1499 == 0 {
			at = t.Add(-150 * time.Millisecond)
		}
		buf = append(buf[:0], `{"v":1,"seq":`...) // as events.WriteJSONL writes it with the schema version
		buf = strconv.AppendInt(buf, int64(i), 10)
		if odd && i%997 == 0 {
			buf = append(buf, `,"time": "`...)
		} else {
			buf = append(buf, `,"time":"`...)
		}
		buf = at.AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, '"')
		buf = append(buf, tail...)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func bigPath(b *testing.B) string {
	b.Helper()
	if testing.Short() {
		b.Skip("the 6 M-event recording takes a minute to fold: not with -short")
	}
	bigOnce.Do(func() {
		if keep := os.Getenv("SPATE_VIEW_BENCH_FILE"); keep != "" {
			// A file kept between runs (for the medians of several): made
			// once, then reused as it is.
			if _, err := os.Stat(keep); err != nil {
				bigErr = writeSynthetic(b, keep, 10*time.Minute, 10000)
			}
			bigKept = keep
			return
		}
		dir, err := os.MkdirTemp("", "spate-view-bench-")
		if err != nil {
			bigErr = err
			return
		}
		bigFile = filepath.Join(dir, "events.jsonl")
		bigErr = writeSynthetic(b, bigFile, 10*time.Minute, 10000)
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	if bigKept != "" {
		return bigKept
	}
	return bigFile
}

// BenchmarkViewOpen: spate view of a 10-minute run at 10,000 events/s (6 M
// events) until its first frame at 160x48: read the file, index every line,
// build the model and render. The budget is 2 s.
func BenchmarkViewOpen(b *testing.B) {
	path := bigPath(b)
	var size int64
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	b.SetBytes(size)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		rec, err := openRecording(path)
		if err != nil {
			b.Fatal(err)
		}
		m, err := newViewModel(rec, ViewOptions{Plain: true})
		if err != nil {
			b.Fatal(err)
		}
		m.Update(tea160x48)
		_ = m.View()
		if rec.len() != 6_000_000 {
			b.Fatalf("%d events", rec.len())
		}
		rec.close()
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkViewSeek: one seek to a random position of the same recording
// and the frame that shows it, once the background fold has made its
// snapshots (its time is reported as fold-s, the heap it holds as
// snap-MiB). A quarter of the seeks are to a snapshot's last position:
// skimmed over 16,383 events from the snapshot before (stateAt folds
// every event only within skimOver of it). The budget is 200 ms.
func BenchmarkViewSeek(b *testing.B) {
	path := bigPath(b)
	rec, err := openRecording(path)
	if err != nil {
		b.Fatal(err)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	defer rec.close()
	rec.buildSnapshots()
	fold := time.Since(start)
	if _, done, err := rec.progress(); !done || err != nil {
		b.Fatalf("fold: done %v, %v", done, err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	m, err := newViewModel(rec, ViewOptions{Plain: true})
	if err != nil {
		b.Fatal(err)
	}
	m.Update(tea160x48)
	rng := rand.New(rand.NewPCG(1, 2))
	var worst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		target := rng.IntN(rec.len())
		if i%4 == 0 { // a quarter of the seeks are the worst case
			target = (target/rec.every)*rec.every + rec.every - 1
		}
		t0 := time.Now()
		m.seek(target)
		_ = m.View()
		worst = max(worst, time.Since(t0))
		if m.rp.pos != min(target, rec.len()) {
			b.Fatalf("at %d, want %d", m.rp.pos, target)
		}
	}
	b.ReportMetric(fold.Seconds(), "fold-s")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "snap-MiB")
	b.ReportMetric(float64(worst)/float64(time.Millisecond), "worst-ms")
}

// BenchmarkViewSeekAhead: a seek ahead of the background fold, to 10%,
// 50%, 90% and the end of the same recording, with no snapshot but the
// start's (a seek at once after opening: the worst case, skimmed from the
// start), and the frame that shows it. The budget is 200 ms.
func BenchmarkViewSeekAhead(b *testing.B) {
	path := bigPath(b)
	rec, err := openRecording(path)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.close()
	m, err := newViewModel(rec, ViewOptions{Plain: true})
	if err != nil {
		b.Fatal(err)
	}
	m.Update(tea160x48)
	for _, pct := range []int{10, 50, 90, 100} {
		b.Run(fmt.Sprintf("at=%d%%", pct), func(b *testing.B) {
			target := rec.len() * pct / 100
			var worst, cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m.seek(0)
				b.StartTimer()
				t0, c0 := time.Now(), cpuTime()
				m.seek(target)
				_ = m.View()
				worst = max(worst, time.Since(t0))
				cpu += cpuTime() - c0
				if m.rp.pos != target || m.rp.err != nil {
					b.Fatalf("at %d, want %d (%v)", m.rp.pos, target, m.rp.err)
				}
			}
			b.ReportMetric(float64(worst)/float64(time.Millisecond), "worst-ms")
			b.ReportMetric(float64(cpu)/float64(b.N)/float64(time.Millisecond), "cpu-ms/op")
		})
	}
}

var tea160x48 = tea.WindowSizeMsg{Width: 160, Height: 48}

// BenchmarkViewFold: the background fold of one minute at 10,000 events/s
// (600,000 events), the snapshots included: the time until every seek is
// a snapshot's distance away.
func BenchmarkViewFold(b *testing.B) {
	path := filepath.Join(b.TempDir(), "events.jsonl")
	if err := writeSynthetic(b, path, time.Minute, 10000); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec, err := openRecording(path)
		if err != nil {
			b.Fatal(err)
		}
		rec.buildSnapshots()
		if n, done, err := rec.progress(); !done || err != nil || n != rec.len() {
			b.Fatalf("fold: %d, done %v, %v", n, done, err)
		}
		rec.close()
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/600000, "ns/event")
}

// TestMain removes the benchmarks' 1.5 GB recording when they are done
// (not one SPATE_VIEW_BENCH_FILE names).
func TestMain(m *testing.M) {
	code := m.Run()
	if bigFile != "" {
		os.RemoveAll(filepath.Dir(bigFile))
	}
	os.Exit(code)
}
