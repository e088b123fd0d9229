package traces

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// SparkWidth is the number of characters of Show's sparkline.
const SparkWidth = 72

// Show prints a summary of a source for `spate traces show`: its kind,
// record count, time span, mean and maximum rate per second, and a one-line
// sparkline of the rate. spec is a full spec, or a bare PATH whose kind is
// guessed: a file of whitespace-separated integers is a rate trace, else a
// CSV or TSV record trace whose time and key columns are guessed from the
// header names and the first data row. A failure trace (LANL, FTA: the
// sources of --failures, bare or as lanl:PATH, fta:PATH) is named as one,
// with the --failures string that uses it. For a generator it shows one day
// (one minute for a flat curve) with all its records in one partition.
func Show(w io.Writer, spec string) error {
	if spec == "" {
		spec = DefaultSpec
	}
	if kind, path, ok := strings.Cut(spec, ":"); ok && (kind == "lanl" || kind == "fta") {
		spec, _, _ = strings.Cut(path, "?")
	}
	if !hasScheme(spec) {
		if kind, rows, err := failureKind(spec); err == nil && kind != "" {
			return showFailure(w, spec, kind, rows)
		}
		if _, err := os.Stat(spec); err == nil {
			guessed, err := guessSpec(spec)
			if err != nil {
				return err
			}
			spec = guessed
		}
	}
	src, err := Open(spec, Options{})
	if err != nil {
		return err
	}
	var sum summary
	switch s := src.(type) {
	case *genSource:
		sum = s.summary()
	case *rateSource:
		sum = s.summary()
	case *traceSource:
		if sum, err = s.summary(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: cannot summarise a %T", spec, src)
	}
	sum.spec = spec
	_, err = io.WriteString(w, sum.render())
	return err
}

func hasScheme(spec string) bool {
	for _, s := range []string{"gen:", "trace:", "rate:"} {
		if strings.HasPrefix(spec, s) {
			return true
		}
	}
	return false
}

// summary is what Show prints.
type summary struct {
	spec    string
	kind    string
	file    string
	records uint64
	span    string  // human description of the time span
	dur     float64 // seconds, for the mean rate
	perSec  []uint64
	first   int64 // ms, event time of perSec[0]
	maxNote string
}

func (s *summary) render() string {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "  %-8s %s\n", k, v) }
	fmt.Fprintf(&b, "%s\n", s.spec)
	row("kind", s.kind)
	if s.file != "" {
		row("file", s.file)
	}
	row("records", fmtInt(s.records))
	row("span", s.span)
	mean := 0.0
	if s.dur > 0 {
		mean = float64(s.records) / s.dur
	}
	var peak uint64
	at := 0
	for i, c := range s.perSec {
		if c > peak {
			peak, at = c, i
		}
	}
	rate := fmt.Sprintf("mean %s/s, max %s/s", fmtFloat(mean), fmtInt(peak))
	if len(s.perSec) > 0 {
		rate += fmt.Sprintf(" (second %s%s)", fmtInt(uint64(at)), s.maxNote)
	}
	row("rate", rate)
	if len(s.perSec) > 0 {
		line, per, top := sparkline(s.perSec, SparkWidth)
		row("shape", line)
		row("", fmt.Sprintf("one character = %s s, full block = %s/s", fmtInt(uint64(per)), fmtFloat(top)))
	}
	return b.String()
}

// sparkline draws the mean rate of each bucket of per seconds; zero is a
// space. It returns the line, the bucket size and the rate of a full block.
func sparkline(perSec []uint64, width int) (string, int, float64) {
	per := (len(perSec) + width - 1) / width
	var rates []float64
	top := 0.0
	for i := 0; i < len(perSec); i += per {
		j := min(i+per, len(perSec))
		var sum uint64
		for _, c := range perSec[i:j] {
			sum += c
		}
		r := float64(sum) / float64(j-i)
		rates = append(rates, r)
		top = max(top, r)
	}
	levels := []rune(" ▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, r := range rates {
		l := 0
		if r > 0 {
			l = max(1, min(8, int(math.Ceil(r/top*8))))
		}
		b.WriteRune(levels[l])
	}
	return b.String(), per, top
}

