package job

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"spate/internal/radix"
	"spate/internal/varint"
	"spate/state"
)

// GroupName returns the rollup group of key among n groups: "g" followed by
// Hash(key) mod n in decimal, at least two digits ("g07", "g63", "g100").
// n < 1 counts as 1. It is part of the windowcount contract, shared by count
// and the oracle.
func GroupName(key []byte, n int) string { return groupLabel(groupIndex(key, n)) }

func groupIndex(key []byte, n int) int {
	if n < 1 {
		n = 1
	}
	return int(Hash(key) % uint64(n))
}

func groupLabel(i int) string {
	if i < 10 {
		return "g0" + strconv.Itoa(i)
	}
	return "g" + strconv.Itoa(i)
}

// windowEnd is the end of the window starting at start, saturated at
// MaxWatermark so that every window fires at the end of a stream.
func windowEnd(start, w int64) int64 {
	if start > math.MaxInt64-w {
		return math.MaxInt64
	}
	return start + w
}

// Count is an instance of windowcount's count operator. Per key it keeps
// tumbling event-time windows of Spec.Window ms (number of records and sum
// of Value) and a lifetime total: the number of records in the key's fired
// windows.
//
// State is kept per key group in a state.Table, so that it can be captured
// (copy-on-write, see Stateful) and moved one key group at a time. Advance
// fires every window with end <= wm in a canonical order (see Advance)
// and emits each twice: on port 0, toward rollup, a record keyed
// by GroupName(key) whose Data is the compact (key, count, sum) that Rollup
// decodes; on port 1, toward the sink, the JSON of the Result. Both carry
// Time = window start, Value = count and from = the key group of the key.
//
// Count is not safe for concurrent use.
type Count struct {
	w       int64
	rollups int
	ngroups int
	tab     *state.Table[countKey]
	open    []map[int64][]*countEntry // by key group: window start -> keys with a window open there (derived from tab)
	labels  [][]byte                  // rollup group names by index
	wm      int64                     // the last watermark
	nextEnd int64                     // no open window ends before this

	// curStart and curEnd cache the window of the last record.
	curStart, curEnd int64

	late uint64

	// scratch, reused across calls
	fired []countFiring
	order []radix.Handle
	spare [][]*countEntry
	// touched sums the bytes the firing reads ahead (fireAhead), so
	// that the compiler keeps those reads.
	touched byte
	data    []byte
	key     []byte
	roll    []byte
}

// countEntry is one key's entry in the table.
type countEntry = state.Entry[countKey]

// countKey is the state of one key.
type countKey struct {
	group int32 // rollup group index
	total int64 // records in the key's fired windows
	// cur is the key's open window with the latest start (count 0: none),
	// kept inline for the hot path; older holds its other open windows.
	cur   countWin
	older []countWin
}

func (k *countKey) clone() countKey {
	c := *k
	c.older = slices.Clone(k.older)
	return c
}

type countWin struct{ start, count, sum int64 }

type countFiring struct {
	start int64
	e     *countEntry
	kg    KeyGroup
}

// NewCount returns a count instance of spec with no state. spec must be
// valid (see Spec.Validate).
func NewCount(spec *Spec) *Count {
	n := max(spec.Rollups, 1)
	c := &Count{
		w:        spec.Window,
		rollups:  n,
		ngroups:  max(spec.Groups, 1),
		tab:      state.NewTable((*countKey).clone),
		open:     make([]map[int64][]*countEntry, max(spec.Groups, 1)),
		labels:   make([][]byte, n),
		wm:       NoWatermark,
		nextEnd:  math.MaxInt64,
		curStart: 1, // an empty range: no time is cached yet
		curEnd:   0,
	}
	for i := range c.labels {
		c.labels[i] = []byte(groupLabel(i))
	}
	return c
}

// Groups returns the key groups this instance holds state for, ascending.
func (c *Count) Groups() []KeyGroup { return keyGroups(c.tab) }

// Len implements Stateful.
func (c *Count) Len() int { return c.tab.Len() }

