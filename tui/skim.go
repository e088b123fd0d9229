package tui

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"sync"

	"spate/events"
)

// The skim: a seek past the background fold's snapshots.
//
// A 10-minute run at 10,000 events/s is 6 M events, and decoding is most
// of a fold's cost: the background fold takes seconds to reach the end.
// A seek ahead of it cannot fold every event in time, and it need not:
// most of a run is the steady kinds (metrics, checkpoints, trims,
// throughput, windows), and the dashboard keeps only a bounded suffix of
// each, or only the latest per name. So the index (built at open with a
// cheap scan of each line's prefix) gives each event a fold code, a key
// (its node and instance, as written) and, for a trim, the bytes freed;
// and skim folds from the nearest snapshot only the events that can
// change the state at the target:
//
//   - every event of the other kinds (lifecycle, faults, recoveries,
//     rescales, intervals...), and every line not in the coordinator's
//     own shape;
//   - throughput: the samples from which the chart's last maxTput points
//     start (a sample starts a point or replaces the last one by its gap
//     to the sample before: a local rule, read from the index's times);
//   - metrics: the first and the latest of each node and instance (the
//     first creates them where a full fold does; the latest is every
//     field's last writer);
//   - checkpoints: the last maxCkpts rows, the last 16 of each instance and
//     the first of each (which creates it);
//   - trims: the last 32 of each backup (its recent trims and its latest
//     figures); the others only add their bytes freed and one to the
//     count, which skim adds from the index;
//   - before each fault or recovery event, each checkpoint key's last 16
//     (a node lost or a recovery's end pins the latest checkpoints of
//     every instance for the space-time diagrams);
//   - the first event (the state's first time) and the first that
//     reaches the latest time (its last).
//
// What the others did to the log, the counters and the latest seq does
// not need them decoded: the log's eviction depends only on the kinds
// (see appendLog), so skim replays it on the index and decodes the at
// most maxLog events it keeps. The state is the one a full fold gives,
// field for field (TestSkimIsTheFold); a damaged line that skim does not
// decode is found by the background fold, as before.

// Fold codes, the low bits of recording.fold.
const (
	foldMust       uint8 = iota // always decoded and applied
	foldLog                     // changes only the log and the counters
	foldThroughput              // a throughput sample
	foldMetrics                 // metrics of a node or an instance: keyed
	foldCheckpoint              // a checkpoint: keyed by its instance
	foldCkptRow                 // a checkpoint_fallback: always applied, and a row of the checkpoints
	foldTrim                    // a trim in the coordinator's shape: keyed, with its bytes freed

	foldCode    = 0x0f
	foldKeep    = 0x40 // lifecycle or bad: the log keeps it over the others (appendLog)
	foldClamped = 0x80 // its time is before an earlier event's: the index holds the earlier
)

// seqBlock is the number of events per entry of recording.seqMax.
const seqBlock = 4096

// keptInLog says whether the log keeps an event of kind k over the
// frequent ones when it is full: appendLog's rule for a recorded event.
func keptInLog(k events.Kind) bool {
	return lifecycle(k) || k == events.Error || k == events.FrameError || k == events.InstanceUnrecoverable
}

// keptInLogBytes is keptInLog of a kind's bytes, without a copy.
func keptInLogBytes(k []byte) bool {
	switch string(k) {
	case string(events.Throughput), string(events.Checkpoint), string(events.WindowFired), string(events.Trim),
		string(events.Metrics), string(events.Replay), string(events.Interval):
		return false
	}
	return true // lifecycle, and the errors (frame_error is not lifecycle, but bad)
}

// skipLog are the kinds apply does nothing with but log (and count).
func skipLog(k []byte) bool {
	switch string(k) {
	case string(events.WindowFired), string(events.Error), string(events.FrameError), string(events.NodeRefused):
		return true
	}
	return false
}

