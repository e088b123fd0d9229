package cli

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"spate/events"
	"spate/internal/human"
)

// The headless output of `spate up` is a filter over the event stream
// (coord.Options.Observe): the coordinator hands over every event and the
// command line chooses what a person reads. events.jsonl always has all.

// frequent are the kinds that come many times a second; everything else
// is a lifecycle event (nodes, placements, faults, recoveries, rescales,
// the drain, errors), always printed by default and under --quiet.
var frequent = map[events.Kind]bool{
	events.Throughput: true, events.Checkpoint: true, events.WindowFired: true, events.Metrics: true,
	events.Interval: true, events.CheckpointCompacted: true, events.Trim: true, events.Replay: true,
}

// kindNames are the event kinds --show checks names against (a name far
// from all of them is taken as a kind this binary does not know yet), in
// name order.
func kindNames() []string {
	kinds := events.Kinds()
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

// outputMode says what headless `up` prints: by default lifecycle events,
// throughput, and per-second sums of checkpoints and fired windows;
// quiet: lifecycle events and the summary; show: exactly those kinds.
type outputMode struct {
	quiet    bool
	show     map[events.Kind]bool
	prefixes []string // show: kind prefixes (rescale_*)
}

// parseOutputMode reads --quiet and --show; a kind name close to a known
// one but not it is a mistake.
func parseOutputMode(quiet bool, show string) (outputMode, error) {
	m := outputMode{quiet: quiet}
	if show == "" {
		return m, nil
	}
	if quiet {
		return m, fmt.Errorf("--quiet and --show: choose one")
	}
	m.show = map[events.Kind]bool{}
	names := kindNames()
	for _, k := range strings.Split(show, ",") {
		k = strings.TrimSpace(k)
		if p, ok := strings.CutSuffix(k, "*"); ok && p != "" {
			m.prefixes = append(m.prefixes, p)
			continue
		}
		if k == "" || strings.Trim(k, "abcdefghijklmnopqrstuvwxyz_") != "" {
			return m, fmt.Errorf("--show: %q is not an event kind (lower-case words joined by _)", k)
		}
		known := false
		for _, n := range names {
			known = known || n == k
		}
		if !known {
			if s := didYouMean(k, names, ""); s != "" {
				return m, fmt.Errorf("--show: unknown event kind %q%s", k, s)
			}
		}
		m.show[events.Kind(k)] = true
	}
	return m, nil
}

func (m outputMode) shows(k events.Kind) bool {
	if m.show[k] {
		return true
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(string(k), p) {
			return true
		}
	}
	return false
}

// printer writes the headless lines. It is safe for concurrent use.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	mode outputMode

	ck checkpointSum
	wf windowSum

	// for the summary
	jobStart, end        time.Time
	in                   float64
	checkpoints, faults  int
	recoveries, rescales int
	finished             bool

	// eof counts, by peer, the streams whose connection ended (EOF) with
	// their peer: a killed node closes every stream from it at once, and
	// one line says so.
	eof map[string]int
	// lostOn is the node each lost instance was on (node_lost): a stream
	// toward one fails with its node, and counts with that node's.
	lostOn map[string]string
}

func newPrinter(w io.Writer, mode outputMode) *printer {
	return &printer{w: w, mode: mode, eof: map[string]int{}, lostOn: map[string]string{}}
}

// peerEOF reports whether e is a stream that ended with its peer after
// the first one of that peer, which alone is printed: a stream from the
// peer whose connection closed (EOF), or one toward an instance of a node
// lost.
func (p *printer) peerEOF(e events.Event) bool {
	if e.Kind == events.NodeLost {
		f, _ := e.Fields.(events.NodeLostFields)
		for _, id := range f.Instances {
			p.lostOn[string(id)] = e.Node
		}
		return false
	}
	f, _ := e.Fields.(events.FrameErrorFields)
	if e.Kind != events.FrameError {
		return false
	}
	peer := f.Peer
	switch {
	case peer != "" && strings.HasSuffix(e.Text, "EOF"):
	case f.To != "" && p.lostOn[f.To] != "":
		peer = p.lostOn[f.To]
	default:
		return false
	}
	p.eof[peer]++
	return p.eof[peer] > 1
}

