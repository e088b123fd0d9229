package events

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kind names what happened.
type Kind string

// The kinds of events.
const (
	RunStarted          Kind = "run_started"
	NodeSpawned         Kind = "node_spawned"
	NodeJoined          Kind = "node_joined"
	CoordResumed        Kind = "coord_resumed"
	NodeRefused         Kind = "node_refused"
	NodeSuspect         Kind = "node_suspect"
	NodeLost            Kind = "node_lost"
	NodeExited          Kind = "node_exited"
	InstancePlaced      Kind = "instance_placed"
	JobStarted          Kind = "job_started"
	WindowFired         Kind = "window_fired"
	Throughput          Kind = "throughput"
	SourceEnded         Kind = "source_ended"
	DrainStarted        Kind = "drain_started"
	DrainWaiting        Kind = "drain_waiting" // a drain asked for waits for the rescale in flight
	InstanceDone        Kind = "instance_done"
	FrameError          Kind = "frame_error"
	Checkpoint          Kind = "checkpoint"
	Fenced              Kind = "fenced"
	RecoveryPlaced      Kind = "recovery_placed"
	RecoverySplit       Kind = "recovery_split" // --recover parallel: how a lost instance's key groups are split
	RecoveryRestored    Kind = "recovery_restored"
	RecoveryLoaded      Kind = "recovery_loaded" // an early restore's key groups are all built: the state is whole
	RecoveryDone        Kind = "recovery_done"
	RunFinished         Kind = "run_finished"
	FaultStarted        Kind = "fault_started"
	FaultEnded          Kind = "fault_ended"
	Healed              Kind = "healed"
	Partition           Kind = "partition"
	Metrics             Kind = "metrics"
	CheckpointRequested Kind = "checkpoint_requested"
	CheckpointCompacted Kind = "checkpoint_compacted"
	CheckpointFallback  Kind = "checkpoint_fallback" // a damaged checkpoint: recovery uses the one before
	// CheckpointsForgotten: a restore from an older checkpoint left the
	// later ones on a dead branch; they are no longer restorable.
	CheckpointsForgotten Kind = "checkpoints_forgotten"
	Error                Kind = "error"
	// InstanceUnrecoverable: an instance could not be restored from any
	// of its checkpoints (every file it could load from damaged) and the
	// upstreams no longer hold what a start from nothing needs: the job
	// stops with this reason rather than run on with a hole.
	InstanceUnrecoverable Kind = "instance_unrecoverable"
	Interval              Kind = "interval"      // a checkpoint-interval decision: instance, interval_ms, reason, inputs
	TunerSummary          Kind = "tuner_summary" // at the end of a run: each instance's processing, checkpoint, replay and downtime

	Autoscale       Kind = "autoscale"
	RescalePlanned  Kind = "rescale_planned"
	RescaleStaged   Kind = "rescale_staged"
	RescaleCaptured Kind = "rescale_captured"
	RescaleMoved    Kind = "rescale_moved"
	RescaleRerouted Kind = "rescale_rerouted"
	RescaleDone     Kind = "rescale_done"

	// From the nodes.
	Trim            Kind = "trim"
	LinkReconnected Kind = "link_reconnected"
	// LinkGap: a link reconnected short of what its sender had sent, and
	// the sender keeps no backup (--ft global: the job rolls back; none:
	// the records are lost).
	LinkGap               Kind = "link_gap"
	PeerReconnected       Kind = "peer_reconnected"
	Replay                Kind = "replay"
	HeldRecords           Kind = "held_records"
	BackupSpill           Kind = "backup_spill"
	BackupFull            Kind = "backup_full"
	CheckpointDeclined    Kind = "checkpoint_declined"
	CheckpointFailed      Kind = "checkpoint_failed"
	CheckpointChainBroken Kind = "checkpoint_chain_broken"
	CheckpointCorrupted   Kind = "checkpoint_corrupted"
	// StoreTraffic: what a node's checkpoint and output stores have sent
	// and received over the network so far (--store coord or s3).
	StoreTraffic Kind = "store_traffic"
)

