package job

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"spate/state"
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
// State is kept per key group in a state.Table keyed by group name, so
// that it can be captured (copy-on-write, see Stateful) and moved one key
// group at a time.
//
// Rollup is not safe for concurrent use.
type Rollup struct {
	w       int64
	ngroups int
	tab     *state.Table[rollupGroup] // by group name
	wm      int64
	nextEnd int64 // no open window ends before this

	late, malformed uint64

	fired []rollupFiring
	data  []byte
	top   []TopKey
	kgs   []int
}

// rollupEntry is one group name's entry in the table.
type rollupEntry = state.Entry[rollupGroup]

// rollupGroup is the state of one rollup group.
type rollupGroup struct {
	nameb []byte // the group name, as the Key of output records; never changed
	wins  []rollupWin
}

func (g *rollupGroup) clone() rollupGroup {
	return rollupGroup{nameb: g.nameb, wins: slices.Clone(g.wins)}
}

type rollupWin struct {
	start, count, sum int64
	top               [3]TopKey // Key holds the raw key bytes
	ntop              int
}

type rollupFiring struct {
	e  *rollupEntry
	w  rollupWin
	kg KeyGroup
}

// NewRollup returns a rollup instance of spec with no state. spec must be
// valid (see Spec.Validate).
func NewRollup(spec *Spec) *Rollup {
	return &Rollup{
		w:       spec.Window,
		ngroups: max(spec.Groups, 1),
		tab:     state.NewTable((*rollupGroup).clone),
		wm:      NoWatermark,
		nextEnd: math.MaxInt64,
	}
}

// Groups returns the key groups this instance holds state for, ascending.
func (r *Rollup) Groups() []KeyGroup { return keyGroups(r.tab) }

// Len implements Stateful.
func (r *Rollup) Len() int { return r.tab.Len() }

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
	e, created := r.tab.Upsert(int(kg), rec.Key)
	g := e.Mut()
	if created {
		g.nameb = []byte(e.Key())
	}
	var w *rollupWin
	for i := range g.wins {
		if g.wins[i].start == ws {
			w = &g.wins[i]
			break
		}
	}
	if w == nil {
		g.wins = append(g.wins, rollupWin{start: ws})
		w = &g.wins[len(g.wins)-1]
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
	r.nextEnd = r.fireUpTo(wm, nil, out)
}

// FireGroups implements GroupFirer.
func (r *Rollup) FireGroups(only func(KeyGroup) bool, wm int64, out Emitter) {
	r.fireUpTo(wm, only, out) // nextEnd stays: at most the true next end
}

// fireUpTo fires the windows with end <= wm of the key groups only
// admits (every one if nil), in (window end, group) order, and returns
// the earliest end left among those it looked at.
func (r *Rollup) fireUpTo(wm int64, only func(KeyGroup) bool, out Emitter) int64 {
	fired := r.fired[:0]
	next := int64(math.MaxInt64)
	r.kgs = r.tab.AppendGroups(r.kgs[:0])
	for _, kg := range r.kgs {
		if only != nil && !only(KeyGroup(kg)) {
			continue
		}
		r.tab.Range(kg, func(e *rollupEntry) bool {
			fire := false
			for i := range e.Val().wins {
				if end := windowEnd(e.Val().wins[i].start, r.w); end > wm {
					next = min(next, end)
				} else {
					fire = true
				}
			}
			if !fire {
				return true
			}
			g := e.Mut()
			kept := g.wins[:0]
			for _, w := range g.wins {
				if windowEnd(w.start, r.w) > wm {
					kept = append(kept, w)
					continue
				}
				fired = append(fired, rollupFiring{e: e, w: w, kg: KeyGroup(kg)})
			}
			clear(g.wins[len(kept):])
			g.wins = kept
			return true
		})
	}
	slices.SortFunc(fired, func(a, b rollupFiring) int {
		return cmp.Or(cmp.Compare(a.w.start, b.w.start), strings.Compare(a.e.Key(), b.e.Key()))
	})
	for i := range fired {
		f := &fired[i]
		w := &f.w
		r.top = append(r.top[:0], w.top[:w.ntop]...)
		res := Result{Op: KindRollup, Key: f.e.Key(), Window: w.start, Count: w.count, Sum: w.sum, Top: r.top}
		r.data = res.AppendCompact(r.data[:0])
		out.Emit(0, f.kg, Record{Key: f.e.Val().nameb, Time: w.start, Value: w.count, Data: r.data})
	}
	clear(fired)
	r.fired = fired[:0]
	return next
}

// Capture implements Stateful: it pins the groups' state (see
// state.Table.Capture).
func (r *Rollup) Capture(full bool) Captured {
	return captured[rollupGroup]{c: r.tab.Capture(full), enc: appendRollupGroup}
}

