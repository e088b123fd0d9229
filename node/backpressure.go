package node

import (
	"time"

	"spate/events"
	"spate/internal/human"
)

// input is the channel runKeyed takes input from: nil while one of the
// instance's upstream backups is full, so that the instance stops taking
// input until trims or its next checkpoint's Mark make room. A backup is
// full past --backup-mem when it may not spill (--backup-full block), or
// when what is over the limit cannot be spilled yet (not yet persisted with
// a checkpoint, or a spill failed). The pause reaches the upstreams through
// the bounded input channel and the streams' flow control: backpressure.
// Timers and control calls go on, so checkpoints and trims still come.
// Each pause and each resumption is a backup_full event.
func (in *instance) input() chan inMsg {
	full := -1
	for pi, pt := range in.ports {
		if pt.backup != nil && pt.backup.Full() {
			full = pi
			break
		}
	}
	switch {
	case full >= 0 && in.paused.IsZero():
		in.paused = time.Now()
		st := in.ports[full].backup.Stats()
		in.n.event(events.BackupFull, in.id, events.BackupFullFields{Full: true, MemBytes: st.MemBytes, LimitBytes: st.MemLimit, SpillBytes: st.SpillBytes},
			"upstream backup full (%s in memory, limit %s): input paused until trims free memory", human.Bytes(float64(st.MemBytes)), human.Bytes(float64(st.MemLimit)))
	case full < 0 && !in.paused.IsZero():
		d := time.Since(in.paused)
		in.paused = time.Time{}
		in.n.event(events.BackupFull, in.id, events.BackupFullFields{Full: false, PausedMs: d.Milliseconds()},
			"upstream backup has room again: input resumed after %v", d.Round(time.Millisecond))
	}
	if full >= 0 || (in.ld != nil && in.ld.full()) {
		return nil // (held records of loading key groups at their bound: load.go)
	}
	return in.in
}
