package tuner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"spate/events"
)

// Calibration is what a run's events say about the simulator's
// parameters (`spate tuner sim --calibrate RUN_DIR`). Each measured
// parameter comes with the number of samples it rests on; a count of 0
// means the run did not measure it and the value is zero.
//
// Only instances with keyed state count: those that wrote a checkpoint
// holding at least one key (in the default job, count and rollup).
// Sources and sinks checkpoint positions, not keyed state, and the
// simulator's instances are keyed operator instances.
type Calibration struct {
	// Checkpoint cost C(k) = Base + PerKey·k, k the keys a checkpoint
	// wrote, fitted by least squares over every complete checkpoint of a
	// keyed instance: a delta writes its dirty keys, a full one every key,
	// and both are points of the same line (Full of the CostSamples were
	// full). The cost is the processing the checkpoint takes from the
	// instance: the capture stall plus the encoding (capture_us +
	// encode_us), or the capture alone in a run whose events predate
	// encode_us (CostCaptureOnly).
	Base            time.Duration
	PerKey          float64 // seconds per key
	CostSamples     int
	Full            int
	CostCaptureOnly bool
	// CostKeysMax is the largest checkpoint, in keys: the fit says
	// nothing beyond it.
	CostKeysMax int

	// Persist is the median time from a capture to the checkpoint being
	// complete (total_us), over the same checkpoints.
	Persist        time.Duration
	PersistSamples int

	// Capacity is records processed per second of busy time of one keyed
	// instance: the sum over keyed instances of records processed over
	// the sum of their busy time, from the run's tuner_summary. Without
	// one (a run cut short), it is the largest input rate a keyed instance
	// reported in a metrics event, and CapacityLowerBound is set: a paced
	// run processes what arrives, not what it could.
	Capacity           float64
	CapacitySamples    int // instances (tuner_summary) or metrics events
	CapacityLowerBound bool

	// Detect is the median time from a kill, restart or pause fault on a
	// node (fault_started) to that node's loss (node_lost). A loss with no
	// such fault before it has no known start and is not a sample.
	Detect        time.Duration
	DetectSamples int

	// Restart is the median of the recoveries' detect_to_placed_ms, and
	// Restore of their restore_ms (placed to restored: loading the
	// checkpoint), over the recoveries of keyed instances (recovery_done).
	Restart         time.Duration
	Restore         time.Duration
	RecoverySamples int

	Lines int // events read
}

// calibrates are the kinds calibration reads.
var calibrates = map[events.Kind]bool{
	events.Checkpoint: true, events.RecoveryDone: true, events.FaultStarted: true,
	events.NodeLost: true, events.Metrics: true, events.TunerSummary: true,
}

// calEvent is one line of events.jsonl: the envelope; the fields are
// decoded by the kind's payload type (events.DecodeFields).
type calEvent struct {
	Time     time.Time       `json:"time"`
	Kind     string          `json:"kind"`
	Node     string          `json:"node"`
	Instance string          `json:"instance"`
	Fields   json.RawMessage `json:"fields"`
}

// present says which of a checkpoint's cost fields a line has: runs from
// before encode_us lack it, and a checkpoint without keys or capture_us is
// not a sample (a payload's type cannot tell absent from zero).
type present struct {
	Keys      json.RawMessage `json:"keys"`
	CaptureUs json.RawMessage `json:"capture_us"`
	EncodeUs  json.RawMessage `json:"encode_us"`
}

