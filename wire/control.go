package wire

import (
	"encoding/json"

	"spate/internal/breaks"
	"spate/job"
	"spate/netfault"
)

// Hello is the first frame a dialer sends on a new TCP connection. A node
// joining the coordinator sends no token but a nonce (join.go); a peer
// sends the token on a link in clear and nothing but its name inside TLS.
type Hello struct {
	Token  string `json:"token,omitempty"`
	Nonce  []byte `json:"nonce,omitempty"`  // a join's node nonce (pki.NonceSize bytes)
	Role   string `json:"role"`             // RoleNode (to the coordinator) or RolePeer (node to node)
	Node   string `json:"node,omitempty"`   // the dialer's name ("" when joining: the coordinator assigns one)
	PID    int    `json:"pid,omitempty"`    // the dialer's process id
	Listen string `json:"listen,omitempty"` // where the dialer accepts peer connections
}

// Roles of a Hello.
const (
	RoleNode = "node"
	RolePeer = "peer"
)

// Welcome accepts a Hello.
type Welcome struct {
	Node string `json:"node"`           // the name the dialer has in the cluster
	Run  string `json:"run"`            // the run id
	Cert []byte `json:"cert,omitempty"` // a join with TLS: the node's certificate, issued by the run's CA
}

// Challenge is the coordinator's answer to a node's hello: its nonce, its
// TLS decision, the run's CA with TLS, and its proof that it knows the
// token (pki.CoordProof).
type Challenge struct {
	Nonce []byte `json:"nonce"`
	TLS   bool   `json:"tls"`
	CA    []byte `json:"ca,omitempty"`
	Proof []byte `json:"proof"`
}

// Prove is a node's answer to a challenge: its proof that it knows the
// token (pki.NodeProof) and, with TLS, its certificate request.
type Prove struct {
	Proof []byte `json:"proof"`
	CSR   []byte `json:"csr,omitempty"`
}

// Reject refuses a Hello; the connection is closed after it.
type Reject struct {
	Reason string `json:"reason"`
}

// StreamHello opens a data stream from one instance to another.
type StreamHello struct {
	From job.InstanceID `json:"from"`
	To   job.InstanceID `json:"to"`
	Gen  uint64         `json:"gen"` // the sender's placement generation
	// ToGen is the receiver's generation the sender dials: a receiver
	// still at an older one (a restore queued on its node replaces it)
	// refuses the stream, and the sender connects again.
	ToGen uint64 `json:"to_gen,omitempty"`
}

// Control kinds.
const (
	CtlDeploy = "deploy" // coordinator → node: the plan; the node answers CtlReady
	CtlReady  = "ready"  // node → coordinator: instances built, peers connected
	CtlStart  = "start"  // coordinator → node: sources may begin
	CtlDrain  = "drain"  // coordinator → node: sources stop; the job drains
	CtlGrant  = "grant"  // coordinator → node: sources may read each partition up to Until (Deploy.Grants)
	CtlLost   = "lost"   // coordinator → node: these instances are gone; treat their streams as ended
	CtlDone   = "done"   // node → coordinator: an instance has drained
	CtlEvent  = "event"  // node → coordinator: an event for the run's log
	CtlStop   = "stop"   // coordinator → node: exit

	CtlCheckpointed = "checkpointed" // node → coordinator: a checkpoint is durable
	CtlCompleted    = "completed"    // coordinator → node: the checkpoint is complete; trims may follow
	CtlCompacted    = "compacted"    // coordinator → node: the chain up to the checkpoint is folded into Checkpoint.Compacted
	CtlDamaged      = "damaged"      // node → coordinator: a scrub found Checkpoint.File (holding checkpoint ID) damaged
	CtlRestore      = "restore"      // coordinator → node: host a failed instance, restored from its checkpoint
	CtlRestored     = "restored"     // node → coordinator: the instance is restored and waiting for its streams
	CtlReroute      = "reroute"      // coordinator → node: an instance moved; reopen streams to it
	CtlBarrier      = "barrier"      // coordinator → node (--ft global): sources inject barrier Checkpoint.ID
	CtlGap          = "gap"          // node → coordinator (--ft global, none): a link reconnected short of what was sent on it (Gap)

	CtlFaults     = "faults"     // coordinator → node: the complete set of injected faults to apply from now on
	CtlCheckpoint = "checkpoint" // coordinator → node: Instances (all when empty) checkpoint now, whatever their timers say
	CtlInterval   = "interval"   // coordinator → node: an instance's checkpoint interval from now on
)

