package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"spate/job"
)

// outputLog is what the sinks wrote, as a watcher of their files saw it
// arrive: per key group of count, the new results and when they were
// seen. A result a sink writes again (a restored sink re-applying what
// its predecessor wrote after the checkpoint it restored, or every sink
// after a global rollback) is not new output: a key group's results come
// in count's firing order, (window start, key hash, key), so a result
// at or before the last new one of its key group has been written
// already. Rollup's results are not counted: each rollup group's window
// waits for every count instance's watermark, so they stall in any
// recovery, local or global, and say nothing about the key groups a
// failure did not touch.
//
// An outputLog is not safe for concurrent use; the watcher owns it until
// it stops.
type outputLog struct {
	groups int
	kgs    []kgOutput
}

// kgOutput is one key group's new results.
type kgOutput struct {
	// The last new result's place in the firing order.
	window   int64
	hash     uint64
	key      []byte
	seen     bool
	arrivals []arrival    // at each moment new results were seen, how many
	windows  []windowSeen // per window, in order: when its last new result was seen
}

// newer reports whether a result comes after the last new one in the
// firing order: window start, key hash, key.
func (k *kgOutput) newer(window int64, hash uint64, key []byte) bool {
	if window != k.window {
		return window > k.window
	}
	if hash != k.hash {
		return hash > k.hash
	}
	return bytes.Compare(key, k.key) > 0
}

type arrival struct {
	at time.Time
	n  int
}

type windowSeen struct {
	start int64 // ms of event time
	last  time.Time
}

func newOutputLog(groups int) *outputLog {
	return &outputLog{groups: groups, kgs: make([]kgOutput, groups)}
}

// add takes one line of a sink's output, seen at at. It reports whether
// the line was a result it could read (of either operator).
func (l *outputLog) add(at time.Time, line []byte) bool {
	op, key, window, ok := parseResult(line)
	if !ok {
		return false
	}
	if op != "count" {
		return true
	}
	h := job.Hash(key)
	k := &l.kgs[h%uint64(l.groups)]
	if k.seen && !k.newer(window, h, key) {
		return true // written already
	}
	k.window, k.hash, k.key, k.seen = window, h, append(k.key[:0], key...), true
	if n := len(k.arrivals); n > 0 && k.arrivals[n-1].at.Equal(at) {
		k.arrivals[n-1].n++
	} else {
		k.arrivals = append(k.arrivals, arrival{at: at, n: 1})
	}
	if n := len(k.windows); n > 0 && k.windows[n-1].start == window {
		k.windows[n-1].last = at
	} else {
		k.windows = append(k.windows, windowSeen{start: window, last: at})
	}
	return true
}

// parseResult reads the operator, key and window of a result line as
// job.Result.AppendJSON writes it; another spelling (an escaped key) goes
// through encoding/json.
func parseResult(line []byte) (op string, key []byte, window int64, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte(`{"op":"`))
	if found {
		var o, k []byte
		if o, rest, found = bytes.Cut(rest, []byte(`","key":"`)); found {
			if k, rest, found = bytes.Cut(rest, []byte(`","window":`)); found && bytes.IndexByte(k, '\\') < 0 && bytes.IndexByte(o, '\\') < 0 {
				i := 0
				for i < len(rest) && (rest[i] == '-' || rest[i] >= '0' && rest[i] <= '9') {
					i++
				}
				if w, err := strconv.ParseInt(string(rest[:i]), 10, 64); err == nil {
					switch string(o) { // no allocation for the job's own operators
					case "count":
						return "count", k, w, true
					case "rollup":
						return "rollup", k, w, true
					}
					return string(o), k, w, true
				}
			}
		}
	}
	var r job.Result
	if err := json.Unmarshal(line, &r); err != nil || r.Op == "" {
		return "", nil, 0, false
	}
	return r.Op, []byte(r.Key), r.Window, true
}

