package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"spate/backup"
	"spate/events"
	"spate/internal/breaks"
	"spate/internal/human"
	"spate/job"
	"spate/state"
	"spate/wire"
)

// checkpointer is an instance's checkpoint bookkeeping; the instance
// goroutine owns it.
type checkpointer struct {
	lastID                 uint64 // the last checkpoint taken (ids only grow, across generations and fallbacks)
	parent                 uint64 // the checkpoint the next delta builds on: the newest of the chain
	base                   uint64 // the full checkpoint the current chain starts at (0: none)
	inflight               bool
	next                   time.Time
	pending                map[uint64][][]wire.Position // checkpoint id → positions per input at its capture
	spilling               bool                         // the backup is spilling (reported)
	chain                  state.ChainState             // the current chain's sizes: when a full one pays
	perKey                 float64                      // stored bytes a key took in the latest full checkpoint: what a fresh one would take
	lastFile               string                       // the newest file of the chain, what the next delta builds on
	baseFile               string                       // the chain's first file (a full checkpoint, or a compacted chain)
	lastFileID, baseFileID uint64                       // the checkpoints those two files hold
	bases                  map[uint64]uint64            // checkpoint id → the base of its chain, until it is complete
	done                   []doneCheckpoint             // the latest complete checkpoints, newest last
	override               time.Duration                // the interval set by the coordinator (CtlInterval); 0: the plan's
	marks                  []*backup.MarkParts          // by port: the backup's mark of the latest capture, used again by the next one
	// What persist reuses from one checkpoint to the next (one is
	// persisted at a time): storage for the encoding, and for the scrub.
	scratch state.Scratch
	scrub   []byte
}

// doneCheckpoint is a complete checkpoint the instance remembers, for
// the trims: the positions of its inputs at its capture, and its chain.
type doneCheckpoint struct {
	id, base uint64
	pos      [][]wire.Position
}

// keepDone bounds how many complete checkpoints an instance remembers:
// those from its fallback on (the coordinator names it at each
// completion, and no older one is ever the fallback again), a chain and
// a little more.
const keepDone = 64

// markParts returns port pi's mark storage, for the next capture: the
// previous checkpoint is persisted (one is in flight at a time) and its
// mark released.
func (c *checkpointer) markParts(pi int) *backup.MarkParts {
	for len(c.marks) <= pi {
		c.marks = append(c.marks, &backup.MarkParts{})
	}
	return c.marks[pi]
}

func markSection(pi int) string { return fmt.Sprintf("backup.%d", pi) }

// jumpSection is the section of port pi's backup jumps (backup.JumpRec,
// JSON): every checkpoint writes them all, since only the last file's
// sections are read at a restore.
func jumpSection(pi int) string { return fmt.Sprintf("jumps.%d", pi) }

// wantFull decides whether the next checkpoint is a full one: every k-th,
// when the chain is broken, or when its deltas cost more than a base.
func (c *checkpointer) wantFull(d *wire.Deploy) bool {
	cfg := state.DefaultConfig()
	if d.FullEvery > 0 {
		cfg.FullEvery = d.FullEvery
	}
	c.chain.Base = c.chain.Base && c.base != 0
	return cfg.WantFull(c.chain)
}

// fullNext is wantFull with what a fresh full checkpoint would be stored
// in (ChainState.Current) estimated from the keys held now, at the bytes
// a key took in the latest full one.
func (in *instance) fullNext() bool {
	in.ck.chain.Current = 0
	if in.stateful != nil && in.ck.perKey > 0 {
		in.ck.chain.Current = int64(in.ck.perKey * float64(in.stateful.Len()))
	}
	return in.ck.wantFull(in.plan)
}

func (c *checkpointer) interval(d *wire.Deploy) time.Duration {
	if c.override > 0 {
		return c.override
	}
	if d.Interval <= 0 {
		return time.Second
	}
	return time.Duration(d.Interval) * time.Millisecond
}

// nextCheckpoint is when the checkpoint after one due at due and taken at
// now is due: on the grid of the interval, so that a checkpoint taken late
// (the instance was busy firing windows) does not delay every later one,
// unless it is a whole interval late or due is unset (now, on demand).
func nextCheckpoint(due, now time.Time, interval time.Duration) time.Time {
	if due.IsZero() || now.Sub(due) >= interval {
		return now.Add(interval)
	}
	return due.Add(interval)
}

