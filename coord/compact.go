package coord

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"spate/backup"
	"spate/events"
	"spate/internal/human"
	"spate/state"
	"spate/wire"
)

// Background compaction (--ft spate): once the chain that restores an
// instance's latest complete checkpoint has compactAt files or more (six:
// about once per chain of ten checkpoints, so it costs about a tenth of
// the full checkpoints' work), the coordinator folds it, off its event loop, into one full snapshot of that
// checkpoint (state merged, sections of the latest, upstream-backup marks
// compacted into a full mark) and records it in the manifest. A recovery
// then reads one file instead of the chain; the chain's files go when no
// restorable checkpoint needs them. One compaction per instance at a time,
// and none started during a recovery.

// compactAt is the chain length that triggers a compaction.
const compactAt = 6

// compaction is a finished background compaction.
type compaction struct {
	cp    wire.Checkpoint
	file  string
	files int
	bytes int
	took  time.Duration
	err   error
}

// maybeCompact starts a compaction of the chain of cp if it is long enough.
// None starts while a recovery is in flight: a compaction decodes a whole
// chain and encodes it again, CPU that the restore and the catch-up need
// more. The next checkpoint after the recovery starts it.
func (c *core) maybeCompact(cp wire.Checkpoint) {
	if c.ft.mode() != wire.FTSpate || c.compacting[cp.Instance] || c.draining || len(c.recovering) > 0 {
		return
	}
	files, ok := c.manifest.chain(c.manifest.byID[cp.Instance][cp.ID])
	if !ok || len(files) < compactAt {
		return
	}
	c.compacting[cp.Instance] = true
	c.do(compactOp{cp: cp, files: files})
}

// compactChain merges the files of a chain into one full snapshot and
// stores it. It runs on its own goroutine.
func compactChain(store state.Store, cp wire.Checkpoint, files []string) (string, int, error) {
	snaps := make([]*state.Snapshot, 0, len(files))
	for _, f := range files {
		b, err := store.Get(f)
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", f, err)
		}
		s, err := state.Decode(b)
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", f, err)
		}
		snaps = append(snaps, s)
	}
	merged, err := state.Merge(snaps)
	if err != nil {
		return "", 0, err
	}
	for name := range merged.Sections {
		if !strings.HasPrefix(name, "backup.") {
			continue
		}
		var marks [][]byte
		for _, s := range snaps {
			marks = append(marks, s.Sections[name])
		}
		full, err := backup.Compact(marks)
		if err != nil {
			return "", 0, fmt.Errorf("section %s: %w", name, err)
		}
		merged.Sections[name] = full
	}
	data, err := state.Encode(merged)
	if err != nil {
		return "", 0, err
	}
	name := state.FileName(string(cp.Instance), cp.Gen, cp.ID, true)
	return name, len(data), store.Put(name, data)
}

// compacted takes in a finished compaction, on the event loop.
func (c *core) compacted(r compaction) {
	delete(c.compacting, r.cp.Instance)
	if r.err != nil {
		if _, cps := c.manifest.restorable(r.cp.Instance); slices.ContainsFunc(cps, func(cp wire.Checkpoint) bool { return cp.ID == r.cp.ID }) {
			c.emit(events.Error, "", string(r.cp.Instance), nil, "compaction of %s up to checkpoint %d failed: %v", r.cp.Instance, r.cp.ID, r.err)
		} // else its chain was collected meanwhile: nothing is lost
		return
	}
	if !c.manifest.compacted(r.cp.Instance, r.cp.ID, r.file) {
		c.do(deleteOp{r.file}) // its checkpoint was collected meanwhile
		return
	}
	var drop []string
	if rec := c.recovering[r.cp.Instance]; rec == nil || !rec.restored.IsZero() {
		// Not while a restore of the instance is in flight: it reads the
		// chain it was given, file by file, and the collection would
		// delete the files the compacted one replaces from under it (seed
		// 44: a compaction that started before the loss finished after the
		// placement). The next checkpoint's collection takes them.
		drop = c.manifest.collect(r.cp.Instance, append(c.edsPinned(r.cp.Instance), c.global.complete, c.global.prev)...)
	}
	c.mw.version++
	c.mw.acks = append(c.mw.acks, manifestAck{version: c.mw.version, drop: drop})
	c.writeManifest()
	// The instance's next deltas build on the compacted file, so they
	// scrub it as they scrub a base (a damaged one found late left no
	// restorable chain: seed 680).
	if p := c.placeOf[r.cp.Instance]; p != nil && p.Gen == r.cp.Gen {
		if ns := c.nodes[p.Node]; ns.live() {
			c.send(ns, wire.Control{Kind: wire.CtlCompacted, Checkpoint: &wire.Checkpoint{Instance: r.cp.Instance, Gen: r.cp.Gen, ID: r.cp.ID, Compacted: r.file}})
		}
	}
	c.emit(events.CheckpointCompacted, "", string(r.cp.Instance), events.CheckpointCompactedFields{ID: r.cp.ID, Files: r.files, Bytes: r.bytes, Ms: r.took.Milliseconds()},
		"chain of %d files up to checkpoint %d of %s compacted into one (%s) in %v", r.files, r.cp.ID, r.cp.Instance, human.Bytes(float64(r.bytes)), r.took.Round(time.Millisecond))
}
