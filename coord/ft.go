package coord

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"spate/events"
	"spate/internal/breaks"
	"spate/internal/human"
	"spate/job"
	"spate/wire"
)

// Manifest is checkpoints/MANIFEST.json: the complete checkpoints of every
// instance, the coordinator's record of what can be restored.
type Manifest struct {
	Run       string                               `json:"run"`
	Job       string                               `json:"job"`
	Instances map[job.InstanceID][]wire.Checkpoint `json:"instances"`
	// Global is the latest complete global checkpoint (--ft global).
	Global uint64 `json:"global,omitempty"`
	// High is the highest checkpoint id reported of each instance, Floor
	// the oldest checkpoint the upstreams' backups may still restore
	// (ledger.go).
	High  map[job.InstanceID]uint64 `json:"high,omitempty"`
	Floor map[job.InstanceID]uint64 `json:"floor,omitempty"`
	// Coord is the rest of what the coordinator needs to go on after a
	// crash (record.go), written in the same file so that the two are
	// never out of step.
	Coord *Record                            `json:"coord,omitempty"`
	files map[job.InstanceID]map[string]bool // every file reported, for garbage collection
	byID  map[job.InstanceID]map[uint64]wire.Checkpoint
}

func newManifest(run, jobName string) *Manifest {
	return &Manifest{Run: run, Job: jobName, Instances: map[job.InstanceID][]wire.Checkpoint{},
		files: map[job.InstanceID]map[string]bool{}, byID: map[job.InstanceID]map[uint64]wire.Checkpoint{}}
}

// add records a complete checkpoint and returns its fallback: the
// checkpoint whose positions the instance's upstreams may trim to now (0:
// none; trim nothing).
func (m *Manifest) add(c wire.Checkpoint) (fallback uint64) {
	m.Instances[c.Instance] = append(m.Instances[c.Instance], c)
	if m.byID[c.Instance] == nil {
		m.byID[c.Instance] = map[uint64]wire.Checkpoint{}
		m.files[c.Instance] = map[string]bool{}
	}
	m.byID[c.Instance][c.ID] = c
	m.files[c.Instance][c.File] = true
	m.note(c.Instance, c.ID)
	return m.trimmedTo(c.Instance)
}

// chain returns the files that restore checkpoint c: its full base, then
// the deltas up to c. ok is false if a link of the chain is not complete.
func (m *Manifest) chain(c wire.Checkpoint) (files []string, ok bool) {
	by := m.byID[c.Instance]
	for {
		if c.Compacted != "" {
			files = append(files, c.Compacted)
			break
		}
		files = append(files, c.File)
		if c.Full {
			break
		}
		p, found := by[c.Parent]
		if !found {
			return nil, false
		}
		c = p
	}
	for i, j := 0, len(files)-1; i < j; i, j = i+1, j-1 {
		files[i], files[j] = files[j], files[i]
	}
	return files, true
}

// compacted records that checkpoint id of inst is also in file, one full
// snapshot; false if the checkpoint is no longer in the manifest.
func (m *Manifest) compacted(inst job.InstanceID, id uint64, file string) bool {
	c, ok := m.byID[inst][id]
	if !ok {
		return false
	}
	c.Compacted = file
	m.byID[inst][id] = c
	for i := range m.Instances[inst] {
		if m.Instances[inst][i].ID == id {
			m.Instances[inst][i].Compacted = file
		}
	}
	m.files[inst][file] = true
	return true
}

// restorable returns the chains of the two restorable checkpoints of id,
// with the checkpoints themselves: the latest whose chain is whole, and
// its fallback, the newest before it whose chain shares no file with the
// latest's, so that no one damaged file leaves neither restorable (with
// incremental chains the latest two usually share their base). Both are
// at or above the floor.
func (m *Manifest) restorable(id job.InstanceID) (chains [][]string, cps []wire.Checkpoint) {
	list := m.Instances[id]
	for i := len(list) - 1; i >= 0 && len(chains) < 2 && list[i].ID >= m.Floor[id]; i-- {
		files, ok := m.chain(list[i])
		if !ok || len(chains) == 1 && sharesFile(files, chains[0]) {
			continue
		}
		chains = append(chains, files)
		cps = append(cps, list[i])
	}
	return chains, cps
}