// ckptMeta is the "meta" section of a checkpoint.
type ckptMeta struct {
	Watermark int64  `json:"wm"`
	SinkFile  string `json:"sink_file,omitempty"`
	SinkLen   int64  `json:"sink_len,omitempty"`
}

func (in *instance) maybeCheckpoint(now time.Time) {
	if in.plan.FT != wire.FTSpate || in.ck.inflight || now.Before(in.ck.next) || in.ld != nil {
		return // (while key groups load, no capture: load.go)
	}
	in.ck.next = nextCheckpoint(in.ck.next, now, in.ck.interval(in.plan))
	if in.idle() {
		return // nothing new to write (PROTOCOL.md, "Retired instances")
	}
	id := in.ck.lastID + 1
	full := in.fullNext()
	pc := in.capture(id, full)
	in.noteEmpty(id)
	in.ck.inflight = true
	pc.async = true
	go func() {
		in.label("persist")
		err := in.persist(pc)
		in.do(func() { in.persisted(pc, err) })
	}()
}

// pendingCheckpoint is a captured checkpoint on its way to the store.
type pendingCheckpoint struct {
	snap     *state.Snapshot
	captured job.Captured
	meta     ckptMeta
	pos      map[int]uint64    // sources: partition positions
	source   *sourceCheckpoint // sources: the section, encoded by persist (tens of markers)
	bytes    int               // stored size, once persisted
	// stateBytes is bytes without the plain sections (the upstream
	// backup's records): what the choice of a full checkpoint weighs
	// (state.Config.MaxChainRatio); keys, the entries it holds.
	stateBytes int
	keys       int
	// keep: a rescale's capture, the range's only durable copy: persist
	// keeps what it wrote (kept), for a write again if the file is found
	// damaged before the new owner has loaded it.
	keep     bool
	kept     []byte
	parent   string // the chain's newest file: what a delta builds on, the previous checkpoint's for a full one
	base     string // deltas: the chain's first file, when it is not parent
	parentID uint64 // the checkpoints parent and base hold
	baseID   uint64
	chain    uint64 // the base of the chain parent belongs to
	// damaged is a file the scrub found damaged, and damagedID the
	// checkpoint it holds (with damagedBase, every later one of its chain).
	damaged     string
	damagedID   uint64
	damagedBase bool
	// async: persist runs off the instance's goroutine, which forgets a
	// damaged checkpoint (forgetDamaged) when persist queues it, before
	// the checkpoint is reported; else persisted forgets it.
	async   bool
	t0      time.Time
	capture time.Duration
	in      uint64              // records processed at the capture
	marks   []*backup.MarkParts // the backup marks in snap.Pieces, pinning their chunks until release
}

// release lets the backups reuse the chunks the checkpoint's marks point
// into: call it once the checkpoint is written (or given up).
func (pc *pendingCheckpoint) release() {
	for _, mp := range pc.marks {
		mp.Release()
	}
}

