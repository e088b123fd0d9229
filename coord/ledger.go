package coord

import (
	"fmt"
	"slices"

	"spate/job"
	"spate/wire"
)

// This file holds the coordinator's pure bookkeeping of what a restore
// makes of the checkpoint manifest and of the sinks' output: no I/O, no
// clock; the handlers in ft.go and global.go carry out what it decides.

// SinkFileName is the output file of generation gen of sink op#index,
// relative to output/.
func SinkFileName(op string, index int, gen uint64) string {
	return fmt.Sprintf("%s-%d-g%d.jsonl", op, index, gen)
}

// restoreSink bounds the output files of every generation of sink
// op#index older than gen, the one just restored, to what checkpoint cp
// had committed (nil: a restore from no checkpoint, which had committed
// nothing). The file cp was taken with counts up to cp's length, the files
// of the generations after it count for nothing (the restored generation
// writes their results again), and the files before it keep the limits
// set when cp's generation was restored (cp's chain had them). It reports
// whether a limit changed.
//
// Setting only the previous generation's limit, once, was wrong twice
// over: a restore that fell back to a checkpoint older than the one an
// earlier restore had used left the earlier limit in place (the results
// between the two were counted twice), and a generation lost before it
// reported its restore left its predecessor's file unbounded.
func (o *OutputManifest) restoreSink(op string, index int, gen uint64, cp *wire.Checkpoint) bool {
	changed := false
	set := func(f string, n int64) {
		if old, ok := o.Limits[f]; !ok || old != n {
			o.Limits[f] = n
			changed = true
		}
	}
	for g := uint64(1); g < gen; g++ {
		f := SinkFileName(op, index, g)
		switch {
		case cp == nil || g > cp.Gen:
			set(f, 0)
		case g == cp.Gen && cp.SinkFile == f:
			set(f, cp.SinkLen)
		case g == cp.Gen:
			set(f, 0) // the generation had not opened its file at cp
		}
	}
	return changed
}

// note records that a checkpoint id of inst was reported (complete or
// not), so that ids are never given out twice.
func (m *Manifest) note(inst job.InstanceID, id uint64) {
	if m.High == nil {
		m.High = map[job.InstanceID]uint64{}
	}
	m.High[inst] = max(m.High[inst], id)
}

// nextID is the id the next checkpoint of inst must take, whatever it was
// restored from: one past every id it ever reported.
func (m *Manifest) nextID(inst job.InstanceID) uint64 { return m.High[inst] + 1 }

// trimmedTo records, as a checkpoint of inst completes, that the
// upstreams trim their backups to what its fallback needs (the newest
// restorable checkpoint whose chain shares no file with the latest's),
// and returns the fallback (0: none yet, and no trim): the completion's
// acknowledgement names it, and the instance orders those trims
// (node/checkpoint.go onCompleted). No older checkpoint is ever
// restorable again, whatever is forgotten later (a dead branch, a damaged
// file): the records it would need may be gone.
func (m *Manifest) trimmedTo(inst job.InstanceID) uint64 {
	_, cps := m.restorable(inst)
	if len(cps) < 2 {
		return 0
	}
	if m.Floor == nil {
		m.Floor = map[job.InstanceID]uint64{}
	}
	m.Floor[inst] = max(m.Floor[inst], cps[1].ID)
	return cps[1].ID
}

// untrimmed reports whether no trim was ever ordered for inst: its
// upstreams still hold everything it got, so an empty start restores it.
func (m *Manifest) untrimmed(inst job.InstanceID) bool { return m.Floor[inst] == 0 }

// damaged records that file of inst is damaged: the complete checkpoints
// whose chains hold it are restorable no more, and are forgotten (those
// pinned stay known by id, as in restoredAt). A checkpoint whose
// compacted file it is keeps its own chain, if that is still whole.
func (m *Manifest) damaged(inst job.InstanceID, file string, pinned ...uint64) (forgotten []uint64) {
	by := m.byID[inst]
	for id, c := range by {
		if c.Compacted == file {
			c.Compacted = ""
			by[id] = c
		}
	}
	list := m.Instances[inst]
	kept := list[:0]
	for _, c := range list {
		if c.Compacted == file {
			c.Compacted = ""
		}
		if files, ok := m.chain(c); ok && !slices.Contains(files, file) && m.holds(inst, files) {
			kept = append(kept, c)
			continue
		}
		forgotten = append(forgotten, c.ID)
	}
	m.Instances[inst] = kept
	for _, id := range forgotten {
		if !slices.Contains(pinned, id) {
			delete(by, id)
		}
	}
	return forgotten
}

// holds reports whether every file of a chain of inst is still known (not
// collected).
func (m *Manifest) holds(inst job.InstanceID, files []string) bool {
	for _, f := range files {
		if !m.files[inst][f] {
			return false
		}
	}
	return true
}

// restoredAt records that inst was restored from checkpoint id (0: from
// no checkpoint): the complete checkpoints after it belong to a branch
// that no generation continues (their state is ahead of the output limits
// the restore set, and their positions ahead of the replay), so they are
// no longer restorable. Their files are left to collect. Checkpoints in
// pinned (a moved slice's recovery point) stay known by id, but are not
// restorable either.
func (m *Manifest) restoredAt(inst job.InstanceID, id uint64, pinned ...uint64) (forgotten []uint64) {
	list := m.Instances[inst]
	kept := list[:0]
	for _, c := range list {
		if c.ID <= id {
			kept = append(kept, c)
			continue
		}
		forgotten = append(forgotten, c.ID)
		if !slices.Contains(pinned, c.ID) {
			delete(m.byID[inst], c.ID)
		}
	}
	m.Instances[inst] = kept
	return forgotten
}