// sharesFile reports whether two chains have a file in common.
func sharesFile(a, b []string) bool {
	for _, f := range a {
		if slices.Contains(b, f) {
			return true
		}
	}
	return false
}

// collect returns the files of id that no restorable chain needs any more,
// and forgets them; the list of complete checkpoints is trimmed alike. The
// chains of the pinned checkpoint ids are kept too (--ft global pins its
// latest complete global checkpoint, which may be older than an
// instance's latest two).
func (m *Manifest) collect(id job.InstanceID, pinned ...uint64) []string {
	chains, cps := m.restorable(id)
	for _, p := range pinned {
		if c, ok := m.byID[id][p]; ok {
			if files, ok := m.chain(c); ok {
				chains = append(chains, files)
			}
		}
	}
	keep := map[string]bool{}
	for _, ch := range chains {
		for _, f := range ch {
			keep[f] = true
		}
	}
	if l := m.Instances[id]; len(l) > 0 {
		// The instance's next delta names its latest file as its parent and
		// reads it back first (scrubParent), compacted or not.
		keep[l[len(l)-1].File] = true
	}
	var drop []string
	for f := range m.files[id] {
		if !keep[f] {
			drop = append(drop, f)
			delete(m.files[id], f)
		}
	}
	sort.Strings(drop)
	if len(cps) > 0 {
		oldest := cps[len(cps)-1].ID
		var kept []wire.Checkpoint
		for _, c := range m.Instances[id] {
			// A compacted checkpoint stays while a chain starts at its
			// compacted file: the later deltas name it as their parent.
			if keep[c.File] || keep[c.Compacted] || c.ID >= oldest {
				kept = append(kept, c)
			} else {
				delete(m.byID[id], c.ID)
			}
		}
		m.Instances[id] = kept
	}
	return drop
}

// OutputManifest is output/MANIFEST.json: how much of each sink file is
// committed. Files not listed are committed whole.
type OutputManifest struct {
	Limits map[string]int64 `json:"limits"`
}

// ReadOutputManifest reads the output manifest of the run in dir,
// output/MANIFEST.json in its output store (absent: no limits).
func ReadOutputManifest(dir string) (OutputManifest, error) {
	st, err := OpenOutput(dir)
	if err != nil {
		return OutputManifest{}, err
	}
	return readOutputManifest(st)
}

// recovery is one instance's recovery in flight.
type recovery struct {
	id       job.InstanceID
	from     string // the lost node
	detected time.Time
	placed   time.Time
	restored time.Time
	target   int64             // watermark to reach to be caught up
	known    bool              // target is set (every upstream had reported where it is placed)
	lastWM   int64             // the instance's own watermark when its node was lost
	clock    *wire.PacingClock // a source's pacing clock when its node was lost
}

// onCheckpointed accepts a durable checkpoint from the instance's current
// placement and makes it complete; a report from an older generation (a
// zombie) is refused.
func (c *core) onCheckpointed(ns *nodeState, cp *wire.Checkpoint) {
	p := c.placeOf[cp.Instance]
	if p == nil {
		return
	}
	if (cp.Gen != p.Gen || ns.name != p.Node || ns.state == nodeLost) && !c.acceptFenced(cp.Gen, p.Gen) {
		c.emit(events.Fenced, ns.name, string(cp.Instance), events.FencedFields{Gen: cp.Gen, Current: p.Gen},
			"checkpoint %d of %s from generation %d refused: the current generation is %d on %s", cp.ID, cp.Instance, cp.Gen, p.Gen, p.Node)
		return
	}
	fallback := c.manifest.add(*cp)
	c.tunerCheckpointed(cp)
	c.edsCheckpointed(cp)
	drop := c.manifest.collect(cp.Instance, append(c.edsPinned(cp.Instance), c.global.complete, c.global.prev)...)
	c.mw.version++
	c.mw.acks = append(c.mw.acks, manifestAck{node: ns, cp: wire.Checkpoint{Instance: cp.Instance, Gen: cp.Gen, ID: cp.ID, Fallback: fallback}, version: c.mw.version, drop: drop})
	c.writeManifest()
	c.maybeCompact(*cp)
	c.ft.checkpointed(c, ns, cp)
}