// capture takes checkpoint id at a batch boundary, on the instance's
// goroutine: copy-on-write, so the stall is short.
func (in *instance) capture(id uint64, full bool) *pendingCheckpoint {
	t0 := time.Now()
	snap := &state.Snapshot{Instance: string(in.id), Gen: in.place.Gen, ID: id, Full: full, Base: id, Sections: map[string][]byte{}}
	if !full {
		snap.Base, snap.Parent = in.ck.base, in.ck.parent
	}
	parent, base := in.ck.lastFile, ""
	if in.ck.baseFile != parent && !full {
		base = in.ck.baseFile
	}
	parentID, baseID, chain := in.ck.lastFileID, in.ck.baseFileID, in.ck.base
	var captured job.Captured
	if in.stateful != nil {
		captured = in.stateful.Capture(full)
	}
	meta := ckptMeta{Watermark: in.wm}
	var srcPos map[int]uint64
	var src *sourceCheckpoint
	if in.src != nil {
		cp := in.src.mark(in)
		src = &cp
		meta.Watermark = in.src.watermark()
		srcPos = map[int]uint64{}
		for _, ps := range in.src.parts {
			srcPos[ps.p] = ps.pos
		}
	}
	var marks []*backup.MarkParts
	var pos []wire.Position
	for p, last := range in.dedup {
		for kg, s := range last {
			if s > 0 && in.owned[kg] {
				pos = append(pos, wire.Position{P: p, KG: job.KeyGroup(kg), Seq: s})
			}
		}
	}
	snap.Sections["positions"] = wire.EncodePositions(nil, pos)
	for pi, pt := range in.ports {
		var cs []wire.Position
		for p, seqs := range pt.seqs {
			for kg, s := range seqs {
				if s > 0 {
					cs = append(cs, wire.Position{P: p, KG: job.KeyGroup(kg), Seq: s})
				}
			}
		}
		snap.Sections[fmt.Sprintf("counters.%d", pi)] = wire.EncodePositions(nil, cs)
		if pt.backup != nil {
			if st := pt.backup.Stats(); st.Spilling != in.ck.spilling {
				in.ck.spilling = st.Spilling
				in.n.event(events.BackupSpill, in.id, events.BackupSpillFields{Spilling: st.Spilling, MemBytes: st.MemBytes, SpillBytes: st.SpillBytes},
					"upstream backup spilling to disk: %v (%s in memory, %s spilled)", st.Spilling, human.Bytes(float64(st.MemBytes)), human.Bytes(float64(st.SpillBytes)))
			}
			// The mark points into the backup's chunks, pinned until the
			// checkpoint is written: the records, megabytes a second, are
			// not copied here on the instance's goroutine, nor anywhere.
			mp := in.ck.markParts(pi)
			var err error
			if full {
				err = pt.backup.MarkFullInParts(mp)
			} else {
				err = pt.backup.MarkInParts(mp)
			}
			if err != nil {
				in.n.event(events.Error, in.id, nil, "backup: %v", err)
			}
			if snap.Pieces == nil {
				snap.Pieces = map[string][][]byte{}
			}
			snap.Pieces[markSection(pi)] = mp.Parts()
			if js := pt.backup.Jumps(); len(js) > 0 {
				// Streams another instance numbered for a while (a key
				// group moved away and back, or in from an old owner): a
				// restored backup must answer a replay across them as this
				// one does, not refuse it (the soak: a new owner restored
				// after a move refused a sink restored from before it).
				snap.Sections[jumpSection(pi)], _ = json.Marshal(js)
			}
			marks = append(marks, mp)
		}
	}
	if in.sink != nil {
		_ = in.sink.Flush()
		meta.SinkFile, meta.SinkLen = in.file.name, in.file.n.Load()
	}
	snap.Sections["meta"], _ = json.Marshal(meta)
	perInput := make([][]wire.Position, len(in.inputs))
	for i := range in.inputs {
		perInput[i] = in.positionsFor(i)
	}
	if in.ck.pending == nil {
		in.ck.pending = map[uint64][][]wire.Position{}
	}
	in.ck.pending[id] = perInput
	in.ck.lastID, in.ck.parent = id, id
	if full {
		in.ck.base = id
	}
	if in.ck.bases == nil {
		in.ck.bases = map[uint64]uint64{}
	}
	in.ck.bases[id] = in.ck.base
	return &pendingCheckpoint{snap: snap, captured: captured, meta: meta, pos: srcPos, source: src, t0: t0, capture: time.Since(t0),
		parent: parent, base: base, parentID: parentID, baseID: baseID, chain: chain, in: in.inN, marks: marks}
}

// errChainBroken is a delta not taken because the file it builds on is
// damaged.
var errChainBroken = errors.New("the chain's newest file is damaged")

// persisted runs on the instance's goroutine once a checkpoint is written.
func (in *instance) persisted(pc *pendingCheckpoint, err error) {
	in.ck.inflight = false
	pc.release()
	if pc.damaged != "" && !pc.async {
		in.forgetDamaged(pc)
	}
	if err != nil {
		in.ck.base = 0 // the chain has a hole: the next one is full
		in.ck.chain = state.ChainState{}
		delete(in.ck.pending, pc.snap.ID)
		if errors.Is(err, errChainBroken) {
			// The latest complete checkpoint is damaged, so only the one
			// before it is restorable: a loss now would fall back to it,
			// and a second damaged file would leave nothing. The full
			// checkpoint that restores the margin is taken at once, not an
			// interval later (the soak lost sink#1: its newest two files
			// damaged 50 s apart under a long tuned interval).
			in.ck.next = time.Time{}
		}
		return
	}
	in.ck.lastFile = state.FileName(pc.snap.Instance, pc.snap.Gen, pc.snap.ID, pc.snap.Full)
	in.ck.lastFileID = pc.snap.ID
	if pc.snap.Full {
		in.ck.baseFile, in.ck.baseFileID = in.ck.lastFile, pc.snap.ID
		in.ck.chain = state.ChainState{Base: true, BaseSize: int64(pc.stateBytes)}
		if pc.keys > 0 {
			in.ck.perKey = float64(pc.stateBytes) / float64(pc.keys)
		}
	} else {
		in.ck.chain.Deltas++
		in.ck.chain.DeltaSize += int64(pc.stateBytes)
	}
}