// Add takes one event (coord.Options.Observe).
func (p *printer) Add(e events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(e)
	if p.peerEOF(e) {
		return
	}
	switch {
	case p.mode.show != nil || p.mode.prefixes != nil:
		if p.mode.shows(e.Kind) {
			p.line(e.Line())
		}
		return
	case p.mode.quiet:
		if !frequent[e.Kind] {
			p.line(e.Line())
		}
		return
	}
	switch e.Kind {
	case events.Checkpoint:
		p.flushIfOlder(e.Time)
		p.ck.add(e)
	case events.WindowFired:
		p.flushIfOlder(e.Time)
		p.wf.add(e)
	case events.Interval:
		p.flushIfOlder(e.Time)
		p.ck.intervals++
		p.ck.stamp(e.Time)
	case events.CheckpointCompacted:
		p.flushIfOlder(e.Time)
		p.ck.compacted++
		p.ck.stamp(e.Time)
	case events.Throughput:
		p.flush()
		p.line(e.Line())
	default:
		if frequent[e.Kind] {
			return // metrics, trims, replays: the dashboard's, and events.jsonl's
		}
		p.flush()
		p.line(e.Line())
	}
}

// Close prints what is still summed up.
func (p *printer) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush()
}

// Summary prints the run's last line (not under --show).
func (p *printer) Summary(dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode.show != nil || p.mode.prefixes != nil {
		return
	}
	p.line(p.summary(dir))
}

func (p *printer) summary(dir string) string {
	var b strings.Builder
	b.WriteString("summary: ")
	if !p.jobStart.IsZero() && p.end.After(p.jobStart) {
		secs := p.end.Sub(p.jobStart).Seconds()
		fmt.Fprintf(&b, "%s in %s (%s records/s); ", human.PluralCount(p.in, "record"), human.Seconds(secs), human.Count(p.in/secs))
	}
	fmt.Fprintf(&b, "%s, %s, %s", human.Plural(p.checkpoints, "checkpoint"), human.Plural(p.faults, "fault"), human.Plural(p.recoveries, "recovery"))
	if p.rescales > 0 {
		fmt.Fprintf(&b, ", %s", human.Plural(p.rescales, "rescale"))
	}
	if n := p.eofStreams(); n > 0 {
		fmt.Fprintf(&b, "; %s closed as their peer ended (one line each peer)", human.Plural(n, "stream"))
	}
	if dir != "" {
		fmt.Fprintf(&b, "; data in %s; check it with: spate verify --data %s", dir, dir)
	}
	return b.String()
}

// Writer is a writer whose lines go out between the printer's, whole.
func (p *printer) Writer() io.Writer { return lockedWriter{p} }

type lockedWriter struct{ p *printer }

func (l lockedWriter) Write(b []byte) (int, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	return l.p.w.Write(b)
}

func (p *printer) line(s string) { fmt.Fprintln(p.w, s) }

func (p *printer) eofStreams() int {
	n := 0
	for _, k := range p.eof {
		n += k
	}
	return n
}

func (p *printer) count(e events.Event) {
	switch e.Kind {
	case events.JobStarted:
		if p.jobStart.IsZero() {
			p.jobStart = e.Time
		}
	case events.Throughput:
		f, _ := e.Fields.(events.ThroughputFields)
		p.in = float64(f.In)
		p.end = e.Time
	case events.Checkpoint:
		p.checkpoints++
	case events.FaultStarted:
		p.faults++
	case events.RecoveryDone:
		p.recoveries++
	case events.RescaleDone:
		p.rescales++
	case events.RunFinished:
		p.end, p.finished = e.Time, true
		if f, _ := e.Fields.(events.RunFinishedFields); f.Records > 0 {
			p.in = float64(f.Records) // every record read, the drain's included
		}
	}
}