// Restore implements Stateful.
func (r *Rollup) Restore(groups []state.MergedGroup) error {
	next := make([]int64, r.ngroups) // by key group: the end of its earliest window
	for i := range next {
		next[i] = math.MaxInt64
	}
	dec := func(kg KeyGroup, key, b []byte, e *rollupEntry) (err error) {
		g := e.Val()
		if *g, err = r.decodeGroup(key, b); err != nil {
			return err
		}
		g.nameb = []byte(e.Key())
		for _, w := range g.wins {
			next[kg] = min(next[kg], windowEnd(w.start, r.w))
		}
		return nil
	}
	return restoreGroups(KindRollup, r.ngroups, r.tab, groups, dec, func(kg KeyGroup) {
		r.nextEnd = min(r.nextEnd, next[kg])
	})
}

// BuildGroup implements GroupLoader.
func (r *Rollup) BuildGroup(g *state.MergedGroup) (BuiltGroup, error) {
	// derived: the end of the group's earliest window.
	x, err := buildOne(KindRollup, r.ngroups, r.tab, g, int64(math.MaxInt64), func(_ KeyGroup, key, b []byte, e *rollupEntry, next *int64) (err error) {
		v := e.Val()
		if *v, err = r.decodeGroup(key, b); err != nil {
			return err
		}
		v.nameb = []byte(e.Key())
		for _, w := range v.wins {
			*next = min(*next, windowEnd(w.start, r.w))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// AttachGroup implements GroupLoader.
func (r *Rollup) AttachGroup(b BuiltGroup) error {
	return attachOne(KindRollup, r.tab, b, func(_ KeyGroup, next *int64) { r.nextEnd = min(r.nextEnd, *next) })
}

// DropGroups implements Stateful.
func (r *Rollup) DropGroups(kgs []KeyGroup) {
	for _, kg := range kgs {
		r.tab.DropGroup(int(kg))
	}
}

// appendRollupGroup appends the snapshot encoding of a group's state: the
// number of open windows (uvarint), then per window its start, count and
// sum (varints), the number of top keys (uvarint, at most 3) and each top
// key as its length (uvarint), bytes and count (varint). The name is the
// entry's key.
func appendRollupGroup(b []byte, g *rollupGroup) []byte {
	b = binary.AppendUvarint(b, uint64(len(g.wins)))
	for i := range g.wins {
		w := &g.wins[i]
		b = binary.AppendVarint(b, w.start)
		b = binary.AppendVarint(b, w.count)
		b = binary.AppendVarint(b, w.sum)
		b = binary.AppendUvarint(b, uint64(w.ntop))
		for _, t := range w.top[:w.ntop] {
			b = binary.AppendUvarint(b, uint64(len(t.Key)))
			b = append(b, t.Key...)
			b = binary.AppendVarint(b, t.Count)
		}
	}
	return b
}

// decodeGroup decodes what appendRollupGroup wrote, checking that starts
// are aligned and distinct and that each top list is in order (count
// descending, key ascending), as offer keeps it.
func (r *Rollup) decodeGroup(_, b []byte) (rollupGroup, error) {
	vr := valReader{b: b}
	var g rollupGroup
	n := vr.uvarint("number of windows", uint64(len(b)/4))
	starts := make([]int64, 0, n)
	for range n {
		var w rollupWin
		w.start, w.count, w.sum = vr.varint("window start"), vr.varint("window count"), vr.varint("window sum")
		w.ntop = int(vr.uvarint("number of top keys", uint64(len(w.top))))
		for i := range w.ntop {
			kl := vr.uvarint("top key length", math.MaxInt)
			if vr.err == nil && kl > uint64(len(vr.b)) {
				vr.fail("top key longer than the value")
			}
			if vr.err != nil {
				break
			}
			w.top[i].Key = string(vr.b[:kl])
			vr.b = vr.b[kl:]
			w.top[i].Count = vr.varint("top key count")
			if vr.err == nil && (w.top[i].Count < 1 || i > 0 && !topBefore(w.top[i-1], w.top[i])) {
				vr.fail("top keys out of order")
			}
		}
		if vr.err != nil {
			break
		}
		if WindowStart(w.start, r.w) != w.start {
			vr.fail(fmt.Sprintf("window start %d not aligned", w.start))
			break
		}
		g.wins = append(g.wins, w)
		starts = append(starts, w.start)
	}
	slices.Sort(starts)
	if len(slices.Compact(starts)) != int(n) && vr.err == nil {
		vr.fail("two windows with the same start")
	}
	return g, vr.end()
}

// topBefore reports whether a may precede b in a top list (a key offered
// twice, which a correct runtime never does, ties with itself).
func topBefore(a, b TopKey) bool {
	return a.Count > b.Count || a.Count == b.Count && a.Key <= b.Key
}