// lineInfo is what the index reads from a line.
type lineInfo struct {
	t     int64
	seq   uint64
	class uint8
	fold  uint8
	key   []byte // the keyed kinds: the kind's code, the node and instance as written (trims: and the backup's slice and target); in buf
	buf   []byte // scratch for key, reused line to line
	freed int64  // a trim's bytes freed
}

// peekLine reads a line's time, seq, kind and fold code. The
// coordinator's lines start {"v":1,"seq":N,"time":"...","kind":"..."
// (before the schema version, without "v") and are read without decoding;
// any other line is decoded whole (and is always folded: foldMust).
func peekLine(line []byte) (lineInfo, error) { return peekLineBuf(line, nil, nil) }

// peekLineBuf is peekLine building the key in buf, and reading the time
// with tc (nil: without).
func peekLineBuf(line, buf []byte, tc *timeCache) (lineInfo, error) {
	li := lineInfo{buf: buf}
	if line[len(line)-1] != '}' {
		return li, errors.New("not a JSON object (cut short?)")
	}
	const pSeq, pTime, pKind = `"seq":`, `,"time":"`, `","kind":"`
	body := line[1:]
	if rest, ok := bytes.CutPrefix(body, []byte(`"v":`)); ok {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i > 0 && i < len(rest) && rest[i] == ',' {
			body = rest[i+1:]
		}
	}
	if rest, ok := bytes.CutPrefix(body, []byte(pSeq)); ok && line[0] == '{' {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		var seq uint64
		serr := i > 19 // may not fit: the index takes the line as not its own
		for _, c := range rest[:i] {
			seq = seq*10 + uint64(c-'0')
		}
		if rest, ok := bytes.CutPrefix(rest[i:], []byte(pTime)); ok && i > 0 && !serr {
			if j := bytes.IndexByte(rest, '"'); j > 0 {
				ts := rest[:j]
				if rest, ok := bytes.CutPrefix(rest[j:], []byte(pKind)); ok {
					if k := bytes.IndexByte(rest, '"'); k >= 0 {
						if t, ok := tc.parse(ts); ok {
							kind := rest[:k]
							li.t, li.seq = t, seq
							// The steady kinds first: most lines are.
							var code uint8
							switch string(kind) {
							case string(events.Metrics):
								code = foldMetrics
							case string(events.Checkpoint):
								li.class, code = classCheckpoint, foldCheckpoint
							case string(events.Trim):
								code = foldTrim
							case string(events.Throughput):
								code = foldThroughput
							case string(events.WindowFired):
								code = foldLog
							default:
								li.class = classOf(kind)
								if keptInLogBytes(kind) {
									li.fold = foldKeep
								}
								switch {
								case string(kind) == string(events.CheckpointFallback):
									code = foldCkptRow
								case skipLog(kind):
									code = foldLog
								default:
									code = foldMust
								}
							}
							li.fold |= skimCode(code, rest[k+1:], &li)
							return li, nil
						}
					}
				}
			}
		}
	}
	var e events.Event
	if err := json.Unmarshal(line, &e); err != nil {
		return li, err
	}
	if e.Time.IsZero() {
		return li, errors.New("time: missing")
	}
	if e.Kind == "" {
		return li, errors.New("kind: missing")
	}
	li.t, li.seq, li.class = e.Time.UnixNano(), e.Seq, classOf([]byte(e.Kind))
	if keptInLog(e.Kind) {
		li.fold = foldKeep
	}
	li.fold |= foldMust
	return li, nil
}

// timeCache reads the times of lines that share their second (most of a
// recording's next lines do) from the second's start, read once, and the
// fraction: what events.ParseTime gives. Not safe for concurrent use.
type timeCache struct {
	prefix [19]byte // YYYY-MM-DDTHH:MM:SS
	base   int64    // its time, unix ns
	ok     bool
	buf    [20]byte
}