// persist encodes, compresses, checksums and writes a checkpoint, then
// reports it. With --ft spate it runs beside the instance, which keeps
// processing; with --ft global the instance waits for it.
func (in *instance) persist(pc *pendingCheckpoint) error {
	snap := pc.snap
	keys := 0
	if pc.source != nil {
		snap.Sections["source"] = encodeSourceCheckpoint(*pc.source)
	}
	if pc.captured != nil {
		snap.Groups = pc.captured.Encode(&in.ck.scratch)
		pc.captured.Done()
		for _, g := range snap.Groups {
			keys += g.Len()
		}
	}
	pc.keys = keys
	var err error
	if in.file != nil {
		err = in.file.f.Sync() // the committed prefix must be durable first
	}
	if err == nil && pc.parent != "" {
		// A full checkpoint reads back the previous one's newest file
		// too: the fallback of a loss before the next checkpoint, which
		// nothing else would check (seed 677 lost sink#0 for good: its
		// latest two files damaged, the older under a full one).
		if e := in.scrubFile(pc.parent, snap.Full); retryable(e) {
			// Unreadable for now, not damaged: a delta on it waits for
			// the next checkpoint; a full one needs nothing of it.
			if !snap.Full {
				err = fmt.Errorf("parent %s could not be read back: %w", pc.parent, e)
			}
		} else if e != nil {
			pc.damaged, pc.damagedID = pc.parent, pc.parentID
			if !snap.Full {
				err = fmt.Errorf("parent %s: %w: %w", pc.parent, errChainBroken, e)
			}
		}
	}
	if err == nil && !snap.Full && pc.base != "" {
		// The base too: the latest two complete checkpoints share it, so a
		// base damaged after the last scrub leaves neither restorable (the
		// soak lost count#1 so). Read back from the page cache once a
		// checkpoint, off the instance's goroutine. A base collected
		// since (a compaction folded the chain into a file of its own) is
		// no longer what restores it.
		if e := in.scrubFile(pc.base, true); retryable(e) {
			err = fmt.Errorf("base %s could not be read back: %w", pc.base, e)
		} else if e != nil {
			pc.damaged, pc.damagedID, pc.damagedBase = pc.base, pc.baseID, true
			err = fmt.Errorf("base %s: %w: %w", pc.base, errChainBroken, e)
		}
	}
	if pc.damaged != "" {
		in.reportDamaged(pc, err)
		if pc.async {
			// Queued before the report below: the coordinator's answer
			// to it (onCompleted, queued the same way) must find the
			// damaged checkpoint forgotten, or its trims go to the damaged
			// one's positions, past what the fallback needs (seed 2750:
			// sink#1's full checkpoint completed before persisted ran, the
			// upstreams trimmed to the damaged delta before it, the full
			// one was damaged at rest too, and the fallback's records were
			// gone: 3,643 windows lost).
			in.do(func() { in.forgetDamaged(pc) })
		}
	}
	t1 := time.Now()
	var parts [][]byte
	if err == nil {
		for _, mp := range pc.marks {
			mp.Seal() // the marks' checksums, off the instance's goroutine
		}
		parts, err = state.EncodeParts(snap, &in.ck.scratch)
	}
	encoded := time.Since(t1)
	name := state.FileName(snap.Instance, snap.Gen, snap.ID, snap.Full)
	if err == nil {
		err = in.n.store.Put(name, parts...)
	}
	if err == nil && pc.keep {
		pc.kept = bytes.Join(parts, nil) // parts share buffers the next checkpoint reuses
	}
	done := time.Now()
	pc.bytes = 0
	for _, p := range parts {
		pc.bytes += len(p)
	}
	pc.stateBytes = pc.bytes - snap.PlainSize()
	if err != nil {
		in.n.event(events.CheckpointFailed, in.id, events.CheckpointFailedFields{ID: snap.ID}, "checkpoint %d failed: %v", snap.ID, err)
		return err
	}
	_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlCheckpointed, Checkpoint: &wire.Checkpoint{
		Instance: in.id, Gen: snap.Gen, ID: snap.ID, Full: snap.Full, Base: snap.Base, Parent: snap.Parent, File: name,
		Keys: keys, RawBytes: snap.RawSize(), Bytes: pc.bytes, CaptureUs: pc.capture.Microseconds(), EncodeUs: encoded.Microseconds(), In: pc.in, PersistUs: done.Sub(t1).Microseconds(),
		TotalUs: done.Sub(pc.t0).Microseconds(), SinkFile: pc.meta.SinkFile, SinkLen: pc.meta.SinkLen, Positions: pc.pos}})
	return nil
}

