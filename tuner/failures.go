package tuner

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Failures is a failure process for one operator instance: the
// distribution of the time between its failures, and, for a fitted trace,
// of the repair time of the failed node. A Failures is immutable and safe
// for concurrent use.
type Failures struct {
	Spec      string
	TBF       Dist   // time between failures of one instance
	Repair    Dist   // repair time of a failed node; nil for generators
	Fit       *Fit   // how TBF was fitted; nil for generators
	RepairFit *Fit   // how Repair was fitted; nil if there were too few repairs
	Trace     *Trace // what the trace held; nil for generators
}

// MTBF is the mean of TBF.
func (f *Failures) MTBF() time.Duration { return seconds(f.TBF.Mean()) }

// Describe is a one-line summary of the failure process.
func (f *Failures) Describe() string {
	if f.Trace == nil {
		return fmt.Sprintf("%s: %s per instance", f.Spec, f.TBF)
	}
	s := fmt.Sprintf("%s: %d failures on %d nodes, time between failures %s (exponential MLE mean %s)",
		f.Spec, f.Trace.Failures(), f.Trace.Nodes, f.TBF, fmtSec(f.Fit.Exp.Scale))
	if f.Repair != nil {
		s += fmt.Sprintf(", repair %s", f.Repair)
	}
	return s
}

// maxFailures bounds the failures of one instance that Times generates (a
// variable for the tests).
var maxFailures = 10_000_000

// Times returns the failure times, in seconds from 0, of instance unit over
// [0, horizon): a renewal process with TBF, started 10 mean lifetimes
// before 0 so that it is close to stationary at 0. It is a pure function
// of (f, seed, unit, horizon).
func (f *Failures) Times(seed int64, unit int, horizon float64) ([]float64, error) {
	mean := f.TBF.Mean()
	if !(mean > 0) || math.IsInf(mean, 1) {
		return nil, specErr(f.Spec, "mean time between failures %v: want a positive finite time", mean)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5fa1105e^uint64(unit)*0x9e3779b97f4a7c15))
	var out []float64
	t := -10 * mean
	for {
		t += f.TBF.Sample(rng)
		if t >= horizon || math.IsNaN(t) {
			return out, nil
		}
		if t >= 0 {
			if len(out) == maxFailures {
				return nil, specErr(f.Spec, "more than %d failures of one instance in %s: the time between failures (%s) is too short",
					maxFailures, fmtSec(horizon), fmtSec(mean))
			}
			out = append(out, t)
		}
	}
}

// OpenFailures opens a failure source:
//
//	poisson:MTBF          exponential times between failures, mean MTBF
//	weibull:SHAPE,SCALE   Weibull times between failures
//	lanl:PATH[?system=ID&fit=F&speedup=X]   the LANL failure CSV, fitted
//	fta:PATH[?fit=F&speedup=X]              an FTA event_trace table, fitted
//
// MTBF and SCALE are Go durations ("6h"), bare seconds, or days ("73d").
// A trace is fitted per node (see Trace); fit=auto (the default) takes the
// Weibull or the exponential MLE, whichever has the lower AIC; fit=weibull
// or fit=exp forces one. speedup=X divides every time of the trace by X
// (X > 1: failures X times as frequent), as `spate up --speedup` compresses
// a load trace. Files may be gzip compressed. Bad input is one line naming
// the spec, or FILE:LINE for a bad line.
func OpenFailures(spec string) (*Failures, error) {
	scheme, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return nil, specErr(spec, "no scheme (want poisson:MTBF, weibull:SHAPE,SCALE, lanl:PATH or fta:PATH)")
	}
	switch scheme {
	case "poisson":
		m, err := parseDur(rest)
		if err != nil || m <= 0 {
			return nil, specErr(spec, "MTBF %q: want a positive duration (6h, 3600, 73d)", rest)
		}
		return &Failures{Spec: spec, TBF: Exponential{Scale: m}}, nil
	case "weibull":
		ks, ss, ok := strings.Cut(rest, ",")
		k, kerr := strconv.ParseFloat(strings.TrimSpace(ks), 64)
		s, serr := parseDur(ss)
		if !ok || kerr != nil || !(k >= 0.05 && k <= 20) {
			return nil, specErr(spec, "shape %q: want SHAPE,SCALE with SHAPE a number in 0.05..20", ks)
		}
		if serr != nil || s <= 0 {
			return nil, specErr(spec, "scale %q: want a positive duration (6h, 3600, 73d)", ss)
		}
		return &Failures{Spec: spec, TBF: Weibull{Shape: k, Scale: s}}, nil
	case "lanl", "fta":
		return openTrace(spec, scheme, rest)
	}
	return nil, specErr(spec, "unknown scheme %q (want poisson, weibull, lanl or fta)", scheme)
}

// parseDur reads a Go duration, bare seconds or days ("73d") as seconds.
func parseDur(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return d.Seconds(), nil
	}
	mult := 1.0
	if days, ok := strings.CutSuffix(s, "d"); ok {
		s, mult = days, 86400
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return f * mult, nil
}