func (tc *timeCache) parse(ts []byte) (int64, bool) {
	if tc == nil || len(ts) < 20 || ts[len(ts)-1] != 'Z' {
		return events.ParseTime(ts)
	}
	frac := ts[19 : len(ts)-1]
	ns := int64(0)
	if len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return events.ParseTime(ts)
		}
		for _, c := range frac[1:] {
			if c < '0' || c > '9' {
				return events.ParseTime(ts)
			}
			ns = ns*10 + int64(c-'0')
		}
		for k := len(frac) - 1; k < 9; k++ {
			ns *= 10
		}
	}
	if !tc.ok || string(tc.prefix[:]) != string(ts[:19]) {
		copy(tc.buf[:], ts[:19])
		tc.buf[19] = 'Z'
		base, ok := events.ParseTime(tc.buf[:])
		if !ok {
			tc.ok = false
			return events.ParseTime(ts)
		}
		copy(tc.prefix[:], ts[:19])
		tc.base, tc.ok = base, true
	}
	return tc.base + ns, true
}

// peek is peekLine's time and class.
func peek(line []byte) (int64, uint8, error) {
	li, err := peekLine(line)
	return li.t, li.class, err
}

// skimCode is the fold code of a line of its kind's code whose bytes
// after the kind's closing quote are rest. A line not in the coordinator's shape
// (,"node":"..." and ,"instance":"..." without escapes, then the text and
// the fields, and no envelope key repeated in them) is foldMust.
func skimCode(code uint8, rest []byte, li *lineInfo) uint8 {
	if code == foldMust || code == foldCkptRow {
		return code
	}
	// The envelope: ,"node":"N" and ,"instance":"I", each optional.
	at := 0
	for _, key := range []string{`,"node":"`, `,"instance":"`} {
		if r, ok := bytes.CutPrefix(rest[at:], []byte(key)); ok {
			j := plainEnd(r)
			if j < 0 {
				return foldMust
			}
			at += len(key) + j + 1
		}
	}
	env := rest[:at]
	rest = rest[at:]
	switch {
	case bytes.HasPrefix(rest, []byte(`,"text":"`)), bytes.HasPrefix(rest, []byte(`,"fields":`)), len(rest) == 1 && rest[0] == '}':
	default:
		return foldMust
	}
	switch code {
	case foldTrim:
		// The fields: a quote after a comma is never inside a string
		// (there it is escaped), so this is the envelope's fields key.
		j := bytes.Index(rest, []byte(`,"fields":{"freed_bytes":`))
		if j < 0 {
			return foldMust
		}
		key, freed, ok := trimShape(rest[j+len(`,"fields":`):])
		if !ok {
			return foldMust
		}
		li.key = append(append(append(li.buf[:0], code), env...), key...)
		li.freed = freed
	case foldMetrics, foldCheckpoint:
		li.key = append(append(li.buf[:0], code), env...) // one key space per kind
	}
	return code
}

// plainEnd is the index of the quote that ends a string without escapes
// at the start of b; -1 if it has one or does not end.
func plainEnd(b []byte) int {
	for i, c := range b {
		switch {
		case c == '"':
			return i
		case c == '\\' || c < 0x20:
			return -1
		}
	}
	return -1
}