func (g *genSource) summary() summary {
	c := newCurve(g.rate, g.day, g.amp, g.burstp, g.burstx, g.seed) // one partition
	secs := int64(60)
	span := "first 60 s of event time"
	if c.a > 0 {
		secs = max(1, c.day/1000)
		span = fmt.Sprintf("first %v of event time (one day of the curve)", g.day)
	}
	perSec := make([]uint64, secs)
	pd := c.enter(0, 0)
	prev := uint64(0)
	for s := int64(1); s <= secs; s++ {
		t := s * 1000
		for t > pd.start+burstPeriod {
			pd = c.enter(pd.k+1, pd.e1)
		}
		n := count(c.lam(&pd, t))
		perSec[s-1] = n - prev
		prev = n
	}
	return summary{
		kind:    g.describe(),
		records: prev,
		span:    span,
		dur:     float64(secs),
		perSec:  perSec,
	}
}

func (s *rateSource) summary() summary {
	perSec := make([]uint64, len(s.counts))
	for i, c := range s.counts {
		perSec[i] = uint64(c)
	}
	return summary{
		kind:    "rate trace: per-second counts, records synthesised with generator keys",
		file:    fmt.Sprintf("%s (%s)", s.name, s.format),
		records: s.total,
		span:    fmt.Sprintf("%s s (%s)", fmtInt(uint64(len(s.counts))), fmtDur(float64(len(s.counts)))),
		dur:     float64(len(s.counts)),
		perSec:  perSec,
	}
}

// maxShowSeconds bounds the per-second array of a record trace's summary;
// longer traces are counted per coarser unit.
const maxShowSeconds = 50_000_000

func (s *traceSource) summary() (summary, error) {
	cols := fmt.Sprintf("time=%s key=%s", s.lay.header[s.lay.tcol], s.lay.header[s.lay.kcol])
	if s.lay.vcol >= 0 {
		cols += " value=" + s.lay.header[s.lay.vcol]
	}
	sepName := map[byte]string{'\t': "TSV", ',': "CSV"}[s.lay.sep]
	if sepName == "" {
		sepName = fmt.Sprintf("%q-separated", s.lay.sep)
	}
	sum := summary{
		kind:    fmt.Sprintf("record trace (%s, %d columns; %s)", sepName, len(s.lay.header), cols),
		file:    fmt.Sprintf("%s (%s)", s.name, s.format),
		records: s.rows,
		first:   s.first,
	}
	if s.rows == 0 {
		sum.span = "empty"
		return sum, nil
	}
	dur := float64(s.last-s.first) / 1000
	sum.dur = dur
	sum.span = fmt.Sprintf("%s to %s (%s)", fmtTime(s.first), fmtTime(s.last), fmtDur(dur))
	unit := int64(1000)
	for (s.last-s.first)/unit+1 > maxShowSeconds {
		unit *= 60
	}
	if unit > 1000 {
		sum.maxNote = fmt.Sprintf("; counted per %d s", unit/1000)
	}
	counts := make([]uint64, (s.last-s.first)/unit+1)
	r, err := s.Open(0, 0) // Show opens with one partition
	if err != nil {
		return sum, err
	}
	defer r.Close()
	for {
		rec, ok, err := r.Next()
		if err != nil {
			return sum, err
		}
		if !ok {
			break
		}
		counts[(rec.Time-s.first)/unit]++
	}
	sum.perSec = counts
	return sum, nil
}