// sinkTail watches a run's sink files as they grow and feeds their new
// lines to an outputLog, stamped with the moment they were read. Its
// resolution is its period, and it runs in the benchmark's process,
// which the cluster starves of CPU now and then: a late read stamps a
// window late, alike in every configuration.
type sinkTail struct {
	dir   string // the run's output directory
	log   *outputLog
	files map[string]*tailFile
	buf   []byte
}

type tailFile struct {
	off     int64
	partial []byte // a line not yet ended
}

func newSinkTail(runDir string, groups int) *sinkTail {
	return &sinkTail{dir: filepath.Join(runDir, "output"), log: newOutputLog(groups), files: map[string]*tailFile{}, buf: make([]byte, 1<<20)}
}

// run reads the files every period until stop is closed, then closes
// done.
func (t *sinkTail) run(period time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(period) // sampling the output: a measurement, not a synchronisation
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			t.poll(now)
		}
	}
}

// poll reads what every sink file gained since the last poll.
func (t *sinkTail) poll(now time.Time) {
	ents, err := os.ReadDir(t.dir)
	if err != nil {
		return // not made yet
	}
	for _, e := range ents {
		name := e.Name()
		seg := strings.HasSuffix(name, ".jsonl.seg") && e.IsDir()
		if !strings.HasPrefix(name, "sink-") || (!strings.HasSuffix(name, ".jsonl") && !seg) {
			continue
		}
		tf := t.files[name]
		if tf == nil {
			tf = &tailFile{}
			t.files[name] = tf
		}
		if seg {
			t.readSegments(filepath.Join(t.dir, name), tf, now)
			continue
		}
		t.read(filepath.Join(t.dir, name), tf, now)
	}
}

// readSegments reads the segments a sink writing through a store (--store
// coord: stores.Log, kept by the coordinator in the run directory) has
// added since the last poll: each is a whole file named by its offset in
// the sink's output, stored at once (a rename), read once, in order; a
// segment beyond a gap waits for the one before it. A sink stores a
// segment at each of its syncs (its checkpoints), so this output is seen
// at the resolution of the checkpoint interval, not of the tail's period
// as a file's is: the untouched key groups' figures of a run with a store
// are coarser than those of one with dir.
func (t *sinkTail) readSegments(dir string, tf *tailFile, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	offs := map[int64]string{}
	for _, e := range ents {
		if n := e.Name(); len(n) == 16 {
			if off, err := strconv.ParseInt(n, 10, 64); err == nil {
				offs[off] = n
			}
		}
	}
	for {
		name, ok := offs[tf.off]
		if !ok {
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) == 0 {
			return
		}
		tf.off += int64(len(b))
		t.lines(b, tf, now)
	}
}

// lines feeds the complete lines of data, after what tf held of a line
// not yet ended, to the log; it keeps the rest in tf.
func (t *sinkTail) lines(data []byte, tf *tailFile, now time.Time) {
	_ = splitLines(&tf.partial, data, func(line []byte) error {
		t.log.add(now, line)
		return nil
	})
}

// splitLines calls fn for each line that data completes, in order (the
// first after what *partial held of a line not yet ended), without its
// newline, and keeps the rest of data in *partial. A line passed to fn
// is valid only during the call. It stops at fn's first error.
func splitLines(partial *[]byte, data []byte, fn func(line []byte) error) error {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			*partial = append(*partial, data...)
			return nil
		}
		line := data[:i]
		if len(*partial) > 0 {
			line = append(*partial, line...)
			*partial = (*partial)[:0]
		}
		data = data[i+1:]
		if err := fn(line); err != nil {
			return err
		}
	}
	return nil
}

func (t *sinkTail) read(path string, tf *tailFile, now time.Time) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(tf.off, io.SeekStart); err != nil {
		return
	}
	for {
		n, err := f.Read(t.buf)
		tf.off += int64(n)
		t.lines(t.buf[:n], tf, now)
		if err != nil || n == 0 {
			return
		}
	}
}