// trimShape reads a trim's fields as the coordinator writes them,
// {"freed_bytes":N,"held_bytes":N,"positions":N,"slice":[...],"to":"T","up_to":N}}
// to the end of the line: the bytes that key its backup (the slice and
// the target, as written) and the bytes freed.
func trimShape(b []byte) (key []byte, freed int64, ok bool) {
	num := func(p string) (int64, bool) {
		if len(b) < len(p) || string(b[:len(p)]) != p {
			return 0, false
		}
		r := b[len(p):]
		i, neg := 0, false
		if i < len(r) && r[i] == '-' {
			i, neg = 1, true
		}
		j := i
		var v int64
		for j < len(r) && r[j] >= '0' && r[j] <= '9' {
			v = v*10 + int64(r[j]-'0')
			j++
		}
		if j == i || j-i > 18 || (r[i] == '0' && j > i+1) {
			return 0, false // none, too long to be sure it fits, or a leading zero
		}
		if neg {
			v = -v
		}
		b = r[j:]
		return v, true
	}
	var ok1 bool
	if freed, ok1 = num(`{"freed_bytes":`); !ok1 {
		return nil, 0, false
	}
	if _, ok1 = num(`,"held_bytes":`); !ok1 {
		return nil, 0, false
	}
	if _, ok1 = num(`,"positions":`); !ok1 {
		return nil, 0, false
	}
	const pSlice, pTo = `,"slice":`, `,"to":"`
	if !bytes.HasPrefix(b, []byte(pSlice)) {
		return nil, 0, false
	}
	r := b[len(pSlice):]
	// The slice: null, or [ ] { } , : digits and the keys "hi" and "lo".
	end := -1
	if bytes.HasPrefix(r, []byte("null")) {
		end = 3
	} else if len(r) > 0 && r[0] == '[' {
		depth := 0
	scan:
		for i := 0; i < len(r); i++ {
			switch c := r[i]; {
			case c == '[':
				depth++
			case c == ']':
				if depth--; depth == 0 {
					end = i
					break scan
				}
			case c == '"':
				if !bytes.HasPrefix(r[i:], []byte(`"hi":`)) && !bytes.HasPrefix(r[i:], []byte(`"lo":`)) {
					return nil, 0, false
				}
				i += 4
			case c == '{' || c == '}' || c == ',' || (c >= '0' && c <= '9'):
			default:
				return nil, 0, false
			}
		}
	}
	if end < 0 {
		return nil, 0, false
	}
	b = r[end+1:]
	if !bytes.HasPrefix(b, []byte(pTo)) {
		return nil, 0, false
	}
	j := plainEnd(b[len(pTo):])
	if j < 0 {
		return nil, 0, false
	}
	key = r[:end+1+len(pTo)+j+1] // the slice and the target, as written
	b = b[len(pTo)+j+1:]
	if _, ok1 = num(`,"up_to":`); !ok1 || string(b) != "}}" {
		return nil, 0, false
	}
	return key, freed, true
}

// lists are the recording's events by fold code and key, each list in
// order, built once at open: with them a plan finds the events it needs
// by binary search instead of walking the range.
type lists struct {
	mustAt []int32 // foldMust and foldCkptRow
	keepAt []int32 // foldKeep: the log keeps them over the others
	tputAt []int32 // foldThroughput
	rowAt  []int32 // foldCheckpoint and foldCkptRow: the rows of the checkpoints table
	// The keyed events by key: key k's are byKey[keyStart[k]:keyStart[k+1]],
	// and freedTo[j] is the bytes freed by the trims of byKey[keyStart[k]:j]
	// of its key (trim keys only).
	keyStart []int32
	byKey    []int32
	freedTo  []int64
}