// keyGroups returns the key groups tab holds, ascending (nil if none).
func keyGroups[V any](tab *state.Table[V]) []KeyGroup {
	var out []KeyGroup
	for _, g := range tab.Groups() {
		out = append(out, KeyGroup(g))
	}
	return out
}

// Late returns the number of records dropped because their window had
// already fired. The sources drop late records, so it stays 0 unless the
// runtime breaks the watermark contract.
func (c *Count) Late() uint64 { return c.late }

// Watermark returns the last watermark passed to Advance.
func (c *Count) Watermark() int64 { return c.wm }

// openOf returns the open-window index of key group kg.
func (c *Count) openOf(kg KeyGroup) map[int64][]*countEntry {
	if int(kg) >= len(c.open) {
		c.open = append(c.open, make([]map[int64][]*countEntry, int(kg)+1-len(c.open))...)
	}
	m := c.open[kg]
	if m == nil {
		m = make(map[int64][]*countEntry)
		c.open[kg] = m
	}
	return m
}

// Process adds rec to the window of its key that holds rec.Time. The key
// is copied the first time it is seen.
func (c *Count) Process(kg KeyGroup, rec Record, _ Emitter) {
	t := rec.Time
	ws := c.curStart
	if t < ws || t >= c.curEnd {
		ws = WindowStart(t, c.w)
		c.curStart, c.curEnd = ws, windowEnd(ws, c.w)
	}
	if c.curEnd <= c.wm {
		c.late++
		return
	}
	e, created := c.tab.Upsert(int(kg), rec.Key)
	k := e.Mut()
	if created {
		k.group = int32(groupIndex(rec.Key, c.rollups))
	}
	if k.cur.start == ws && k.cur.count > 0 {
		k.cur.count++
		k.cur.sum += rec.Value
		return
	}
	c.add(kg, e, k, ws, rec.Value)
}

// add is Process's slow path: rec's window is not the key's latest one. k
// is e's value, already made mutable.
func (c *Count) add(kg KeyGroup, e *countEntry, k *countKey, ws, v int64) {
	for i := range k.older {
		if k.older[i].start == ws {
			k.older[i].count++
			k.older[i].sum += v
			return
		}
	}
	win := countWin{start: ws, count: 1, sum: v}
	switch {
	case k.cur.count == 0:
		k.cur = win
	case ws > k.cur.start:
		k.older = append(k.older, k.cur)
		k.cur = win
	default:
		k.older = append(k.older, win)
	}
	c.index(kg, e, ws)
}

// index records that e has a window open at ws.
func (c *Count) index(kg KeyGroup, e *countEntry, ws int64) {
	open := c.openOf(kg)
	list, ok := open[ws]
	if !ok && len(c.spare) > 0 {
		list = c.spare[len(c.spare)-1]
		c.spare = c.spare[:len(c.spare)-1]
	}
	open[ws] = append(list, e)
	c.nextEnd = min(c.nextEnd, windowEnd(ws, c.w))
}

// Advance fires every window with end <= wm and drops it. The order is
// canonical, the same whatever the batching of the input and the steps of
// the watermark (a replay must number its output as the first run did):
// by window start, then key hash, then key. A watermark that does not move
// forward does nothing.
func (c *Count) Advance(wm int64, out Emitter) {
	if wm <= c.wm {
		return
	}
	c.wm = wm
	if wm < c.nextEnd {
		return
	}
	c.nextEnd = c.fireUpTo(wm, nil, out)
}

// FireGroups implements GroupFirer.
func (c *Count) FireGroups(only func(KeyGroup) bool, wm int64, out Emitter) {
	c.fireUpTo(wm, only, out) // nextEnd stays: at most the true next end
}

