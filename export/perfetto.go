package export

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"spate/chaos"
	"spate/events"
)

// TraceEvent is one event of the Chrome trace-event format (the "JSON
// object format"): ph is its phase (X complete, i instant, C counter, M
// metadata), ts and dur are microseconds, pid and tid name its track.
type TraceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	S    string         `json:"s,omitempty"` // scope of an instant event: t (thread), p, g
	Args map[string]any `json:"args,omitempty"`
}

// Trace is the file: the events and the unit the viewer shows.
type Trace struct {
	TraceEvents     []TraceEvent `json:"traceEvents"`
	DisplayTimeUnit string       `json:"displayTimeUnit"`
}

// The processes of the trace: the job's instances, one thread each (a
// second one where spans of an instance overlap without nesting), and the
// cluster's own tracks.
const (
	pidInstances = 1
	pidCluster   = 2
)

// Perfetto writes the run in dir as Chrome trace-event JSON to w. Times
// are microseconds since the job started. It writes nothing if the trace
// would break the format's rules (ValidateJSON).
func Perfetto(dir string, w io.Writer) error {
	t, err := BuildTrace(dir)
	if err != nil {
		return err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := ValidateJSON(b); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// span is a complete event before it is given a thread.
type span struct {
	track      string
	name, cat  string
	start, end float64 // ms since the job started
	args       map[string]any
	depth      int // 0 for an outer span, 1 for a part inside it
}

// BuildTrace builds the trace of the run in dir.
func BuildTrace(dir string) (*Trace, error) {
	r, err := chaos.BuildReport(dir, nil, chaos.Verify{})
	if err != nil {
		return nil, err
	}
	evs, _, err := chaos.ReadEvents(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	var spans []span
	for _, c := range r.Series.Checkpoints {
		kind := "delta"
		if c.Full {
			kind = "full"
		}
		args := map[string]any{"id": c.ID, "kind": kind}
		if c.Bytes > 0 {
			args["bytes"], args["raw_bytes"], args["keys"] = c.Bytes, c.RawBytes, c.Keys
		}
		spans = append(spans, span{track: c.Instance, name: fmt.Sprintf("checkpoint %d (%s)", c.ID, kind), cat: "checkpoint", start: c.StartMs, end: c.EndMs, args: args})
		if c.CaptureMs > c.StartMs {
			spans = append(spans, span{track: c.Instance, name: "capture", cat: "checkpoint", start: c.StartMs, end: c.CaptureMs, depth: 1})
		}
	}
	for _, rc := range r.Recoveries {
		start, end := rc.DetectedMs, rc.DetectedMs+rc.TotalMs
		for _, ph := range rc.Phases {
			start, end = math.Min(start, ph.StartMs), math.Max(end, ph.EndMs)
		}
		spans = append(spans, span{track: rc.Instance, name: "recovery", cat: "recovery", start: start, end: end,
			args: map[string]any{"from": rc.From, "to": rc.To, "checkpoint": rc.Checkpoint, "replayed": rc.Replayed, "done": rc.Done, "total_ms": rc.TotalMs}})
		for _, ph := range rc.Phases {
			spans = append(spans, span{track: rc.Instance, name: ph.Name, cat: "recovery", start: ph.StartMs, end: ph.EndMs, depth: 1})
		}
	}
	for _, f := range r.Faults {
		name := f.Verb
		if f.Target != "" {
			name += " " + f.Target
		}
		spans = append(spans, span{track: "\x00faults", name: name, cat: "fault", start: f.StartMs, end: f.EndMs,
			args: map[string]any{"id": f.ID, "nodes": strings.Join(f.Nodes, ","), "open": f.Open}})
	}
	var instants []TraceEvent
	for _, rs := range r.Rescales {
		end := rs.DoneMs
		if end < 0 {
			end = r.DurationMs
		}
		spans = append(spans, span{track: "\x01rescales", name: fmt.Sprintf("rescale %d: %s %d→%d", rs.ID, rs.Op, rs.From, rs.To), cat: "rescale",
			start: rs.PlannedMs, end: end, args: map[string]any{"mode": rs.Mode, "pause_ms": rs.PauseMs, "bytes": rs.Bytes, "done": rs.DoneMs >= 0}})
		for _, st := range rs.Steps {
			args := map[string]any{"rescale": rs.ID}
			if st.Range != "" {
				args["range"] = st.Range
			}
			if st.Instance != "" {
				args["instance"] = st.Instance
			}
			instants = append(instants, TraceEvent{Name: "rescale " + st.Name, Cat: "rescale", Ph: "i", Ts: us(st.Ms), S: "t", Args: args})
		}
	}

	// The format has no time before 0 and no negative durations: a span
	// that the report dates before the job's start (a checkpoint's start
	// is its completion less its total time) or that ends before it
	// starts is cut to fit.
	for i := range spans {
		spans[i].start = math.Max(spans[i].start, 0)
		spans[i].end = math.Max(spans[i].end, spans[i].start)
	}
	for i := range instants {
		instants[i].Ts = math.Max(instants[i].Ts, 0)
	}
	t := &Trace{DisplayTimeUnit: "ms", TraceEvents: []TraceEvent{}}
	meta := func(name string, pid, tid int, args map[string]any) {
		t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: name, Ph: "M", Pid: pid, Tid: tid, Args: args})
	}
	meta("process_name", pidInstances, 0, map[string]any{"name": "instances"})
	meta("process_sort_index", pidInstances, 0, map[string]any{"sort_index": 1})
	meta("process_name", pidCluster, 0, map[string]any{"name": "cluster"})
	meta("process_sort_index", pidCluster, 0, map[string]any{"sort_index": 0})

	// Every instance that was placed has a track, even a quiet one.
	tracks := map[string]bool{}
	for _, e := range evs {
		if e.Kind == events.InstancePlaced && e.Instance != "" {
			tracks[e.Instance] = true
		}
	}
	for _, s := range spans {
		tracks[s.track] = true
	}
	names := make([]string, 0, len(tracks))
	for n := range tracks {
		names = append(names, n)
	}
	sort.Strings(names) // \x00faults and \x01rescales first
	lanes := assignLanes(spans)
	tids := map[string]int{} // track and lane -> tid
	next := map[int]int{pidInstances: 1, pidCluster: 1}
	tid := func(track string, lane int) (int, int) {
		pid := pidInstances
		label := track
		switch track {
		case "\x00faults":
			pid, label = pidCluster, "faults"
		case "\x01rescales":
			pid, label = pidCluster, "rescales"
		}
		key := fmt.Sprintf("%s\x00%d", track, lane)
		if id, ok := tids[key]; ok {
			return pid, id
		}
		id := next[pid]
		next[pid]++
		tids[key] = id
		if lane > 0 {
			label = fmt.Sprintf("%s (overlapping %d)", label, lane)
		}
		meta("thread_name", pid, id, map[string]any{"name": label})
		meta("thread_sort_index", pid, id, map[string]any{"sort_index": id})
		return pid, id
	}
	for _, n := range names {
		tid(n, 0)
	}
	for i, s := range spans {
		pid, id := tid(s.track, lanes[i])
		d := us(s.end) - us(s.start)
		t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: s.name, Cat: s.cat, Ph: "X", Ts: us(s.start), Dur: &d, Pid: pid, Tid: id, Args: s.args})
	}
	_, rtid := tid("\x01rescales", 0)
	for _, e := range instants {
		e.Pid, e.Tid = pidCluster, rtid
		t.TraceEvents = append(t.TraceEvents, e)
	}
	for _, p := range r.Series.Throughput {
		t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: "throughput", Cat: "metrics", Ph: "C", Ts: math.Max(us(p.Ms), 0), Pid: pidCluster,
			Args: map[string]any{"in_rps": math.Round(p.InRps), "out_rps": math.Round(p.OutRps)}})
	}
	for _, l := range r.Series.Lag {
		t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: "output lag (ms)", Cat: "metrics", Ph: "C", Ts: math.Max(us(l[0]), 0), Pid: pidCluster,
			Args: map[string]any{"lag_ms": l[1]}})
	}
	return t, nil
}

