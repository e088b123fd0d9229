package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"spate/events"
	"spate/spacetime"
)

// ReportSchemaVersion is report.json's "v"; schemas/report.schema.json in
// the repository describes it. Adding a field keeps the version; changing
// or removing one bumps it.
const ReportSchemaVersion = 1

// Report is report.json: the verdict of a scenario run and what happened
// in it. Times *_ms are milliseconds since the job started.
type Report struct {
	V             int               `json:"v"` // ReportSchemaVersion
	Scenario      string            `json:"scenario"`
	File          string            `json:"file,omitempty"`
	Run           string            `json:"run"`
	Dir           string            `json:"dir"`
	FT            string            `json:"ft,omitempty"`
	Break         string            `json:"break,omitempty"` // the protocol's broken variants on (spate up --break)
	Verdict       string            `json:"verdict"`         // pass or fail
	Windows       int               `json:"windows"`
	Lost          int               `json:"lost"`
	Duplicated    int               `json:"duplicated"`
	Wrong         int               `json:"wrong"`
	LostInstances []string          `json:"lost_instances,omitempty"` // instances the run ended without
	Records       uint64            `json:"records"`                  // read by the sources
	JobStarted    time.Time         `json:"job_started"`
	Finished      time.Time         `json:"finished"`
	DurationMs    float64           `json:"duration_ms"`
	Checks        []CheckResult     `json:"checks"`
	Faults        []FaultSpan       `json:"faults"`
	Actions       []ActionLog       `json:"actions,omitempty"` // what the runner sent, refused ones included
	Recoveries    []Recovery        `json:"recoveries"`
	Checkpoints   CheckpointStats   `json:"checkpoints"`
	Throughput    ThroughputSummary `json:"throughput"`
	Latency       LatencySummary    `json:"latency"`
	Notes         []string          `json:"notes,omitempty"`  // error events and the runner's remarks
	Limits        []Limit           `json:"limits,omitempty"` // the checks' limits, as the charts draw them
	Rescales      []Rescale         `json:"rescales,omitempty"`
	Series        Series            `json:"series"`
	// Losses are the space-time models of the run's losses of a node,
	// which the HTML draws; report.json leaves them out.
	Losses []spacetime.Loss `json:"-"`
}

// Limit is a check's limit in the unit of the chart it is drawn on:
// max_lag on the output lag (ms), max_recovery on each recovery (ms),
// max_checkpoint on the checkpoint durations (ms), min_throughput on the
// input rate (records/s).
type Limit struct {
	Check string  `json:"check"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"` // ms or records/s
}

// Rescale is one rescale of an operator, from its plan to done, with its
// steps in order.
type Rescale struct {
	ID        int64         `json:"id"`
	Op        string        `json:"op"`
	From      int           `json:"from"`
	To        int           `json:"to"`
	Mode      string        `json:"mode"` // eds or restart
	Why       string        `json:"why,omitempty"`
	PlannedMs float64       `json:"planned_ms"`
	DoneMs    float64       `json:"done_ms"` // -1: never done
	PauseMs   float64       `json:"pause_ms"`
	Bytes     int64         `json:"bytes"`
	Steps     []RescaleStep `json:"steps"`
}

// RescaleStep is one event of a rescale: planned, staged, captured,
// moved, rerouted or done, of one slice (Range) where it is about one.
type RescaleStep struct {
	Name     string  `json:"name"`
	Ms       float64 `json:"ms"`
	Instance string  `json:"instance,omitempty"`
	Range    string  `json:"range,omitempty"`
	Bytes    int64   `json:"bytes,omitempty"`
}

// Verdicts.
const (
	VerdictPass = "pass"
	VerdictFail = "fail"
)

// FaultSpan is one fault, from fault_started to fault_ended (or to the
// run's end: Open).
type FaultSpan struct {
	ID      int               `json:"id"`
	Verb    string            `json:"verb"`
	Target  string            `json:"target,omitempty"`
	Nodes   []string          `json:"nodes,omitempty"`
	Args    map[string]string `json:"args,omitempty"`
	Start   time.Time         `json:"start"`
	End     time.Time         `json:"end"`
	StartMs float64           `json:"start_ms"`
	EndMs   float64           `json:"end_ms"`
	Open    bool              `json:"open,omitempty"` // never ended: counted to the run's end
}

