package coord

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"spate/job"
	"spate/wire"
)

// The coordinator's durable record (PROTOCOL.md, "A coordinator that
// can crash"): what a coordinator started with `spate up --resume DIR`
// needs to go on with the job, beside the checkpoint manifest and in the
// same file (checkpoints/MANIFEST.json, field coord), so that the two
// are always of one moment. The core seals it after every input: when
// what it holds changed, the manifest is written again and the work the
// input decided waits (durableOp) until that write is durable. So
// nothing is ever said to a node, or done, that a resumed coordinator
// would not know: no placement or generation, grant, drain position or
// moved slice.

// recordVersion is the version of the record's format.
const recordVersion = 1

// Record is the coordinator's part of the manifest.
type Record struct {
	Version int          `json:"version"`
	Plan    *wire.Deploy `json:"plan,omitempty"` // placements and generations, as sent
	Nodes   []RecordNode `json:"nodes"`
	Names   int          `json:"names"` // nodes named so far: n1 .. n(names)
	Started bool         `json:"started,omitempty"`
	// The drain: whether it started and where each partition's sources
	// end (grant.go); where drained sources that were restored since
	// ended; the instances that drained.
	Draining bool                              `json:"draining,omitempty"`
	DrainAt  map[int]uint64                    `json:"drain_at,omitempty"`
	EndedAt  map[job.InstanceID]map[int]uint64 `json:"ended_at,omitempty"`
	Done     map[job.InstanceID]*wire.Done     `json:"done,omitempty"`
	Lost     []job.InstanceID                  `json:"lost,omitempty"`   // lost for good
	Paused   []string                          `json:"paused,omitempty"` // local nodes stopped by a pause (SIGSTOP)
	// Granted is how far each partition's sources may read; SrcHigh the
	// farthest any generation reported (as of the write: it is not a
	// reason to write).
	Granted map[int]uint64    `json:"granted,omitempty"`
	SrcHigh map[int]uint64    `json:"src_high,omitempty"`
	Clock   *wire.PacingClock `json:"clock,omitempty"`
	// GlobalPrev and GlobalNext are --ft global's (the latest complete
	// global checkpoint is the manifest's Global).
	GlobalPrev uint64 `json:"global_prev,omitempty"`
	GlobalNext uint64 `json:"global_next,omitempty"`
	// Slices are the moved key-group ranges whose new owners restore
	// them from their capture until their own checkpoints hold them.
	Slices map[job.InstanceID][]RecordSlice `json:"slices,omitempty"`
	EDSSeq uint64                           `json:"eds_seq,omitempty"`
	// Restart is the --rescale restart in flight (restart.go).
	Restart *RecordRestart `json:"restart,omitempty"`
}