// buildLists fills r.lists from r.codes, r.key and r.trimAt. Open runs
// it on its own goroutine, after the index (the first frame does not wait
// for it), and closes r.listed when it is done.
func (r *recording) buildLists() {
	nk := len(r.keys) + 1
	count := make([]int32, nk+1)
	for i, f := range r.codes {
		switch f & foldCode {
		case foldMust:
			r.mustAt = append(r.mustAt, int32(i))
		case foldCkptRow:
			r.mustAt = append(r.mustAt, int32(i))
			r.rowAt = append(r.rowAt, int32(i))
		case foldThroughput:
			r.tputAt = append(r.tputAt, int32(i))
		case foldCheckpoint:
			r.rowAt = append(r.rowAt, int32(i))
		}
		if f&foldKeep != 0 {
			r.keepAt = append(r.keepAt, int32(i))
		}
		if k := r.key[i]; k != 0 {
			count[k+1]++
		}
	}
	r.keyStart = make([]int32, nk+1)
	for k := 1; k <= nk; k++ {
		r.keyStart[k] = r.keyStart[k-1] + count[k]
	}
	r.byKey = make([]int32, r.keyStart[nk])
	r.freedTo = make([]int64, r.keyStart[nk]+1)
	fill := append([]int32(nil), r.keyStart...)
	tj := 0
	for i, k := range r.key {
		if k == 0 {
			continue
		}
		j := fill[k]
		fill[k]++
		r.byKey[j] = int32(i)
		for tj < len(r.trimAt) && int(r.trimAt[tj]) < i {
			tj++
		}
		if tj < len(r.trimAt) && int(r.trimAt[tj]) == i {
			r.freedTo[j+1] = r.trimFreed[tj] // summed below
		}
	}
	for j := 1; j < len(r.freedTo); j++ {
		r.freedTo[j] += r.freedTo[j-1]
	}
	r.trimAt, r.trimFreed = nil, nil
}

// between is the part of the sorted list xs in [from, to).
func between(xs []int32, from, to int) []int32 {
	lo := sort.Search(len(xs), func(j int) bool { return int(xs[j]) >= from })
	hi := lo + sort.Search(len(xs)-lo, func(j int) bool { return int(xs[lo+j]) >= to })
	return xs[lo:hi]
}

// skimPlan is what skim decodes: the events it applies, the ones the log
// keeps, and what the trims it does not apply add to their backups.
type skimPlan struct {
	apply []int // in order
	log   []int // the log's entries, in order: an event, or base's entry b as -(b+1)
	trims []trimSum
}

// trimSum is what the unapplied trims of one key add to its backup; at is
// an applied trim of the key (its last is), to name the backup.
type trimSum struct {
	at    int
	freed int64
	n     int
}

