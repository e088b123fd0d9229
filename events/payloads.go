package events

import (
	"spate/job"
)

// The payload of each kind. A payload's fields are declared in the order
// of their JSON names, which is the order encoding/json gave the string
// keyed maps the events were made of before they were typed, so a line of
// events.jsonl has the same bytes as then (TestPayloadFieldsAreSorted
// checks the order, TestRecordedRunsRoundTrip the bytes of recorded runs).
//
// A field without omitempty is in every event of its kind, zero or not; a
// field with it is left out by the sites that have nothing to say. Kinds
// with more than one shape (a global checkpoint and an instance's, a
// restart rescale and a live one) choose theirs in MarshalJSON
// (shapes.go) from a value that tells them apart, named there.

// RunStartedFields: the coordinator is up. Without fields: it waits for
// nodes that join by hand.
type RunStartedFields struct {
	// Break names the protocol's broken variants on in the run, comma
	// separated (`spate up --break`); "" for the protocol as it should be.
	Break string `json:"break,omitempty"`
	Coord string `json:"coord"` // the address nodes join at
	Dir   string `json:"dir"`   // the run directory
}

// NodeSpawnedFields: a node process was started.
type NodeSpawnedFields struct {
	PID      int    `json:"pid"`
	Replaces string `json:"replaces,omitempty"` // a respawn: the lost node it stands in for
}

// NodeJoinedFields: a node joined the cluster.
type NodeJoinedFields struct {
	Late     bool   `json:"late,omitempty"` // joined after the job was deployed (a respawn)
	Listen   string `json:"listen"`         // where it accepts peer connections
	PID      int    `json:"pid"`
	Rejoined bool   `json:"rejoined,omitempty"` // came back to a resumed coordinator, its instances kept until the resume restores them
}

// CoordResumedFields: a coordinator started with --resume has rebuilt its
// view (Phase "rejoined": the durable record read, the nodes back or
// given up; Phase "restoring": every instance fenced and being restored
// from its checkpoints).
type CoordResumedFields struct {
	Instances int      `json:"instances,omitempty"` // instances being restored
	Missing   []string `json:"missing,omitempty"`   // the recorded nodes that did not, declared lost
	Ms        int64    `json:"ms"`                  // since the resumed coordinator started
	Phase     string   `json:"phase"`
	Rejoined  []string `json:"rejoined"` // the nodes that came back
}

// NodeRefusedFields: a connection was refused (a bad token, a bad hello).
type NodeRefusedFields struct {
	Remote string `json:"remote"`
}

// NodeSuspectFields: a node missed heartbeats (not emitted yet; the
// dashboard opens a recovery on it).
type NodeSuspectFields struct{}

// NodeLostFields: a node is gone (session lost or heartbeats timed out).
type NodeLostFields struct {
	Awaiting  string           `json:"awaiting,omitempty"`  // the respawned node the recovery waits for
	Instances []job.InstanceID `json:"instances,omitempty"` // what it hosted; absent before the job was deployed
	Reason    string           `json:"reason"`
}

// NodeExitedFields: a node process exited.
type NodeExitedFields struct{}

// InstancePlacedFields: an operator instance was placed on a node.
type InstancePlacedFields struct {
	Op         string      `json:"op"`
	Partitions []int       `json:"partitions"` // a source's partitions, null for a keyed instance
	Ranges     []job.Range `json:"ranges"`     // a keyed instance's key groups, null for a source
}

// JobStartedFields: every instance is deployed and the sources run.
type JobStartedFields struct{}

// WindowFiredFields: an instance fired the windows its watermark closed.
type WindowFiredFields struct {
	Results uint64 `json:"results"`
	// Watermark is in ms of event time. It is a float64 because the
	// coordinator once decoded what nodes sent into float64s before
	// writing it, and the drain's final watermark (math.MaxInt64) has
	// been 9223372036854776000 in events.jsonl ever since.
	Watermark float64 `json:"watermark"`
}

