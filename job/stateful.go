package job

import "spate/state"

// Stateful is a keyed operator whose state can be checkpointed and
// restored per key group.
type Stateful interface {
	Keyed
	// Capture pins the state changed since the last capture (all of it
	// when full), on the owner's goroutine: fast, no encoding.
	Capture(full bool) Captured
	// Restore loads groups into an empty instance (or adds groups to it).
	Restore(groups []state.GroupData) error
	// DropGroups forgets key groups that moved away.
	DropGroups(kgs []KeyGroup)
}

// Captured is a pinned capture. Encode runs on a background goroutine,
// concurrently with Process and Advance; Done releases the capture.
type Captured interface {
	Encode() []state.GroupData
	Done()
}