// fireUpTo fires the windows with end <= wm of the key groups only
// admits (every one if nil), in their canonical order, and returns the
// earliest end left among those it looked at.
func (c *Count) fireUpTo(wm int64, only func(KeyGroup) bool, out Emitter) int64 {
	fired := c.fired[:0]
	next := int64(math.MaxInt64)
	for kg, open := range c.open {
		if only != nil && !only(KeyGroup(kg)) {
			continue
		}
		for ws, list := range open {
			end := windowEnd(ws, c.w)
			if end > wm {
				next = min(next, end)
				continue
			}
			for _, e := range list {
				fired = append(fired, countFiring{start: ws, e: e, kg: KeyGroup(kg)})
			}
			delete(open, ws)
			clear(list)
			c.spare = append(c.spare, list[:0])
		}
	}
	c.order = fireOrder(fired, c.order[:0], &c.touched)
	// In that order the keys lie anywhere in the heap: each batch's
	// entries are read first, their misses overlapping, then fired.
	for i := 0; i < len(c.order); i += fireAhead {
		batch := c.order[i:min(i+fireAhead, len(c.order))]
		for _, h := range batch {
			c.touched += fired[h.I].e.Touch()
		}
		for _, h := range batch {
			c.fire(&fired[h.I], out)
		}
	}
	clear(fired)
	c.fired = fired[:0]
	return next
}

// fireAhead is how many firings' keys and entries are read before any of
// them is used: each batch's cache misses overlap. At a million keys a
// window's keys are far apart in the heap, and reading each in turn was
// most of a firing's time (BenchmarkCountAdvanceLarge).
const fireAhead = 16

// fireOrder returns handles to fired (appended to hs) in their canonical
// order: window start, key hash, key. Comparing keys would chase two
// pointers per comparison; at a million keys that sort was most of the
// cost of a firing. So the hashes are radix sorted, the rare equal hashes
// by key, and the windows (mostly one per call) stably by start.
func fireOrder(fired []countFiring, hs []radix.Handle, touched *byte) []radix.Handle {
	mixed := false
	for i := range fired {
		if i%fireAhead == 0 { // the next batch's keys, read ahead (fireUpTo)
			for _, f := range fired[i:min(i+fireAhead, len(fired))] {
				if k := f.e.Key(); len(k) > 0 {
					*touched += k[0]
				}
			}
		}
		hs = append(hs, radix.Handle{Key: fnv(fired[i].e.Key()), I: i})
		mixed = mixed || fired[i].start != fired[0].start
	}
	radix.Sort(hs)
	for i := 0; i < len(hs); {
		j := i + 1
		for j < len(hs) && hs[j].Key == hs[i].Key {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(hs[i:j], func(a, b radix.Handle) int {
				return strings.Compare(fired[a.I].e.Key(), fired[b.I].e.Key())
			})
		}
		i = j
	}
	if mixed {
		slices.SortStableFunc(hs, func(a, b radix.Handle) int { return cmp.Compare(fired[a.I].start, fired[b.I].start) })
	}
	return hs
}

// fire emits one window of f.k and removes it from the key's state.
func (c *Count) fire(f *countFiring, out Emitter) {
	key := f.e.Key()
	k := f.e.Mut()
	win := k.takeWindow(f.start)
	k.total += win.count

	c.roll = appendRollupInput(c.roll[:0], key, win.count, win.sum)
	out.Emit(0, f.kg, Record{Key: c.labels[k.group], Time: win.start, Value: win.count, Data: c.roll})

	r := Result{Op: KindCount, Key: key, Window: win.start, Count: win.count, Sum: win.sum, Total: k.total}
	c.data = r.AppendCompact(c.data[:0])
	c.key = append(c.key[:0], key...)
	out.Emit(1, f.kg, Record{Key: c.key, Time: win.start, Value: win.count, Data: c.data})
}

// takeWindow removes the open window of k that starts at start and
// returns it.
func (k *countKey) takeWindow(start int64) countWin {
	if k.cur.count > 0 && k.cur.start == start {
		win := k.cur
		k.cur = countWin{}
		if n := len(k.older); n > 0 {
			// the latest of the older windows becomes cur
			j := 0
			for i := range k.older {
				if k.older[i].start > k.older[j].start {
					j = i
				}
			}
			k.cur = k.older[j]
			k.older = slices.Delete(k.older, j, j+1)
		}
		return win
	}
	for i := range k.older {
		if k.older[i].start == start {
			win := k.older[i]
			k.older = slices.Delete(k.older, i, i+1)
			return win
		}
	}
	panic("job: count fired a window it does not hold") // an internal invariant
}