// plan chooses the events of [from, to) to apply onto base (the state
// after [0, from)), and replays the log on the index.
func (r *recording) plan(base *state, from, to int) skimPlan {
	var pl skimPlan
	if to <= from {
		return pl
	}
	<-r.listed
	var need []int
	add := func(xs []int32) {
		for _, i := range xs {
			need = append(need, int(i))
		}
	}
	add(between(r.mustAt, from, to))
	// Throughput: back from the target until maxTput points start after
	// the sample reached.
	tp := between(r.tputAt, from, to)
	starts := 0
	for j := len(tp) - 1; j >= 0 && starts < maxTput; j-- {
		i := int(tp[j])
		need = append(need, i)
		if j+1 < len(tp) {
			n := int(tp[j+1])
			if (r.codes[i]|r.codes[n])&foldClamped == 0 {
				if d := r.times[n] - r.times[i]; d >= 100e6 || d < 0 {
					starts++ // the sample after this one starts a point
				}
			}
		}
	}
	// The checkpoints table's last rows.
	rows := between(r.rowAt, from, to)
	add(rows[max(len(rows)-maxCkpts, 0):])
	// Each key's first (if in the range), and its last ones.
	type skip struct{ lo, hi int32 } // slots of byKey not applied
	var skipped []skip
	for k := 1; k <= len(r.keys); k++ {
		all := r.byKey[r.keyStart[k]:r.keyStart[k+1]]
		if len(all) == 0 {
			continue
		}
		in := between(all, from, to)
		if len(in) == 0 {
			continue
		}
		if int(all[0]) >= from {
			need = append(need, int(all[0])) // it makes the node or instance where a full fold does
		}
		last := 1
		switch r.codes[all[0]] & foldCode {
		case foldCheckpoint:
			last = 16
		case foldTrim:
			last = 32
			if len(in) > last {
				lo := int32(len(all)-len(between(all, from, 1<<62))) + r.keyStart[k] // slot of in[0]
				skipped = append(skipped, skip{lo, lo + int32(len(in)-last)})
			}
		}
		add(in[max(len(in)-last, 0):])
	}
	// Each pin of the space-time record (a node lost, a recovery's end:
	// among the faults and the recoveries) keeps the latest checkpoints
	// of every instance at that point: each checkpoint key's last ones
	// before it.
	var ckKeys [][]int32
	for k := 1; k <= len(r.keys); k++ {
		if all := r.byKey[r.keyStart[k]:r.keyStart[k+1]]; len(all) > 0 && r.codes[all[0]]&foldCode == foldCheckpoint {
			ckKeys = append(ckKeys, all)
		}
	}
	for _, p := range between(r.mustAt, from, to) {
		if c := r.class[p]; c != classFault && c != classRecovery {
			continue
		}
		for _, all := range ckKeys {
			before := between(all, from, int(p))
			add(before[max(len(before)-maxSpaceTicks, 0):])
		}
	}
	if base.first.IsZero() {
		need = append(need, from)
	}
	if last := r.times[to-1]; base.last.IsZero() || last > base.last.UnixNano() {
		// The first event at the latest time: it sets the state's last.
		need = append(need, from+sort.Search(to-from, func(j int) bool { return r.times[from+j] >= last }))
	}
	sort.Ints(need)
	pl.apply = compactInts(need)
	// The trims not applied: their bytes and count, from the lists.
	for _, sk := range skipped {
		ts := trimSum{at: int(r.byKey[sk.hi]), freed: r.freedTo[sk.hi] - r.freedTo[sk.lo], n: int(sk.hi - sk.lo)}
		// One of them may be applied for another reason (the first
		// event, the latest time): it adds its own.
		for _, i := range pl.apply {
			if i >= int(r.byKey[sk.lo]) && i < ts.at && r.key[i] == r.key[ts.at] {
				j := sk.lo + int32(sort.Search(int(sk.hi-sk.lo), func(j int) bool { return int(r.byKey[sk.lo+int32(j)]) >= i }))
				ts.freed -= r.freedTo[j+1] - r.freedTo[j]
				ts.n--
			}
		}
		pl.trims = append(pl.trims, ts)
	}
	pl.log = r.replayLog(base, from, to)
	return pl
}

// replayLog is appendLog over the index: the entries the log holds after
// events [from, to) on base's, each an event's index, or base's entry b
// as -(b+1). appendLog drops the oldest entries it does not keep first,
// and the oldest it keeps only when it has too few of the others; so the
// log is always the latest K of the kept and the latest M of the others,
// and replaying the counts is enough.
func (r *recording) replayLog(base *state, from, to int) []int {
	isKept := func(le logEntry) bool { return le.Local || le.Bad || lifecycle(le.E.Kind) }
	var baseKept, baseOther []int // base's entries of each sort, in order
	for b, le := range base.log {
		if isKept(le) {
			baseKept = append(baseKept, b)
		} else {
			baseOther = append(baseOther, b)
		}
	}
	k, m := len(baseKept), len(baseOther)
	compact := func() {
		drop := maxLog / 4
		d := min(drop, m)
		m -= d
		k -= drop - d
	}
	others := func(n int) { // n appends of entries not kept
		for n > 0 {
			if k+m >= maxLog {
				compact()
			}
			a := min(maxLog-(k+m), n)
			m += a
			n -= a
		}
	}
	kept := between(r.keepAt, from, to)
	at := from
	for _, q := range kept {
		others(int(q) - at)
		if k+m >= maxLog {
			compact()
		}
		k++
		at = int(q) + 1
	}
	others(to - at)
	// The latest k kept and m others, base's first.
	var out []int
	nk := min(k, len(kept))
	nm := m
	var rangeOther []int
	for i := to - 1; i >= from && len(rangeOther) < nm; i-- {
		if r.codes[i]&foldKeep == 0 {
			rangeOther = append(rangeOther, i)
		}
	}
	bk, bo := baseKept[len(baseKept)-(k-nk):], baseOther[len(baseOther)-(m-len(rangeOther)):]
	for i, j := 0, 0; i < len(bk) || j < len(bo); {
		if j == len(bo) || (i < len(bk) && bk[i] < bo[j]) {
			out = append(out, -(bk[i] + 1))
			i++
		} else {
			out = append(out, -(bo[j] + 1))
			j++
		}
	}
	var tail []int
	for _, q := range kept[len(kept)-nk:] {
		tail = append(tail, int(q))
	}
	tail = append(tail, rangeOther...)
	sort.Ints(tail)
	return append(out, tail...)
}

