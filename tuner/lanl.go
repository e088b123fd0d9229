package tuner

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// lanlFloor is the LANL trace's resolution: times are to the minute, so a
// duration of 0 is taken as half a minute.
const lanlFloor = 30

// ParseLANL reads the LANL failure CSV (LA-UR-05-7318: one record per
// failure, with a header). It uses the columns System, nodenumz (else
// nodenum), Prob Started, Prob Fixed and Down Time, found by name ignoring
// case and spaces around them; other columns are ignored. A node is
// (System, node number); records with no node number (system-wide events)
// are counted in Skipped and not used. If system is not empty, only that
// System's records are read.
//
// Per node, failures are sorted by start; a failure that starts before the
// previous one is fixed is merged into it (one outage, several causes). The
// time between failures is from one outage's end to the next one's start;
// the repair time is the outage's length (Prob Fixed − Prob Started, else
// Down Time). Times are m/d/yyyy h:mm in an unstated local time zone, read
// as UTC (only differences are used). Nothing is censored: the trace does
// not say when each node's observation ended.
//
// Errors are one line: "PATH:LINE: what" for a bad record.
func ParseLANL(r io.Reader, path, system string) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil, malformed(path, "empty file (want the LANL CSV with a header)")
		}
		return nil, csvErr(path, err)
	}
	col := func(names ...string) int {
		for _, name := range names {
			for i, h := range header {
				if strings.EqualFold(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")), name) {
					return i
				}
			}
		}
		return -1
	}
	cSys, cNode, cNodeAlt := col("System"), col("nodenumz"), col("nodenum")
	cStart, cFixed, cDown := col("Prob Started"), col("Prob Fixed"), col("Down Time")
	for _, c := range []struct {
		i    int
		name string
	}{{cSys, "System"}, {cStart, "Prob Started"}, {cFixed, "Prob Fixed"}, {cDown, "Down Time"}} {
		if c.i < 0 {
			return nil, &LineError{Path: path, Line: 1, Msg: fmt.Sprintf("no column %q (have %s)", c.name, headerList(header))}
		}
	}
	if cNode < 0 {
		cNode = cNodeAlt
	}
	if cNode < 0 {
		return nil, &LineError{Path: path, Line: 1, Msg: fmt.Sprintf("no column \"nodenumz\" or \"nodenum\" (have %s)", headerList(header))}
	}
	tr := &Trace{Path: path}
	nodes := map[string]int32{}
	var outs []outage
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvErr(path, err)
		}
		line, _ := cr.FieldPos(0)
		field := func(i int) string { return strings.TrimSpace(rec[i]) }
		bad := func(format string, args ...any) error {
			return &LineError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
		}
		if system != "" && field(cSys) != system {
			continue
		}
		tr.Records++
		start, ok := parseLANLTime(field(cStart))
		if !ok {
			return nil, bad("Prob Started %s: want m/d/yyyy h:mm", quote(field(cStart)))
		}
		end := start
		if s := field(cFixed); s != "" {
			if end, ok = parseLANLTime(s); !ok {
				return nil, bad("Prob Fixed %s: want m/d/yyyy h:mm", quote(s))
			}
			if end < start {
				return nil, bad("Prob Fixed %s is before Prob Started %s", s, field(cStart))
			}
		} else if s := field(cDown); s != "" {
			m, err := strconv.ParseFloat(s, 64)
			if err != nil || !(m >= 0) || m > 1e9 {
				return nil, bad("Down Time %s: want minutes >= 0", quote(s))
			}
			end = start + int64(m*60)
		}
		node := field(cNode)
		if node == "" && cNodeAlt >= 0 {
			node = field(cNodeAlt)
		}
		if node == "" {
			tr.Skipped++
			continue
		}
		key := field(cSys) + "/" + node
		id, ok := nodes[key]
		if !ok {
			id = int32(len(nodes))
			nodes[key] = id
		}
		outs = append(outs, outage{node: id, start: start, end: end})
	}
	if tr.Records == 0 {
		if system != "" {
			return nil, malformed(path, "no records of system %q", system)
		}
		return nil, malformed(path, "no failure records")
	}
	tr.reduce(outs, lanlFloor)
	return tr, nil
}

// parseLANLTime reads "m/d/yyyy h:mm" (seconds ":ss" allowed) as UTC epoch
// seconds.
func parseLANLTime(s string) (int64, bool) {
	date, clock, ok := strings.Cut(s, " ")
	if !ok {
		return 0, false
	}
	dp := strings.Split(date, "/")
	cp := strings.Split(strings.TrimSpace(clock), ":")
	if len(dp) != 3 || len(cp) < 2 || len(cp) > 3 {
		return 0, false
	}
	num := func(s string, lo, hi int) (int, bool) {
		if s == "" || len(s) > 4 {
			return 0, false
		}
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, n >= lo && n <= hi
	}
	mo, ok1 := num(dp[0], 1, 12)
	d, ok2 := num(dp[1], 1, 31)
	y, ok3 := num(dp[2], 1900, 2999)
	h, ok4 := num(cp[0], 0, 23)
	mi, ok5 := num(cp[1], 0, 59)
	sec, ok6 := 0, true
	if len(cp) == 3 {
		sec, ok6 = num(cp[2], 0, 59)
	}
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
	if t.Day() != d { // 2/30
		return 0, false
	}
	return t.Unix(), true
}

// csvErr turns an encoding/csv error into "PATH:LINE: what".
func csvErr(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "wrong number of fields (the header has a different number)"
		}
		if pe.Column > 0 && !errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = fmt.Sprintf("column %d: %s", pe.Column, msg)
		}
		return &LineError{Path: path, Line: pe.Line, Msg: msg}
	}
	return malformed(path, "read: %v", err)
}

func headerList(h []string) string {
	var b strings.Builder
	for i, s := range h {
		if i == 8 {
			fmt.Fprintf(&b, ", ... (%d columns)", len(h))
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(s))
	}
	return b.String()
}

// quote quotes s for a message, cut to 40 bytes.
func quote(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s)
}