// Control is the envelope of every message on the control stream.
type Control struct {
	Kind      string           `json:"kind"`
	Deploy    *Deploy          `json:"deploy,omitempty"`
	Instances []job.InstanceID `json:"instances,omitempty"` // CtlLost
	Done      *Done            `json:"done,omitempty"`
	Event     *Event           `json:"event,omitempty"`
	Error     string           `json:"error,omitempty"` // CtlReady, CtlRestored: what went wrong

	Checkpoint *Checkpoint `json:"checkpoint,omitempty"` // CtlCheckpointed, CtlCompleted
	Restore    *Restore    `json:"restore,omitempty"`    // CtlRestore, CtlRestored
	Reroute    *Placement  `json:"reroute,omitempty"`    // CtlReroute: the instance's new placement
	Faults     *Faults     `json:"faults,omitempty"`     // CtlFaults
	// Until, with CtlDrain: where sources end each partition; with
	// Deploy.Grants exactly there (the drain's fixed end, past every
	// grant), without at least there (the farthest any generation got).
	// With CtlGrant: sources read each partition no farther than this
	// (grants only ever grow).
	Until    map[int]uint64 `json:"until,omitempty"`
	Interval *Interval      `json:"interval,omitempty"` // CtlInterval
	Rescale  *Rescale       `json:"rescale,omitempty"`  // CtlRescale
	Gap      *Gap           `json:"gap,omitempty"`      // CtlGap
}

// Gap reports records a connection took with it: From's link to To
// reconnected (after a reset) with To holding fewer records than From had
// numbered for it, and From keeps no backup to send them again (--ft
// global or none).
type Gap struct {
	From    job.InstanceID `json:"from"`
	FromGen uint64         `json:"from_gen"`
	To      job.InstanceID `json:"to"`
	ToGen   uint64         `json:"to_gen"`
	Records uint64         `json:"records"` // how many, by the numbers
}

// Faults is every fault a node must apply now, replacing what it applied
// before (CtlFaults). Links are by peer node, on this node's side of each
// link (the coordinator applies the faults of its own links itself).
type Faults struct {
	Links map[string]netfault.LinkFault `json:"links,omitempty"`
	Store StoreFault                    `json:"store"`
	// Corrupt names instances whose latest checkpoint file the node must
	// damage now (an action, like a link reset).
	Corrupt []job.InstanceID `json:"corrupt,omitempty"`
	// Damage names checkpoint files the node must damage now, one byte
	// each (an action, like Corrupt).
	Damage []Damage `json:"damage,omitempty"`
}

// Damage is one damaged byte of a checkpoint file of an instance: File
// ("" the instance's newest file, as Corrupt), at byte Nth past the
// file's middle (modulo its length), so that two damages the coordinator
// orders never touch the same byte of one file.
type Damage struct {
	Instance job.InstanceID `json:"instance"`
	File     string         `json:"file,omitempty"`
	Nth      int            `json:"nth,omitempty"`
}

// StoreFault slows or fails the node's checkpoint writes.
type StoreFault struct {
	SlowMs int64 `json:"slow_ms,omitempty"` // each write waits this long first
	Fail   bool  `json:"fail,omitempty"`    // each write fails
}

// Interval sets one instance's checkpoint interval (CtlInterval). The
// instance's next checkpoint is due Ms after its previous one.
type Interval struct {
	Instance job.InstanceID `json:"instance"`
	Ms       int64          `json:"ms"` // > 0
}