// RecordRestart is a --rescale restart in flight: which, and where
// (restartCheckpoint, restartStopping or restartRestoring).
type RecordRestart struct {
	ID    uint64 `json:"id"`
	Op    string `json:"op"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	Phase string `json:"phase"`
}

// RecordNode is a node of the record.
type RecordNode struct {
	Name   string `json:"name"`
	PID    int    `json:"pid,omitempty"`
	Local  bool   `json:"local,omitempty"` // a process of the coordinator's
	Listen string `json:"listen,omitempty"`
	Gone   bool   `json:"gone,omitempty"` // lost or exited
	// Joined is false for a node spawned that had not joined yet: it
	// joins a resumed coordinator as any spawned node, and is deployed.
	Joined bool `json:"joined,omitempty"`
}

// RecordSlice is a sliceRef of the record.
type RecordSlice struct {
	Load  wire.SliceLoad `json:"load"`
	Owner job.InstanceID `json:"owner"`
	Ckpt  uint64         `json:"ckpt"`
	Prev  uint64         `json:"prev,omitempty"`
	Done  int            `json:"done,omitempty"`
}

// record is the core's record now.
func (c *core) record() *Record {
	r := &Record{Version: recordVersion, Names: c.names, Started: c.started,
		Draining: c.draining, DrainAt: c.drainAt, EndedAt: c.endedAt,
		Granted: c.grants.granted, SrcHigh: c.srcHigh, Clock: c.lagClock,
		GlobalPrev: c.global.prev, GlobalNext: c.global.next, EDSSeq: c.eds.seq}
	if c.plan != nil {
		d := *c.plan
		d.Instances = slices.Clone(c.plan.Instances)
		r.Plan = &d
	}
	for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
		ns := c.nodes[name]
		r.Nodes = append(r.Nodes, RecordNode{Name: name, PID: ns.pid, Local: ns.local, Listen: ns.listen, Gone: ns.gone(), Joined: ns.joined})
	}
	if len(c.done) > 0 {
		r.Done = maps.Clone(c.done)
	}
	for id := range c.lost {
		r.Lost = append(r.Lost, id)
	}
	slices.Sort(r.Lost)
	if rs := c.eds.restart; rs != nil {
		r.Restart = &RecordRestart{ID: rs.id, Op: rs.op, From: rs.from, To: rs.to, Phase: rs.phase()}
	}
	r.Paused = slices.Sorted(maps.Keys(c.paused))
	for id, list := range c.eds.slices {
		if r.Slices == nil {
			r.Slices = map[job.InstanceID][]RecordSlice{}
		}
		for _, s := range list {
			r.Slices[id] = append(r.Slices[id], RecordSlice{Load: s.load, Owner: s.owner, Ckpt: s.ckpt, Prev: s.prev, Done: s.done})
		}
	}
	return r
}

// recordKey is what of the record, when it changes, must be durable
// before the work that follows: placements and generations, ranges, the
// nodes and whether they are gone, the start and the drain, grants,
// drained and lost instances, --ft global's checkpoints, moved slices,
// a --rescale restart's phase.
// (The sources' farthest positions and the pacing clock go along with
// the next write.)
func (c *core) recordKey(b []byte) []byte {
	u := func(v uint64) { b = strconv.AppendUint(b, v, 36); b = append(b, ' ') }
	s := func(v string) { b = append(b, v...); b = append(b, ' ') }
	if c.plan != nil {
		for _, p := range c.plan.Instances {
			s(string(p.ID))
			s(p.Node)
			u(p.Gen)
			for _, r := range p.Ranges {
				u(uint64(r.Lo))
				u(uint64(r.Hi))
			}
		}
	}
	b = append(b, '|')
	for _, name := range c.order {
		if ns := c.nodes[name]; ns.gone() {
			s(name)
		}
	}
	for _, name := range c.order {
		if c.nodes[name].joined {
			s(name)
		}
	}
	u(uint64(len(c.nodes)))
	u(uint64(c.names))
	u(boolU(c.started))
	u(boolU(c.draining))
	for _, part := range slices.Sorted(maps.Keys(c.drainAt)) {
		u(uint64(part))
		u(c.drainAt[part])
	}
	b = append(b, '|')
	for _, part := range slices.Sorted(maps.Keys(c.grants.granted)) {
		u(uint64(part))
		u(c.grants.granted[part])
	}
	b = append(b, '|')
	for _, id := range slices.Sorted(maps.Keys(c.done)) {
		s(string(id))
	}
	b = append(b, '|')
	for _, id := range slices.Sorted(maps.Keys(c.lost)) {
		s(string(id))
	}
	for _, id := range slices.Sorted(maps.Keys(c.endedAt)) {
		s(string(id))
	}
	for _, name := range slices.Sorted(maps.Keys(c.paused)) {
		s(name)
	}
	u(c.manifest.Global)
	u(c.global.prev)
	b = append(b, '|')
	for _, id := range slices.Sorted(maps.Keys(c.eds.slices)) {
		s(string(id))
		for _, sl := range c.eds.slices[id] {
			s(string(sl.owner))
			u(sl.ckpt)
			u(sl.prev)
			u(sl.load.After)
			u(uint64(sl.done))
		}
	}
	b = append(b, '|')
	if rs := c.eds.restart; rs != nil {
		u(rs.id)
		s(rs.phase())
	}
	return b
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// durableOp holds the work after it until the manifest of version v,
// with its record, is durable.
type durableOp struct{ v uint64 }

func (durableOp) opName() string { return "await durable" }

// seal ends an input: if the record changed, the manifest is written
// again and the work the input decided waits for it.
func (c *core) seal() {
	if !c.durable {
		return
	}
	key := c.recordKey(c.recKey[len(c.recKey):])
	if string(key) == string(c.recKey) {
		return
	}
	c.recKey = append(c.recKey[:0], key...)
	c.mw.version++
	c.writeManifest()
	if len(c.w.ops) > 0 {
		c.w.ops = append([]op{durableOp{c.mw.version}}, c.w.ops...)
	}
}

// readManifestFile reads checkpoints/MANIFEST.json of run directory dir,
// with its record, and rebuilds what the manifest keeps in memory only.
func readManifestFile(dir string) (*Manifest, error) {
	path := filepath.Join(dir, "checkpoints", "MANIFEST.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return m, nil
}

// parseManifest decodes a manifest and rebuilds its indexes.
func parseManifest(b []byte) (*Manifest, error) {
	m := &Manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	if m.Instances == nil {
		m.Instances = map[job.InstanceID][]wire.Checkpoint{}
	}
	m.files, m.byID = map[job.InstanceID]map[string]bool{}, map[job.InstanceID]map[uint64]wire.Checkpoint{}
	for id, list := range m.Instances {
		m.files[id], m.byID[id] = map[string]bool{}, map[uint64]wire.Checkpoint{}
		for _, cp := range list {
			m.byID[id][cp.ID] = cp
			m.files[id][cp.File] = true
			if cp.Compacted != "" {
				m.files[id][cp.Compacted] = true
			}
		}
	}
	return m, nil
}