// ThroughputFields: the job's rates, once a second (the first heartbeat a
// second or more after the previous one).
type ThroughputFields struct {
	In        uint64  `json:"in"` // records the sources read so far
	InRps     float64 `json:"in_rps"`
	LagMs     *int64  `json:"lag_ms,omitempty"` // the output lag; absent before the first sample (unpaced runs have none)
	Out       uint64  `json:"out"`              // results the sinks wrote so far
	OutRps    float64 `json:"out_rps"`
	Watermark int64   `json:"watermark"` // the sinks' lowest watermark, ms
}

// SourceEndedFields: a source read every partition to its end.
type SourceEndedFields struct{}

// DrainStartedFields: the drain began.
type DrainStartedFields struct{}

// DrainWaitingFields: a drain asked for waits for the rescale in flight.
type DrainWaitingFields struct{}

// InstanceDoneFields: an instance drained.
type InstanceDoneFields struct {
	In   uint64 `json:"in"`
	Late uint64 `json:"late"`
	Out  uint64 `json:"out"`
}

// FrameErrorFields: a stream delivered a frame that does not decode, or
// failed; the stream it concerns.
type FrameErrorFields struct {
	From string `json:"from,omitempty"` // the upstream instance of a batch
	Peer string `json:"peer,omitempty"` // the node of a stream
	To   string `json:"to,omitempty"`   // the downstream instance of a link
}

// CheckpointFields: a checkpoint is complete (durable). An instance's
// (Global false) has the fields up to TotalUs but Global and TookMs; a
// global one (--ft global) only Global, ID and TookMs.
type CheckpointFields struct {
	Bytes     int    `json:"bytes"` // stored, compressed
	CaptureUs int64  `json:"capture_us"`
	EncodeUs  int64  `json:"encode_us"`
	Full      bool   `json:"full"`
	Gen       uint64 `json:"gen"`
	Global    bool   `json:"global,omitempty"`
	ID        uint64 `json:"id"`
	Keys      int    `json:"keys"`
	PersistUs int64  `json:"persist_us"`
	RawBytes  int    `json:"raw_bytes"`
	TookMs    int64  `json:"took_ms,omitempty"` // global: trigger to complete
	TotalUs   int64  `json:"total_us"`
}

// FencedFields: a message of an older generation of an instance was
// refused.
type FencedFields struct {
	Current uint64 `json:"current"`
	Gen     uint64 `json:"gen"`
}

// RecoveryPlacedFields: a lost instance was placed again (Instance set:
// Chain, From and Gen), or, under --ft global, the whole job rolls back
// (no Instance: Checkpoint and Records). From tells the two apart.
type RecoveryPlacedFields struct {
	Chain      []string `json:"chain"`      // the checkpoint files it loads, full first
	Checkpoint uint64   `json:"checkpoint"` // global: the checkpoint the job rolls back to (0: the start)
	From       string   `json:"from"`       // the lost node
	Gen        uint64   `json:"gen"`        // its new generation
	Records    uint64   `json:"records"`    // global: records the sources read again
}

// RecoverySplitFields: a parallel recovery (--recover parallel) splits
// the key groups of the lost Instances of operator Op: Parts says what
// each keeps or gets ("count#0 keeps [[0,21)]", "count#2 gets
// [[21,43)]"), and a rescale (rescale_planned, the same moves) carries it
// out; KeyGroups is how many move.
type RecoverySplitFields struct {
	Instances []job.InstanceID `json:"instances"`
	KeyGroups int              `json:"key_groups"`
	Op        string           `json:"op"`
	Parts     []string         `json:"parts"`
}

// RecoveryRestoredFields: an instance loaded its checkpoint (Checkpoint,
// Fellback, Gen), or every instance did after a global rollback (no
// Instance: Checkpoint only). Gen tells the two apart.
type RecoveryRestoredFields struct {
	Checkpoint uint64 `json:"checkpoint"`
	Fellback   bool   `json:"fellback"` // the latest checkpoint was damaged: an older one was used
	Gen        uint64 `json:"gen"`
}

