package stores

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"spate/state"
)

// A sink's output file is append-only, and an object store has no append
// and no rename. Log keeps such a file in any state.Store as immutable
// segments, NAME.seg/OFFSET, where OFFSET (16 decimal digits) is the
// segment's first byte in the file: each Sync stores what was written
// since the previous one as one new object, written whole and never
// again. The file is the segments in offset order; ReadLog checks that
// they follow one another with no gap and no overlap. What bounds a
// file to its committed length is the output manifest, an object of its
// own written whole (coord/output.go).

// segSuffix ends the directory of a file's segments.
const segSuffix = ".seg/"

// SegmentName is the store name of the segment of file that starts at
// byte offset.
func SegmentName(file string, offset int64) string {
	return fmt.Sprintf("%s%s%016d", file, segSuffix, offset)
}

// ParseSegmentName splits a segment's store name into its file and its
// offset; ok is false for a name that is not a segment's.
func ParseSegmentName(name string) (file string, offset int64, ok bool) {
	i := strings.LastIndex(name, segSuffix)
	if i <= 0 {
		return "", 0, false
	}
	digits := name[i+len(segSuffix):]
	if len(digits) != 16 {
		return "", 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || off < 0 {
		return "", 0, false
	}
	return name[:i], off, true
}

// Log is an append-only file kept as segments in a Store. Write belongs
// to one goroutine (the sink's); Sync and Len may be called from any.
type Log struct {
	st   state.Store
	name string

	mu      sync.Mutex
	buf     []byte    // written since the last cut
	off     int64     // the file offset of buf[0]
	pending []segment // cut, not stored yet (a Sync failed): stored first, in order

	// syncing lets one Sync at a time in (segments are stored in order).
	// A channel, not a mutex: a Sync waiting behind one whose Put waits
	// for its store's answer (or its timeout) is then durably blocked,
	// and the simulation's virtual clock can move to that timeout.
	syncing chan struct{}
}

type segment struct {
	off  int64
	data []byte
}

// NewLog returns the log of file name in st, empty: each generation of a
// sink writes a file of its own, never one that exists.
func NewLog(st state.Store, name string) *Log {
	return &Log{st: st, name: name, syncing: make(chan struct{}, 1)}
}

// Write appends p; it is in memory until the next Sync.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	l.mu.Unlock()
	return len(p), nil
}

// Sync stores everything written so far: when it returns nil, the file's
// first Len bytes (as Len was when Sync began) are durable. A failed Sync
// keeps what it could not store, and the next one stores it first.
func (l *Log) Sync() error {
	l.syncing <- struct{}{}
	defer func() { <-l.syncing }()
	l.mu.Lock()
	if len(l.buf) > 0 {
		l.pending = append(l.pending, segment{off: l.off, data: l.buf})
		l.off += int64(len(l.buf))
		l.buf = nil
	}
	todo := l.pending
	l.mu.Unlock()
	for i, s := range todo {
		if err := l.st.Put(SegmentName(l.name, s.off), s.data); err != nil {
			l.mu.Lock()
			l.pending = l.pending[i:]
			l.mu.Unlock()
			return fmt.Errorf("sink output %s: %w", l.name, err)
		}
	}
	l.mu.Lock()
	l.pending = l.pending[len(todo):]
	l.mu.Unlock()
	return nil
}

// Close syncs.
func (l *Log) Close() error { return l.Sync() }

// Logs returns the files kept as segments in st (names as NewLog took
// them), each with its segments' store names in offset order, and the
// other names (plain files) as they are.
func Logs(st state.Store) (logs map[string][]string, plain []string, err error) {
	names, err := st.List("")
	if err != nil {
		return nil, nil, err
	}
	logs = map[string][]string{}
	for _, n := range names { // sorted: a file's segments in offset order
		if file, _, ok := ParseSegmentName(n); ok {
			logs[file] = append(logs[file], n)
		} else {
			plain = append(plain, n)
		}
	}
	return logs, plain, nil
}

// ReadLog returns the content of file from its segments in st (segs:
// their names, from Logs; nil: listed here). A gap or an overlap between
// two segments is an error naming them: the file cannot be trusted.
func ReadLog(st state.Store, file string, segs []string) ([]byte, error) {
	if segs == nil {
		all, err := st.List(file + segSuffix)
		if err != nil {
			return nil, err
		}
		for _, n := range all {
			if f, _, ok := ParseSegmentName(n); ok && f == file {
				segs = append(segs, n)
			}
		}
	}
	var out bytes.Buffer
	for _, n := range segs {
		_, off, ok := ParseSegmentName(n)
		if !ok {
			return nil, fmt.Errorf("%s: not a segment name", n)
		}
		if off != int64(out.Len()) {
			return nil, fmt.Errorf("sink output %s: segment %s starts at byte %d, but the segments before it end at %d", file, n, off, out.Len())
		}
		f, err := st.Open(n)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(&out, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("sink output %s: %w", file, err)
		}
	}
	return out.Bytes(), nil
}