// ActionLog is one action the runner sent.
type ActionLog struct {
	AtMs   float64 `json:"at_ms"`   // when it was sent
	PlanMs float64 `json:"plan_ms"` // when the plan said
	Action string  `json:"action"`
	OK     bool    `json:"ok"`
	Text   string  `json:"text"` // the cluster's answer or why it was refused
}

// Recovery is one lost instance (or, with --ft global, the whole job) from
// detection to caught up.
type Recovery struct {
	Instance   string  `json:"instance"` // "job": a global rollback
	From       string  `json:"from"`     // the lost node
	To         string  `json:"to,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	Checkpoint int64   `json:"checkpoint"` // restored from (0: from the start)
	Fellback   bool    `json:"fellback,omitempty"`
	Replayed   int64   `json:"replayed"` // records replayed to it
	DetectedMs float64 `json:"detected_ms"`
	Done       bool    `json:"done"`
	// Superseded: lost again before it caught up. The next recovery of
	// the instance takes over (the coordinator times it from this one's
	// detection), so the checks judge that one, not this.
	Superseded bool    `json:"superseded,omitempty"`
	TotalMs    float64 `json:"total_ms"` // detection to caught up, to the next loss if superseded, or to the run's end if never
	Phases     []Phase `json:"phases"`
}

// Phase is one part of a recovery: detect (fault to detection, when a
// fault explains it), place, restore, catch_up.
type Phase struct {
	Name    string  `json:"name"`
	StartMs float64 `json:"start_ms"`
	EndMs   float64 `json:"end_ms"`
}

// CheckpointStats summarises the checkpoint events.
type CheckpointStats struct {
	Count       int       `json:"count"`
	Full        int       `json:"full"`
	Delta       int       `json:"delta"`
	Global      int       `json:"global,omitempty"`
	RawBytes    int64     `json:"raw_bytes"`
	StoredBytes int64     `json:"stored_bytes"`
	CaptureUs   Quantiles `json:"capture_us"`
	PersistUs   Quantiles `json:"persist_us"`
	TotalUs     Quantiles `json:"total_us"`
}

// Quantiles of a sample.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// ThroughputSummary summarises the throughput events.
type ThroughputSummary struct {
	Samples    int     `json:"samples"`
	MeanInRps  float64 `json:"mean_in_rps"`
	MaxInRps   float64 `json:"max_in_rps"`
	MeanOutRps float64 `json:"mean_out_rps"`
	RecordsPS  float64 `json:"records_per_s"` // records read per second of job time
}

// LatencySummary summarises the output lag samples of run.json.
type LatencySummary struct {
	Samples int     `json:"samples"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// Series are the samples the HTML draws.
type Series struct {
	Throughput  []RatePoint      `json:"throughput"`
	Lag         [][2]float64     `json:"lag"` // (ms, lag ms)
	Checkpoints []CheckpointSpan `json:"checkpoints"`
	Backup      []BackupPoint    `json:"backup,omitempty"`
	Intervals   []IntervalPoint  `json:"intervals,omitempty"`
}

// BackupPoint is what an instance's upstream backup held at a moment:
// after a trim (Held: memory and spill together), at a change of its
// spilling (Mem and Spill), or as it filled up or drained (Full, with the
// pause it caused).
type BackupPoint struct {
	Ms       float64 `json:"ms"`
	Instance string  `json:"instance"`
	Kind     string  `json:"kind"` // trim, spill, full, unblocked
	Held     int64   `json:"held_bytes"`
	Mem      int64   `json:"mem_bytes,omitempty"`
	Spill    int64   `json:"spill_bytes,omitempty"`
	Spilling bool    `json:"spilling,omitempty"`
	PausedMs float64 `json:"paused_ms,omitempty"`
}

// IntervalPoint is one checkpoint-interval decision of the tuner.
type IntervalPoint struct {
	Ms         float64 `json:"ms"`
	Instance   string  `json:"instance"`
	IntervalMs float64 `json:"interval_ms"`
	OptimumMs  float64 `json:"optimum_ms,omitempty"`
	Changed    bool    `json:"changed,omitempty"`
	Reason     string  `json:"reason,omitempty"`
}

// RatePoint is one throughput sample.
type RatePoint struct {
	Ms     float64 `json:"ms"`
	InRps  float64 `json:"in_rps"`
	OutRps float64 `json:"out_rps"`
}

// CheckpointSpan is one checkpoint of one instance: capture from StartMs
// to CaptureMs, persist to EndMs (the completion event's time).
type CheckpointSpan struct {
	Instance  string  `json:"instance"`
	ID        int64   `json:"id"`
	Full      bool    `json:"full"`
	StartMs   float64 `json:"start_ms"`
	CaptureMs float64 `json:"capture_ms"`
	EndMs     float64 `json:"end_ms"`
	Keys      int64   `json:"keys,omitempty"`
	RawBytes  int64   `json:"raw_bytes,omitempty"`
	Bytes     int64   `json:"bytes,omitempty"` // stored
}

// runJSON is the part of run.json (coord.RunInfo) a report reads.
type runJSON struct {
	Run       string            `json:"run"`
	Started   time.Time         `json:"started"`
	JobStart  *time.Time        `json:"job_started"`
	Finished  *time.Time        `json:"finished"`
	Positions map[string]uint64 `json:"positions"`
	Lag       [][2]int64        `json:"lag_ms"`
	Config    struct {
		FT    string `json:"ft"`
		Break string `json:"break"`
	} `json:"config"`
}

// ReadEvents reads a run's events.jsonl. A bad line is an error naming it,
// except a last line cut short without its newline (the writer was
// stopped), which is dropped and reported in the second result.
func ReadEvents(path string) ([]events.Event, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var out []events.Event
	var note string
	names := events.Names{}
	lines := bytes.Split(data, []byte("\n"))
	for i, raw := range lines {
		b := bytes.TrimSpace(raw)
		if len(b) == 0 {
			continue
		}
		e, err := events.DecodeLine(b, names)
		if err != nil {
			if i == len(lines)-1 { // no newline after it: cut short
				note = fmt.Sprintf("%s:%d: a cut-short last line was dropped", path, i+1)
				break
			}
			return nil, "", fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		out = append(out, e)
	}
	return out, note, nil
}

// BuildReport reads a run directory (events.jsonl and run.json), evaluates
// sc's checks (exactly_once when sc is nil) against it and v, and returns
// the report. It writes nothing.
func BuildReport(dir string, sc *Scenario, v Verify) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no run.json: not a run directory", dir)
		}
		return nil, err
	}
	var ri runJSON
	if err := json.Unmarshal(b, &ri); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, "run.json"), err)
	}
	evs, note, err := ReadEvents(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	r := &Report{V: ReportSchemaVersion, Run: ri.Run, Dir: dir, FT: ri.Config.FT, Break: ri.Config.Break, Windows: v.Windows, Lost: v.Lost, Duplicated: v.Duplicated, Wrong: v.Wrong,
		Faults: []FaultSpan{}, Recoveries: []Recovery{}, Checks: []CheckResult{}}
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	checks := []Check{{Name: CheckExactlyOnce}}
	if sc != nil {
		r.Scenario, r.File, checks = sc.Name, sc.File, sc.Checks
	}
	r.JobStarted, r.Finished = runSpan(&ri, evs)
	r.DurationMs = ms(r.Finished.Sub(r.JobStarted))
	for _, p := range ri.Positions {
		r.Records += p
	}
	b2 := &builder{r: r, origin: r.JobStarted, ft: ri.Config.FT}
	for _, e := range evs {
		b2.add(e)
	}
	b2.finish()
	r.Losses = spacetime.Losses(evs)
	for _, l := range ri.Lag {
		r.Series.Lag = append(r.Series.Lag, [2]float64{float64(l[0]), float64(l[1])})
	}
	r.Latency = latencySummary(ri.Lag)
	if r.Records == 0 && len(r.Series.Throughput) > 0 {
		r.Records = b2.lastIn
	}
	if r.DurationMs > 0 {
		r.Throughput.RecordsPS = float64(r.Records) / (r.DurationMs / 1000)
	}
	r.Checks = Evaluate(checks, r.Evidence(v))
	r.Limits = limits(checks)
	r.Verdict = VerdictFail
	if Passed(r.Checks) {
		r.Verdict = VerdictPass
	}
	return r, nil
}