// RecoveryLoadedFields: an instance restored early (restored before its
// key groups' state was built) has built and attached every key group:
// Groups of them, LoadMs after the load began (about when it answered
// restored). Until then its watermark stood still, and the records of
// groups still loading were held: HeldMax at most at once.
type RecoveryLoadedFields struct {
	Groups  int   `json:"groups"`
	HeldMax int   `json:"held_max"`
	LoadMs  int64 `json:"load_ms"`
}

// RecoveryDoneFields: a restored instance caught up.
type RecoveryDoneFields struct {
	CatchUpMs        int64 `json:"catch_up_ms"`
	DetectToPlacedMs int64 `json:"detect_to_placed_ms"`
	RestoreMs        int64 `json:"restore_ms"`
	TotalMs          int64 `json:"total_ms"`
}

// RunFinishedFields: the run is over.
type RunFinishedFields struct {
	Lost    []string `json:"lost"`    // instances lost for good
	Records uint64   `json:"records"` // records the sources read
}

// FaultStartedFields: a fault began (by the control API: a command, a
// key, a scenario).
type FaultStartedFields struct {
	Args   map[string]string `json:"args"`
	ID     int               `json:"id"`
	Nodes  []string          `json:"nodes"` // the nodes it acts on
	Target string            `json:"target"`
	Verb   string            `json:"verb"`
}

// FaultEndedFields: a fault is over (its time ran out, or a heal).
type FaultEndedFields struct {
	ID   int    `json:"id"`
	Verb string `json:"verb"`
}

// HealedFields: faults were lifted by a heal.
type HealedFields struct {
	Faults int    `json:"faults"`
	Target string `json:"target"`
}

// PartitionFields: the cluster's nodes were cut into groups.
type PartitionFields struct {
	Bridge string     `json:"bridge"` // the node that sees both sides, if any
	Groups [][]string `json:"groups"`
	ID     int        `json:"id"` // the fault's id
	OneWay bool       `json:"oneway"`
}

// MetricsFields: a node's (Node set: Backlog, CPU, InRate, OutRate, RSS)
// or an instance's (Instance set: Backlog, Backpressure, InRate, OutRate)
// figures, once a heartbeat period. Backpressure tells the two apart.
type MetricsFields struct {
	Backlog      int     `json:"backlog"`      // records queued at the input
	Backpressure string  `json:"backpressure"` // instance: OK, LOW or HIGH
	CPU          float64 `json:"cpu"`          // node: per cent of one core
	InRate       float64 `json:"in_rate"`
	OutRate      float64 `json:"out_rate"`
	RSS          int64   `json:"rss"` // node: resident bytes
}

// CheckpointRequestedFields: checkpoints were asked for by hand.
type CheckpointRequestedFields struct {
	Instances []job.InstanceID `json:"instances"`
}

// CheckpointCompactedFields: a chain of checkpoints was folded into one.
type CheckpointCompactedFields struct {
	Bytes int    `json:"bytes"`
	Files int    `json:"files"`
	ID    uint64 `json:"id"`
	Ms    int64  `json:"ms"`
}

// CheckpointFallbackFields: a damaged checkpoint; recovery uses the one
// before. From a node: Error, and Ranges for a moved slice (a pre-copy base
// or a capture); from the coordinator under --ft global: Checkpoint, Error
// and Fallback. Checkpoint tells the two apart.
type CheckpointFallbackFields struct {
	Checkpoint uint64  `json:"checkpoint"` // the unusable one
	Error      string  `json:"error"`
	Fallback   uint64  `json:"fallback"`         // the one the job rolls back to (0: the start)
	Ranges     []Range `json:"ranges,omitempty"` // a moving slice's key groups
}