// Event is one thing that happened in a run. Fields is its payload: a
// value of its kind's type (RunStartedFields for RunStarted, ...), nil for
// an event without fields, or an Other for a kind this version does not
// know. Its JSON is one object: seq, time, kind, node, instance, text and
// the payload as "fields" (json.go).
type Event struct {
	Seq      uint64
	Time     time.Time
	Kind     Kind
	Node     string
	Instance string
	Text     string
	Fields   Payload
}

// Line is the event as one human-readable line.
func (e Event) Line() string {
	who := e.Node
	if e.Instance != "" {
		if who != "" {
			who += "/"
		}
		who += e.Instance
	}
	if who != "" {
		who = " [" + who + "]"
	}
	return fmt.Sprintf("%s %-15s%s %s", e.Time.Format("15:04:05.000"), e.Kind, who, e.Text)
}

// Bus fans events out to subscribers.
type Bus struct {
	now  func() time.Time
	mu   sync.Mutex
	seq  uint64
	subs []*Sub
}

// NewBus returns a bus that stamps events with now.
func NewBus(now func() time.Time) *Bus { return &Bus{now: now} }

// ContinueAt makes the next event's sequence number seq+1: a log that
// another bus wrote up to seq goes on (a resumed coordinator's). Call it
// before the first Publish.
func (b *Bus) ContinueAt(seq uint64) {
	b.mu.Lock()
	b.seq = max(b.seq, seq)
	b.mu.Unlock()
}

// Sub is a subscription. C delivers the events; Dropped counts those a lossy
// subscriber lost.
type Sub struct {
	C       chan Event
	lossy   bool
	dropped atomic.Uint64
	closed  bool
}

// Dropped is the number of events this subscriber lost.
func (s *Sub) Dropped() uint64 { return s.dropped.Load() }

// Subscribe adds a subscriber with a buffer of n events.
func (b *Bus) Subscribe(n int, lossy bool) *Sub {
	s := &Sub{C: make(chan Event, n), lossy: lossy}
	b.mu.Lock()
	b.subs = append(b.subs, s)
	b.mu.Unlock()
	return s
}

// Publish stamps e (Seq, and Time if zero) and delivers it. It returns the
// stamped event.
func (b *Bus) Publish(e Event) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e.Seq = b.seq
	if e.Time.IsZero() {
		e.Time = b.now()
	}
	for _, s := range b.subs {
		if s.closed {
			continue
		}
		if s.lossy {
			select {
			case s.C <- e:
			default:
				s.dropped.Add(1)
			}
			continue
		}
		s.C <- e
	}
	return e
}

// Seq is the sequence number of the last event published.
func (b *Bus) Seq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Close closes every subscriber's channel; later events are discarded.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		if !s.closed {
			s.closed = true
			close(s.C)
		}
	}
}

// SchemaVersion is the version of the events.jsonl line, its "v" field;
// schemas/events.schema.json in the repository describes it. Adding a
// field or a kind keeps the version; changing or removing one bumps it.
const SchemaVersion = 1

// WriteJSONL copies the events of s to w, one JSON object per line with
// the schema version first ("v"), until s is closed. It returns the first
// write error.
func WriteJSONL(w io.Writer, s *Sub) error {
	var first error
	var line []byte
	for e := range s.C {
		if first != nil {
			continue
		}
		line, first = AppendLine(line[:0], e)
		if first == nil {
			_, first = w.Write(line)
		}
	}
	return first
}

// AppendLine appends e as a line of events.jsonl to b: {"v":1,"seq":...}
// and a newline.
func AppendLine(b []byte, e Event) ([]byte, error) {
	j, err := e.MarshalJSON()
	if err != nil {
		return b, err
	}
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, SchemaVersion, 10)
	b = append(b, ',')
	b = append(b, j[1:]...)
	return append(b, '\n'), nil
}
