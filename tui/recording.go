package tui

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"spate/events"
)

// recording is an events.jsonl opened for replay. Opening it reads the
// file into memory and indexes its lines (where each event starts, its
// time and its class) without decoding them: the index is what the
// position bar, the steps by one second and the jumps to the next fault
// need. Decoding and folding are done on demand: a background fold
// (buildSnapshots) keeps a copy of the folded state every snapEvery
// events, so a seek clones the snapshot at or before its target and folds
// at most snapEvery events.
//
// The index and data are immutable once open returns and safe for
// concurrent reads; snaps is guarded by mu. The states in snaps are never
// changed: a seek works on a clone.
type recording struct {
	path      string
	data      []byte
	offs      []int64  // where event i's line starts
	times     []int64  // event i's time, unix ns, never decreasing (a late stamp takes its predecessor's)
	class     []uint8  // event i's class, for the jump keys
	codes     []uint8  // event i's fold code and flags, for skim (skim.go)
	key       []uint16 // event i's key among keys (0: none), for skim
	keys      []string // the keys, as written: key k is keys[k-1]
	trimAt    []int32  // while indexing: the trims with a key, in order, and the bytes each freed
	trimFreed []int64
	lists     // the events by kind and key, for skim; complete when listed is closed
	listed    chan struct{}
	seqMax    []uint64 // the largest seq of each seqBlock events
	every     int      // events between snapshots (snapEvery; tests make it small)
	release   func()   // gives data back (unmaps it): see close

	stop    chan struct{} // closed by close: the background fold stops
	folding sync.WaitGroup
	closed  sync.Once

	mu       sync.Mutex
	snaps    []*state // snaps[k]: the state after events [0, k*snapEvery)
	foldErr  error    // the background fold stopped here
	foldDone bool
	started  bool // startFold ran
	closing  bool // close ran: startFold does nothing
}

// snapEvery is the distance between snapshots, in events: a seek folds at
// most this many.
const snapEvery = 16384

// The classes of events that the jump keys ([ ] f r s c) jump between.
const (
	classOther    uint8 = iota
	classFault          // a fault begins: marked ✗ on the position bar
	classFaultEnd       // a fault ends
	classCheckpoint
	classRecovery
	classRescale
)

// jump is what a jump key of spate view lands on: the classes it stops
// at and the words its help and its "no later ..." say.
type jump struct {
	classes []uint8
	what    string
}

// The jumps: ] and [ stop at what changes the run (a fault, a recovery, a
// rescale; checkpoints come every second or so and would bury them), and
// a key of its own jumps to each.
var (
	jumpNotable    = jump{[]uint8{classFault, classFaultEnd, classRecovery, classRescale}, "fault, recovery or rescale"}
	jumpFault      = jump{[]uint8{classFault}, "fault"}
	jumpRecovery   = jump{[]uint8{classRecovery}, "recovery"}
	jumpRescale    = jump{[]uint8{classRescale}, "rescale"}
	jumpCheckpoint = jump{[]uint8{classCheckpoint}, "checkpoint"}
)

func (j jump) has(c uint8) bool {
	for _, k := range j.classes {
		if k == c {
			return true
		}
	}
	return false
}

func classOf(k []byte) uint8 {
	switch string(k) {
	case string(events.FaultStarted), string(events.NodeLost), string(events.NodeSuspect), string(events.Partition), string(kindNodePaused):
		return classFault
	case string(events.FaultEnded), string(kindNodeResumed), string(events.Healed):
		return classFaultEnd
	case string(events.Checkpoint), string(events.CheckpointFallback):
		return classCheckpoint
	case string(events.RecoveryPlaced), string(events.RecoveryRestored), string(events.RecoveryLoaded), string(events.RecoveryDone):
		return classRecovery
	case string(events.RescalePlanned), string(events.RescaleRerouted), string(events.RescaleDone):
		return classRescale
	}
	return classOther
}

// errEmpty is a recording with no events.
var errEmpty = errors.New("no events")