// CheckpointsForgottenFields: checkpoints are restorable no more: a
// restore from an older checkpoint (Checkpoint) left them on a dead
// branch, or a file they need is damaged (File). File tells the two
// apart.
type CheckpointsForgottenFields struct {
	Checkpoint uint64   `json:"checkpoint"`
	File       string   `json:"file"`
	Forgotten  []uint64 `json:"forgotten"`
}

// ErrorFields: something went wrong; the text says what. The fields name
// what it concerns, each only where it applies.
type ErrorFields struct {
	Action    string   `json:"action,omitempty"`    // a control action
	ID        uint64   `json:"id,omitempty"`        // a global checkpoint or a rescale
	Op        string   `json:"op,omitempty"`        // an operator
	Partition *int     `json:"partition,omitempty"` // a source partition
	Peer      string   `json:"peer,omitempty"`      // a node
	To        string   `json:"to,omitempty"`        // a downstream instance
	Waiting   []string `json:"waiting,omitempty"`   // the instances a drain still waits for
}

// IntervalFields: a checkpoint-interval decision. Three shapes: the
// tuner's decision (Why set: every field but Pinned), a setting by hand
// (Inputs empty, Instance, IntervalMs, Pinned, PreviousMs, Reason) and,
// under --ft global, the barrier period chosen once at the start
// (Instance "global": Inputs, Instance, IntervalMs, Reason).
type IntervalFields struct {
	Changed             bool           `json:"changed"`
	ExposureS           float64        `json:"exposure_s"`
	Failures            int            `json:"failures"`
	Inputs              IntervalInputs `json:"inputs"`
	Instance            string         `json:"instance"`
	IntervalMs          int64          `json:"interval_ms"`
	OptimumMs           int64          `json:"optimum_ms"`
	OwnExposureS        float64        `json:"own_exposure_s"`
	OwnFailures         int            `json:"own_failures"`
	Pinned              bool           `json:"pinned"`
	PredictedEfficiency float64        `json:"predicted_efficiency"`
	PreviousMs          int64          `json:"previous_ms"`
	PriorWeight         *float64       `json:"prior_weight,omitempty"` // absent: the pooled failure rate
	Reason              string         `json:"reason"`
	Why                 string         `json:"why"` // kept, moved, bounded, no input, unknown
}

// IntervalInputs are the model inputs of an interval decision. The zero
// value is an empty object: a setting by hand has none.
type IntervalInputs struct {
	Capacity         float64  `json:"capacity"`
	CheckpointCostMs *float64 `json:"checkpoint_cost_ms,omitempty"` // absent for the static model at start
	CostBaseMs       float64  `json:"cost_base_ms"`
	CostPerKeyUs     float64  `json:"cost_per_key_us"`
	DetectMs         float64  `json:"detect_ms"`
	FailureRate      float64  `json:"failure_rate"`
	LoadMs           float64  `json:"load_ms"`
	MTBFS            *float64 `json:"mtbf_s,omitempty"` // absent: no failure rate (infinite)
	PersistMs        float64  `json:"persist_ms"`
	Rate             float64  `json:"rate"`
	RestartMs        float64  `json:"restart_ms"`
	StateKeys        float64  `json:"state_keys"`
	Util             float64  `json:"util"`
}

// TunerSummaryFields: at the end of a run, each instance's accounts.
type TunerSummaryFields struct {
	Instances []TunerAccount `json:"instances"`
	Interval  string         `json:"interval"` // the run's --interval
}

// TunerAccount is one instance's time accounts over a run.
type TunerAccount struct {
	Instance      job.InstanceID `json:"instance"`
	Processed     uint64         `json:"processed"`    // records processed, re-processing after failures included
	Replayed      uint64         `json:"replayed"`     // records a failed generation had processed since the checkpoint its successor restored
	BusyS         float64        `json:"busy_s"`       // time spent processing them
	CheckpointS   float64        `json:"checkpoint_s"` // checkpoint cost: capture stalls plus encoding, completed checkpoints
	Checkpoints   int            `json:"checkpoints"`
	PersistS      float64        `json:"persist_s"`  // capture to durable, summed
	DowntimeS     float64        `json:"downtime_s"` // per failure: last heartbeat to restored (detect, restart, load)
	Failures      int            `json:"failures"`
	ExposureS     float64        `json:"exposure_s"`          // time from the job's start to the instance's drain
	MeanIntervalS float64        `json:"mean_interval_s"`     // the interval in force, averaged over time
	PlannedCkpts  float64        `json:"planned_checkpoints"` // ∫ dt / interval: the checkpoints the intervals ask for
}

