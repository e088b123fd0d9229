package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"spate/backup"
	"spate/events"
	"spate/internal/breaks"
	"spate/internal/human"
	"spate/job"
	"spate/state"
	"spate/wire"
)

// Live rescale, the node's side (coord/PROTOCOL.md, "Live rescale"). An
// instance takes part in a rescale of operator OP as
//
//   - an old owner A: it releases a range R (release): at a batch boundary,
//     once no checkpoint is in flight and its watermark has reached the
//     receiver's, it takes a full checkpoint (its chain's new base, which
//     is the slice's durable capture), stops owning R at once (records of
//     R that still reach it are strays, dropped: the new owner gets them
//     by replay), drops R's state and reports the capture once durable;
//   - a receiver B: new (created by load from A's capture) or existing;
//     it holds its watermark from the prepare (or its creation) until
//     every upstream has re-routed R to it (unhold), so that no record of
//     R replayed late can be behind it;
//   - an upstream of OP: at commit it re-routes by the new placements and
//     reconnects every link that gained key groups, which replays from the
//     receiver's positions;
//   - a downstream of OP: at prepare it takes the new instances as inputs
//     (their watermark is "none yet", so its own cannot pass what they
//     will send), and at commit it adds their producers, whose trims it
//     sends from then on.
//
// Records of a (producer, key group) can reach a downstream out of order
// only across a move (B's first outputs may overtake A's last ones on
// another stream); numbers are dense, so applyBatch holds a record whose
// predecessor has not been applied yet until it comes (gap holding).

// rescaleState is an instance's part in rescales; the instance goroutine
// owns it, except nheld (read by heartbeats).
type rescaleState struct {
	hold      bool                  // a receiver: the watermark stays put
	fresh     bool                  // created by a rescale and never advanced: a load may lower its watermark
	held      map[heldKey][]heldRec // records waiting for their predecessor
	nheld     atomic.Int64
	heldSince time.Time
	reported  bool            // a held_records event is out
	release   []*wire.Rescale // releases waiting for their moment, in order (one move each)
	first     *firstWait
	pinned    []job.Range              // pre-copy: key groups whose upstream backup is not trimmed (the new owner replays it)
	loaded    map[uint64][]job.Range   // by rescale id: the ranges this instance has loaded in it (staged or loaded)
	kept      map[uint64][]keptCapture // by rescale id: the captures this old owner wrote, until the commit (RescaleRewrite)
	emptyID   uint64                   // the last checkpoint taken while the instance owned no key group (0: none)
	emptyOut  uint64                   // records emitted when it was taken
}

// ownsNothing reports whether the instance owns no key group (a keyed
// instance retired by a scale-in).
func (in *instance) ownsNothing() bool {
	if in.src != nil || in.sink != nil {
		return false
	}
	for _, o := range in.owned {
		if o {
			return false
		}
	}
	return true
}

// noteEmpty remembers a checkpoint taken while the instance owned nothing.
func (in *instance) noteEmpty(id uint64) {
	if in.ownsNothing() {
		in.rs.emptyID, in.rs.emptyOut = id, in.outN
	} else {
		in.rs.emptyID = 0
	}
}

// idle reports whether a checkpoint now would carry nothing new, so that
// none is taken: the instance owns no key group, its latest checkpoint
// was taken when it already owned none and was written (the chain is
// whole), and it has emitted nothing since. Such an instance applies no
// record and has no state; its positions are empty, its output counters
// and backup unchanged (trims need no checkpoint of the trimmed side);
// only its watermark moves, which a restore may take back (receivers
// never go back). Recovery restores the latest complete checkpoint as
// ever; the instance's own trims toward its upstreams cover no key group.
func (in *instance) idle() bool {
	return in.rs.emptyID != 0 && in.rs.emptyID == in.ck.lastID && in.ck.base != 0 &&
		in.ownsNothing() && in.outN == in.rs.emptyOut
}

type heldKey struct {
	p  job.Producer
	kg job.KeyGroup
}

type heldRec struct {
	seq uint64
	rec job.Record
}

// firstWait measures a moved slice's pause: from its capture to the first
// record of each of its key groups applied here.
type firstWait struct {
	id    uint64
	op    string
	rs    []job.Range
	want  map[job.KeyGroup]bool
	last  time.Time
	since time.Time // the load
}

// firstQuiet is how long after a load the pause is reported from the key
// groups that got records, if some got none (a sparse range).
const firstQuiet = 2 * time.Second

// reportFirst sends the pause measurement of a load.
func (in *instance) reportFirst() {
	f := in.rs.first
	in.rs.first = nil
	_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlRescale, Rescale: &wire.Rescale{
		ID: f.id, Step: wire.RescaleFirst, Op: f.op, Instance: in.id, Gen: in.place.Gen, Ranges: f.rs, AtMs: f.last.UnixMilli()}})
}

// gapHolding reports whether records wait for their predecessors: with
// --ft spate numbers are dense and every gap fills (by replay at worst).
func (in *instance) gapHolding() bool { return in.plan.FT == wire.FTSpate }

// applyRecord applies one record of an owned key group.
func (in *instance) applyRecord(kg job.KeyGroup, rec job.Record) {
	in.inN++
	in.op.Process(kg, rec, in)
	in.spend()
	if f := in.rs.first; f != nil && f.want[kg] {
		delete(f.want, kg)
		f.last = time.Now()
		if len(f.want) == 0 {
			in.reportFirst()
		}
	}
}