// openRecording reads and indexes path. A line that is not an event is an
// error naming path:line; lines that look like events (the prefix the
// coordinator writes) are fully decoded only when folded, so a line
// damaged past its prefix is reported then.
func openRecording(path string) (*recording, error) {
	data, release, err := readAll(path)
	if err != nil {
		return nil, err
	}
	r := &recording{path: path, data: data, every: snapEvery, release: release, stop: make(chan struct{}),
		listed: make(chan struct{})}
	if err := r.index(); err != nil {
		release()
		return nil, err
	}
	if len(r.offs) == 0 {
		release()
		return nil, fmt.Errorf("%s: %w", path, errEmpty)
	}
	r.snaps = []*state{newState()}
	return r, nil
}

// index fills offs, times and class, in two halves at once.
func (r *recording) index() error {
	parts := 2
	if len(r.data) < 1<<20 {
		parts = 1
	}
	bounds := []int{0}
	for p := 1; p < parts; p++ {
		at := len(r.data) * p / parts
		if i := bytes.IndexByte(r.data[at:], '\n'); i >= 0 {
			at += i + 1
		} else {
			at = len(r.data)
		}
		bounds = append(bounds, max(at, bounds[len(bounds)-1]))
	}
	bounds = append(bounds, len(r.data))
	type part struct {
		offs, times []int64
		class, fold []uint8
		key         []uint16
		keys        map[string]uint16
		names       []string
		trimAt      []int32
		trimFreed   []int64
		seq         []uint64
		err         error
		errAt       int
	}
	res := make([]part, parts)
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			lo, hi := bounds[p], bounds[p+1]
			est := (hi - lo) / 200
			pr := part{offs: make([]int64, 0, est), times: make([]int64, 0, est), class: make([]uint8, 0, est),
				fold: make([]uint8, 0, est), key: make([]uint16, 0, est), seq: make([]uint64, 0, est), keys: map[string]uint16{}}
			buf := make([]byte, 0, 256)
			var tc timeCache
			for at := lo; at < hi; {
				end := hi
				if i := bytes.IndexByte(r.data[at:hi], '\n'); i >= 0 {
					end = at + i
				}
				line := bytes.TrimSpace(r.data[at:end])
				if len(line) > 0 {
					li, err := peekLineBuf(line, buf, &tc)
					if err != nil {
						pr.err, pr.errAt = err, at
						break
					}
					var k uint16
					if li.key != nil {
						buf = li.key[:0]
						var ok bool
						if k, ok = pr.keys[string(li.key)]; !ok && len(pr.names) < 1<<16-1 {
							pr.names = append(pr.names, string(li.key))
							k = uint16(len(pr.names))
							pr.keys[string(li.key)] = k
						}
						if k == 0 { // too many keys: decode it
							li.fold = li.fold&^foldCode | foldMust
						}
					}
					if li.fold&foldCode == foldTrim {
						pr.trimAt = append(pr.trimAt, int32(len(pr.offs)))
						pr.trimFreed = append(pr.trimFreed, li.freed)
					}
					pr.offs = append(pr.offs, int64(at))
					pr.times = append(pr.times, li.t)
					pr.class = append(pr.class, li.class)
					pr.fold = append(pr.fold, li.fold)
					pr.key = append(pr.key, k)
					pr.seq = append(pr.seq, li.seq)
				}
				at = end + 1
			}
			res[p] = pr
		}(p)
	}
	wg.Wait()
	n := 0
	for _, pr := range res {
		if pr.err != nil {
			return fmt.Errorf("%s:%d: %v", r.path, r.lineAt(pr.errAt), pr.err)
		}
		n += len(pr.offs)
	}
	r.offs = make([]int64, 0, n)
	r.times = make([]int64, 0, n)
	r.class = make([]uint8, 0, n)
	r.codes = make([]uint8, 0, n)
	r.key = make([]uint16, 0, n)
	r.seqMax = make([]uint64, (n+seqBlock-1)/seqBlock)
	global := map[string]uint16{}
	for _, pr := range res {
		base := len(r.offs)
		// The part's keys in the recording's.
		remap := make([]uint16, len(pr.names)+1)
		for j, name := range pr.names {
			k, ok := global[name]
			if !ok && len(r.keys) < 1<<16-1 {
				r.keys = append(r.keys, name)
				k = uint16(len(r.keys))
				global[name] = k
			}
			remap[j+1] = k
		}
		r.offs = append(r.offs, pr.offs...)
		r.times = append(r.times, pr.times...)
		r.class = append(r.class, pr.class...)
		r.codes = append(r.codes, pr.fold...)
		for j, k := range pr.key {
			g := remap[k]
			if k != 0 && g == 0 {
				r.codes[base+j] = r.codes[base+j]&^foldCode | foldMust
			}
			r.key = append(r.key, g)
		}
		for j, at := range pr.trimAt {
			if i := base + int(at); r.codes[i]&foldCode == foldTrim {
				r.trimAt = append(r.trimAt, int32(i))
				r.trimFreed = append(r.trimFreed, pr.trimFreed[j])
			}
		}
		for j, q := range pr.seq {
			b := (base + j) / seqBlock
			r.seqMax[b] = max(r.seqMax[b], q)
		}
	}
	for i := 1; i < len(r.times); i++ {
		if r.times[i] < r.times[i-1] {
			r.times[i] = r.times[i-1]
			r.codes[i] |= foldClamped
		}
	}
	go func() {
		r.buildLists()
		close(r.listed)
	}()
	return nil
}