// flushIfOlder prints the sums if they began a second or more before t.
func (p *printer) flushIfOlder(t time.Time) {
	first := p.ck.first
	if first.IsZero() || (!p.wf.first.IsZero() && p.wf.first.Before(first)) {
		first = p.wf.first
	}
	if !first.IsZero() && t.Sub(first) >= time.Second {
		p.flush()
	}
}

func (p *printer) flush() {
	wf, ck := p.wf.line(), p.ck.line()
	if p.ck.last.Before(p.wf.last) {
		wf, ck = ck, wf // in time order
	}
	for _, s := range []string{wf, ck} {
		if s != "" {
			p.line(s)
		}
	}
	p.ck, p.wf = checkpointSum{}, windowSum{}
}

// checkpointSum is the checkpoints completed within a second or so.
type checkpointSum struct {
	first, last          time.Time
	n, full, global      int
	keys, bytes, raw     float64
	slowestUs            float64
	slowest              string
	compacted, intervals int
}

func (s *checkpointSum) stamp(t time.Time) {
	if s.first.IsZero() {
		s.first = t
	}
	s.last = t
}

func (s *checkpointSum) add(e events.Event) {
	s.stamp(e.Time)
	s.n++
	f, _ := e.Fields.(events.CheckpointFields)
	if f.Global {
		s.global++
		if us := float64(f.TookMs) * 1000; us > s.slowestUs {
			s.slowestUs, s.slowest = us, "global"
		}
		return
	}
	if f.Full {
		s.full++
	}
	s.keys += float64(f.Keys)
	s.bytes += float64(f.Bytes)
	s.raw += float64(f.RawBytes)
	if us := float64(f.TotalUs); us > s.slowestUs || s.slowest == "" {
		s.slowestUs, s.slowest = us, e.Instance
	}
}

func (s *checkpointSum) line() string {
	if s.first.IsZero() {
		return ""
	}
	var b strings.Builder
	span := s.last.Sub(s.first)
	if s.n > 0 {
		fmt.Fprintf(&b, "%d complete", s.n)
		if span >= 100*time.Millisecond {
			fmt.Fprintf(&b, " in %s", human.Duration(span))
		}
		slowest := human.Duration(time.Duration(s.slowestUs * 1e3))
		switch {
		case s.global > 0:
			fmt.Fprintf(&b, " (global), slowest %s", slowest)
		default:
			fmt.Fprintf(&b, " (%d full, %d delta): %s stored of %s, %s, slowest %s (%s)", s.full, s.n-s.full,
				human.Bytes(s.bytes), human.Bytes(s.raw), human.PluralCount(s.keys, "key"), slowest, s.slowest)
		}
	}
	var more []string
	if s.compacted > 0 {
		more = append(more, fmt.Sprintf("%d compacted", s.compacted))
	}
	if s.intervals > 0 {
		more = append(more, human.Plural(s.intervals, "interval decision"))
	}
	if len(more) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.Join(more, ", "))
	}
	return fmt.Sprintf("%s %-15s %s", s.last.Format("15:04:05.000"), events.Checkpoint, b.String())
}

// windowSum is the windows fired within a second or so.
type windowSum struct {
	first, last time.Time
	n           int
	results     float64
	upTo        float64 // the highest watermark, ms
}

func (s *windowSum) add(e events.Event) {
	if s.first.IsZero() {
		s.first = e.Time
	}
	s.last = e.Time
	s.n++
	f, _ := e.Fields.(events.WindowFiredFields)
	s.results += float64(f.Results)
	s.upTo = max(s.upTo, f.Watermark)
}

func (s *windowSum) line() string {
	if s.n == 0 {
		return ""
	}
	upTo := "up to " + human.EventTime(int64(s.upTo))
	if s.upTo >= math.MaxInt64/2 {
		upTo = "at the drain's final watermark"
	}
	return fmt.Sprintf("%s %-15s %s fired windows %s: %s", s.last.Format("15:04:05.000"),
		events.WindowFired, human.Plural(s.n, "instance"), upTo, human.PluralCount(s.results, "result"))
}