// Capture implements Stateful: it pins the keys' state (see
// state.Table.Capture). The open-window index is not captured: Restore
// rebuilds it.
func (c *Count) Capture(full bool) Captured {
	return captured[countKey]{c: c.tab.Capture(full), enc: appendCountKey}
}

// Restore implements Stateful. The open-window index of each group is
// gathered while the group is built (see openRuns) and goes into the index
// once the group is attached.
func (c *Count) Restore(groups []state.MergedGroup) error {
	runs := make([]openRuns, c.ngroups) // by key group: each is built by one goroutine
	for _, g := range groups {
		if g.KG >= 0 && g.KG < len(runs) {
			runs[g.KG].keys = g.Len()
		}
	}
	dec := func(kg KeyGroup, key, b []byte, e *countEntry) error {
		k := e.Val()
		if err := c.decodeKey(key, b, k); err != nil {
			return err
		}
		if k.cur.count > 0 {
			runs[kg].add(k.cur.start, e)
		}
		for _, w := range k.older {
			runs[kg].add(w.start, e)
		}
		return nil
	}
	return restoreGroups(KindCount, c.ngroups, c.tab, groups, dec, func(kg KeyGroup) { c.applyRuns(kg, &runs[kg]) })
}

// applyRuns puts the open windows of a restored group into the index.
func (c *Count) applyRuns(kg KeyGroup, runs *openRuns) {
	open := c.openOf(kg)
	for _, r := range runs.runs {
		if list, ok := open[r.ws]; ok {
			r.list = append(list, r.list...)
		}
		open[r.ws] = r.list
		c.nextEnd = min(c.nextEnd, windowEnd(r.ws, c.w))
	}
}