// AutoscaleFields: an auto-scaler decision, with what it saw.
type AutoscaleFields struct {
	Backlog     float64 `json:"backlog"`
	BacklogRate float64 `json:"backlog_rate"`
	Deferred    bool    `json:"deferred"` // a change not carried out: Refused says why
	From        int     `json:"from"`
	InputRate   float64 `json:"input_rate"`
	Need        float64 `json:"need"`
	Op          string  `json:"op"`
	Reason      string  `json:"reason"`
	Refused     string  `json:"refused,omitempty"` // why the rules of spate scale refused the change
	Target      float64 `json:"target"`
	To          int     `json:"to"`
	TrueRate    float64 `json:"true_rate"`
	Util        float64 `json:"util"`
}

// RescalePlannedFields: a rescale of Op from From to To instances began.
// A live one (Mode "") lists its Moves; a restart one (Mode "restart")
// has MoveCount instead (both are "moves" in JSON), and no Why or loads.
type RescalePlannedFields struct {
	From          int       `json:"from"`
	ID            uint64    `json:"id"`
	KeyGroups     int       `json:"key_groups"` // key groups that move
	Load          []float64 `json:"load"`       // the measured load per key group
	MaxLoadAfter  float64   `json:"max_load_after"`
	MaxLoadBefore float64   `json:"max_load_before"`
	Mode          string    `json:"mode,omitempty"`
	Moves         []string  `json:"moves"` // "[0,16) count#0→count#2"
	MoveCount     int       `json:"-"`
	Op            string    `json:"op"`
	To            int       `json:"to"`
	Why           string    `json:"why"`
}

// RescaleStagedFields: a moving slice's new owner loaded its base ahead
// of the capture (pre-copy).
type RescaleStagedFields struct {
	Bytes      int    `json:"bytes"`
	Checkpoint uint64 `json:"checkpoint"`
	From       string `json:"from"`
	ID         uint64 `json:"id"`
	Ms         int64  `json:"ms"`
	Op         string `json:"op"`
	Range      string `json:"range"`
	To         string `json:"to"`
}

// RescaleCapturedFields: a live rescale's slice was captured by its old
// owner (From and To are instances), or a restart rescale's full
// checkpoint was taken (Mode "restart": FromN and ToN, the parallelism,
// are "from" and "to" in JSON; Ms; no slice).
type RescaleCapturedFields struct {
	Bytes      int    `json:"bytes"`
	Checkpoint uint64 `json:"checkpoint"`
	File       string `json:"file"`
	From       string `json:"from"`
	FromN      int    `json:"-"`
	ID         uint64 `json:"id"`
	Mode       string `json:"mode,omitempty"`
	Ms         int64  `json:"ms"`
	Op         string `json:"op"`
	Precopy    bool   `json:"precopy,omitempty"`
	Range      string `json:"range"`
	To         string `json:"to"`
	ToN        int    `json:"-"`
	Watermark  int64  `json:"watermark"`
}

// RescaleMovedFields: a moving slice's new owner applied its first record.
type RescaleMovedFields struct {
	After uint64 `json:"after"`
	From  string `json:"from"`
	ID    uint64 `json:"id"`
	Op    string `json:"op"`
	Range string `json:"range"`
	To    string `json:"to"`
}

// RescaleReroutedFields: the upstreams route to the new owners.
type RescaleReroutedFields struct {
	From int    `json:"from"`
	ID   uint64 `json:"id"`
	Mode string `json:"mode,omitempty"`
	Ms   int64  `json:"ms"`
	Op   string `json:"op"`
	To   int    `json:"to"`
}