// us is ms as whole microseconds.
func us(ms float64) float64 { return math.Round(ms * 1000) }

// assignLanes gives each span a lane of its track such that the spans of
// a lane nest or are disjoint, as the trace viewers require: an outer
// span goes to the first lane where it does not overlap the outer spans
// already there, and its parts (depth 1, inside it) follow it.
func assignLanes(spans []span) []int {
	lanes := make([]int, len(spans))
	type iv struct{ start, end float64 }
	taken := map[string][][]iv{} // track -> lane -> outer spans
	order := make([]int, 0, len(spans))
	for i := range spans {
		if spans[i].depth == 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return spans[order[a]].start < spans[order[b]].start })
	outer := map[int]int{} // index of an outer span -> its lane
	for _, i := range order {
		s := spans[i]
		ls := taken[s.track]
		lane := -1
		for l, ivs := range ls {
			ok := true
			for _, x := range ivs {
				if us(s.start) < us(x.end) && us(x.start) < us(s.end) {
					ok = false
					break
				}
			}
			if ok {
				lane = l
				break
			}
		}
		if lane < 0 {
			lane = len(ls)
			ls = append(ls, nil)
		}
		ls[lane] = append(ls[lane], iv{s.start, s.end})
		taken[s.track] = ls
		outer[i] = lane
		lanes[i] = lane
	}
	// A part follows the outer span before it in the list (they are
	// appended together).
	last := -1
	for i := range spans {
		if spans[i].depth == 0 {
			last = i
			continue
		}
		if last >= 0 {
			lanes[i] = outer[last]
		}
	}
	return lanes
}
