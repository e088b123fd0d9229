package job

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Rollup is an instance of windowcount's rollup operator. Its input records
// come from count: Key is the rollup group (GroupName of the counted key),
// Time the window start and Data the counted key with its count and sum.
// Per (group, window) it keeps the total count, the total sum and the top 3
// keys by count, ties broken by key ascending (byte order).
//
// Advance fires every window with end <= wm in (window end, group) order
// and emits on port 0 the JSON of the Result, with Key = group, Time =
// window start, Value = count and from = the key group of the group name.
// Data that does not decode is counted (Malformed) and dropped.
//
// Rollup is not safe for concurrent use.
type Rollup struct {
	w       int64
	groups  []*rollupKG // by key group; nil where this instance holds no state
	wm      int64
	nextEnd int64 // no open window ends before this

	late, malformed uint64

	fired []rollupFiring
	data  []byte
	top   []TopKey
}

// rollupKG is the state of one key group.
type rollupKG struct {
	kg    KeyGroup
	names map[string]*rollupGroup
}

type rollupGroup struct {
	name  string
	nameb []byte // name, as the Key of output records
	wins  []*rollupWin
}

type rollupWin struct {
	start, count, sum int64
	top               [3]TopKey // Key holds the raw key bytes
	ntop              int
}

type rollupFiring struct {
	g  *rollupGroup
	w  *rollupWin
	kg KeyGroup
}

// NewRollup returns a rollup instance of spec with no state. spec must be
// valid (see Spec.Validate).
func NewRollup(spec *Spec) *Rollup {
	return &Rollup{
		w:       spec.Window,
		groups:  make([]*rollupKG, max(spec.Groups, 1)),
		wm:      NoWatermark,
		nextEnd: math.MaxInt64,
	}
}

// Groups returns the key groups this instance holds state for, ascending.
func (r *Rollup) Groups() []KeyGroup {
	var out []KeyGroup
	for _, g := range r.groups {
		if g != nil {
			out = append(out, g.kg)
		}
	}
	return out
}

// Late returns the number of records dropped because their window had
// already fired (0 unless the runtime breaks the watermark contract).
func (r *Rollup) Late() uint64 { return r.late }

// Malformed returns the number of records dropped because their Data did
// not decode.
func (r *Rollup) Malformed() uint64 { return r.malformed }

// Watermark returns the last watermark passed to Advance.
func (r *Rollup) Watermark() int64 { return r.wm }

// Process adds the counted window carried by rec to its group's window.
func (r *Rollup) Process(kg KeyGroup, rec Record, _ Emitter) {
	key, count, sum, err := decodeRollupInput(rec.Data)
	if err != nil {
		r.malformed++
		return
	}
	ws := WindowStart(rec.Time, r.w)
	end := windowEnd(ws, r.w)
	if end <= r.wm {
		r.late++
		return
	}
	if int(kg) >= len(r.groups) {
		r.groups = append(r.groups, make([]*rollupKG, int(kg)+1-len(r.groups))...)
	}
	s := r.groups[kg]
	if s == nil {
		s = &rollupKG{kg: kg, names: make(map[string]*rollupGroup)}
		r.groups[kg] = s
	}
	g := s.names[string(rec.Key)]
	if g == nil {
		g = &rollupGroup{name: string(rec.Key), nameb: append([]byte(nil), rec.Key...)}
		s.names[g.name] = g
	}
	var w *rollupWin
	for _, x := range g.wins {
		if x.start == ws {
			w = x
			break
		}
	}
	if w == nil {
		w = &rollupWin{start: ws}
		g.wins = append(g.wins, w)
		r.nextEnd = min(r.nextEnd, end)
	}
	w.count += count
	w.sum += sum
	w.offer(key, count)
}

// offer puts (key, count) into the top 3 if it belongs there. Each key
// comes once per (group, window), so the top 3 of the offers is exact.
func (w *rollupWin) offer(key []byte, count int64) {
	i := w.ntop
	for i > 0 && (count > w.top[i-1].Count || count == w.top[i-1].Count && string(key) < w.top[i-1].Key) {
		i--
	}
	if i >= len(w.top) {
		return
	}
	if w.ntop < len(w.top) {
		w.ntop++
	}
	copy(w.top[i+1:w.ntop], w.top[i:w.ntop-1])
	w.top[i] = TopKey{Key: string(key), Count: count}
}

// Advance fires every window with end <= wm in (window end, group) order
// and drops it. A watermark that does not move forward does nothing.
func (r *Rollup) Advance(wm int64, out Emitter) {
	if wm <= r.wm {
		return
	}
	r.wm = wm
	if wm < r.nextEnd {
		return
	}
	fired := r.fired[:0]
	next := int64(math.MaxInt64)
	for _, s := range r.groups {
		if s == nil {
			continue
		}
		for _, g := range s.names {
			kept := g.wins[:0]
			for _, w := range g.wins {
				if end := windowEnd(w.start, r.w); end > wm {
					next = min(next, end)
					kept = append(kept, w)
					continue
				}
				fired = append(fired, rollupFiring{g: g, w: w, kg: s.kg})
			}
			clear(g.wins[len(kept):])
			g.wins = kept
		}
	}
	r.nextEnd = next
	slices.SortFunc(fired, func(a, b rollupFiring) int {
		return cmp.Or(cmp.Compare(a.w.start, b.w.start), strings.Compare(a.g.name, b.g.name))
	})
	for _, f := range fired {
		w := f.w
		r.top = append(r.top[:0], w.top[:w.ntop]...)
		res := Result{Op: KindRollup, Key: f.g.name, Window: w.start, Count: w.count, Sum: w.sum, Top: r.top}
		r.data = res.AppendJSON(r.data[:0])
		out.Emit(0, f.kg, Record{Key: f.g.nameb, Time: w.start, Value: w.count, Data: r.data})
	}
	clear(fired)
	r.fired = fired[:0]
}