// holdRecord keeps a record whose predecessor has not been applied yet.
func (in *instance) holdRecord(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) {
	if in.rs.held == nil {
		in.rs.held = map[heldKey][]heldRec{}
	}
	k := heldKey{p, kg}
	q := in.rs.held[k]
	i := sort.Search(len(q), func(i int) bool { return q[i].seq >= seq })
	if i < len(q) && q[i].seq == seq {
		in.nDup.Add(1)
		return
	}
	rec.Key = append([]byte(nil), rec.Key...)
	rec.Data = append([]byte(nil), rec.Data...)
	q = slices.Insert(q, i, heldRec{seq: seq, rec: rec})
	in.rs.held[k] = q
	if in.rs.nheld.Add(1) == 1 {
		in.rs.heldSince = time.Now()
	}
}

// fillGap applies the held records of (p, kg) that now follow last[kg].
func (in *instance) fillGap(p job.Producer, kg job.KeyGroup, last []uint64) {
	k := heldKey{p, kg}
	q := in.rs.held[k]
	n := 0
	for n < len(q) && q[n].seq <= last[kg]+1 {
		h := q[n]
		n++
		if h.seq <= last[kg] {
			in.nDup.Add(1)
			continue
		}
		last[kg] = h.seq
		in.applyRecord(kg, h.rec)
	}
	if n == 0 {
		return
	}
	if n == len(q) {
		delete(in.rs.held, k)
	} else {
		in.rs.held[k] = q[n:]
	}
	if in.rs.nheld.Add(-int64(n)) == 0 {
		in.rs.heldSince = time.Time{}
		if in.rs.reported {
			in.rs.reported = false
			in.n.event(events.HeldRecords, in.id, events.HeldRecordsFields{Held: 0}, "%s: every held record applied; no gap left", in.id)
		}
	}
}

// dropHeld forgets the held records of key groups this instance gives up.
func (in *instance) dropHeld(owned func(job.KeyGroup) bool) {
	for k, q := range in.rs.held {
		if !owned(k.kg) {
			in.rs.nheld.Add(-int64(len(q)))
			delete(in.rs.held, k)
		}
	}
}

// heldTooLong is how long records may wait for a gap before an event says so.
const heldTooLong = 5 * time.Second

// rescaleTick runs on the instance's ticker: a pending release, and the
// held records' report.
func (in *instance) rescaleTick(ctx context.Context, now time.Time) {
	if len(in.rs.release) > 0 {
		in.tryRelease(ctx)
	}
	if f := in.rs.first; f != nil && !f.last.IsZero() && now.Sub(f.since) > firstQuiet {
		in.reportFirst()
	}
	if n := in.rs.nheld.Load(); n > 0 && !in.rs.reported && now.Sub(in.rs.heldSince) > heldTooLong {
		in.rs.reported = true
		var gaps []string
		for k, q := range in.rs.held {
			if len(gaps) < 4 {
				gaps = append(gaps, fmt.Sprintf("%v kg %d waits for %d", k.p, k.kg, q[0].seq-1))
			}
		}
		sort.Strings(gaps)
		in.n.event(events.HeldRecords, in.id, events.HeldRecordsFields{Held: n, Gaps: gaps},
			"%s: %s held for %v behind gaps in their numbers (%v)", in.id, human.Plural(int(n), "record"), now.Sub(in.rs.heldSince).Round(time.Millisecond), gaps)
	}
}

// keyGroupsOf lists the key groups of rs.
func keyGroupsOf(rs []job.Range) []job.KeyGroup {
	var out []job.KeyGroup
	for _, r := range rs {
		for g := r.Lo; g < r.Hi; g++ {
			out = append(out, g)
		}
	}
	return out
}

func inRanges(rs []job.Range, kg job.KeyGroup) bool {
	for _, r := range rs {
		if r.Contains(kg) {
			return true
		}
	}
	return false
}

// queueRelease adds a release to those waiting. An instance that gives
// several ranges away in one rescale gets one release per move, and each
// capture must wait for the previous one to be durable (one checkpoint in
// flight): a release asked again for the same ranges replaces the waiting
// one.
func (in *instance) queueRelease(r *wire.Rescale) {
	for i, q := range in.rs.release {
		if q.ID == r.ID && slices.Equal(q.Ranges, r.Ranges) {
			in.rs.release[i] = r
			return
		}
	}
	in.rs.release = append(in.rs.release, r)
}

// fireGiven fires, before a release's capture, the windows of the ranges
// given away that end at or before the receiver's watermark (r.MinWM),
// when this instance has not fired up to it itself: a receiver of the same
// rescale, its watermark held below its inputs'. The receiver has fired
// its own windows up to MinWM and sent its watermark on; the windows of
// the range it loads would fire there overdue, behind what its
// downstreams were told (seed 79 under --recover parallel: count#1, held
// at 4180, gave [64,74) to count#0, held at 4200, and rollup fired window
// [4000,4200) without count#0's late outputs of the range). Fired here
// they are on time: this instance's downstreams are at or behind its own
// held watermark. Every record of the window is here (releaseWM >= MinWM:
// every input is past it).
func (in *instance) fireGiven(r *wire.Rescale, out job.Emitter) {
	if in.wm >= r.MinWM {
		return
	}
	if gf, ok := in.op.(job.GroupFirer); ok {
		gf.FireGroups(func(kg job.KeyGroup) bool { return inRanges(r.Ranges, kg) }, r.MinWM, out)
	}
}