// Evidence is what the checks see of this report.
func (r *Report) Evidence(v Verify) Evidence {
	ev := Evidence{Verify: v, Throughput: r.Throughput.RecordsPS}
	for _, rc := range r.Recoveries {
		if rc.Superseded {
			continue
		}
		if rc.Done {
			ev.Recoveries = append(ev.Recoveries, time.Duration(rc.TotalMs*float64(time.Millisecond)))
		} else {
			ev.Unrecovered = append(ev.Unrecovered, rc.Instance)
		}
	}
	for _, l := range r.Series.Lag {
		ev.Lag = append(ev.Lag, time.Duration(l[1])*time.Millisecond)
	}
	for _, c := range r.Series.Checkpoints {
		ev.Checkpoints = append(ev.Checkpoints, time.Duration((c.EndMs-c.StartMs)*float64(time.Millisecond)))
	}
	return ev
}

// runSpan is when the job started and the run ended: from run.json, else
// from the events.
func runSpan(ri *runJSON, evs []events.Event) (start, end time.Time) {
	switch {
	case ri.JobStart != nil:
		start = *ri.JobStart
	default:
		for _, e := range evs {
			if e.Kind == events.JobStarted {
				start = e.Time
				break
			}
		}
		if start.IsZero() && len(evs) > 0 {
			start = evs[0].Time
		}
		if start.IsZero() {
			start = ri.Started
		}
	}
	switch {
	case ri.Finished != nil:
		end = *ri.Finished
	case len(evs) > 0:
		end = evs[len(evs)-1].Time
	default:
		end = start
	}
	if end.Before(start) {
		end = start
	}
	return start, end
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// builder folds the events into a report.
type builder struct {
	r      *Report
	origin time.Time
	ft     string
	faults map[int]int // id -> index in r.Faults
	open   map[string]*Recovery
	recs   []*Recovery
	lost   map[string]time.Time // node -> last node_lost
	cap    []float64
	per    []float64
	tot    []float64
	in     []float64
	out    []float64
	lastIn uint64
}

func (b *builder) at(t time.Time) float64 { return ms(t.Sub(b.origin)) }

func (b *builder) add(e events.Event) {
	r := b.r
	switch e.Kind {
	case events.FaultStarted:
		f, _ := e.Fields.(events.FaultStartedFields)
		if b.faults == nil {
			b.faults = map[int]int{}
		}
		fs := FaultSpan{ID: f.ID, Verb: f.Verb, Target: f.Target, Nodes: f.Nodes, Args: f.Args,
			Start: e.Time, StartMs: b.at(e.Time), Open: true}
		b.faults[fs.ID] = len(r.Faults)
		r.Faults = append(r.Faults, fs)
	case events.FaultEnded:
		f, _ := e.Fields.(events.FaultEndedFields)
		if i, ok := b.faults[f.ID]; ok && r.Faults[i].Open {
			r.Faults[i].End, r.Faults[i].EndMs, r.Faults[i].Open = e.Time, b.at(e.Time), false
		}
	case events.NodeLost:
		f, _ := e.Fields.(events.NodeLostFields)
		if b.lost == nil {
			b.lost = map[string]time.Time{}
		}
		b.lost[e.Node] = e.Time
		if len(f.Instances) == 0 {
			return
		}
		if b.ft == "global" {
			b.start("job", e, f.Reason)
			return
		}
		for _, id := range f.Instances {
			b.start(string(id), e, f.Reason)
		}
	case events.RecoveryPlaced:
		f, _ := e.Fields.(events.RecoveryPlacedFields)
		id := e.Instance
		if id == "" { // global: the whole job rolls back
			id = "job"
			if b.open[id] == nil {
				b.start(id, events.Event{Node: e.Node, Time: b.lost[e.Node]}, "")
			}
		}
		if rc := b.open[id]; rc != nil {
			rc.To = e.Node
			if id == "job" {
				rc.To = ""
				rc.Checkpoint = int64(f.Checkpoint)
				rc.Replayed += int64(f.Records)
			}
			rc.Phases = append(rc.Phases, Phase{Name: "place", StartMs: rc.DetectedMs, EndMs: b.at(e.Time)})
		}
	case events.RecoveryRestored:
		f, _ := e.Fields.(events.RecoveryRestoredFields)
		id := e.Instance
		if id == "" {
			id = "job"
		}
		if rc := b.open[id]; rc != nil {
			rc.Checkpoint = int64(f.Checkpoint)
			rc.Fellback = f.Fellback
			start := rc.DetectedMs
			if n := len(rc.Phases); n > 0 {
				start = rc.Phases[n-1].EndMs
			}
			rc.Phases = append(rc.Phases, Phase{Name: "restore", StartMs: start, EndMs: b.at(e.Time)})
			if id == "job" { // a global rollback is done once every instance is restored
				b.done(rc, e.Time, -1)
			}
		}
	case events.Replay:
		f, _ := e.Fields.(events.ReplayFields)
		if rc := b.open[f.To]; rc != nil {
			rc.Replayed += int64(f.Records)
		} else {
			for i := len(b.recs) - 1; i >= 0; i-- {
				if b.recs[i].Instance == f.To {
					b.recs[i].Replayed += int64(f.Records)
					break
				}
			}
		}
	case events.RecoveryDone:
		f, _ := e.Fields.(events.RecoveryDoneFields)
		if rc := b.open[e.Instance]; rc != nil {
			start := rc.DetectedMs
			if n := len(rc.Phases); n > 0 {
				start = rc.Phases[n-1].EndMs
			}
			rc.Phases = append(rc.Phases, Phase{Name: "catch_up", StartMs: start, EndMs: b.at(e.Time)})
			b.done(rc, e.Time, float64(f.TotalMs))
		}
	case events.Checkpoint:
		f, _ := e.Fields.(events.CheckpointFields)
		b.checkpoint(e, f)
	case events.Throughput:
		f, _ := e.Fields.(events.ThroughputFields)
		p := RatePoint{Ms: b.at(e.Time), InRps: f.InRps, OutRps: f.OutRps}
		r.Series.Throughput = append(r.Series.Throughput, p)
		b.in, b.out = append(b.in, p.InRps), append(b.out, p.OutRps)
		b.lastIn = f.In
	case events.RunFinished:
		f, _ := e.Fields.(events.RunFinishedFields)
		r.LostInstances = f.Lost
	case events.Trim:
		f, _ := e.Fields.(events.TrimFields)
		r.Series.Backup = append(r.Series.Backup, BackupPoint{Ms: b.at(e.Time), Instance: e.Instance, Kind: "trim", Held: f.HeldBytes})
	case events.BackupSpill:
		f, _ := e.Fields.(events.BackupSpillFields)
		r.Series.Backup = append(r.Series.Backup, BackupPoint{Ms: b.at(e.Time), Instance: e.Instance, Kind: "spill",
			Held: f.MemBytes + f.SpillBytes, Mem: f.MemBytes, Spill: f.SpillBytes, Spilling: f.Spilling})
	case events.BackupFull:
		f, _ := e.Fields.(events.BackupFullFields)
		p := BackupPoint{Ms: b.at(e.Time), Instance: e.Instance, Kind: "full", PausedMs: float64(f.PausedMs)}
		if f.Full {
			p.Mem, p.Spill = f.MemBytes, f.SpillBytes
			p.Held = p.Mem + p.Spill
		} else {
			p.Kind = "unblocked"
		}
		r.Series.Backup = append(r.Series.Backup, p)
	case events.Interval:
		f, _ := e.Fields.(events.IntervalFields)
		id := f.Instance
		if id == "" {
			id = e.Instance
		}
		r.Series.Intervals = append(r.Series.Intervals, IntervalPoint{Ms: b.at(e.Time), Instance: id, IntervalMs: float64(f.IntervalMs),
			OptimumMs: float64(f.OptimumMs), Changed: f.Changed, Reason: f.Reason})
	case events.RescalePlanned:
		f, _ := e.Fields.(events.RescalePlannedFields)
		mode := f.Mode
		if mode == "" {
			mode = "eds"
		}
		b.r.Rescales = append(b.r.Rescales, Rescale{ID: int64(f.ID), Op: f.Op, From: f.From, To: f.To, Mode: mode,
			Why: f.Why, PlannedMs: b.at(e.Time), DoneMs: -1})
		b.step(e, f.ID, f.Op, f.Mode, "", 0)
	case events.RescaleStaged:
		f, _ := e.Fields.(events.RescaleStagedFields)
		b.step(e, f.ID, f.Op, "", f.Range, int64(f.Bytes))
	case events.RescaleCaptured:
		f, _ := e.Fields.(events.RescaleCapturedFields)
		b.step(e, f.ID, f.Op, f.Mode, f.Range, int64(f.Bytes))
	case events.RescaleMoved:
		f, _ := e.Fields.(events.RescaleMovedFields)
		b.step(e, f.ID, f.Op, "", f.Range, 0)
	case events.RescaleRerouted:
		f, _ := e.Fields.(events.RescaleReroutedFields)
		b.step(e, f.ID, f.Op, f.Mode, "", 0)
	case events.RescaleDone:
		f, _ := e.Fields.(events.RescaleDoneFields)
		if rs := b.step(e, f.ID, f.Op, f.Mode, "", 0); rs != nil {
			rs.DoneMs, rs.PauseMs, rs.Bytes = b.at(e.Time), float64(f.PauseMs), int64(f.Bytes)
		}
	}
	if e.Kind == events.Error {
		r.Notes = append(r.Notes, fmt.Sprintf("%.1fs: %s", b.at(e.Time)/1000, e.Text))
	}
}

// step adds one step of rescale id (a rescale_* event) to its rescale,
// and returns it. A step of a rescale whose planning the run does not
// hold opens it.
func (b *builder) step(e events.Event, id uint64, op, mode, rng string, bytes int64) *Rescale {
	name := strings.TrimPrefix(string(e.Kind), "rescale_")
	var rs *Rescale
	for i := range b.r.Rescales {
		if b.r.Rescales[i].ID == int64(id) {
			rs = &b.r.Rescales[i]
		}
	}
	if rs == nil {
		if mode == "" {
			mode = "eds"
		}
		b.r.Rescales = append(b.r.Rescales, Rescale{ID: int64(id), Op: op, Mode: mode, PlannedMs: b.at(e.Time), DoneMs: -1})
		rs = &b.r.Rescales[len(b.r.Rescales)-1]
	}
	rs.Steps = append(rs.Steps, RescaleStep{Name: name, Ms: b.at(e.Time), Instance: e.Instance, Range: rng, Bytes: bytes})
	return rs
}

// limits are the checks' limits in the units of the charts.
func limits(checks []Check) []Limit {
	var out []Limit
	for _, c := range checks {
		switch c.Name {
		case CheckMaxLag, CheckMaxRecovery, CheckMaxCheckpoint:
			out = append(out, Limit{Check: c.String(), Value: float64(c.Limit) / float64(time.Millisecond), Unit: "ms"})
		case CheckMinThroughput:
			out = append(out, Limit{Check: c.String(), Value: c.Min, Unit: "records/s"})
		}
	}
	return out
}

// limit is the value of the first limit of check name; false if none.
func (r *Report) limit(name string) (float64, string, bool) {
	for _, l := range r.Limits {
		if strings.HasPrefix(l.Check, name+":") || l.Check == name {
			return l.Value, l.Check, true
		}
	}
	return 0, "", false
}

func (b *builder) start(id string, e events.Event, reason string) {
	if b.open == nil {
		b.open = map[string]*Recovery{}
	}
	if old := b.open[id]; old != nil {
		// Lost again before it caught up: the first one ends here,
		// unfinished, and the new one takes over.
		old.Phases = append(old.Phases, Phase{Name: "lost_again", StartMs: b.at(e.Time), EndMs: b.at(e.Time)})
		old.Superseded, old.TotalMs = true, b.at(e.Time)-old.DetectedMs
	}
	rc := &Recovery{Instance: id, From: e.Node, Reason: reason, DetectedMs: b.at(e.Time)}
	b.open[id] = rc
	b.recs = append(b.recs, rc)
}

func (b *builder) done(rc *Recovery, t time.Time, total float64) {
	rc.Done = true
	rc.TotalMs = b.at(t) - rc.DetectedMs
	if total >= 0 {
		rc.TotalMs = total
	}
	delete(b.open, rc.Instance)
}

func (b *builder) checkpoint(e events.Event, f events.CheckpointFields) {
	st := &b.r.Checkpoints
	st.Count++
	end := b.at(e.Time)
	if f.Global {
		st.Global++
		st.Full++
		took := float64(f.TookMs)
		b.tot = append(b.tot, took*1000)
		b.r.Series.Checkpoints = append(b.r.Series.Checkpoints, CheckpointSpan{Instance: "global", ID: int64(f.ID), Full: true, StartMs: end - took, CaptureMs: end - took, EndMs: end})
		return
	}
	if f.Full {
		st.Full++
	} else {
		st.Delta++
	}
	st.RawBytes += int64(f.RawBytes)
	st.StoredBytes += int64(f.Bytes)
	capUs, perUs, totUs := float64(f.CaptureUs), float64(f.PersistUs), float64(f.TotalUs)
	b.cap, b.per, b.tot = append(b.cap, capUs), append(b.per, perUs), append(b.tot, totUs)
	start := end - totUs/1000
	b.r.Series.Checkpoints = append(b.r.Series.Checkpoints, CheckpointSpan{Instance: e.Instance, ID: int64(f.ID), Full: f.Full,
		StartMs: round3(start), CaptureMs: round3(start + capUs/1000), EndMs: end,
		Keys: int64(f.Keys), RawBytes: int64(f.RawBytes), Bytes: int64(f.Bytes)})
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (b *builder) finish() {
	r := b.r
	for i := range r.Faults {
		if r.Faults[i].Open {
			r.Faults[i].End, r.Faults[i].EndMs = r.Finished, r.DurationMs
		}
	}
	for _, rc := range b.recs {
		if !rc.Done && !rc.Superseded {
			rc.TotalMs = r.DurationMs - rc.DetectedMs
			name := "unrecovered"
			if n := len(rc.Phases); n > 0 && rc.Phases[n-1].Name == "restore" {
				name = "catch_up"
			}
			start := rc.DetectedMs
			if n := len(rc.Phases); n > 0 {
				start = rc.Phases[n-1].EndMs
			}
			rc.Phases = append(rc.Phases, Phase{Name: name, StartMs: start, EndMs: r.DurationMs})
		}
		// The detect phase: the latest fault on the lost node that began
		// before the loss was noticed.
		var cause *FaultSpan
		for i := range r.Faults {
			fs := &r.Faults[i]
			if slices.Contains(fs.Nodes, rc.From) && fs.StartMs <= rc.DetectedMs && (cause == nil || fs.StartMs > cause.StartMs) {
				cause = fs
			}
		}
		if cause != nil {
			rc.Phases = append([]Phase{{Name: "detect", StartMs: cause.StartMs, EndMs: rc.DetectedMs}}, rc.Phases...)
		}
		r.Recoveries = append(r.Recoveries, *rc)
	}
	st := &r.Checkpoints
	st.CaptureUs, st.PersistUs, st.TotalUs = quantiles(b.cap), quantiles(b.per), quantiles(b.tot)
	t := &r.Throughput
	t.Samples = len(b.in)
	if t.Samples > 0 {
		t.MeanInRps, t.MaxInRps, t.MeanOutRps = mean(b.in), slices.Max(b.in), mean(b.out)
	}
	sort.SliceStable(r.Series.Checkpoints, func(i, j int) bool { return r.Series.Checkpoints[i].Instance < r.Series.Checkpoints[j].Instance })
}

func quantiles(xs []float64) Quantiles {
	if len(xs) == 0 {
		return Quantiles{}
	}
	return Quantiles{P50: Percentile(xs, 50), P99: Percentile(xs, 99), Max: slices.Max(xs)}
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return math.Round(s/float64(len(xs))*10) / 10
}

func latencySummary(lag [][2]int64) LatencySummary {
	if len(lag) == 0 {
		return LatencySummary{}
	}
	xs := make([]float64, len(lag))
	for i, l := range lag {
		xs[i] = float64(l[1])
	}
	q := quantiles(xs)
	return LatencySummary{Samples: len(xs), P50Ms: q.P50, P99Ms: q.P99, MaxMs: q.Max}
}

// Field readers: events arrive as decoded JSON, so numbers are float64
// and lists are []any; anything else reads as zero.

// WriteReport writes r as DIR/report.json and DIR/report.html, each to a
// temporary name first and renamed into place.
func WriteReport(dir string, r *Report) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "report.json"), append(js, '\n')); err != nil {
		return err
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, r); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "report.html"), html.Bytes())
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
