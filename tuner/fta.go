package tuner

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// ftaFields are the columns of an FTA event_trace table.
const ftaFields = "event_id component_id node_id platform_id node_name event_type event_start_time event_stop_time event_end_reason"

// ftaInterval is one row: a node unavailable (up=false) or available from
// start to stop, epoch seconds.
type ftaInterval struct {
	node        int64
	up          bool
	start, stop int64
}

// ParseFTA reads a Failure Trace Archive event_trace table: tab-separated
// rows of 9 fields (ftaFields), padded with spaces; lines starting with '#'
// (the header) and blank lines are skipped. event_type is 0 (unavailable)
// or 1 (available), as in the FTA format; times are epoch seconds.
//
// Per node (node_id), rows are sorted by start and adjacent rows of the
// same type merged. An available interval followed by an unavailable one
// that starts within a minute of its end is a failure: its length is a time
// between failures, and the unavailable interval, if an available one
// follows it, a repair time. An available interval with nothing after it
// (the end of the trace, or a gap) is right-censored. An unavailable
// interval at the start of a node's trace is not a failure (the node was
// not yet up).
//
// Errors are one line: "PATH:LINE: what" for a bad row.
func ParseFTA(r io.Reader, path string) (*Trace, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var rows []ftaInterval
	tr := &Trace{Path: path}
	var fields [9][]byte
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, &LineError{Path: path, Line: line, Msg: "line longer than 64 KiB"}
		}
		if err != nil && err != io.EOF {
			return nil, malformed(path, "read: %v", err)
		}
		if len(b) == 0 && err == io.EOF {
			break
		}
		t := bytes.TrimSpace(b)
		if len(t) > 0 && t[0] != '#' {
			row, msg := parseFTARow(t, fields[:])
			if msg != "" {
				return nil, &LineError{Path: path, Line: line, Msg: msg}
			}
			rows = append(rows, row)
		}
		if err == io.EOF {
			break
		}
	}
	tr.Records = len(rows)
	if len(rows) == 0 {
		return nil, malformed(path, "no event rows (want an FTA event_trace table: %s)", ftaFields)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].node != rows[j].node {
			return rows[i].node < rows[j].node
		}
		return rows[i].start < rows[j].start
	})
	// Merge adjacent rows of the same type within a node.
	merged := rows[:1]
	for _, r := range rows[1:] {
		last := &merged[len(merged)-1]
		if r.node == last.node && r.up == last.up && r.start <= last.stop {
			last.stop = max(last.stop, r.stop)
			continue
		}
		merged = append(merged, r)
	}
	const tol = 60 // s: a failure starts within a minute of the up interval's end
	const floor = 1
	tr.First, tr.Last = 1<<62, -1<<62
	failedNodes := map[int64]bool{}
	for i, r := range merged {
		var next *ftaInterval
		if i+1 < len(merged) && merged[i+1].node == r.node {
			next = &merged[i+1]
		}
		contiguous := next != nil && next.start >= r.stop-tol && next.start <= r.stop+tol
		if r.up {
			if contiguous && !next.up {
				tr.Up = append(tr.Up, max(float64(r.stop-r.start), floor))
				tr.First, tr.Last = min(tr.First, next.start), max(tr.Last, next.start)
				failedNodes[r.node] = true
			} else if r.stop > r.start {
				tr.UpCensored = append(tr.UpCensored, float64(r.stop-r.start))
			}
			continue
		}
		prevUp := i > 0 && merged[i-1].node == r.node && merged[i-1].up && r.start <= merged[i-1].stop+tol
		if prevUp && contiguous && next.up {
			tr.Repair = append(tr.Repair, max(float64(r.stop-r.start), floor))
		}
	}
	tr.Nodes = len(failedNodes)
	if len(tr.Up) == 0 {
		tr.First, tr.Last = 0, 0
	}
	return tr, nil
}

// parseFTARow parses one non-blank, non-comment line; msg is empty if ok.
func parseFTARow(line []byte, f [][]byte) (ftaInterval, string) {
	if n := bytes.Count(line, []byte{'\t'}) + 1; n != len(f) {
		return ftaInterval{}, fmt.Sprintf("%d tab-separated fields, want %d (%s)", n, len(f), ftaFields)
	}
	for i := range f {
		j := bytes.IndexByte(line, '\t')
		if j < 0 {
			j = len(line)
		}
		f[i] = bytes.TrimSpace(line[:j])
		line = line[min(j+1, len(line)):]
	}
	num := func(name string, b []byte) (int64, string) {
		v, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil || v < 0 || v > 1<<40 {
			return 0, fmt.Sprintf("%s %s: want an integer in 0..2^40", name, quote(string(b)))
		}
		return v, ""
	}
	var r ftaInterval
	var msg string
	if r.node, msg = num("node_id", f[2]); msg != "" {
		return r, msg
	}
	switch string(f[5]) {
	case "0":
	case "1":
		r.up = true
	default:
		return r, fmt.Sprintf("event_type %s: want 0 (unavailable) or 1 (available)", quote(string(f[5])))
	}
	if r.start, msg = num("event_start_time", f[6]); msg != "" {
		return r, msg
	}
	if r.stop, msg = num("event_stop_time", f[7]); msg != "" {
		return r, msg
	}
	if r.stop < r.start {
		return r, fmt.Sprintf("event_stop_time %d is before event_start_time %d", r.stop, r.start)
	}
	return r, ""
}