// tryRelease carries out the first pending release once its moment has come.
func (in *instance) tryRelease(ctx context.Context) {
	if len(in.rs.release) == 0 {
		return
	}
	r := in.rs.release[0]
	if r.Step == wire.RescaleDrop {
		in.tryDrop(r)
		return
	}
	if in.ck.inflight || in.releaseWM() < r.MinWM || in.finished || in.ld != nil {
		return // (a capture waits for the key groups still loading: load.go)
	}
	in.rs.release = in.rs.release[1:]
	in.fireGiven(r, in)
	id := in.ck.lastID + 1
	pc := in.capture(id, true)
	pc.keep, pc.async = true, true
	in.ck.inflight = true
	at := time.Now()
	in.giveUp(r.Ranges)
	go func() {
		for {
			err := in.persist(pc)
			if err == nil {
				break
			}
			// The capture is the slice's only copy: write it until it is
			// durable (the range waits meanwhile; an event says why).
			pc.captured = nil // encoded into pc.snap already
			if !in.waitRetry(ctx) {
				return
			}
		}
		in.do(func() {
			in.persisted(pc, nil)
			answer := &wire.Rescale{
				ID: r.ID, Step: wire.RescaleCaptured, Op: r.Op, Instance: in.id, Gen: in.place.Gen, Ranges: r.Ranges,
				File: state.FileName(string(in.id), in.place.Gen, id, true), CkptID: id, WM: pc.meta.Watermark, Bytes: pc.bytes, AtMs: at.UnixMilli()}
			if in.rs.kept == nil {
				in.rs.kept = map[uint64][]keptCapture{}
			}
			in.rs.kept[r.ID] = append(in.rs.kept[r.ID], keptCapture{answer: answer, data: pc.kept})
			_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlRescale, Rescale: answer})
		})
	}()
}

// keptCapture is a capture an old owner wrote, kept until the rescale
// commits: its file is the range's only durable copy, and one damaged at
// rest before the new owner loaded it is written again from here.
type keptCapture struct {
	answer *wire.Rescale // the captured answer it sent
	data   []byte        // the file's bytes
}

// rewrite writes a kept capture of rescale r.ID again (its new owner
// could not load it) and answers captured again, as the first time.
func (in *instance) rewrite(ctx context.Context, r *wire.Rescale) {
	for _, k := range in.rs.kept[r.ID] {
		if k.answer.File != r.File {
			continue
		}
		go func() {
			for in.n.store.Put(k.answer.File, k.data) != nil {
				if !in.waitRetry(ctx) {
					return
				}
			}
			_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlRescale, Rescale: k.answer})
		}()
	}
}

// waitRetry waits a moment before a write is tried again; false: the
// instance or the node is stopping.
func (in *instance) waitRetry(ctx context.Context) bool {
	select {
	case <-in.quit:
		return false
	case <-ctx.Done():
		return false
	case <-time.After(200 * time.Millisecond):
		return true
	}
}

// giveUp stops owning rs at once: later records of rs are strays, and
// their state, positions and held records are forgotten.
func (in *instance) giveUp(rs []job.Range) {
	kgs := keyGroupsOf(rs)
	for _, kg := range kgs {
		in.owned[kg] = false
		for _, last := range in.dedup {
			last[kg] = 0
		}
	}
	in.dropHeld(func(kg job.KeyGroup) bool { return in.owned[kg] })
	if in.stateful != nil {
		in.stateful.DropGroups(kgs)
	}
	// Its pins go with it: should the key groups come back, their
	// backup is trimmed again.
	in.rs.pinned = slices.DeleteFunc(in.rs.pinned, func(p job.Range) bool {
		return slices.ContainsFunc(rs, func(r job.Range) bool { return r.Lo <= p.Lo && p.Hi <= r.Hi })
	})
}

// tryDrop carries out a pre-copy hand-over, the first pending release:
// the new owner holds the ranges' state as of a complete checkpoint of
// this instance and replays the rest from the upstreams' backup (pinned
// since), so nothing is captured: at a batch boundary the ranges are
// given up at once and the coordinator told.
func (in *instance) tryDrop(r *wire.Rescale) {
	if in.releaseWM() < r.MinWM || in.finished || in.ld != nil {
		return
	}
	in.rs.release = in.rs.release[1:]
	in.giveUp(r.Ranges)
	_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlRescale, Rescale: &wire.Rescale{
		ID: r.ID, Step: wire.RescaleReleased, Op: r.Op, Instance: in.id, Gen: in.place.Gen, Ranges: r.Ranges,
		WM: in.wm, AtMs: time.Now().UnixMilli()}})
	if len(in.rs.release) > 0 {
		in.tryRelease(context.Background())
	}
}

// trimmable keeps, of the positions a completed checkpoint lets the
// upstreams trim to, those of key groups this instance still owns and
// has not pinned: a pre-copy's new owner replays a pinned range from an
// older checkpoint's positions, and the range's new owner trims it once
// it has moved.
func (in *instance) trimmable(ps []wire.Position) []wire.Position {
	out := ps[:0:0]
	for _, p := range ps {
		if int(p.KG) < len(in.owned) && in.owned[p.KG] && !inRanges(in.rs.pinned, p.KG) {
			out = append(out, p)
		}
	}
	return out
}

// releaseWM is the watermark a release compares with the receiver's: no
// record of the range that this instance has not applied yet can be
// behind it. It is the instance's own watermark, or, while it holds it
// (it receives a slice in the same rescale, or was restored as such a
// receiver), the lowest of its inputs' watermarks: the one it would have
// taken. A held watermark stands still, so without this an old owner that
// is also a receiver, and whose watermark stood below its receiver's (it
// was restored from a checkpoint during the rescale, say), would wait for
// ever.
func (in *instance) releaseWM() int64 {
	if !in.rs.hold || len(in.wms) == 0 {
		return in.wm
	}
	low := int64(job.MaxWatermark)
	for _, w := range in.wms {
		low = min(low, w)
	}
	return max(in.wm, low)
}

// loadSlice takes over the key groups rs from a capture file: their state,
// input positions and the output counters of their producers. setWM: the
// instance holds nothing else yet, so its watermark becomes the capture's
// (the lowest of its slices').
func (in *instance) loadSlice(file string, rs []job.Range, setWM bool) error {
	return in.loadSliceChain([]string{file}, rs, setWM)
}