// Checkpoint describes one durable checkpoint of one instance.
type Checkpoint struct {
	Instance  job.InstanceID `json:"instance"`
	Gen       uint64         `json:"gen"`
	ID        uint64         `json:"id"`
	Full      bool           `json:"full"`
	Base      uint64         `json:"base"`   // the full checkpoint its chain starts at
	Parent    uint64         `json:"parent"` // the previous checkpoint of the chain (0 for a full one)
	File      string         `json:"file"`   // relative to checkpoints/
	Keys      int            `json:"keys,omitempty"`
	RawBytes  int            `json:"raw_bytes,omitempty"`
	Bytes     int            `json:"bytes,omitempty"`
	CaptureUs int64          `json:"capture_us,omitempty"` // the owner's stall
	EncodeUs  int64          `json:"encode_us,omitempty"`  // encoding and compressing (CPU), part of persist
	In        uint64         `json:"in,omitempty"`         // records this generation had processed at the capture
	PersistUs int64          `json:"persist_us,omitempty"`
	TotalUs   int64          `json:"total_us,omitempty"`
	SinkFile  string         `json:"sink_file,omitempty"` // sinks: the output file, relative to output/
	SinkLen   int64          `json:"sink_len,omitempty"`  // sinks: its committed length
	Positions map[int]uint64 `json:"positions,omitempty"` // sources: partition → records read at the checkpoint
	// Compacted, in the coordinator's manifest (and CtlCompacted): one
	// full snapshot equal to the chain up to this checkpoint, written in
	// the background; a restore reads it instead of the chain.
	Compacted string `json:"compacted,omitempty"`
	// Fallback, with CtlCompleted: the instance's fallback checkpoint now
	// (the newest complete one whose chain shares no file with the
	// latest's), whose positions its upstreams may trim to; 0: none yet,
	// trim nothing.
	Fallback uint64 `json:"fallback,omitempty"`
}

// Restore asks a node to host a failed instance from its checkpoints.
type Restore struct {
	Place    Placement `json:"place"`
	Chain    []string  `json:"chain,omitempty"`    // latest complete checkpoint: the full file, then its deltas
	Fallback []string  `json:"fallback,omitempty"` // the previous complete checkpoint's chain
	Scratch  bool      `json:"scratch,omitempty"`  // no previous one, but nothing was trimmed yet: an empty start is the fallback
	NextID   uint64    `json:"next_id,omitempty"`  // the id of the restored instance's next checkpoint: past every id reported, so a fallback never reuses one
	// EndAt, for a source restored after a generation of it had drained:
	// partition → where that generation ended; it reads exactly that far,
	// since the downstreams that drained saw its end there.
	EndAt    map[int]uint64 `json:"end_at,omitempty"`
	ID       uint64         `json:"id,omitempty"`       // CtlRestored: the checkpoint restored (0: none, from scratch)
	Fellback bool           `json:"fellback,omitempty"` // CtlRestored: the latest was unreadable
	Hold     bool           `json:"hold,omitempty"`     // wait for CtlStart (a global rollback restarts everyone at once)
	Plan     []Placement    `json:"plan,omitempty"`     // every instance's placement, when several moved at once
	// Clock is a source's pacing clock, for a restore without a
	// checkpoint: the restored source keeps the pace of the one it
	// replaces, so it catches up instead of lagging for good.
	Clock *PacingClock `json:"clock,omitempty"`
	// Slices are moved slices to load after the checkpoint (rescale), and
	// HoldWM says the instance is a receiver of a rescale in flight: its
	// watermark stays put until CtlRescale unhold.
	Slices []SliceLoad `json:"slices,omitempty"`
	HoldWM bool        `json:"hold_wm,omitempty"`
}

// PacingClock says that event time Origin was due at wall time StartMs.
type PacingClock struct {
	Origin  int64 `json:"origin"`
	StartMs int64 `json:"start_ms"`
}

// FTMode is a run's fault tolerance (`spate up --ft`).
type FTMode string

const (
	FTSpate  FTMode = "spate"  // per-instance asynchronous incremental checkpoints, upstream backup, local recovery
	FTGlobal FTMode = "global" // aligned global checkpoints; any loss rolls the whole job back
	FTNone   FTMode = "none"   // no checkpoints, no backup: a lost instance is lost
)

