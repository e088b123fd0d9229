package tui

import (
	"bufio"
	"encoding/json"
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
// 10,000 events/s (6 M events, the recorded runs' mix re-stamped, as the
// coordinator writes them, with the schema version) once per test binary, and returns its path.
var (
	bigOnce sync.Once
	bigFile string
	bigErr  error
)

// writeSynthetic writes d of events at rate per second to path. Each
// event of the recorded mix is encoded once; a line is its seq and time
// followed by the rest of its encoding.
func writeSynthetic(tb testing.TB, path string, d time.Duration, rate int) error {
	src := loadEvents(tb, "run-kill.jsonl", "future.jsonl")
	var keep []events.Event
	for _, e := range src {
		if e.Kind != events.RunFinished && e.Kind != events.DrainStarted && e.Kind != events.InstanceDone {
			keep = append(keep, e)
		}
	}
	tails := make([][]byte, len(keep))
	for i, e := range keep {
		e.Seq, e.Time = 0, time.Time{}
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		// {"seq":0,"time":"0001-01-01T00:00:00Z","kind":... -> ,"kind":...
		const head = `{"seq":0,"time":"0001-01-01T00:00:00Z"`
		tails[i] = b[len(head):]
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n := int(d.Seconds()) * rate
	step := time.Second / time.Duration(rate)
	t := clock
	var buf []byte
	for i := 1; i <= n; i++ {
		t = t.Add(step)
		buf = append(buf[:0], `{"v":1,"seq":`...) // as events.WriteJSONL writes it with the schema version
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `,"time":"`...)
		buf = t.AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, '"')
		buf = append(buf, tails[i%len(tails)]...)
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
}

// BenchmarkViewSeek: one seek to a random position of the same recording
// and the frame that shows it, once the background fold has made its
// snapshots (its time is reported as fold-s, the heap it holds as
// snap-MiB). The worst case folds 16,383 events from the snapshot before.
// The budget is 200 ms.
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

// TestMain removes the benchmarks' 1.5 GB recording when they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if bigFile != "" {
		os.RemoveAll(filepath.Dir(bigFile))
	}
	os.Exit(code)
}