// loadSliceChain is loadSlice from a checkpoint's chain: the full file,
// then its deltas (--rescale restart re-splits from every instance's
// latest complete checkpoint).
func (in *instance) loadSliceChain(files []string, rs []job.Range, setWM bool) error {
	_, err := in.loadSliceChainN(files, rs, setWM)
	return err
}

// loadSliceChainN is loadSliceChain that also says how many bytes it read.
func (in *instance) loadSliceChainN(files []string, rs []job.Range, setWM bool) (int, error) {
	nbytes := 0
	return nbytes, in.loadSliceFiles(files, rs, setWM, &nbytes)
}

func (in *instance) loadSliceFiles(files []string, rs []job.Range, setWM bool, nbytes *int) error {
	file := files[len(files)-1]
	snaps := make([]*state.Snapshot, 0, len(files))
	for _, f := range files {
		var data []byte
		err := readRetry(in.n.sleep, func() (err error) { data, err = in.n.store.Get(f); return err })
		if err != nil {
			return fmt.Errorf("slice %v: %w", rs, err)
		}
		*nbytes += len(data)
		s, err := state.DecodeLazy(data) // read by MergeGroups only
		if err != nil {
			return fmt.Errorf("slice %v: %s: %w", rs, f, err)
		}
		snaps = append(snaps, s)
	}
	merged, err := in.sliceState(snaps)
	if err != nil {
		return fmt.Errorf("slice %v: %s: %w", rs, file, err)
	}
	snap := snaps[len(snaps)-1]
	kgs := keyGroupsOf(rs)
	if in.stateful != nil {
		var groups []state.MergedGroup
		for _, g := range merged {
			if inRanges(rs, job.KeyGroup(g.KG)) {
				groups = append(groups, g)
			}
		}
		in.stateful.DropGroups(kgs) // anything stale of an earlier stay
		if err := in.stateful.Restore(groups); err != nil {
			return fmt.Errorf("slice %v: %s: %w", rs, file, err)
		}
	}
	pos, err := wire.DecodePositions(snap.Sections["positions"])
	if err != nil {
		return fmt.Errorf("slice %v: %s: positions: %w", rs, file, err)
	}
	for _, last := range in.dedup {
		for _, kg := range kgs {
			last[kg] = 0
		}
	}
	for _, p := range pos {
		if inRanges(rs, p.KG) {
			in.dedupOf(p.P)[p.KG] = p.Seq
		}
	}
	prods := map[job.Producer]bool{}
	for _, kg := range kgs {
		prods[job.MakeProducer(in.opIdx, int(kg))] = true
	}
	counters := make([][]wire.Position, len(in.ports))
	for pi, pt := range in.ports {
		cs, err := wire.DecodePositions(snap.Sections[fmt.Sprintf("counters.%d", pi)])
		if err != nil {
			return fmt.Errorf("slice %v: %s: counters: %w", rs, file, err)
		}
		for p := range prods {
			if seqs := pt.seqs[p]; seqs != nil {
				clear(seqs)
			}
		}
		for _, c := range cs {
			if !prods[c.P] || int(c.KG) >= in.spec.Groups {
				continue
			}
			seqs := pt.seqs[c.P]
			if seqs == nil {
				seqs = make([]uint64, in.spec.Groups)
				pt.seqs[c.P] = seqs
			}
			seqs[c.KG] = c.Seq
			counters[pi] = append(counters[pi], c)
		}
	}
	// The watermark: a fresh instance (nothing but slices) takes the
	// slices' lowest; any other goes down to the slice's if it is ahead
	// (a held receiver or one being restored), so that no record of the
	// slice still to come is behind it. A held receiver may have sent its
	// own on before its hold: the giver fired what it had passed before
	// the capture (fireGiven), so nothing of the slice fires behind it.
	var meta ckptMeta
	if err := json.Unmarshal(snap.Sections["meta"], &meta); err != nil {
		return fmt.Errorf("slice %v: %s: meta: %w", rs, file, err)
	}
	if (setWM && in.wm == job.NoWatermark) || (in.wm != job.NoWatermark && meta.Watermark < in.wm) {
		in.wm = meta.Watermark
		in.curWM.Store(meta.Watermark)
	}
	if err := in.importBackups(snaps, prods); err != nil {
		return fmt.Errorf("slice %v: %s: %w", rs, file, err)
	}
	for pi, pt := range in.ports {
		if pt.backup == nil {
			continue
		}
		for _, c := range counters[pi] {
			// Back here after another instance went on numbering it:
			// our backup continues after its numbers.
			pt.backup.Jump(c.P, c.KG, c.Seq)
		}
	}
	for _, kg := range kgs {
		in.owned[kg] = true
	}
	return nil
}

// sliceState is the state a slice's chain holds, merged. Broken on
// purpose (--break stale-slice), it is the state from before the move:
// the chain without its newest file (the capture), which is the
// pre-copy's base, or nothing when the capture is the whole chain; the
// positions, counters and watermark still come from the capture, so no
// replay brings back what the capture held.
func (in *instance) sliceState(snaps []*state.Snapshot) ([]state.MergedGroup, error) {
	if in.plan.Break.Has(breaks.StaleSlice) {
		if snaps = snaps[:len(snaps)-1]; len(snaps) == 0 {
			return nil, nil
		}
	}
	return state.MergeGroups(snaps)
}