// scrubFile re-reads a file a checkpoint builds on or stands beside (its
// parent, the chain's base) and checks its checksum: a delta on a damaged
// file would be unrestorable, so it fails instead (and a full checkpoint
// is taken at once). Read back from the page cache, streamed through a
// buffer kept for it. Damage to the chain's middle files shows at
// restore, where the previous complete checkpoint is the fallback. A file
// that may be gone (a base a compaction folded away) is not checked when
// it is.
func (in *instance) scrubFile(name string, mayBeGone bool) error {
	err := readRetry(in.n.sleep, func() error { return in.verifyFile(name) })
	if mayBeGone && errors.Is(err, state.ErrNotFound) {
		return nil
	}
	return err
}

// verifyFile reads file name once and checks its checksum.
func (in *instance) verifyFile(name string) error {
	if v, ok := in.n.store.Store.(verifier); ok {
		// A store that checks where the file lies (the coordinator's):
		// the file does not cross the network for it.
		return v.Verify(name)
	}
	f, err := in.n.store.Open(name)
	if err == nil {
		if in.ck.scrub == nil {
			in.ck.scrub = make([]byte, 256<<10)
		}
		_, err = state.VerifyReader(f, in.ck.scrub)
		f.Close()
	}
	return err
}

// verifier is a store that checks a checkpoint file where it lies
// (stores.Client.Verify).
type verifier interface{ Verify(name string) error }

// reportDamaged tells the coordinator, before the checkpoint being
// persisted is reported, that the checkpoints a damaged file restores are
// restorable no more: it forgets them before it collects the files of
// the older ones, which are the fallback now. Off the instance's
// goroutine (persist); the instance forgets them in persisted.
func (in *instance) reportDamaged(pc *pendingCheckpoint, err error) {
	snap := pc.snap
	what := "a full one is taken now"
	if err == nil {
		what = "the checkpoints it restores are forgotten"
	}
	in.n.event(events.CheckpointChainBroken, in.id, events.CheckpointChainBrokenFields{ID: snap.ID, Parent: snap.Parent, Damaged: pc.damaged, DamagedID: pc.damagedID},
		"checkpoint %d of %s found %s damaged; %s", snap.ID, in.id, pc.damaged, what)
	if in.n.ctl != nil {
		_ = in.n.ctl.send(wire.TControl, wire.Control{Kind: wire.CtlDamaged, Checkpoint: &wire.Checkpoint{
			Instance: in.id, Gen: snap.Gen, ID: pc.damagedID, File: pc.damaged}})
	}
}

// forgetDamaged drops the complete checkpoints a damaged file restores
// (the one it holds, and with a damaged base every later one of its
// chain) from what the trims count on: the next trims keep what the
// newest checkpoint still restorable needs, not what the damaged one did.
func (in *instance) forgetDamaged(pc *pendingCheckpoint) {
	gone := func(id, base uint64) bool {
		return id == pc.damagedID || (pc.damagedBase && base == pc.chain && id >= pc.damagedID)
	}
	kept := in.ck.done[:0]
	for _, d := range in.ck.done {
		if !gone(d.id, d.base) {
			kept = append(kept, d)
		}
	}
	in.ck.done = kept
	for id, base := range in.ck.bases {
		if id != pc.snap.ID && gone(id, base) {
			delete(in.ck.pending, id) // its completion trims nothing
			delete(in.ck.bases, id)
		}
	}
}