// RescaleDoneFields: a rescale is over. A live one has Moves, a restart
// one (Mode "restart") CatchUpMs instead.
type RescaleDoneFields struct {
	Bytes      int    `json:"bytes"`
	BytesMoved int    `json:"bytes_moved"`
	CatchUpMs  int64  `json:"catch_up_ms"`
	From       int    `json:"from"`
	ID         uint64 `json:"id"`
	Mode       string `json:"mode,omitempty"`
	Moves      int    `json:"moves"`
	Op         string `json:"op"`
	PauseMs    int64  `json:"pause_ms"`
	To         int    `json:"to"`
	TotalMs    int64  `json:"total_ms"`
}

// TrimFields: an upstream backup was trimmed toward a downstream.
type TrimFields struct {
	FreedBytes int64   `json:"freed_bytes"`
	HeldBytes  int64   `json:"held_bytes"` // what the backup still holds, memory and spill
	Positions  int     `json:"positions"`
	Slice      []Range `json:"slice"`
	To         string  `json:"to"`
	UpTo       uint64  `json:"up_to"`
}

// Range is a key-group range [Lo, Hi) in a node's event. Its keys are
// in name order, hi before lo, as they have been since the coordinator
// decoded what nodes sent into maps before writing it (the coordinator's
// own events carry job.Range, lo first).
type Range struct {
	Hi job.KeyGroup `json:"hi"`
	Lo job.KeyGroup `json:"lo"`
}

func (r Range) String() string { return job.Range{Lo: r.Lo, Hi: r.Hi}.String() }

// Ranges are rs as a node's events carry them.
func Ranges(rs []job.Range) []Range {
	if rs == nil {
		return nil
	}
	out := make([]Range, len(rs))
	for i, r := range rs {
		out[i] = Range{Hi: r.Hi, Lo: r.Lo}
	}
	return out
}

// LinkReconnectedFields: a failed link to a downstream is connected again.
type LinkReconnectedFields struct {
	To string `json:"to"`
}

// LinkGapFields: what a connection took with it (From's records for To).
type LinkGapFields struct {
	From    string `json:"from"`
	Records uint64 `json:"records"`
	To      string `json:"to"`
}

// PeerReconnectedFields: a session to a peer node is re-established.
type PeerReconnectedFields struct {
	Peer string `json:"peer"`
}

// ReplayFields: an upstream replayed its backup to a restored instance.
type ReplayFields struct {
	Records uint64 `json:"records"`
	To      string `json:"to"`
}

// HeldRecordsFields: records that came ahead of a gap are held (Held
// above zero, with the Gaps), or every held record is applied (Held 0).
type HeldRecordsFields struct {
	Gaps []string `json:"gaps"`
	Held int64    `json:"held"`
}

// BackupSpillFields: an upstream backup began or stopped spilling to disk.
type BackupSpillFields struct {
	MemBytes   int64 `json:"mem_bytes"`
	SpillBytes int64 `json:"spill_bytes"`
	Spilling   bool  `json:"spilling"`
}

// BackupFullFields: an upstream backup is full and its instance stops
// reading (Full: LimitBytes, MemBytes, SpillBytes), or it has room again
// (not Full: PausedMs).
type BackupFullFields struct {
	Full       bool  `json:"full"`
	LimitBytes int64 `json:"limit_bytes"`
	MemBytes   int64 `json:"mem_bytes"`
	PausedMs   int64 `json:"paused_ms"`
	SpillBytes int64 `json:"spill_bytes"`
}

// StoreTrafficFields: the bytes a node's checkpoint and output stores
// moved over the network since the node process started, cumulative
// (stores.Traffic says what each store counts): FromStore received,
// ToStore sent. Store is the kind, coord or s3. A node reports when they
// have grown, at most about twice a second, and once more before each
// instance reports it has drained; a node killed loses what it moved
// since its last report.
type StoreTrafficFields struct {
	FromStore int64  `json:"from_store"`
	Store     string `json:"store"`
	ToStore   int64  `json:"to_store"`
}