// importBackups copies into the instance's backups what the slice's chain
// (snaps, its old owner's) held for the producers prods, the moved key
// groups: the old owner's outputs of them that downstreams have not
// checkpointed yet. The old owner keeps its copy and answers replays from
// it, but once it falls back below the chain (the chain's newest file
// damaged) it holds them only up to its fallback and no longer produces
// them (the key groups are not its own): without this copy, its outputs
// between the fallback and the chain were in no backup, and a downstream
// restored from before them waited on the gap for ever (seed 223). The
// new owner regenerates the outputs after the chain with the numbers that
// follow, so each stream stays contiguous.
func (in *instance) importBackups(snaps []*state.Snapshot, prods map[job.Producer]bool) error {
	if len(prods) == 0 {
		return nil
	}
	srcs := in.restoreBackups(snaps)
	defer srcs.discard()
	for pi, pt := range in.ports {
		if pt.backup == nil {
			continue
		}
		src, err := srcs.take(pi)
		if err != nil {
			return fmt.Errorf("backup of port %d: %w", pi, err)
		}
		err = importStreams(pt.backup, src, prods)
		_ = src.Close()
		if err != nil {
			return fmt.Errorf("backup of port %d: %w", pi, err)
		}
	}
	return nil
}

// importStreams appends to dst the records src holds of the streams of
// prods that dst lacks. A stream dst does not reach yet jumps to src's
// low first (what lies below it was trimmed: no restorable checkpoint
// downstream needs it).
func importStreams(dst, src *backup.Buffer, prods map[job.Producer]bool) error {
	for _, kg := range src.KeyGroups() {
		after := map[job.Producer]uint64{}
		for _, p := range src.Producers(kg) {
			if !prods[p] {
				continue
			}
			lo, hi, have := src.Low(p, kg), src.High(p, kg), dst.High(p, kg)
			if have >= hi {
				continue
			}
			if have < lo {
				dst.Jump(p, kg, lo)
				have = lo
			}
			after[p] = have
		}
		if len(after) == 0 {
			continue
		}
		err := src.Replay(kg, after, func(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) error {
			if a, ok := after[p]; !ok || seq <= a {
				return nil
			}
			return dst.Append(p, kg, seq, rec)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// dropUnowned forgets, after a restore, the state of key groups the
// placement no longer gives the instance (they moved away after the
// checkpoint was taken).
func (in *instance) dropUnowned() {
	if g, ok := in.op.(interface{ Groups() []job.KeyGroup }); ok && in.stateful != nil {
		var drop []job.KeyGroup
		for _, kg := range g.Groups() {
			if int(kg) >= len(in.owned) || !in.owned[kg] {
				drop = append(drop, kg)
			}
		}
		if len(drop) > 0 {
			in.stateful.DropGroups(drop)
		}
	}
	for _, last := range in.dedup {
		for kg := range last {
			if !in.owned[kg] {
				last[kg] = 0
			}
		}
	}
}

// isInputOp reports whether operator op feeds this instance.
func (in *instance) isInputOp(op string) bool {
	for _, src := range in.spec.Inputs(in.opIdx) {
		if in.spec.Ops[src].Name == op {
			return true
		}
	}
	return false
}

// touches reports whether a rescale of op concerns this instance: one
// of op's, an input of op's (its port toward op re-routes) or fed by op
// (it takes op's new instances as inputs). From the spec alone, so any
// goroutine may ask.
func (in *instance) touches(op string) bool {
	if in.spec.Ops[in.opIdx].Name == op || in.isInputOp(op) {
		return true
	}
	for _, e := range in.spec.Ops[in.opIdx].Outputs {
		if e.To == op {
			return true
		}
	}
	return false
}

// addInputs takes instances of an input operator as inputs (new ones get
// the next input numbers, with no watermark yet) and adds their
// producers to the ones this instance tracks and trims.
func (in *instance) addInputs(ps []wire.Placement) {
	for i := range ps {
		q := &ps[i]
		if !in.isInputOp(q.Op) {
			continue
		}
		idx, ok := in.inputIndex[q.ID]
		if !ok {
			idx = len(in.inputs)
			in.inputIndex[q.ID] = idx
			in.inputs = append(in.inputs, q.ID)
			in.inputGen = append(in.inputGen, q.Gen)
			in.inputConn = append(in.inputConn, 0)
			in.inputProd = append(in.inputProd, nil)
			in.back = append(in.back, nil)
			in.wms = append(in.wms, job.NoWatermark)
			in.ended = append(in.ended, false)
		}
		for _, p := range producersOf(in.spec, q) {
			if !slices.Contains(in.inputProd[idx], p) {
				in.inputProd[idx] = append(in.inputProd[idx], p)
			}
		}
	}
}

// commit applies an operator's new placements on this instance: its own
// ranges, its inputs, and the routes of its ports toward the operator
// (links that gained key groups reconnect and replay).
func (in *instance) commit(ctx context.Context, op string, plan []wire.Placement) {
	for _, q := range plan {
		if q.ID == in.id {
			in.place.Ranges = q.Ranges
		}
	}
	in.addInputs(plan)
	for pi, pt := range in.ports {
		if pt.to != op {
			continue
		}
		var gained []*link
		for _, q := range plan {
			var l *link
			for _, x := range pt.links {
				if x.place.ID == q.ID {
					l = x
				}
			}
			if l == nil {
				l = &link{place: q, lastWM: job.NoWatermark, fromIdx: -1, err: errConnecting}
				pt.links = append(pt.links, l)
				if len(q.Ranges) > 0 {
					gained = append(gained, l)
				}
				continue
			}
			more := gains(pt, l, q.Ranges)
			moved := q.Gen > l.place.Gen || q.Node != l.place.Node
			if l.replay != nil {
				// A replay reads the old ranges: drop it, and
				// reconnect, which replays toward the new ones.
				in.endReplay(l, false)
				moved = true
			}
			if q.Gen >= l.place.Gen {
				l.place = q
			}
			if more || moved {
				gained = append(gained, l)
			}
		}
		for g := range pt.owner {
			pt.owner[g] = -1
		}
		for i, l := range pt.links {
			for _, kg := range keyGroupsOf(l.place.Ranges) {
				pt.owner[kg] = i
			}
		}
		for g, o := range pt.owner {
			if o < 0 {
				in.n.event(events.Error, in.id, nil, "rescale of %s: key group %d has no owner in the new plan", op, g)
			}
		}
		for _, l := range gained {
			in.flushLink(l)
			if l.st != nil {
				l.st.Close()
			}
			in.relink(ctx, pi, l, true)
		}
	}
}

// gains reports whether the new ranges of l's downstream hold a key group
// that the port routes elsewhere now. It asks the routing, not l's
// placement: a recovery's reroute during a rescale may already carry the
// new ranges (the coordinator widens them at the capture) while the link
// was connected, and its replay started, for the old ones. Such a link
// must reconnect at the commit, or the records of the moved groups between
// the capture and the commit are never replayed to their new owner.
func gains(pt *port, l *link, ranges []job.Range) bool {
	for _, kg := range keyGroupsOf(ranges) {
		if o := pt.owner[kg]; o < 0 || pt.links[o] != l {
			return true
		}
	}
	return false
}

// replaysToward lists the replays in flight on this instance's links
// toward op (they end when their goroutine returns).
func (in *instance) replaysToward(op string) []<-chan struct{} {
	var out []<-chan struct{}
	for _, pt := range in.ports {
		if pt.to != op {
			continue
		}
		for _, l := range pt.links {
			if l.replay != nil {
				out = append(out, l.replay.done)
			}
		}
	}
	return out
}

// unhold lets a receiver's watermark move again. The watermarks its
// inputs sent while it held its own are forgotten: an input that
// re-routed a range to it replays the range on a new stream, and what it
// sent on the old one may be ahead of the replayed records. Every input
// sends its watermark again on its current stream, after the replay.
func (in *instance) unhold() {
	if !in.rs.hold {
		return
	}
	in.rs.hold = false
	for i, w := range in.wms {
		if !in.ended[i] && w != job.MaxWatermark {
			in.wms[i] = job.NoWatermark
		}
	}
	in.advance()
}

// held reports whether the watermark must stay put: a receiver of a
// rescale in flight, until every upstream has re-routed to it (or every
// input has ended: nothing can come any more).
func (in *instance) heldWM() bool {
	if !in.rs.hold {
		return false
	}
	for _, e := range in.ended {
		if !e {
			return true
		}
	}
	return false
}

// rescale handles one CtlRescale message on the control goroutine.
func (n *Node) rescale(ctx context.Context, r *wire.Rescale) {
	reply := func(m wire.Rescale) {
		_ = n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlRescale, Rescale: &m})
	}
	if n.plan == nil {
		// Never deployed: a node spawned by a coordinator that died
		// before its deploy reached it (a resumed one replaces it).
		if r.Step == wire.RescaleStop {
			reply(wire.Rescale{ID: r.ID, Step: wire.RescaleStopped, Op: r.Op, Error: errNotDeployed.Error()})
		}
		return
	}
	switch r.Step {
	case wire.RescalePrepare:
		for _, q := range r.Plan {
			n.setPlacement(q)
		}
		holds := map[job.InstanceID]int64{}
		for _, in := range n.instances() {
			// Only the downstreams of the operator and its held
			// receivers have anything to do. A call waits for the
			// instance's goroutine, which may be inside a connect to a
			// node cut off and lost, waiting for a resume frame until a
			// reroute ends the wait: the reroute then waited here,
			// behind the call, the whole 30 s (seed 216).
			if !slices.Contains(r.Hold, in.id) && !in.isInputOp(r.Op) {
				continue
			}
			in.call(ctx, func() {
				in.addInputs(r.Plan)
				if slices.Contains(r.Hold, in.id) {
					in.rs.hold = true
					holds[in.id] = in.wm
				}
			})
		}
		reply(wire.Rescale{ID: r.ID, Step: wire.RescalePrepared, Op: r.Op, Holds: holds})
	case wire.RescaleRelease:
		if in := n.instance(r.Instance); in != nil && in.place.Gen == r.Gen {
			in.do(func() { in.queueRelease(r); in.tryRelease(ctx) })
		}
	case wire.RescaleLoad:
		n.load(ctx, r, reply)
	case wire.RescaleRewrite:
		if in := n.instance(r.Instance); in != nil {
			in.do(func() { in.rewrite(ctx, r) })
		}
	case wire.RescalePin:
		if in := n.instance(r.Instance); in != nil && in.place.Gen == r.Gen {
			in.do(func() {
				for _, g := range r.Ranges {
					if !slices.Contains(in.rs.pinned, g) {
						in.rs.pinned = append(in.rs.pinned, g)
					}
				}
			})
		}
	case wire.RescaleDrop:
		if in := n.instance(r.Instance); in != nil && in.place.Gen == r.Gen {
			in.do(func() { in.queueRelease(r); in.tryRelease(ctx) })
		}
	case wire.RescaleCheckpoint:
		for _, id := range r.Hold {
			if in := n.instance(id); in != nil {
				in.do(func() { in.ck.next = time.Time{} })
			}
		}
	case wire.RescaleStage:
		n.stage(r, reply)
	case wire.RescaleStart:
		n.startStaged(ctx, r, reply)
	case wire.RescaleCommit:
		for _, q := range r.Plan {
			n.setPlacement(q)
		}
		var replays []<-chan struct{}
		for _, in := range n.instances() {
			if !in.touches(r.Op) {
				continue // nothing to commit; a call could wait behind a connect (above)
			}
			in.call(ctx, func() {
				delete(in.rs.kept, r.ID) // every move of it is loaded
				in.commit(ctx, r.Op, r.Plan)
				replays = append(replays, in.replaysToward(r.Op)...)
			})
		}
		// Committed once the re-routed links' replays are sent: the
		// unhold that follows must not let a receiver's watermark pass
		// records a replay still brings.
		go func() {
			for _, done := range replays {
				select {
				case <-done:
				case <-ctx.Done():
					return
				}
			}
			reply(wire.Rescale{ID: r.ID, Step: wire.RescaleCommitted, Op: r.Op})
		}()
	case wire.RescaleFull:
		for _, in := range n.instances() {
			in.do(func() { in.ck.base, in.ck.next = 0, time.Time{} }) // the next checkpoint, now, is full
		}
	case wire.RescaleStop:
		n.mu.Lock()
		for id, in := range n.insts {
			in.stop()
			delete(n.insts, id)
		}
		n.mu.Unlock()
		n.stagedMu.Lock()
		n.staged = nil // a pre-copy abandoned (a resumed coordinator's reset): never started, nothing to stop
		n.stagedMu.Unlock()
		if len(r.Plan) > 0 && n.plan != nil {
			// A resume's: its plan is the whole truth; the new instances
			// of a rescale the dead coordinator left unfinished are no
			// one's inputs or outputs any more.
			n.plan.Instances = append([]wire.Placement(nil), r.Plan...)
		}
		reply(wire.Rescale{ID: r.ID, Step: wire.RescaleStopped, Op: r.Op})
	case wire.RescaleUnhold:
		for _, id := range r.Hold {
			if in := n.instance(id); in != nil {
				in.do(in.unhold)
			}
		}
	}
}

// load makes an instance the owner of a moved slice: a new instance is
// created (held, fresh) and started; an existing one loads it in place.
func (n *Node) load(ctx context.Context, r *wire.Rescale, reply func(wire.Rescale)) {
	answer := wire.Rescale{ID: r.ID, Step: wire.RescaleLoaded, Op: r.Op, Instance: r.Instance, Ranges: r.Ranges}
	in := n.instance(r.Instance)
	if in == nil && r.Place != nil {
		n.setPlacement(*r.Place)
		place := *r.Place
		var err error
		answer.Gen = place.Gen // a failure too: the coordinator fences answers by generation
		if in, err = newInstance(n, n.plan, &place); err == nil {
			in.rs.hold, in.rs.fresh = true, true
			if err = in.loadSlice(r.File, r.Ranges, true); err == nil {
				in.noteLoaded(r.ID, r.Ranges)
				in.rs.first = &firstWait{id: r.ID, op: r.Op, rs: r.Ranges, want: wantOf(r.Ranges), since: time.Now()}
				answer.Gen, answer.After = in.place.Gen, in.ck.lastID
				n.mu.Lock()
				n.insts[place.ID] = in
				n.mu.Unlock()
				reply(answer)
				in.start(ctx)
				return
			}
		}
		answer.Error = err.Error()
		reply(answer)
		return
	}
	if in == nil {
		answer.Error = fmt.Sprintf("%s is not on this node", r.Instance)
		reply(answer)
		return
	}
	chain := r.Chain
	if len(chain) == 0 {
		chain = []string{r.File}
	}
	// Queued on the instance now, in order with what follows it, and
	// answered from a goroutine: an instance busy for a while (a connect
	// waiting for its answer, up to 30 s) must not hold up the node's
	// control stream, every other instance's restores and moves behind it
	// (seed 576: a load behind a stalled connect answered "did not
	// answer", the move was never loaded and the drain went on without
	// it: 2,010 rollup windows lost).
	done := make(chan struct{})
	var loadIn func()
	loadIn = func() {
		if in.ld != nil {
			in.ld.after = append(in.ld.after, loadIn) // once its own key groups are whole (load.go)
			return
		}
		defer close(done)
		if in.hasLoaded(r.ID, r.Ranges) {
			// Loaded already in this rescale (staged, then started): the
			// instance may have applied records of the ranges since, and
			// a second load would take them back to the slice's positions.
			answer.Gen, answer.After = in.place.Gen, in.ck.lastID
			return
		}
		answer.Gen = in.place.Gen // a failure too: the coordinator fences answers by generation
		if err := in.loadSliceChain(chain, r.Ranges, in.rs.fresh); err != nil {
			answer.Error = err.Error()
			return
		}
		in.noteLoaded(r.ID, r.Ranges)
		if f := in.rs.first; f != nil && f.id == r.ID {
			f.rs = append(f.rs, r.Ranges...)
			for kg := range wantOf(r.Ranges) {
				f.want[kg] = true
			}
		} else {
			in.rs.first = &firstWait{id: r.ID, op: r.Op, rs: r.Ranges, want: wantOf(r.Ranges), since: time.Now()}
		}
		answer.Gen, answer.After = in.place.Gen, in.ck.lastID
	}
	queued := in.do(loadIn)
	if !queued {
		answer.Error = fmt.Sprintf("%s has stopped", r.Instance)
		reply(answer)
		return
	}
	go func() {
		select {
		case <-done:
			reply(answer)
		case <-in.quit: // stopped: a new generation answers for itself
			select {
			case <-done:
				reply(answer)
			default:
			}
		case <-ctx.Done():
		}
	}()
}

// stagedInst is an instance a pre-copy created and loaded but has not
// started yet (Node.staged): it is no node's running instance until every
// downstream knows it (the start step).
type stagedInst struct {
	in     *instance
	ranges []job.Range
}

// stage creates a pre-copy's new instance (once) and loads a slice into
// it from the old owner's complete checkpoint: the slow part of a move,
// while the old owner keeps processing the slice. A failure forgets the
// staged instance (the coordinator moves the slice the other way).
func (n *Node) stage(r *wire.Rescale, reply func(wire.Rescale)) {
	answer := wire.Rescale{ID: r.ID, Step: wire.RescaleStaged, Op: r.Op, Instance: r.Instance, Ranges: r.Ranges}
	n.stagedMu.Lock()
	if n.staged == nil {
		n.staged = map[job.InstanceID]*stagedInst{}
	}
	m := n.staged
	st := m[r.Instance]
	n.stagedMu.Unlock()
	var err error
	switch {
	case r.Place == nil || r.Place.ID != r.Instance || len(r.Chain) == 0:
		err = fmt.Errorf("stage %s: no placement or no checkpoint", r.Instance)
	case n.instance(r.Instance) != nil:
		err = fmt.Errorf("stage %s: it runs on this node already", r.Instance)
	case st == nil:
		place := *r.Place
		place.Ranges = nil
		var in *instance
		if in, err = newInstance(n, n.plan, &place); err == nil {
			st = &stagedInst{in: in}
		}
	}
	if err == nil {
		// The instance is not running: this goroutine is its only user.
		answer.Bytes, err = st.in.loadSliceChainN(r.Chain, r.Ranges, true)
		answer.WM = st.in.wm
		if err == nil {
			st.in.noteLoaded(r.ID, r.Ranges)
		}
	}
	n.stagedMu.Lock()
	if err != nil {
		delete(m, r.Instance)
		answer.Error = err.Error()
	} else {
		st.ranges = append(st.ranges, r.Ranges...)
		m[r.Instance] = st
	}
	n.stagedMu.Unlock()
	reply(answer)
}

// startStaged starts a staged instance, held: every downstream knows it
// now. It answers loaded with every range it was staged with.
func (n *Node) startStaged(ctx context.Context, r *wire.Rescale, reply func(wire.Rescale)) {
	n.stagedMu.Lock()
	st := n.staged[r.Instance]
	delete(n.staged, r.Instance)
	n.stagedMu.Unlock()
	answer := wire.Rescale{ID: r.ID, Step: wire.RescaleLoaded, Op: r.Op, Instance: r.Instance}
	if st == nil {
		answer.Error = fmt.Sprintf("%s is not staged on this node", r.Instance)
		reply(answer)
		return
	}
	in := st.in
	if r.Place != nil {
		n.setPlacement(*r.Place)
	}
	// Its links were made from the plan at the stage: instances moved
	// since (a recovery's reroute reaches running instances only) would
	// be looked for where they were for ever (seed 491: a sink restored
	// elsewhere waited on the new count for ever).
	in.adoptPlacements(n.plan.Instances)
	in.rs.hold, in.rs.fresh = true, true
	in.rs.first = &firstWait{id: r.ID, op: r.Op, rs: st.ranges, want: wantOf(st.ranges), since: time.Now()}
	answer.Gen, answer.After, answer.Ranges = in.place.Gen, in.ck.lastID, st.ranges
	in.place.Ranges = append([]job.Range(nil), st.ranges...)
	sort.Slice(in.place.Ranges, func(i, j int) bool { return in.place.Ranges[i].Lo < in.place.Ranges[j].Lo })
	n.mu.Lock()
	n.insts[in.id] = in
	n.mu.Unlock()
	reply(answer)
	in.start(ctx)
}

// noteLoaded records that the instance loaded ranges rs in rescale id.
func (in *instance) noteLoaded(id uint64, rs []job.Range) {
	if in.rs.loaded == nil {
		in.rs.loaded = map[uint64][]job.Range{}
	}
	in.rs.loaded[id] = append(in.rs.loaded[id], rs...)
}

// hasLoaded reports whether the instance loaded every range of rs in
// rescale id already.
func (in *instance) hasLoaded(id uint64, rs []job.Range) bool {
	for _, r := range rs {
		if !slices.Contains(in.rs.loaded[id], r) {
			return false
		}
	}
	return len(rs) > 0
}

func wantOf(rs []job.Range) map[job.KeyGroup]bool {
	m := map[job.KeyGroup]bool{}
	for _, kg := range keyGroupsOf(rs) {
		m[kg] = true
	}
	return m
}

// restoreSlices finishes a restore during or after a rescale: key groups
// that moved away are dropped, slices the checkpoint does not hold yet are
// loaded, and a receiver of a rescale in flight holds its watermark.
func (in *instance) restoreSlices(r *wire.Restore, restored uint64) error {
	in.dropUnowned()
	var own []job.KeyGroup
	for _, kg := range keyGroupsOf(in.place.Ranges) {
		own = append(own, kg)
	}
	var load []wire.SliceLoad
	for _, s := range r.Slices {
		if restored <= s.After {
			load = append(load, s)
		}
	}
	// A new instance (nothing of its own but its slices) takes the
	// slices' watermark; any other keeps its own.
	fresh := restored == 0 && len(load) > 0
	if fresh {
		for _, kg := range own {
			covered := false
			for _, s := range load {
				covered = covered || inRanges(s.Ranges, kg)
			}
			fresh = fresh && covered
		}
	}
	for _, s := range load {
		chain := s.Chain
		if len(chain) == 0 {
			chain = []string{s.File}
		}
		err := in.loadSliceChain(chain, s.Ranges, fresh)
		if err != nil && len(s.Fallback) > 0 {
			// The old owner's checkpoint before the base (a pre-copy's)
			// or the capture: the upstreams' backup of the range is whole
			// from its positions (no trim of it was ordered past them),
			// and what the old owner emitted after them is regenerated
			// with the same numbers, dropped downstream as duplicates.
			in.n.event(events.CheckpointFallback, in.id, events.CheckpointFallbackFields{Error: err.Error(), Ranges: events.Ranges(s.Ranges)},
				"the slice %v is unusable (%v); falling back to its owner's checkpoint before it", s.Ranges, err)
			err = in.loadSliceChain(s.Fallback, s.Ranges, fresh)
		}
		if err != nil {
			return err
		}
	}
	in.rs.hold = r.HoldWM
	in.rs.fresh = fresh && r.HoldWM
	return nil
}