// onCompleted runs when the coordinator has recorded checkpoint id as
// complete, with fallback the instance's fallback checkpoint now (0:
// none): the upstreams may drop what the fallback no longer needs. The
// fallback's chain shares no file with the latest's, so that one damaged
// file leaves one of them restorable (PROTOCOL.md, "Damage"); a fallback
// the instance does not remember (forgotten as damaged, or of an earlier
// generation) trims nothing.
func (in *instance) onCompleted(id, fallback uint64) {
	cur, ok := in.ck.pending[id]
	if !ok {
		return
	}
	base := in.ck.bases[id]
	for k := range in.ck.pending {
		if k <= id {
			delete(in.ck.pending, k)
			delete(in.ck.bases, k)
		}
	}
	point := in.trimPoint(fallback)
	if in.plan.Break.Has(breaks.TrimNewest) {
		point = cur // broken on purpose: nothing left for the fallback
	}
	for i, ps := range point {
		if ps = in.trimmable(ps); in.back[i] != nil && len(ps) > 0 {
			in.back[i](ps)
		}
	}
	kept := in.ck.done[:0]
	for _, d := range in.ck.done {
		if d.id >= fallback {
			kept = append(kept, d) // older ones are never the fallback again
		}
	}
	in.ck.done = append(kept, doneCheckpoint{id: id, base: base, pos: cur})
	if n := len(in.ck.done); n > keepDone {
		in.ck.done = append(in.ck.done[:0], in.ck.done[n-keepDone:]...)
	}
}

// trimPoint is the positions, per input, of complete checkpoint fallback
// if the instance remembers it (nil: trim nothing).
func (in *instance) trimPoint(fallback uint64) [][]wire.Position {
	if fallback == 0 {
		return nil
	}
	for _, d := range in.ck.done {
		if d.id == fallback {
			return d.pos
		}
	}
	return nil
}

// restore loads the chain of a complete checkpoint into a fresh instance.
func (in *instance) restore(files []string) (uint64, error) { return in.restoreChain(files, false) }