// lineAt is the line number of byte offset at.
func (r *recording) lineAt(at int) int { return bytes.Count(r.data[:at], []byte{'\n'}) + 1 }

// snapDistance is the distance between snapshots, in events.
func (r *recording) snapDistance() int { return r.every }

// len is the number of events.
func (r *recording) len() int { return len(r.offs) }

// line is event i's line.
func (r *recording) line(i int) []byte {
	at := r.offs[i]
	end := int64(len(r.data))
	if i+1 < len(r.offs) {
		end = r.offs[i+1]
	}
	return bytes.TrimSpace(r.data[at:end])
}

// event decodes event i.
func (r *recording) event(i int) (events.Event, error) { return r.eventNamed(i, nil) }

// eventNamed is event keeping node and instance names in n.
func (r *recording) eventNamed(i int, n events.Names) (events.Event, error) {
	e, err := events.DecodeLine(r.line(i), n)
	if err != nil {
		return e, fmt.Errorf("%s:%d: %v", r.path, r.lineAt(int(r.offs[i])), err)
	}
	return e, nil
}

// time is event i's time.
func (r *recording) time(i int) time.Time { return time.Unix(0, r.times[i]).UTC() }

// countUpTo is the number of events at or before t: the position that
// shows the run as it was at t.
func (r *recording) countUpTo(t time.Time) int {
	ns := t.UnixNano()
	return sort.Search(len(r.times), func(i int) bool { return r.times[i] > ns })
}

// fold applies events [from, to) to s.
func (r *recording) fold(s *state, from, to int) error {
	if to-from < 1024 {
		for i := from; i < to; i++ {
			e, err := r.event(i)
			if err != nil {
				return err
			}
			s.apply(e)
		}
		return nil
	}
	evs, err := r.decodeRange(from, to)
	if err != nil {
		return err
	}
	for _, e := range evs {
		s.apply(e)
	}
	return nil
}

