package job

import "fmt"

// Operator kinds of the built-in jobs.
const (
	KindSource = "source"
	KindCount  = "count"
	KindRollup = "rollup"
	KindSink   = "sink"
)

// Edge is one output port of an operator: records emitted on the port are
// routed by GroupOf(rec.Key) to the instance of To that owns that key group.
type Edge struct {
	To string `json:"to"`
}

// OpSpec is one operator of the dataflow graph.
type OpSpec struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Parallelism int    `json:"parallelism"`
	Outputs     []Edge `json:"outputs,omitempty"` // port i is Outputs[i]
}

// Spec is a job: its graph and the parameters that fix its results.
type Spec struct {
	Name     string   `json:"name"`
	Groups   int      `json:"groups"`    // G, number of key groups
	Window   int64    `json:"window_ms"` // tumbling window size, ms of event time
	Lateness int64    `json:"lateness_ms"`
	Rollups  int      `json:"rollup_groups"` // number of rollup groups, see GroupName
	Ops      []OpSpec `json:"ops"`
}

// Op returns the index of the operator named name, or -1.
func (s *Spec) Op(name string) int {
	for i, o := range s.Ops {
		if o.Name == name {
			return i
		}
	}
	return -1
}

// Inputs returns the indices of the operators that feed op i.
func (s *Spec) Inputs(i int) []int {
	var in []int
	for j, o := range s.Ops {
		for _, e := range o.Outputs {
			if e.To == s.Ops[i].Name {
				in = append(in, j)
			}
		}
	}
	return in
}

// Validate checks the graph: names unique, edges known, parallelism in range.
func (s *Spec) Validate() error {
	if s.Groups < 1 || s.Groups > 1<<15 {
		return fmt.Errorf("job %s: groups %d out of range 1..32768", s.Name, s.Groups)
	}
	if s.Window <= 0 {
		return fmt.Errorf("job %s: window must be positive", s.Name)
	}
	if s.Lateness < 0 {
		return fmt.Errorf("job %s: lateness must not be negative", s.Name)
	}
	seen := map[string]bool{}
	for _, o := range s.Ops {
		if (o.Kind == KindCount || o.Kind == KindRollup) && s.Rollups < 1 {
			return fmt.Errorf("job %s: rollup_groups must be positive", s.Name)
		}
		if seen[o.Name] {
			return fmt.Errorf("job %s: operator %q twice", s.Name, o.Name)
		}
		seen[o.Name] = true
		if o.Parallelism < 1 || (o.Kind != KindSource && o.Parallelism > s.Groups) {
			return fmt.Errorf("job %s: operator %s: parallelism %d out of range 1..%d", s.Name, o.Name, o.Parallelism, s.Groups)
		}
	}
	for _, o := range s.Ops {
		for _, e := range o.Outputs {
			if !seen[e.To] {
				return fmt.Errorf("job %s: operator %s: output to unknown operator %q", s.Name, o.Name, e.To)
			}
		}
	}
	return nil
}

// WindowCount is the default job:
//
//	source -> count (keyed by key) -> rollup (keyed by group(key)) -> sink
//	             \---------------------------------------------------> sink
//
// count sends every fired window to rollup (port 0) and to the sink (port 1);
// rollup sends its results to the sink (port 0).
func WindowCount(par map[string]int, windowMs, latenessMs int64) Spec {
	p := func(name string) int {
		if n, ok := par[name]; ok && n > 0 {
			return n
		}
		return 2
	}
	return Spec{
		Name:     "windowcount",
		Groups:   DefaultGroups,
		Window:   windowMs,
		Lateness: latenessMs,
		Rollups:  64,
		Ops: []OpSpec{
			{Name: "source", Kind: KindSource, Parallelism: p("source"), Outputs: []Edge{{To: "count"}}},
			{Name: "count", Kind: KindCount, Parallelism: p("count"), Outputs: []Edge{{To: "rollup"}, {To: "sink"}}},
			{Name: "rollup", Kind: KindRollup, Parallelism: p("rollup"), Outputs: []Edge{{To: "sink"}}},
			{Name: "sink", Kind: KindSink, Parallelism: p("sink")},
		},
	}
}

// Range is a contiguous, half-open range of key groups [Lo, Hi).
type Range struct {
	Lo KeyGroup `json:"lo"`
	Hi KeyGroup `json:"hi"`
}

func (r Range) Contains(g KeyGroup) bool { return g >= r.Lo && g < r.Hi }
func (r Range) String() string           { return fmt.Sprintf("[%d,%d)", r.Lo, r.Hi) }

// SplitRanges cuts the g key groups into n contiguous, near-equal ranges.
func SplitRanges(g, n int) []Range {
	out := make([]Range, n)
	for i := range n {
		out[i] = Range{Lo: KeyGroup(i * g / n), Hi: KeyGroup((i + 1) * g / n)}
	}
	return out
}

// Emitter receives an operator's output records on one of its output ports.
// from is the key group the record was computed from (its Producer unit).
// rec is borrowed for the duration of the call.
type Emitter interface {
	Emit(port int, from KeyGroup, rec Record)
}

// Keyed is one instance of a keyed operator. It is not safe for concurrent
// use: the runtime drives it from one goroutine.
type Keyed interface {
	// Process applies rec, which belongs to key group kg of this instance.
	Process(kg KeyGroup, rec Record, out Emitter)
	// Advance tells the instance that no record with an event time before
	// wm will come. It fires every window that ends at or before wm, in a
	// canonical order: by window end, then key (count: key hash, then key).
	Advance(wm int64, out Emitter)
}

// Reader reads one partition of a replayable source in order.
type Reader interface {
	// Next returns the next record. ok is false at the end of a finite
	// partition. The record's slices are valid until the next call.
	Next() (rec Record, ok bool, err error)
}

// NumberedReader is a Reader whose keys come from a fixed table (the
// generator's): NextNumbered is Next that also returns the number of the
// record's key in that table, in [0, Keys()). A number always comes with
// the same key. The oracle looks up the key of each number once, not the
// key of each record.
type NumberedReader interface {
	Reader
	NextNumbered() (rec Record, key int, ok bool, err error)
	Keys() int
}

// SourceClock decides lateness and the watermark of one source partition,
// deterministically from the partition's own records: the watermark is the
// largest event time seen minus the allowed lateness, and a record earlier
// than the watermark that precedes it is late (dropped at the source).
type SourceClock struct {
	Lateness int64
	max      int64
	started  bool
}

// Observe accounts rec's event time t and reports whether the record is late.
func (c *SourceClock) Observe(t int64) (late bool) {
	if c.started && t < c.max-c.Lateness {
		return true
	}
	if !c.started || t > c.max {
		c.max, c.started = t, true
	}
	return false
}

// Watermark is the partition's watermark after the records observed so far.
func (c *SourceClock) Watermark() int64 {
	if !c.started {
		return NoWatermark
	}
	return c.max - c.Lateness
}