// restoreChain is restore; early: an early restore (load.go) if the
// instance can take one, which leaves the key groups' state to be
// built and attached while the instance runs (in.ld).
func (in *instance) restoreChain(files []string, early bool) (uint64, error) {
	if len(files) == 0 {
		return 0, nil
	}
	// The files of a chain are read and decoded at once: decompression is
	// most of a restore's time.
	snaps := make([]*state.Snapshot, len(files))
	sizes := make([]int64, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			var data []byte
			err := readRetry(in.n.sleep, func() (err error) { data, err = in.n.store.Get(f); return err })
			if err == nil {
				snaps[i], err = state.DecodeLazy(data) // read by MergeGroups only
			}
			if err == nil {
				sizes[i] = int64(len(data) - snaps[i].PlainSize())
			}
			if err == nil {
				err = state.Holds(f, snaps[i])
			}
			if err != nil {
				errs[i] = fmt.Errorf("checkpoint %s: %w", f, err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err // the oldest file's: the one a fallback is about
		}
	}
	groups, err := state.MergeGroups(snaps)
	if err != nil {
		return 0, err
	}
	last := snaps[len(snaps)-1]
	backups := in.restoreBackups(snaps)
	defer backups.discard()
	if gl := in.earlyLoader(early, groups); gl != nil {
		in.ld = newEarlyLoad(gl, groups, snaps, in.spec.Groups)
	} else if in.stateful != nil {
		if err := in.stateful.Restore(groups); err != nil {
			return 0, fmt.Errorf("restore state: %w", err)
		}
		// What was restored is the chain's last checkpoint, durable: the
		// next delta holds what changes from here, not the restored
		// groups whole (a capture nobody encodes starts the next epoch).
		in.stateful.Capture(false).Done()
	}
	var meta ckptMeta
	if err := json.Unmarshal(last.Sections["meta"], &meta); err != nil {
		return 0, fmt.Errorf("checkpoint %s: meta: %w", files[len(files)-1], err)
	}
	if in.src == nil {
		in.wm = meta.Watermark
		in.curWM.Store(meta.Watermark)
	}
	pos, err := wire.DecodePositions(last.Sections["positions"])
	if err != nil {
		return 0, fmt.Errorf("checkpoint %s: positions: %w", files[len(files)-1], err)
	}
	for _, p := range pos {
		if int(p.KG) < in.spec.Groups {
			in.dedupOf(p.P)[p.KG] = p.Seq
		}
	}
	for pi, pt := range in.ports {
		cs, err := wire.DecodePositions(last.Sections[fmt.Sprintf("counters.%d", pi)])
		if err != nil {
			return 0, fmt.Errorf("checkpoint %s: counters: %w", files[len(files)-1], err)
		}
		for _, c := range cs {
			seqs := pt.seqs[c.P]
			if seqs == nil {
				seqs = make([]uint64, in.spec.Groups)
				pt.seqs[c.P] = seqs
			}
			if int(c.KG) < len(seqs) {
				seqs[c.KG] = c.Seq
			}
		}
		if pt.backup != nil {
			b, err := backups.take(pi)
			if err != nil {
				return 0, fmt.Errorf("checkpoint %s: backup: %w", files[len(files)-1], err)
			}
			if raw := last.Sections[jumpSection(pi)]; len(raw) > 0 {
				var js []backup.JumpRec
				if err := json.Unmarshal(raw, &js); err != nil {
					return 0, fmt.Errorf("checkpoint %s: %s: %w", files[len(files)-1], jumpSection(pi), err)
				}
				b.RestoreJumps(js)
			}
			pt.backup = b
		}
	}
	if in.src != nil {
		var cp sourceCheckpoint
		if err := json.Unmarshal(last.Sections["source"], &cp); err != nil {
			return 0, fmt.Errorf("checkpoint %s: source: %w", files[len(files)-1], err)
		}
		in.src.restored = &cp
	}
	in.ck.lastID, in.ck.parent, in.ck.base, in.ck.lastFile = last.ID, last.ID, last.ID, files[len(files)-1] // the merged chain is a full snapshot at last.ID
	in.ck.baseFile, in.ck.baseFileID, in.ck.lastFileID = files[0], snaps[0].ID, last.ID
	// The next checkpoint extends the restored chain, a delta whose parent
	// is its last file, unless the chain is long or heavy enough for a
	// full one (wantFull): right after a recovery, a full checkpoint would
	// take the CPU the catch-up needs.
	in.ck.chain = state.ChainState{Base: true, BaseSize: sizes[0], Deltas: len(files) - 1}
	for _, n := range sizes[1:] {
		in.ck.chain.DeltaSize += n
	}
	keys := 0
	for _, g := range snaps[0].Groups {
		keys += g.Len()
	}
	if keys > 0 {
		in.ck.perKey = float64(sizes[0]) / float64(keys)
	}
	return last.ID, nil
}

// backupsRestore is the upstream backups of an instance's ports being
// rebuilt from the marks of a chain, each on a goroutine of its own, while
// the instance's state is restored: they share nothing.
type backupsRestore struct {
	wg   sync.WaitGroup
	bufs []*backup.Buffer // by port; nil for a port without a backup
	errs []error
}

// restoreBackups starts rebuilding the backup of every port that keeps one
// from the marks of snaps, a chain (oldest first).
func (in *instance) restoreBackups(snaps []*state.Snapshot) *backupsRestore {
	r := &backupsRestore{bufs: make([]*backup.Buffer, len(in.ports)), errs: make([]error, len(in.ports))}
	for pi, pt := range in.ports {
		if pt.backup == nil {
			continue
		}
		marks := make([][]byte, len(snaps))
		for i, s := range snaps {
			marks[i] = s.Sections[markSection(pi)]
		}
		cfg := in.backupConfig()
		r.wg.Go(func() { r.bufs[pi], r.errs[pi] = backup.Restore(cfg, marks) })
	}
	return r
}

// take waits for the backups and hands over that of port pi.
func (r *backupsRestore) take(pi int) (*backup.Buffer, error) {
	r.wg.Wait()
	b := r.bufs[pi]
	r.bufs[pi] = nil
	return b, r.errs[pi]
}

// discard waits for the backups and closes those not taken.
func (r *backupsRestore) discard() {
	r.wg.Wait()
	for _, b := range r.bufs {
		if b != nil {
			_ = b.Close()
		}
	}
}

// onCompacted runs when the coordinator has folded the chain up to
// checkpoint id into file, one full snapshot: if the current chain
// extends that checkpoint, the file is its base from now on, what
// restores every later checkpoint, and what each delta scrubs before it
// builds on it. A compaction of an older chain (finished after a restore
// or a full checkpoint began a new one) changes nothing.
func (in *instance) onCompacted(id uint64, file string) {
	if in.ck.base != 0 && in.ck.base <= id && id <= in.ck.parent {
		in.ck.baseFile, in.ck.baseFileID = file, id
	}
}
