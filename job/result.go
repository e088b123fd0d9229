package job

// Result is one line of the job's output: a fired window of count (Key is
// the record key) or of rollup (Key is the rollup group). The sink writes it
// as one JSON line; verify compares it with the oracle's.
type Result struct {
	Op     string   `json:"op"`
	Key    string   `json:"key"`
	Window int64    `json:"window"` // window start, ms of event time
	Count  int64    `json:"count"`
	Sum    int64    `json:"sum"`
	Total  int64    `json:"total,omitempty"` // count: lifetime count of the key up to and including this window
	Top    []TopKey `json:"top,omitempty"`   // rollup: the 3 keys with the highest count (ties by key)
}

// TopKey is one entry of a rollup's top list.
type TopKey struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// ID identifies a result: the sink writes each ID exactly once.
func (r *Result) ID() ResultID { return ResultID{Op: r.Op, Key: r.Key, Window: r.Window} }

// ResultID is the identity of a result: (operator, key, window).
type ResultID struct {
	Op     string `json:"op"`
	Key    string `json:"key"`
	Window int64  `json:"window"`
}