// CheckpointDeclinedFields: under --ft global, an instance declined a
// barrier (its alignment buffer overflowed).
type CheckpointDeclinedFields struct {
	HeldBytes int    `json:"held_bytes"`
	ID        uint64 `json:"id"`
}

// CheckpointFailedFields: a checkpoint could not be written.
type CheckpointFailedFields struct {
	ID uint64 `json:"id"`
}

// CheckpointChainBrokenFields: a checkpoint's scrub found a file of its
// chain damaged (Damaged, holding checkpoint DamagedID): a delta is not
// taken, a full one is, and the checkpoints the file restores are
// forgotten.
type CheckpointChainBrokenFields struct {
	Damaged   string `json:"damaged"`
	DamagedID uint64 `json:"damaged_id"`
	ID        uint64 `json:"id"`
	Parent    uint64 `json:"parent"`
}

// InstanceUnrecoverableFields: nothing left to restore an instance from
// (InstanceUnrecoverable): the restore's error, the generation that
// tried, and the checkpoints it was offered (latest first).
type InstanceUnrecoverableFields struct {
	Checkpoints []uint64 `json:"checkpoints,omitempty"`
	Error       string   `json:"error"`
	Gen         uint64   `json:"gen"`
}

// CheckpointCorruptedFields: a checkpoint file was damaged on purpose (a
// store fault).
type CheckpointCorruptedFields struct {
	File string `json:"file"`
}

func (RunStartedFields) Kind() Kind            { return RunStarted }
func (NodeSpawnedFields) Kind() Kind           { return NodeSpawned }
func (NodeJoinedFields) Kind() Kind            { return NodeJoined }
func (CoordResumedFields) Kind() Kind          { return CoordResumed }
func (NodeRefusedFields) Kind() Kind           { return NodeRefused }
func (NodeSuspectFields) Kind() Kind           { return NodeSuspect }
func (NodeLostFields) Kind() Kind              { return NodeLost }
func (NodeExitedFields) Kind() Kind            { return NodeExited }
func (InstancePlacedFields) Kind() Kind        { return InstancePlaced }
func (JobStartedFields) Kind() Kind            { return JobStarted }
func (WindowFiredFields) Kind() Kind           { return WindowFired }
func (ThroughputFields) Kind() Kind            { return Throughput }
func (SourceEndedFields) Kind() Kind           { return SourceEnded }
func (DrainStartedFields) Kind() Kind          { return DrainStarted }
func (DrainWaitingFields) Kind() Kind          { return DrainWaiting }
func (InstanceDoneFields) Kind() Kind          { return InstanceDone }
func (FrameErrorFields) Kind() Kind            { return FrameError }
func (CheckpointFields) Kind() Kind            { return Checkpoint }
func (FencedFields) Kind() Kind                { return Fenced }
func (RecoveryPlacedFields) Kind() Kind        { return RecoveryPlaced }
func (RecoveryRestoredFields) Kind() Kind      { return RecoveryRestored }
func (RecoveryLoadedFields) Kind() Kind        { return RecoveryLoaded }
func (RecoverySplitFields) Kind() Kind         { return RecoverySplit }
func (RecoveryDoneFields) Kind() Kind          { return RecoveryDone }
func (RunFinishedFields) Kind() Kind           { return RunFinished }
func (FaultStartedFields) Kind() Kind          { return FaultStarted }
func (FaultEndedFields) Kind() Kind            { return FaultEnded }
func (HealedFields) Kind() Kind                { return Healed }
func (PartitionFields) Kind() Kind             { return Partition }
func (MetricsFields) Kind() Kind               { return Metrics }
func (CheckpointRequestedFields) Kind() Kind   { return CheckpointRequested }
func (CheckpointCompactedFields) Kind() Kind   { return CheckpointCompacted }
func (CheckpointFallbackFields) Kind() Kind    { return CheckpointFallback }
func (CheckpointsForgottenFields) Kind() Kind  { return CheckpointsForgotten }
func (ErrorFields) Kind() Kind                 { return Error }
func (IntervalFields) Kind() Kind              { return Interval }
func (TunerSummaryFields) Kind() Kind          { return TunerSummary }
func (AutoscaleFields) Kind() Kind             { return Autoscale }
func (RescalePlannedFields) Kind() Kind        { return RescalePlanned }
func (RescaleStagedFields) Kind() Kind         { return RescaleStaged }
func (RescaleCapturedFields) Kind() Kind       { return RescaleCaptured }
func (RescaleMovedFields) Kind() Kind          { return RescaleMoved }
func (RescaleReroutedFields) Kind() Kind       { return RescaleRerouted }
func (RescaleDoneFields) Kind() Kind           { return RescaleDone }
func (TrimFields) Kind() Kind                  { return Trim }
func (LinkReconnectedFields) Kind() Kind       { return LinkReconnected }
func (PeerReconnectedFields) Kind() Kind       { return PeerReconnected }
func (LinkGapFields) Kind() Kind               { return LinkGap }
func (ReplayFields) Kind() Kind                { return Replay }
func (HeldRecordsFields) Kind() Kind           { return HeldRecords }
func (BackupSpillFields) Kind() Kind           { return BackupSpill }
func (BackupFullFields) Kind() Kind            { return BackupFull }
func (CheckpointDeclinedFields) Kind() Kind    { return CheckpointDeclined }
func (CheckpointFailedFields) Kind() Kind      { return CheckpointFailed }
func (CheckpointChainBrokenFields) Kind() Kind { return CheckpointChainBroken }
func (CheckpointCorruptedFields) Kind() Kind   { return CheckpointCorrupted }
func (StoreTrafficFields) Kind() Kind          { return StoreTraffic }
func (InstanceUnrecoverableFields) Kind() Kind { return InstanceUnrecoverable }

