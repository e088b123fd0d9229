package backup

import (
	"errors"
	"fmt"

	"spate/job"
)

// Errors of the package. They are returned wrapped (test with errors.Is);
// the wrapping message names the place: the (producer, key group, seq), the
// delta and byte offset of a mark, the spill file.
var (
	// ErrConfig is wrapped by Validate and New for a bad Config.
	ErrConfig = errors.New("backup: bad config")

	// ErrGap is returned (in a *SeqError) by Append for a sequence number
	// past the next one of its (producer, key group): records in between
	// were never appended.
	ErrGap = errors.New("backup: sequence gap")

	// ErrRepeat is returned (in a *SeqError) by Append for a sequence
	// number already appended for its (producer, key group), or for 0
	// (sequence numbers start at 1).
	ErrRepeat = errors.New("backup: sequence repeated")

	// ErrTrimmed is returned (in a *TrimmedError) by Replay when a record
	// it was asked for is no longer held: it was trimmed, or it was
	// appended before this buffer's first record of its (producer, key
	// group). Replay never skips such records silently.
	ErrTrimmed = errors.New("backup: records already trimmed")

	// ErrCorrupt is returned by Restore and Compact for a mark that does
	// not decode or does not fit the chain before it, and (together with
	// ErrSpill) for a spill file whose content fails its checksum.
	ErrCorrupt = errors.New("backup: corrupt data")

	// ErrSpill is returned when a spill file cannot be written, read or
	// removed. A failed spill leaves the buffer consistent: the records
	// stay in memory.
	ErrSpill = errors.New("backup: spill")

	// ErrOverlap is returned by Absorb when both buffers hold state for a
	// key group, and by SetSlices for overlapping ranges.
	ErrOverlap = errors.New("backup: key groups owned twice")

	// ErrRange is returned for a key-group range with Lo > Hi.
	ErrRange = errors.New("backup: bad key-group range")
)

// SeqError is an Append refused because seq is not the next sequence
// number of (P, KG). It wraps ErrGap or ErrRepeat.
type SeqError struct {
	P    job.Producer
	KG   job.KeyGroup
	Seq  uint64 // what was appended
	Next uint64 // what was expected
}

func (e *SeqError) Error() string {
	what := "gap"
	if e.Seq < e.Next {
		what = "repeat"
	}
	return fmt.Sprintf("backup: %s %v: seq %d is a %s (next is %d)", e.P, e.KG, e.Seq, what, e.Next)
}

// Unwrap returns ErrGap or ErrRepeat.
func (e *SeqError) Unwrap() error {
	if e.Seq < e.Next {
		return ErrRepeat
	}
	return ErrGap
}

// TrimmedError is a Replay that needs records of (P, KG) from Wanted on,
// while the buffer holds only those above Low. It wraps ErrTrimmed.
type TrimmedError struct {
	P      job.Producer
	KG     job.KeyGroup
	Wanted uint64 // the first sequence number needed: after[P]+1
	Low    uint64 // the buffer's low watermark: records up to it are gone
}

func (e *TrimmedError) Error() string {
	return fmt.Sprintf("backup: %s %v: replay from seq %d needs records trimmed up to %d", e.P, e.KG, e.Wanted, e.Low)
}

// Unwrap returns ErrTrimmed.
func (e *TrimmedError) Unwrap() error { return ErrTrimmed }

// corruptf formats an error wrapping ErrCorrupt.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