// skim is the state after events [0, to) from base, the state after
// [0, from), decoding only what can change it (see the top of this file).
// base is not changed.
func (r *recording) skim(base *state, from, to int) (*state, error) {
	s := base.clone()
	if to <= from {
		return s, nil
	}
	pl := r.plan(base, from, to)
	need := append([]int(nil), pl.apply...) // sorted below: not in pl.apply's array
	for _, i := range pl.log {
		if i >= 0 {
			need = append(need, i)
		}
	}
	sort.Ints(need)
	need = compactInts(need)
	evs, err := r.decodeList(need)
	if err != nil {
		return nil, err
	}
	at := make(map[int]int, len(need))
	for j, i := range need {
		at[i] = j
	}
	for _, i := range pl.apply {
		s.apply(evs[at[i]])
	}
	// What the trims not applied add to their backups.
	for _, ts := range pl.trims {
		e := evs[at[ts.at]]
		f, _ := e.Fields.(events.TrimFields)
		b := s.backups[instKey(e.Instance)+">"+instKey(f.To)+">"+rangesText(f.Slice)]
		if b == nil {
			return nil, errors.New("skim: a trim's backup is missing") // cannot be: the trim at ts.at made it
		}
		b.Freed += ts.freed
		b.Trims += ts.n
	}
	// The log, the counters, the latest seq.
	s.log = make([]logEntry, 0, max(len(pl.log), maxLog))
	for _, i := range pl.log {
		if i < 0 {
			s.log = append(s.log, base.log[-i-1])
			continue
		}
		e := evs[at[i]]
		s.log = append(s.log, logEntry{E: e, Bad: e.Kind == events.Error || e.Kind == events.FrameError || e.Kind == events.InstanceUnrecoverable})
	}
	n := uint64(to - from)
	s.total, s.logVer = base.total+n, base.logVer+n
	s.lastSeq = max(s.lastSeq, r.maxSeq(from, to))
	return s, nil
}

func compactInts(xs []int) []int {
	j := 0
	for i, x := range xs {
		if i == 0 || x != xs[j-1] {
			xs[j] = x
			j++
		}
	}
	return xs[:j]
}

// decodeList decodes the events at idx on two goroutines at once.
func (r *recording) decodeList(idx []int) ([]events.Event, error) {
	evs := make([]events.Event, len(idx))
	errs := make([]error, 2)
	mid := len(idx) / 2
	var wg sync.WaitGroup
	for h, rg := range [2][2]int{{0, mid}, {mid, len(idx)}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := events.Names{}
			for j := rg[0]; j < rg[1]; j++ {
				e, err := r.eventNamed(idx[j], n)
				if err != nil {
					errs[h] = err
					return
				}
				evs[j] = e
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// maxSeq is the largest seq of events [from, to).
func (r *recording) maxSeq(from, to int) uint64 {
	var m uint64
	seqAt := func(i int) uint64 {
		li, _ := peekLine(r.line(i)) // the index read it once without error
		return li.seq
	}
	i := from
	for ; i < to && i%seqBlock != 0; i++ {
		m = max(m, seqAt(i))
	}
	for ; i+seqBlock <= to; i += seqBlock {
		m = max(m, r.seqMax[i/seqBlock])
	}
	for ; i < to; i++ {
		m = max(m, seqAt(i))
	}
	return m
}