// Calibrate reads a run's events (events.jsonl: one JSON object a line)
// and measures the simulator's parameters. name is the file's name in
// errors: a line that is not a JSON event is "NAME:LINE: what is wrong".
// Blank lines are skipped. It is pure: it reads r and nothing else.
func Calibrate(name string, r io.Reader) (Calibration, error) {
	var cal Calibration
	type point struct{ keys, cost float64 }
	var (
		cps      = map[string][]point{} // per instance
		fulls    = map[string]int{}
		persist  = map[string][]float64{}
		keyed    = map[string]bool{}
		recs     = map[string][]events.RecoveryDoneFields{}
		inRates  = map[string][]float64{}
		faultAt  = map[string]time.Time{} // node: its latest kill or restart not yet followed by its loss
		detects  []float64
		summary  *events.TunerSummaryFields
		capOnly  = map[string]bool{}
		sc       = bufio.NewScanner(r)
		line     int
		badField = func(kind string, err error) error {
			msg := strings.TrimPrefix(err.Error(), "fields of "+kind+": ")
			return &LineError{Path: name, Line: line, Msg: fmt.Sprintf("%s event: bad fields: %s", kind, msg)}
		}
	)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e calEvent
		if err := json.Unmarshal(b, &e); err != nil {
			return cal, &LineError{Path: name, Line: line, Msg: "not a JSON event: " + oneLine(err.Error())}
		}
		if e.Kind == "" {
			return cal, &LineError{Path: name, Line: line, Msg: "event has no kind"}
		}
		cal.Lines++
		fields := e.Fields
		if !calibrates[events.Kind(e.Kind)] {
			continue
		}
		p, err := events.DecodeFields(events.Kind(e.Kind), fields)
		if err != nil {
			return cal, badField(e.Kind, err)
		}
		switch f := p.(type) {
		case events.CheckpointFields:
			if f.Global || e.Instance == "" {
				continue // a global barrier checkpoint: no per-instance cost
			}
			var has present
			_ = json.Unmarshal(fields, &has) // it decoded above
			if has.Keys == nil || has.CaptureUs == nil {
				return cal, &LineError{Path: name, Line: line, Msg: "checkpoint event without keys or capture_us"}
			}
			cost := float64(f.CaptureUs)
			if has.EncodeUs != nil {
				cost += float64(f.EncodeUs)
			} else {
				capOnly[e.Instance] = true
			}
			if f.Keys < 0 || cost < 0 || f.TotalUs < 0 {
				return cal, &LineError{Path: name, Line: line, Msg: "checkpoint event with a negative keys or time"}
			}
			if f.Keys > 0 {
				keyed[e.Instance] = true
			}
			cps[e.Instance] = append(cps[e.Instance], point{float64(f.Keys), cost / 1e6})
			persist[e.Instance] = append(persist[e.Instance], float64(f.TotalUs)/1e6)
			if f.Full {
				fulls[e.Instance]++
			}
		case events.RecoveryDoneFields:
			recs[e.Instance] = append(recs[e.Instance], f)
		case events.FaultStartedFields:
			if f.Verb == "kill" || f.Verb == "restart" || f.Verb == "pause" {
				for _, n := range f.Nodes {
					faultAt[n] = e.Time
				}
			}
		case events.MetricsFields:
			inRates[e.Instance] = append(inRates[e.Instance], f.InRate)
		case events.TunerSummaryFields:
			summary = &f
		}
		if e.Kind == string(events.NodeLost) {
			if at, ok := faultAt[e.Node]; ok {
				if d := e.Time.Sub(at); d >= 0 {
					detects = append(detects, d.Seconds())
				}
				delete(faultAt, e.Node)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return cal, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}

	// The cost line over the keyed instances' checkpoints.
	var pts []point
	var pers []float64
	for id := range keyed {
		pts = append(pts, cps[id]...)
		pers = append(pers, persist[id]...)
		cal.Full += fulls[id]
		cal.CostCaptureOnly = cal.CostCaptureOnly || capOnly[id]
	}
	if len(pts) > 0 {
		xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
		for i, p := range pts {
			xs[i], ys[i] = p.keys, p.cost
			cal.CostKeysMax = max(cal.CostKeysMax, int(p.keys))
		}
		base, per := fitLine(xs, ys)
		cal.Base, cal.PerKey = secDur(base), per
		cal.CostSamples = len(pts)
		cal.Persist = secDur(median(pers))
		cal.PersistSamples = len(pers)
	}

	// Capacity: busy time if the run summed it, else the input rates seen.
	if summary != nil {
		var in, busy float64
		for _, a := range summary.Instances {
			if keyed[string(a.Instance)] && a.BusyS > 0 {
				in += float64(a.Processed)
				busy += a.BusyS
				cal.CapacitySamples++
			}
		}
		if busy > 0 {
			cal.Capacity = in / busy
		} else {
			cal.CapacitySamples = 0
		}
	}
	if cal.CapacitySamples == 0 {
		for id := range keyed {
			for _, r := range inRates[id] {
				cal.Capacity = max(cal.Capacity, r)
				cal.CapacitySamples++
			}
		}
		cal.CapacityLowerBound = cal.CapacitySamples > 0
	}

	if len(detects) > 0 {
		cal.Detect = secDur(median(detects))
		cal.DetectSamples = len(detects)
	}
	var restart, restore []float64
	for id := range keyed {
		for _, r := range recs[id] {
			restart = append(restart, float64(r.DetectToPlacedMs)/1e3)
			restore = append(restore, float64(r.RestoreMs)/1e3)
		}
	}
	if len(restore) > 0 {
		cal.Restart, cal.Restore = secDur(median(restart)), secDur(median(restore))
		cal.RecoverySamples = len(restore)
	}
	return cal, nil
}

// fitLine is the least-squares line y = a + b·x. A negative slope (cost
// falling with keys: noise) is fitted as a constant, b = 0; a negative
// intercept as a line through the origin, a = 0.
func fitLine(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	mx, my := sx/n, sy/n
	vx := sxx/n - mx*mx
	if vx > 0 {
		b = (sxy/n - mx*my) / vx
	}
	if b <= 0 {
		return my, 0
	}
	a = my - b*mx
	if a < 0 && sxx > 0 {
		return 0, sxy / sxx
	}
	return a, b
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func secDur(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// readCalibration calibrates from DIR/events.jsonl.
func readCalibration(dir string) (Calibration, error) {
	path := filepath.Join(dir, "events.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return Calibration{}, fmt.Errorf("--calibrate: %w", err)
	}
	defer f.Close()
	cal, err := Calibrate(path, f)
	if err != nil {
		return cal, fmt.Errorf("--calibrate: %w", err)
	}
	if cal.Lines == 0 {
		return cal, fmt.Errorf("--calibrate: %s: no events", path)
	}
	return cal, nil
}

// calFlags are the simulator flags a calibration can set.
type calFlags struct {
	base, perKey, persist, detect, restart, loadBase, loadPerKey *time.Duration
	capacity                                                     *float64
}

// applyCalibration sets the flags the run measured and that were not
// given on the command line (set), and says what it did. The capacity is
// per instance in the run and for all instances in the simulator, so it is
// multiplied by instances; --util given explicitly also keeps it from
// being calibrated (it sets the capacity from the load).
func applyCalibration(cal Calibration, set map[string]bool, instances int, fl calFlags) *CalibrationReport {
	r := &CalibrationReport{Events: cal.Lines, Calibrated: map[string]CalibratedFlag{}}
	put := func(name string, measured bool, apply func() float64, samples int, from string) {
		switch {
		case !measured:
			r.Unmeasured = append(r.Unmeasured, name)
		case set[name]:
			r.Overridden = append(r.Overridden, name)
		default:
			r.Calibrated[name] = CalibratedFlag{Value: apply(), Samples: samples, From: from}
		}
	}
	cost := "capture + encode"
	if cal.CostCaptureOnly {
		cost = "capture only (the run's events have no encode_us)"
	}
	costFrom := fmt.Sprintf("least squares on keys written, %d checkpoints of keyed instances (%d full, %d delta) up to %d keys, cost %s",
		cal.CostSamples, cal.Full, cal.CostSamples-cal.Full, cal.CostKeysMax, cost)
	put("ckpt-base", cal.CostSamples > 0, func() float64 { *fl.base = cal.Base; return cal.Base.Seconds() }, cal.CostSamples, costFrom)
	put("ckpt-per-key", cal.CostSamples > 0, func() float64 { *fl.perKey = secDur(cal.PerKey); return fl.perKey.Seconds() }, cal.CostSamples, costFrom)
	put("persist", cal.PersistSamples > 0, func() float64 { *fl.persist = cal.Persist; return cal.Persist.Seconds() },
		cal.PersistSamples, "median capture-to-complete (total_us) of the same checkpoints")
	capFrom := fmt.Sprintf("records per busy second of the keyed instances (tuner_summary, %d instances), x %d instances", cal.CapacitySamples, instances)
	if cal.CapacityLowerBound {
		capFrom = fmt.Sprintf("a LOWER BOUND: the largest input rate of a keyed instance in %d metrics events (no tuner_summary; a paced run processes what arrives), x %d instances", cal.CapacitySamples, instances)
	}
	if set["util"] && !set["capacity"] && cal.CapacitySamples > 0 {
		set = maps.Clone(set)
		set["capacity"] = true // --util given: the capacity follows the load
	}
	put("capacity", cal.CapacitySamples > 0, func() float64 {
		*fl.capacity = cal.Capacity * float64(instances)
		return *fl.capacity
	}, cal.CapacitySamples, capFrom)
	put("detect", cal.DetectSamples > 0, func() float64 { *fl.detect = cal.Detect; return cal.Detect.Seconds() },
		cal.DetectSamples, "median kill, restart or pause (fault_started) to node_lost")
	put("restart", cal.RecoverySamples > 0, func() float64 { *fl.restart = cal.Restart; return cal.Restart.Seconds() },
		cal.RecoverySamples, "median detect_to_placed_ms of the keyed instances' recoveries")
	put("load-base", cal.RecoverySamples > 0, func() float64 { *fl.loadBase = cal.Restore; return cal.Restore.Seconds() },
		cal.RecoverySamples, "median restore_ms of the keyed instances' recoveries (the whole load: --load-per-key is set to 0)")
	put("load-per-key", cal.RecoverySamples > 0, func() float64 { *fl.loadPerKey = 0; return 0 },
		cal.RecoverySamples, "0: the measured restore time is all in --load-base")
	return r
}

// printCalibration prints what --calibrate set, in the table's style.
func printCalibration(w io.Writer, r *CalibrationReport) {
	fmt.Fprintf(w, "calibrated from %s (%d events); explicit flags win over it\n", r.File, r.Events)
	names := slices.Sorted(maps.Keys(r.Calibrated))
	order := []string{"ckpt-base", "ckpt-per-key", "persist", "capacity", "detect", "restart", "load-base", "load-per-key"}
	slices.SortFunc(names, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	for _, n := range names {
		c := r.Calibrated[n]
		var v string
		switch n {
		case "capacity":
			v = fmtRate(c.Value) + " rec/s"
		case "ckpt-per-key", "load-per-key":
			v = fmtSec(c.Value) + "/key"
		default:
			v = fmtDur(secDur(c.Value))
		}
		fmt.Fprintf(w, "  --%-13s %-14s %d samples: %s\n", n, v, c.Samples, c.From)
	}
	if len(r.Overridden) > 0 {
		fmt.Fprintf(w, "  measured, but the flag given wins: --%s\n", strings.Join(r.Overridden, ", --"))
	}
	if len(r.Unmeasured) > 0 {
		fmt.Fprintf(w, "  not measured by the run (defaults or flags): --%s\n", strings.Join(r.Unmeasured, ", --"))
	}
	fmt.Fprintln(w, "  never calibrated: --cost-noise, --keys, --zipf, --instances, the load and the failures")
	fmt.Fprintln(w)
}