// guessSpec turns a bare path into a spec: rate: if the content is only
// integers and spaces, else trace: with guessed columns.
func guessSpec(path string) (string, error) {
	in, err := openInput(path, 0)
	if err != nil {
		return "", err
	}
	defer in.Close()
	head, err := in.r.Peek(bufSize)
	if err != nil && err != io.EOF {
		return "", in.readErr(err)
	}
	if len(bytes.TrimSpace(head)) > 0 && onlyDigits(head) {
		return "rate:" + path, nil
	}
	sc := &lineScanner{r: in.r}
	lay, err := readHeader(sc, in, 0)
	if err != nil {
		return "", err
	}
	var first [][]byte
	for {
		line, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", lineReadErr(in, sc, err)
		}
		if !isBlank(line) {
			first, _, _ = splitFields(line, lay.sep, lay.quote, nil, nil)
			break
		}
	}
	tcol, kcol := guessColumns(lay.header, first)
	if tcol < 0 {
		return "", fmt.Errorf("%s: cannot guess the time column (columns: %s); use trace:%s?time=COL&key=COL", in.name, columnList(lay.header), path)
	}
	if kcol < 0 {
		return "", fmt.Errorf("%s: cannot guess a key column (columns: %s); use trace:%s?time=COL&key=COL", in.name, columnList(lay.header), path)
	}
	q := "time=" + url.QueryEscape(lay.header[tcol]) + "&key=" + url.QueryEscape(lay.header[kcol])
	return "trace:" + path + "?" + q, nil
}

func onlyDigits(b []byte) bool {
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9', c == ' ', c == '\t', c == '\n', c == '\r':
		default:
			return false
		}
	}
	return true
}

// guessColumns picks the time column (a time-like name whose first value
// parses as a time, else the first column whose value is a date) and the
// key column (a key-like name, else the first other column whose value is
// not a number, else the first other column).
func guessColumns(header []string, first [][]byte) (tcol, kcol int) {
	val := func(i int) []byte {
		if i < len(first) {
			return first[i]
		}
		return nil
	}
	isTime := func(i int) bool { _, ok := parseTime(val(i)); return ok || first == nil }
	tcol = -1
	for _, name := range []string{"time", "timestamp", "ts", "date", "datetime"} {
		for i, h := range header {
			if strings.EqualFold(h, name) && isTime(i) {
				tcol = i
				break
			}
		}
		if tcol >= 0 {
			break
		}
	}
	if tcol < 0 {
		for i, h := range header {
			l := strings.ToLower(h)
			if (strings.Contains(l, "time") || strings.Contains(l, "date")) && isTime(i) {
				tcol = i
				break
			}
		}
	}
	if tcol < 0 {
		for i := range header {
			if _, ok := parseDate(val(i)); ok {
				tcol = i
				break
			}
		}
	}
	kcol = -1
	for _, name := range []string{"key", "host", "user", "client", "id", "url", "name", "node", "src", "source"} {
		for i, h := range header {
			if i != tcol && strings.EqualFold(h, name) {
				return tcol, i
			}
		}
	}
	for i := range header {
		if _, isNum := parseInt(val(i)); i != tcol && len(val(i)) > 0 && !isNum {
			return tcol, i
		}
	}
	for i := range header {
		if i != tcol {
			return tcol, i
		}
	}
	return tcol, kcol
}

func fmtInt(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtFloat(f float64) string {
	if f >= 1000 && f < 1e18 {
		return fmtInt(uint64(math.Round(f)))
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}

func fmtTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
}

// fmtDur writes seconds as "58d 13h 32m 30s".
func fmtDur(sec float64) string {
	if sec < 60 {
		return strconv.FormatFloat(sec, 'f', -1, 64) + "s"
	}
	s := int64(sec)
	parts := []struct {
		n    int64
		unit string
	}{{s / 86400, "d"}, {s / 3600 % 24, "h"}, {s / 60 % 60, "m"}, {s % 60, "s"}}
	var out []string
	for _, p := range parts {
		if p.n > 0 || len(out) > 0 {
			out = append(out, fmt.Sprintf("%d%s", p.n, p.unit))
		}
	}
	return strings.Join(out, " ")
}