// acceptFenced reports whether a report of generation gen counts though
// the instance's current generation is cur: never, unless the run is
// broken on purpose (--break accept-fenced), when an older one does.
func (c *core) acceptFenced(gen, cur uint64) bool {
	return c.cfg.Break.Has(breaks.AcceptFenced) && gen < cur
}

// restoreSink bounds the older output files of sink p, just restored
// from cp (OutputManifest.restoreSink), and reports whether a limit
// changed. Broken on purpose (--break early-commit), it bounds nothing:
// what a sink wrote counts as committed as it wrote it, before the
// checkpoint that would cover it was durable, and the replay from cp
// writes it again.
func (c *core) restoreSink(p *wire.Placement, cp *wire.Checkpoint) bool {
	if c.cfg.Break.Has(breaks.EarlyCommit) {
		return false
	}
	return c.outputs.restoreSink(p.Op, p.Index, p.Gen, cp)
}

// onDamaged forgets the checkpoints a damaged file restores (--ft spate;
// a global checkpoint falls back as a whole at its restore). The node
// reports it before the checkpoint during whose persist it was found, so
// the collection at that checkpoint keeps the chains of the older ones,
// the fallback now.
func (c *core) onDamaged(ns *nodeState, cp *wire.Checkpoint) {
	p := c.placeOf[cp.Instance]
	if p == nil || cp.Gen != p.Gen || ns.name != p.Node || c.ft.mode() != wire.FTSpate {
		return
	}
	if gone := c.manifest.damaged(cp.Instance, cp.File, c.edsPinned(cp.Instance)...); len(gone) > 0 {
		c.mw.version++
		c.writeManifest()
		c.emit(events.CheckpointsForgotten, ns.name, string(cp.Instance), events.CheckpointsForgottenFields{File: cp.File, Forgotten: gone},
			"%s: %s is damaged: checkpoints %v are no longer restorable", cp.Instance, cp.File, gone)
	}
}

// spateCheckpointed reports an instance's complete checkpoint.
func (c *core) spateCheckpointed(ns *nodeState, cp *wire.Checkpoint) {
	kind := "delta"
	if cp.Full {
		kind = "full"
	}
	c.emit(events.Checkpoint, ns.name, string(cp.Instance), events.CheckpointFields{
		ID: cp.ID, Full: cp.Full, Keys: cp.Keys, RawBytes: cp.RawBytes, Bytes: cp.Bytes,
		CaptureUs: cp.CaptureUs, EncodeUs: cp.EncodeUs, PersistUs: cp.PersistUs, TotalUs: cp.TotalUs, Gen: cp.Gen},
		"checkpoint %d of %s complete: %s, %s, %s raw, %s stored, capture %s, persist %s, total %s",
		cp.ID, cp.Instance, kind, human.PluralCount(float64(cp.Keys), "key"), human.Bytes(float64(cp.RawBytes)), human.Bytes(float64(cp.Bytes)),
		human.Duration(time.Duration(cp.CaptureUs)*time.Microsecond), human.Duration(time.Duration(cp.PersistUs)*time.Microsecond), human.Duration(time.Duration(cp.TotalUs)*time.Microsecond))
}

// manifestWriter writes checkpoints/MANIFEST.json beside the event loop
// (an fsync on a busy disk can take a second, and the loop must keep
// judging heartbeats). A checkpoint's completion is acknowledged, and the
// files it made useless are deleted, only once a manifest that records
// it is durable.
type manifestWriter struct {
	version uint64 // of the manifest in memory
	written uint64 // of the manifest on disk
	busy    bool
	acks    []manifestAck
}

type manifestAck struct {
	node    *nodeState
	cp      wire.Checkpoint
	version uint64
	drop    []string
}

type manifestWrite struct {
	version uint64
	data    []byte
	err     error
}

// runManifestWriter is the writer's goroutine.
func (c *Coordinator) runManifestWriter() {
	path := filepath.Join(c.dir, "checkpoints", "MANIFEST.json")
	for w := range c.mwc {
		if w.err = WriteFileAtomic(path, w.data, 0o644); w.err == nil {
			c.setDurable(w.version)
		}
		c.mwDone <- w
	}
}