func openTrace(spec, scheme, rest string) (*Failures, error) {
	path, query, _ := strings.Cut(rest, "?")
	if path == "" {
		return nil, specErr(spec, "no file (want %s:PATH)", scheme)
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return nil, specErr(spec, "bad query: %v", err)
	}
	get := func(k string) string {
		v := vals.Get(k)
		delete(vals, k)
		return v
	}
	fit, system, sp := get("fit"), "", get("speedup")
	if scheme == "lanl" {
		system = get("system")
	}
	if len(vals) > 0 {
		unknown := make([]string, 0, len(vals))
		for k := range vals {
			unknown = append(unknown, k)
		}
		sort.Strings(unknown)
		known := "fit, speedup"
		if scheme == "lanl" {
			known = "fit, speedup, system"
		}
		return nil, specErr(spec, "unknown parameter %q (known: %s)", unknown[0], known)
	}
	if fit == "" {
		fit = "auto"
	}
	if fit != "auto" && fit != "weibull" && fit != "exp" {
		return nil, specErr(spec, "fit=%q: want auto, weibull or exp", fit)
	}
	speedup := 1.0
	if sp != "" {
		speedup, err = strconv.ParseFloat(sp, 64)
		if err != nil || !(speedup > 0) || math.IsInf(speedup, 1) {
			return nil, specErr(spec, "speedup=%q: want a number > 0", sp)
		}
	}
	r, closer, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	var tr *Trace
	if scheme == "lanl" {
		tr, err = ParseLANL(r, path, system)
	} else {
		tr, err = ParseFTA(r, path)
	}
	if err != nil {
		return nil, err
	}
	tr.scale(1 / speedup)
	f := &Failures{Spec: spec, Trace: tr}
	tbf, err := FitDurations(tr.Up, tr.UpCensored)
	if err != nil {
		return nil, malformed(path, "time between failures: %v", err)
	}
	f.Fit = &tbf
	switch fit {
	case "auto":
		f.TBF = tbf.Best()
	case "weibull":
		f.TBF = tbf.Weibull
	default:
		f.TBF = tbf.Exp
	}
	if rf, err := FitDurations(tr.Repair, nil); err == nil {
		f.RepairFit = &rf
		f.Repair = rf.Best()
	}
	return f, nil
}

// openFile opens path, decompressing gzip (recognised by its magic bytes).
func openFile(path string) (io.Reader, io.Closer, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(fh, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			fh.Close()
			return nil, nil, malformed(path, "gzip: %v", err)
		}
		return bufio.NewReaderSize(zr, 1<<16), fh, nil
	}
	return br, fh, nil
}

// Trace is what a failure trace holds, reduced to per-node durations in
// seconds. Up are the observed times from a node's repair to its next
// failure (pooled over nodes); UpCensored are up intervals that end
// without a failure being seen (the end of the trace); Repair are the
// durations of outages.
type Trace struct {
	Path       string
	Nodes      int // nodes with at least one failure
	Records    int // failure or event records read
	Skipped    int // records that name no node (system-wide events), not used
	Merged     int // failures that began during the previous outage of the node, merged into it
	First      int64
	Last       int64 // epoch seconds of the first and last failure
	Up         []float64
	UpCensored []float64
	Repair     []float64
}

// Failures is the number of failures that ended an up interval.
func (t *Trace) Failures() int { return len(t.Up) }

func (t *Trace) scale(k float64) {
	for _, s := range [][]float64{t.Up, t.UpCensored, t.Repair} {
		for i := range s {
			s[i] *= k
		}
	}
}

// outage is one failure of one node, epoch seconds.
type outage struct {
	node       int32
	start, end int64
}

// reduce turns outages (any order) into per-node up and repair durations.
// Durations shorter than floor (the trace's resolution) are raised to it.
func (t *Trace) reduce(outs []outage, floor float64) {
	sort.Slice(outs, func(i, j int) bool {
		if outs[i].node != outs[j].node {
			return outs[i].node < outs[j].node
		}
		return outs[i].start < outs[j].start
	})
	t.First, t.Last = math.MaxInt64, math.MinInt64
	for i := 0; i < len(outs); {
		j := i
		cur := outs[i]
		t.Nodes++
		for {
			t.First, t.Last = min(t.First, outs[j].start), max(t.Last, outs[j].start)
			j++
			if j < len(outs) && outs[j].node == cur.node && outs[j].start < cur.end {
				cur.end = max(cur.end, outs[j].end) // began during this outage
				t.Merged++
				continue
			}
			t.Repair = append(t.Repair, max(float64(cur.end-cur.start), floor))
			if j == len(outs) || outs[j].node != cur.node {
				break
			}
			t.Up = append(t.Up, max(float64(outs[j].start-cur.end), floor))
			cur = outs[j]
		}
		i = j
	}
	if len(outs) == 0 {
		t.First, t.Last = 0, 0
	}
}