// decodeRange decodes events [from, to) on two goroutines at once:
// decoding is most of a fold's cost, applying must be in order.
func (r *recording) decodeRange(from, to int) ([]events.Event, error) {
	evs := make([]events.Event, to-from)
	errs := make([]error, 2)
	mid := from + (to-from)/2
	var wg sync.WaitGroup
	for h, rg := range [2][2]int{{from, mid}, {mid, to}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := events.Names{}
			for i := rg[0]; i < rg[1]; i++ {
				e, err := r.eventNamed(i, n)
				if err != nil {
					errs[h] = err
					return
				}
				evs[i-from] = e
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

// startFold runs buildSnapshots on its own goroutine, once.
func (r *recording) startFold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closing {
		return
	}
	r.started = true
	r.folding.Add(1)
	go func() {
		defer r.folding.Done()
		r.buildSnapshots()
	}()
}

// close stops the background fold, waits for it and gives the file's
// memory back. Nothing may use the recording after it.
func (r *recording) close() {
	r.closed.Do(func() {
		r.mu.Lock()
		r.closing = true
		r.mu.Unlock()
		close(r.stop)
		r.folding.Wait()
		<-r.listed
		r.release()
	})
}

// buildSnapshots folds the whole recording once, keeping a clone of the
// state every snapEvery events. It stops at the first bad line (kept in
// foldErr) or when the recording is closed.
func (r *recording) buildSnapshots() {
	// A goroutine decodes the next stretch while this one applies the
	// last: the two overlap on two cores.
	type stretch struct {
		evs []events.Event
		end int
		err error
	}
	every, n := r.every, r.len()
	next := make(chan stretch, 1)
	go func() {
		defer close(next)
		for lo := 0; lo < n; lo += every {
			hi := min(lo+every, n)
			evs, err := r.decodeRange(lo, hi)
			select {
			case next <- stretch{evs, hi, err}:
			case <-r.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	s := newState()
	var err error
	for st := range next {
		if err = st.err; err != nil {
			break
		}
		for _, e := range st.evs {
			s.apply(e)
		}
		if st.end%every == 0 {
			c := s.clone()
			r.mu.Lock()
			r.snaps = append(r.snaps, c)
			r.mu.Unlock()
		}
	}
	for range next { // the decoder stops at the error or the stop
	}
	if err == nil {
		select {
		case <-r.stop: // closed before the end: not done
			return
		default:
		}
	}
	r.mu.Lock()
	r.foldErr, r.foldDone = err, true
	r.mu.Unlock()
}

// progress is how far the background fold has come, in events, and the
// error it stopped at.
func (r *recording) progress() (int, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := (len(r.snaps) - 1) * r.every
	if r.foldDone && r.foldErr == nil {
		n = r.len()
	}
	return n, r.foldDone, r.foldErr
}

// seekState is the state after events [0, pos): from the snapshot at or
// before pos when the background fold has made it (stateAt), else
// skimmed from its latest snapshot.
func (r *recording) seekState(pos int) (*state, error) {
	s, ok, err := r.stateAt(pos)
	if err != nil || ok {
		return s, err
	}
	r.mu.Lock()
	k := len(r.snaps) - 1
	base := r.snaps[k]
	r.mu.Unlock()
	return r.skim(base, k*r.every, pos)
}

// skimOver is the distance from a snapshot past which stateAt skims
// instead of folding every event: a skim decodes a few thousand events
// at most (the bounded histories' worth), a fold all of them.
const skimOver = 4096

// stateAt builds the state after events [0, pos) from the nearest
// snapshot at or before pos (by skim past skimOver events). ok is false when the background fold has not
// reached that snapshot yet.
func (r *recording) stateAt(pos int) (*state, bool, error) {
	k := pos / r.every
	r.mu.Lock()
	if k >= len(r.snaps) {
		err := r.foldErr
		r.mu.Unlock()
		return nil, false, err
	}
	base := r.snaps[k]
	r.mu.Unlock()
	if pos-k*r.every > skimOver {
		s, err := r.skim(base, k*r.every, pos)
		return s, err == nil, err
	}
	s := base.clone()
	if err := r.fold(s, k*r.every, pos); err != nil {
		return nil, false, err
	}
	return s, true, nil
}

// next is the first event j stops at after pos-1, the one shown last;
// -1 if none.
func (r *recording) next(pos int, j jump) int {
	for i := max(pos, 0); i < len(r.class); i++ {
		if j.has(r.class[i]) {
			return i
		}
	}
	return -1
}

// prev is the last event j stops at before pos-1; -1 if none.
func (r *recording) prev(pos int, j jump) int {
	for i := min(pos-2, len(r.class)-1); i >= 0; i-- {
		if j.has(r.class[i]) {
			return i
		}
	}
	return -1
}

// faultCells marks the cells of a w-cell position bar that hold the start
// of a fault. It scans the index once per width (the caller keeps it).
func (r *recording) faultCells(w int) []bool {
	cells := make([]bool, w)
	n := len(r.class)
	for i, c := range r.class {
		if c == classFault {
			cells[min(i*(w-1)/max(n, 1), w-1)] = true
		}
	}
	return cells
}

// clone is a deep copy of s: a snapshot or a seek changes the copy, never
// s. Events in the log are shared (nothing changes an event once folded).
func (s *state) clone() *state {
	c := *s
	c.nodes = make(map[string]*nodeInfo, len(s.nodes))
	for k, n := range s.nodes {
		x := *n
		c.nodes[k] = &x
	}
	c.nodeOrder = append([]string(nil), s.nodeOrder...)
	c.insts = make(map[string]*instInfo, len(s.insts))
	for k, in := range s.insts {
		x := *in
		c.insts[k] = &x
	}
	c.instOrder = append([]string(nil), s.instOrder...)
	c.opOrder = append([]string(nil), s.opOrder...)
	c.ckpts = sameNil(s.ckpts, make([]*ckptRow, len(s.ckpts)))
	for i, r := range s.ckpts {
		x := *r
		c.ckpts[i] = &x
	}
	c.space = s.space.clone()
	c.ckptByInst = make(map[string][]time.Time, len(s.ckptByInst))
	for k, ts := range s.ckptByInst {
		c.ckptByInst[k] = append([]time.Time(nil), ts...)
	}
	c.backups = make(map[string]*backupRow, len(s.backups))
	for k, b := range s.backups {
		x := *b
		x.TrimTimes = append([]time.Time(nil), b.TrimTimes...)
		c.backups[k] = &x
	}
	c.backupOrder = append([]string(nil), s.backupOrder...)
	c.spills = cloneCounts(s.spills)
	c.pauses = cloneCounts(s.pauses)
	c.rescales = sameNil(s.rescales, make([]*rescaleRow, len(s.rescales)))
	for i, r := range s.rescales {
		x := *r
		x.Phases = append([]phaseMark(nil), r.Phases...)
		c.rescales[i] = &x
	}
	c.autoscales = append([]autoscaleRow(nil), s.autoscales...)
	c.tuner = make(map[string]*tunerRow, len(s.tuner))
	for k, t := range s.tuner {
		x := *t
		x.Points = append([]tunerPoint(nil), t.Points...)
		c.tuner[k] = &x
	}
	c.tunerOrder = append([]string(nil), s.tunerOrder...)
	c.recoveries = sameNil(s.recoveries, make([]*recovery, len(s.recoveries)))
	for i, r := range s.recoveries {
		x := *r
		x.Insts = sameNil(r.Insts, make([]*instRecovery, len(r.Insts)))
		for j, ir := range r.Insts {
			y := *ir
			x.Insts[j] = &y
		}
		c.recoveries[i] = &x
	}
	c.faults = sameNil(s.faults, make([]*fault, len(s.faults)))
	c.faultIdx = make(map[string]*fault, len(s.faultIdx))
	for i, f := range s.faults {
		x := *f
		x.Nodes = append([]string(nil), f.Nodes...)
		c.faults[i] = &x
		if s.faultIdx[f.ID] == f {
			c.faultIdx[f.ID] = &x
		}
	}
	c.tput = append([]tputPoint(nil), s.tput...)
	if s.log != nil {
		c.log = append(make([]logEntry, 0, max(len(s.log), maxLog)), s.log...)
	}
	return &c
}

// sameNil is made, or nil when was is: a clone keeps a nil slice nil.
func sameNil[T any](was, made []T) []T {
	if was == nil {
		return nil
	}
	return made
}

func cloneCounts(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