// writeManifest hands the writer the manifest, unless it is busy (it gets
// the newest when it is done).
func (c *core) writeManifest() {
	if c.mw.busy || c.mw.written == c.mw.version {
		return
	}
	if c.durable {
		c.manifest.Coord = c.record()
		defer func() { c.manifest.Coord = nil }()
	}
	b, err := json.MarshalIndent(c.manifest, "", " ")
	if err != nil {
		c.emit(events.Error, "", "", nil, "checkpoint manifest: %v", err)
		return
	}
	c.mw.busy = true
	c.do(writeManifestOp{manifestWrite{version: c.mw.version, data: b}})
}

// manifestWritten acknowledges the checkpoints the durable manifest holds.
func (c *core) manifestWritten(w manifestWrite) {
	c.mw.busy = false
	if w.err != nil {
		c.emit(events.Error, "", "", nil, "write checkpoint manifest: %v", w.err)
		return
	}
	c.mw.written = w.version
	rest := c.mw.acks[:0]
	for _, a := range c.mw.acks {
		if a.version > w.version {
			rest = append(rest, a)
			continue
		}
		for _, f := range a.drop {
			c.do(deleteOp{f})
		}
		if a.node != nil && !a.node.gone() {
			c.send(a.node, wire.Control{Kind: wire.CtlCompleted, Checkpoint: &a.cp})
		}
	}
	c.mw.acks = rest
	c.writeManifest()
}

// flushManifest waits for the writer and writes the final manifest.
func (c *Coordinator) flushManifest() {
	for try := 0; try < 3; try++ {
		for c.mw.busy {
			_ = c.step(c.opt.Now(), <-c.mwDone)
			c.carry()
		}
		if c.mw.written >= c.mw.version {
			return
		}
		c.writeManifest() // the last write failed: again
		c.carry()
	}
}

func (c *core) writeOutputManifest() error {
	b, err := json.MarshalIndent(c.outputs, "", " ")
	if err != nil {
		return err
	}
	c.do(writeOutputsOp{b})
	return nil
}

// respawnWait bounds how long the instances of a lost node wait for the
// node respawned in its place before they go to the survivors.
const respawnWait = time.Second

// awaiting is a lost node's instances waiting for the node respawned in
// its place: a whole fresh process for the instances that must catch up,
// rather than a share of a survivor's (which keeps its own instances'
// load). A respawned process joins in tens of milliseconds.
type awaiting struct {
	lost, node string
	ids        []job.InstanceID
	since      time.Time
}

func (c *core) awaitRespawn(lost string, ids []job.InstanceID, node string) {
	c.noteLost(lost, ids)
	c.awaiting = append(c.awaiting, awaiting{lost: lost, node: node, ids: ids, since: c.now})
}

// beginRecovery notes the loss of id on node lost, with what the lost
// node last said of it (its stats go with the node), unless a recovery of
// id is under way already.
func (c *core) beginRecovery(id job.InstanceID, lost string) *recovery {
	r := c.recovering[id]
	if r == nil {
		r = &recovery{id: id, from: lost, detected: c.now, lastWM: c.nodes[lost].stats[id].Watermark, clock: c.pacingClock(lost, id)}
		c.recovering[id] = r
	}
	return r
}

// placeAwaiting recovers the instances waiting for node (which has just
// joined) on it, and those whose node took too long or died before
// joining on the survivors. joined "" only looks at the deadlines.
func (c *core) placeAwaiting(joined string) {
	now := c.now
	kept := c.awaiting[:0]
	var due []awaiting
	for _, a := range c.awaiting {
		ns := c.nodes[a.node]
		gone := ns == nil || ns.gone()
		if a.node == joined || gone || now.Sub(a.since) >= respawnWait || c.draining {
			due = append(due, a)
		} else {
			kept = append(kept, a)
		}
	}
	c.awaiting = kept
	for _, a := range due {
		prefer := ""
		if a.node == joined {
			prefer = joined
		}
		c.place(a.lost, a.ids, prefer)
	}
}

// recover notes the loss of the instances of node lost and places them at
// once.
func (c *core) recover(lost string, ids []job.InstanceID, prefer string) {
	c.noteLost(lost, ids)
	c.place(lost, ids, prefer)
}