// BuildGroup implements GroupLoader.
func (c *Count) BuildGroup(g *state.MergedGroup) (BuiltGroup, error) {
	x, err := buildOne(KindCount, c.ngroups, c.tab, g, openRuns{keys: g.Len()}, func(_ KeyGroup, key, b []byte, e *countEntry, runs *openRuns) error {
		k := e.Val()
		if err := c.decodeKey(key, b, k); err != nil {
			return err
		}
		if k.cur.count > 0 {
			runs.add(k.cur.start, e)
		}
		for _, w := range k.older {
			runs.add(w.start, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// AttachGroup implements GroupLoader.
func (c *Count) AttachGroup(b BuiltGroup) error {
	return attachOne(KindCount, c.tab, b, c.applyRuns)
}

// openRuns is the open windows of a key group being restored: per window
// start, the keys with a window open there. Keys share few starts, so each
// start's list is built apart and goes into the index with one map access.
type openRuns struct {
	runs []openRun
	at   map[int64]int // window start -> its run, once there are many runs
	keys int           // in the group: the first run is sized for them all
}

type openRun struct {
	ws   int64
	list []*countEntry
}

// fewRuns is how many runs add searches in order before it indexes them.
const fewRuns = 8

func (o *openRuns) add(ws int64, e *countEntry) {
	i := -1
	if o.at == nil {
		for j := range o.runs {
			if o.runs[j].ws == ws {
				i = j
				break
			}
		}
	} else if j, ok := o.at[ws]; ok {
		i = j
	}
	if i < 0 {
		i = len(o.runs)
		r := openRun{ws: ws}
		if i == 0 {
			r.list = make([]*countEntry, 0, o.keys) // most keys have a window open there
		}
		o.runs = append(o.runs, r)
		if len(o.runs) > fewRuns {
			if o.at == nil {
				o.at = make(map[int64]int, 2*fewRuns)
				for j, r := range o.runs {
					o.at[r.ws] = j
				}
			}
			o.at[ws] = i
		}
	}
	o.runs[i].list = append(o.runs[i].list, e)
}

// DropGroups implements Stateful.
func (c *Count) DropGroups(kgs []KeyGroup) {
	for _, kg := range kgs {
		c.tab.DropGroup(int(kg))
		if int(kg) < len(c.open) {
			for _, list := range c.open[kg] {
				clear(list)
				c.spare = append(c.spare, list[:0])
			}
			c.open[kg] = nil
		}
	}
}

// appendCountKey appends the snapshot encoding of a key's state: total
// (varint), the number of open windows (uvarint), then each window, cur
// first and older in order, as start, count, sum (varints). The rollup
// group is derived from the key.
func appendCountKey(b []byte, k *countKey) []byte {
	b = binary.AppendVarint(b, k.total)
	if k.cur.count == 0 {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(1+len(k.older)))
	b = appendCountWin(b, k.cur)
	for _, w := range k.older {
		b = appendCountWin(b, w)
	}
	return b
}

func appendCountWin(b []byte, w countWin) []byte {
	b = binary.AppendVarint(b, w.start)
	b = binary.AppendVarint(b, w.count)
	return binary.AppendVarint(b, w.sum)
}

// decodeKey decodes what appendCountKey wrote into k, checking the invariants
// Process and Advance rely on: counts positive, starts aligned to the
// window size and distinct, cur the latest. It is most of what a restore
// costs per key, so it reads every varint of b at once (uvarints) and then
// makes sense of them.
func (c *Count) decodeKey(key, b []byte, k *countKey) error {
	var few [2 + 3*3]uint64 // up to three windows without an allocation
	us, err := uvarints(b, few[:0])
	if err != nil {
		return err
	}
	if len(us) < 2 {
		return errors.New("truncated")
	}
	*k = countKey{group: int32(groupIndex(key, c.rollups)), total: varint.Unzigzag(us[0])}
	n, wins := us[1], us[2:]
	switch {
	case k.total < 0:
		return errors.New("negative total")
	case uint64(len(wins)) != 3*n:
		return fmt.Errorf("%d windows in %d numbers", n, len(wins))
	}
	for i := 0; i < len(wins); i += 3 {
		w := countWin{start: varint.Unzigzag(wins[i]), count: varint.Unzigzag(wins[i+1]), sum: varint.Unzigzag(wins[i+2])}
		switch {
		case w.count < 1 || w.start%c.w != 0: // aligned: WindowStart(start) == start
			return fmt.Errorf("bad window (start %d, count %d)", w.start, w.count)
		case i == 0:
			k.cur = w
			continue
		case w.start >= k.cur.start:
			return errors.New("an older window after the latest")
		case slices.ContainsFunc(k.older, func(o countWin) bool { return o.start == w.start }):
			return errors.New("two windows with the same start")
		}
		if k.older == nil {
			k.older = make([]countWin, 0, n-1)
		}
		k.older = append(k.older, w)
	}
	return nil
}

// uvarints appends every uvarint of b to dst.
func uvarints(b []byte, dst []uint64) ([]uint64, error) {
	for off := 0; off < len(b); {
		v, w := varint.At(b, off)
		if w <= 0 {
			return dst, fmt.Errorf("bad varint at byte %d", off)
		}
		dst = append(dst, v)
		off += w
	}
	return dst, nil
}

// errRollupInput reports a count->rollup record whose Data does not decode.
var errRollupInput = errors.New("malformed rollup input")

// appendRollupInput appends the Data of a count->rollup record: the key's
// length (uvarint), the key, then count and sum (varints).
func appendRollupInput(b []byte, key string, count, sum int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendVarint(b, count)
	return binary.AppendVarint(b, sum)
}

// decodeRollupInput decodes what appendRollupInput wrote. key aliases b.
func decodeRollupInput(b []byte) (key []byte, count, sum int64, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, 0, 0, errRollupInput
	}
	b = b[w:]
	key, b = b[:n], b[n:]
	count, w = binary.Varint(b)
	if w <= 0 || count < 1 {
		return nil, 0, 0, errRollupInput
	}
	b = b[w:]
	sum, w = binary.Varint(b)
	if w <= 0 || w != len(b) {
		return nil, 0, 0, errRollupInput
	}
	return key, count, sum, nil
}
