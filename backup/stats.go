package backup

import (
	"cmp"
	"slices"

	"spate/job"
)

// Stats is a snapshot of a buffer, for telemetry.
type Stats struct {
	Records    int64 // records held (untrimmed), in memory or spilled
	MemBytes   int64 // memory of the chunks holding records (their capacity)
	MemLimit   int64 // Config.MemLimit
	SpillBytes int64 // bytes in spill files
	SpillFiles int64
	Spilling   bool   // some records are in spill files
	Full       bool   // over MemLimit and spilling cannot help: see Buffer.Full
	KeyGroups  int    // key groups owned
	Trims      int64  // Trim calls that moved a watermark
	Trimmed    int64  // records released by them
	SpillErr   string // the last spill failure, "" if none

	// Slices breaks the figures down by slice: the declared slices (see
	// SetSlices), then, for key groups outside them, maximal contiguous
	// ranges of owned key groups; in key-group order.
	Slices []SliceStats
}

// SliceStats is the part of Stats for one key-group range.
type SliceStats struct {
	Range      job.Range
	KeyGroups  int // owned key groups in Range
	Records    int64
	MemBytes   int64
	SpillBytes int64
}

// Stats returns a snapshot of the buffer. It is safe to call from any
// goroutine, concurrently with the owner's calls; the figures of different
// key groups may be a few operations apart, and the records of a key
// group may lag up to 63 appends behind (they are exact after a Mark, a
// Trim or a Restore).
func (b *Buffer) Stats() Stats {
	var s Stats
	b.mu.Lock()
	defer b.mu.Unlock()
	s.Slices = make([]SliceStats, len(b.slices))
	for i, r := range b.slices {
		s.Slices[i].Range = r
	}
	declared := len(s.Slices)
	for kg, lg := range b.logs {
		if lg == nil {
			continue
		}
		g := job.KeyGroup(kg)
		rec, mem, sp := lg.records.Load(), lg.memBytes.Load(), lg.spillBytes.Load()
		s.KeyGroups++
		s.Records += rec
		s.MemBytes += mem
		s.SpillBytes += sp
		s.SpillFiles += lg.spillFiles.Load()
		i, ok := slices.BinarySearchFunc(s.Slices[:declared], g, func(r SliceStats, g job.KeyGroup) int {
			switch {
			case r.Range.Hi <= g:
				return -1
			case r.Range.Lo > g:
				return 1
			}
			return 0
		})
		if !ok {
			if n := len(s.Slices); n > declared && s.Slices[n-1].Range.Hi == g {
				i = n - 1
				s.Slices[i].Range.Hi++
			} else {
				i = n
				s.Slices = append(s.Slices, SliceStats{Range: job.Range{Lo: g, Hi: g + 1}})
			}
		}
		sl := &s.Slices[i]
		sl.KeyGroups++
		sl.Records += rec
		sl.MemBytes += mem
		sl.SpillBytes += sp
	}
	slices.SortFunc(s.Slices, func(x, y SliceStats) int { return cmp.Compare(x.Range.Lo, y.Range.Lo) })
	s.Spilling = s.SpillBytes > 0
	s.MemLimit = b.cfg.MemLimit
	s.Full = s.MemBytes > b.cfg.MemLimit && (b.cfg.SpillDir == "" || b.stuck.Load())
	s.Trims = b.trims.Load()
	s.Trimmed = b.trimmed.Load()
	if b.spillErr != nil {
		s.SpillErr = b.spillErr.Error()
	}
	return s
}