// noteLost takes in, while the lost node's stats are still there, what
// the tuner and the recovery need of the loss of ids.
func (c *core) noteLost(lost string, ids []job.InstanceID) {
	for _, id := range ids {
		c.tunerLost(id, lost)
		c.beginRecovery(id, lost)
	}
}

// place places every instance of a lost node anew (generation + 1), on
// node prefer if it is given and live, else on the least loaded survivor,
// and asks the new owners to restore them.
func (c *core) place(lost string, ids []job.InstanceID, prefer string) {
	c.placeFrom(ids, func(job.InstanceID) (string, string) { return lost, prefer })
}

// placeFrom places instances ids anew, each from the node from says it
// was lost on, on the node it prefers if that is live; their restores
// are sent once all are placed.
func (c *core) placeFrom(ids []job.InstanceID, from func(job.InstanceID) (lost, prefer string)) {
	var sends []func()
	defer func() {
		for _, f := range sends {
			f()
		}
	}()
	for _, id := range ids {
		lost, prefer := from(id)
		r := c.beginRecovery(id, lost)
		source := c.isSource(c.placeOf[id].Op)
		target := prefer
		// A source goes where the generator's table is built, except
		// that a resume keeps every instance where it was.
		if source && !c.resuming || !c.nodes[prefer].live() {
			target = c.leastLoaded(lost, source)
		}
		if target == "" {
			if next := c.spawning(); next != "" {
				// Every node is lost at once, but a respawned one is on
				// its way: the instance waits for it (placeAwaiting), as
				// for a respawn of its own node. Declared lost, the whole
				// job was, and the run ended with nothing (seed 314: four
				// nodes killed in one instant after a coordinator pause).
				c.awaiting = append(c.awaiting, awaiting{lost: lost, node: next, ids: []job.InstanceID{id}, since: c.now})
				continue
			}
			c.emit(events.Error, "", string(id), nil, "no live node left to host %s", id)
			c.lost[id] = true
			continue
		}
		p := c.placeOf[id]
		np := *p
		np.Node, np.Gen = target, p.Gen+1
		*p = np
		chains, cps := c.manifest.restorable(id)
		rs := &wire.Restore{Place: np, Clock: r.clock, NextID: c.manifest.nextID(id), EndAt: c.endedAt[id]}
		what := "no checkpoint yet: from the start, by replay"
		if len(chains) > 0 {
			rs.Chain = chains[0]
			what = fmt.Sprintf("checkpoint %d", cps[0].ID)
		}
		if len(chains) > 1 {
			rs.Fallback = chains[1]
		}
		// With one complete checkpoint and no trim ordered yet, the
		// upstreams still hold everything, so an empty start is a
		// fallback too.
		rs.Scratch = len(chains) == 1 && c.manifest.untrimmed(id)
		var fresh []wire.Placement
		rs.Slices, rs.HoldWM, fresh = c.edsRestore(id)
		r.placed = c.now
		c.emit(events.RecoveryPlaced, target, string(id), events.RecoveryPlacedFields{Gen: np.Gen, From: lost, Chain: rs.Chain},
			"%s placed on %s (generation %d), restoring from %s", id, target, np.Gen, what)
		// Sent once every lost instance is placed, with the whole plan, so
		// that each new owner knows where the others went.
		sends = append(sends, func() {
			rs.Plan = append(append([]wire.Placement(nil), c.plan.Instances...), fresh...)
			c.send(c.nodes[target], wire.Control{Kind: wire.CtlRestore, Restore: rs})
			if c.draining {
				// The drain reached the node before the instance was there:
				// a restored source would read on for ever.
				c.send(c.nodes[target], wire.Control{Kind: wire.CtlDrain, Until: c.drainAt})
			}
		})
	}
}