// Deploy is the plan a node runs: the whole job and every instance's place.
type Deploy struct {
	Run       string            `json:"run"`
	DataDir   string            `json:"data_dir"`
	Job       job.Spec          `json:"job"`
	Source    SourceSpec        `json:"source"`
	Instances []Placement       `json:"instances"`
	Nodes     map[string]string `json:"nodes"` // node name → peer listen address
	BatchSize int               `json:"batch_size"`
	FlushMs   int               `json:"flush_ms"`
	FT        FTMode            `json:"ft"`          // spate, global or none
	Interval  int64             `json:"interval_ms"` // checkpoint interval
	FullEvery int               `json:"full_every"`  // every k-th checkpoint is full
	// Cost is a simulated processing time per record, in ns, by
	// operator name (`up --cost`): the instance sleeps it off.
	Cost map[string]int64 `json:"cost_ns,omitempty"`
	// BackupMem bounds each upstream backup's memory in bytes (0: the
	// backup package's default); BackupBlock makes a full backup block
	// the instance's input (backpressure) instead of spilling to disk.
	BackupMem   int64 `json:"backup_mem,omitempty"`
	BackupBlock bool  `json:"backup_block,omitempty"`
	// Late marks the plan sent to a node that joins a running job (a
	// respawned one): it hosts nothing yet and dials every peer itself.
	Late bool `json:"late,omitempty"`
	// Store is where checkpoints and sink output go (spate up --store,
	// stores.Parse): "" the run directory if the node sees it, else the
	// coordinator; "dir"; "coord"; or an s3:// URL (the node reads the
	// credentials from its own environment).
	Store string `json:"store,omitempty"`
	// Grants: sources read each partition only as far as the
	// coordinator's latest CtlGrant allows (none before the first), so
	// that the coordinator knows how far a generation it cannot reach
	// may have read (coord/PROTOCOL.md, "The drain").
	Grants bool `json:"grants,omitempty"`
	// Break is the protocol's broken variants on in the run (`spate up
	// --break`): none unless named.
	Break breaks.Set `json:"break,omitempty"`
}

// SourceSpec says how to open the job's input.
type SourceSpec struct {
	Spec    string  `json:"spec"`
	Seed    int64   `json:"seed"`
	Rate    float64 `json:"rate"`
	Keys    int     `json:"keys"`
	Speedup float64 `json:"speedup"`
	Paced   bool    `json:"paced"` // false: as fast as possible
}

// Placement is one operator instance and where it runs.
type Placement struct {
	ID         job.InstanceID `json:"id"`
	Op         string         `json:"op"`
	Index      int            `json:"index"`
	Node       string         `json:"node"`
	Gen        uint64         `json:"gen"`
	Ranges     []job.Range    `json:"ranges,omitempty"`     // keyed operators: key groups owned
	Partitions []int          `json:"partitions,omitempty"` // sources: partitions read
}

// Done reports a drained instance.
type Done struct {
	Instance  job.InstanceID `json:"instance"`
	Gen       uint64         `json:"gen,omitempty"`       // the generation that drained (an older one's word does not count)
	Positions map[int]uint64 `json:"positions,omitempty"` // sources: partition → records read
	In        uint64         `json:"in"`
	Out       uint64         `json:"out"`
	Late      uint64         `json:"late,omitempty"`
}

// Event is a node's event; the coordinator stamps and logs it.
type Event struct {
	Kind     string          `json:"kind"`
	Instance job.InstanceID  `json:"instance,omitempty"`
	Text     string          `json:"text"`
	Fields   json.RawMessage `json:"fields,omitempty"` // the kind's payload (events), encoded
}

// Heartbeat is sent by a node on its control stream every heartbeat period.
type Heartbeat struct {
	Node      string          `json:"node"`
	Instances []InstanceStats `json:"instances"`
	CPU       float64         `json:"cpu_s,omitempty"` // the process's CPU time so far, seconds
	RSS       int64           `json:"rss,omitempty"`   // its resident memory, bytes
}

// InstanceStats are an instance's counters since it started.
type InstanceStats struct {
	ID        job.InstanceID `json:"id"`
	In        uint64         `json:"in"`  // records processed (sources: read)
	Out       uint64         `json:"out"` // records emitted
	Watermark int64          `json:"wm"`
	Backlog   int            `json:"backlog"` // queued input messages
	Positions map[int]uint64 `json:"positions,omitempty"`
	Origin    *int64         `json:"origin,omitempty"`   // sources: the event time their pacing started from
	StartMs   int64          `json:"start_ms,omitempty"` // sources: the wall time (Unix ms) Origin was due
	Gen       uint64         `json:"gen,omitempty"`      // the placement generation the counters belong to
	BusyUs    int64          `json:"busy_us,omitempty"`  // time spent processing input (sources: reading and emitting)
	Held      int            `json:"held,omitempty"`     // records held behind a gap in their (producer, key group) numbers
	AtEnd     bool           `json:"at_end,omitempty"`   // sources: every partition read to the end of a finite input, the end held until the drain
}