// payloads holds the zero payload of every kind: the registry Decode and
// Kinds read.
var payloads = []Payload{
	RunStartedFields{}, NodeSpawnedFields{}, NodeJoinedFields{}, CoordResumedFields{}, NodeRefusedFields{}, NodeSuspectFields{},
	NodeLostFields{}, NodeExitedFields{}, InstancePlacedFields{}, JobStartedFields{}, WindowFiredFields{},
	ThroughputFields{}, SourceEndedFields{}, DrainStartedFields{}, DrainWaitingFields{}, InstanceDoneFields{},
	FrameErrorFields{}, CheckpointFields{}, FencedFields{}, RecoveryPlacedFields{}, RecoveryRestoredFields{}, RecoverySplitFields{},
	RecoveryLoadedFields{}, RecoveryDoneFields{}, RunFinishedFields{}, FaultStartedFields{}, FaultEndedFields{}, HealedFields{},
	PartitionFields{}, MetricsFields{}, CheckpointRequestedFields{}, CheckpointCompactedFields{},
	CheckpointFallbackFields{}, CheckpointsForgottenFields{}, ErrorFields{}, IntervalFields{},
	TunerSummaryFields{}, AutoscaleFields{}, RescalePlannedFields{}, RescaleStagedFields{},
	RescaleCapturedFields{}, RescaleMovedFields{}, RescaleReroutedFields{}, RescaleDoneFields{}, TrimFields{},
	LinkReconnectedFields{}, PeerReconnectedFields{}, ReplayFields{}, HeldRecordsFields{}, BackupSpillFields{},
	BackupFullFields{}, CheckpointDeclinedFields{}, CheckpointFailedFields{}, CheckpointChainBrokenFields{},
	CheckpointCorruptedFields{}, StoreTrafficFields{}, InstanceUnrecoverableFields{}, LinkGapFields{},
}