// spawning is a node respawned and not joined yet ("" if none).
func (c *core) spawning() string {
	names := make([]string, 0, len(c.nodes))
	for name, ns := range c.nodes {
		if ns.state == nodeSpawned {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Slice(names, func(i, j int) bool { return nodeLess(names[i], names[j]) })
	return names[0]
}

// leastLoaded is the live node with the fewest instances, other than not;
// for a source, one that was there at the start if any is live, since a
// respawned node has not built the generator's key table (node.deploy).
func (c *core) leastLoaded(not string, source bool) string {
	load := map[string]int{}
	for _, p := range c.plan.Instances {
		load[p.Node]++
	}
	best := ""
	for _, name := range c.order {
		ns := c.nodes[name]
		if name == not || !ns.live() {
			continue
		}
		if b := c.nodes[best]; best == "" || source && b.late && !ns.late ||
			(!source || b.late == ns.late) && load[name] < load[best] {
			best = name
		}
	}
	return best
}

// onRestored reroutes everyone to a restored instance.
func (c *core) onRestored(ns *nodeState, m *wire.Control) {
	rs := m.Restore
	if rs == nil {
		return
	}
	p := c.placeOf[rs.Place.ID]
	if p == nil || p.Gen != rs.Place.Gen || p.Node != ns.name {
		return // superseded by a later placement
	}
	c.ft.restored(c, ns, p, m)
}

// spateRestored carries on the recovery of an instance that has been
// restored (or could not be).
func (c *core) spateRestored(ns *nodeState, p *wire.Placement, m *wire.Control) {
	rs := m.Restore
	r := c.recovering[p.ID]
	if m.Error != "" {
		// Nothing left to restore from: the instance is lost for good.
		// The run says so in one event and stops with that reason; it
		// used to drain on with a hole (its downstreams treating its
		// streams as ended) that only verify reported.
		c.unrecoverable(ns, p, m.Error)
		c.lost[p.ID] = true
		delete(c.recovering, p.ID)
		for _, name := range c.order {
			if n := c.nodes[name]; n.live() {
				c.send(n, wire.Control{Kind: wire.CtlLost, Instances: []job.InstanceID{p.ID}})
			}
		}
		c.edsLost(p.ID)
		return
	}
	if r != nil {
		r.restored = c.now
		r.target, r.known = c.upstreamWatermark(p.ID)
		if c.isSource(p.Op) {
			r.target, r.known = r.lastWM, true // a source: back where it was when lost
		}
	}
	c.tunerRestored(p, r)
	// The checkpoints after the restored one are a dead branch (the latest
	// was unusable): never restorable again.
	if gone := c.manifest.restoredAt(p.ID, rs.ID, c.edsPinned(p.ID)...); len(gone) > 0 {
		c.emit(events.CheckpointsForgotten, ns.name, string(p.ID), events.CheckpointsForgottenFields{Checkpoint: rs.ID, Forgotten: gone},
			"%s restored from checkpoint %d: checkpoints %v are no longer restorable", p.ID, rs.ID, gone)
	}
	if c.spec.Ops[c.spec.Op(p.Op)].Kind == job.KindSink {
		var cp *wire.Checkpoint
		if got, ok := c.manifest.byID[p.ID][rs.ID]; ok && rs.ID > 0 {
			cp = &got
		}
		c.sinkRestores[p.ID] = restoredFrom{gen: p.Gen, cp: cp}
		if c.restoreSink(p, cp) {
			if err := c.writeOutputManifest(); err != nil {
				c.emit(events.Error, "", "", nil, "write output manifest: %v", err)
			}
		}
	}
	what := "with no checkpoint (it starts empty)"
	if rs.ID > 0 {
		what = fmt.Sprintf("from checkpoint %d", rs.ID)
		if rs.Fellback {
			what += " (the fallback: the latest was unusable)"
		}
	}
	c.emit(events.RecoveryRestored, ns.name, string(p.ID), events.RecoveryRestoredFields{Gen: p.Gen, Checkpoint: rs.ID, Fellback: rs.Fellback},
		"%s restored on %s %s; upstreams replay to it", p.ID, ns.name, what)
	// The upstreams route to it what it was restored with and still owns:
	// a move into it committed since it was placed reaches it by the
	// rescale's re-route, which reconnects the links that gain the range
	// and replays it. Routed now, the re-route saw no gain, replayed
	// nothing, and what the links had sent before the instance loaded the
	// range was dropped there as strays (seed 135).
	route := *p
	if p.Partitions == nil {
		route.Ranges = intersect(p.Ranges, rs.Place.Ranges)
	}
	for _, name := range c.order {
		if n := c.nodes[name]; n.live() {
			c.send(n, wire.Control{Kind: wire.CtlReroute, Reroute: &route})
		}
	}
	c.edsRestored(p, rs.ID, rs.Place.Ranges)
}

// unrecoverable ends the run: instance p could not be restored from any
// checkpoint offered (why: the restore's error), and a start from nothing
// was not offered either (the upstreams trimmed what it needs), so
// whatever it held is gone. The core halts (step returns the error: Up
// ends with it, exit 1) rather than run on with a hole.
func (c *core) unrecoverable(ns *nodeState, p *wire.Placement, why string) {
	var ids []uint64
	_, cps := c.manifest.restorable(p.ID)
	for _, cp := range cps {
		ids = append(ids, cp.ID)
	}
	c.emit(events.InstanceUnrecoverable, ns.name, string(p.ID), events.InstanceUnrecoverableFields{Error: why, Gen: p.Gen, Checkpoints: ids},
		"%s cannot be restored (generation %d, checkpoints %v): %s; the job stops rather than run on without it", p.ID, p.Gen, ids, why)
	if c.halt == nil {
		c.halt = fmt.Errorf("%s cannot be restored from any checkpoint: %s", p.ID, why)
	}
}

// isSource reports whether operator op is a source of the job (false for
// a name the job does not have).
func (c *core) isSource(op string) bool {
	i := c.spec.Op(op)
	return i >= 0 && c.spec.Ops[i].Kind == job.KindSource
}

// pacingClock is the pacing clock a source instance last reported from
// node, or nil.
func (c *core) pacingClock(node string, id job.InstanceID) *wire.PacingClock {
	ns := c.nodes[node]
	if ns == nil {
		return nil
	}
	if s, ok := ns.stats[id]; ok && s.Origin != nil && s.StartMs != 0 {
		return &wire.PacingClock{Origin: *s.Origin, StartMs: s.StartMs}
	}
	return nil
}

// upstreamWatermark is the lowest watermark of id's upstream instances now:
// the point id must reach to have caught up. ok is false while an upstream
// has not yet reported from the node it is placed on (restored or moved
// there a moment ago): the lowest of the others could be out of reach
// (none at all: MaxWatermark) or too low.
func (c *core) upstreamWatermark(id job.InstanceID) (wm int64, ok bool) {
	op := c.spec.Op(c.placeOf[id].Op)
	wm = int64(job.MaxWatermark)
	for _, src := range c.spec.Inputs(op) {
		for _, q := range c.plan.Instances {
			if q.Op != c.spec.Ops[src].Name || c.lost[q.ID] {
				continue
			}
			ns := c.nodes[q.Node]
			if ns == nil {
				return 0, false
			}
			s, have := ns.stats[q.ID]
			if !have {
				return 0, false
			}
			wm = min(wm, s.Watermark)
		}
	}
	return wm, true
}

// checkCaughtUp reports recoveries whose instance has reached the watermark
// its upstreams had when it was restored.
func (c *core) checkCaughtUp() {
	for id, r := range c.recovering {
		if r.restored.IsZero() {
			continue
		}
		if !r.known { // the target is fixed once every upstream has reported
			if r.target, r.known = c.upstreamWatermark(id); !r.known {
				continue
			}
		}
		p := c.placeOf[id]
		s, ok := c.nodes[p.Node].stats[id]
		if !ok || (s.Watermark < r.target && c.done[id] == nil) {
			continue
		}
		now := c.now
		c.emit(events.RecoveryDone, p.Node, string(id), events.RecoveryDoneFields{
			DetectToPlacedMs: r.placed.Sub(r.detected).Milliseconds(),
			RestoreMs:        r.restored.Sub(r.placed).Milliseconds(),
			CatchUpMs:        now.Sub(r.restored).Milliseconds(),
			TotalMs:          now.Sub(r.detected).Milliseconds()},
			"%s caught up %v after its node was lost (restore %v, replay and catch-up %v)", id,
			now.Sub(r.detected).Round(time.Millisecond), r.restored.Sub(r.placed).Round(time.Millisecond), now.Sub(r.restored).Round(time.Millisecond))
		delete(c.recovering, id)
	}
}
