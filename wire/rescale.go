package wire

import "spate/job"

// CtlRescale carries one step of a live rescale (coord/PROTOCOL.md,
// "Live rescale"), in both directions; Rescale.Step names the step.
const CtlRescale = "rescale"

// Steps of a live rescale.
const (
	RescalePrepare   = "prepare"   // coordinator → every node: add the new instances as inputs downstream; receivers hold their watermark
	RescalePrepared  = "prepared"  // node → coordinator: done; Holds gives each held receiver's watermark
	RescaleRelease   = "release"   // coordinator → old owner: capture a full checkpoint at a watermark >= MinWM, then drop Ranges
	RescaleCaptured  = "captured"  // old owner → coordinator: the capture is durable (File, CkptID, WM, Bytes, AtMs)
	RescaleLoad      = "load"      // coordinator → new owner: load Ranges from File (Place: a new instance to create, held)
	RescaleLoaded    = "loaded"    // new owner → coordinator: loaded; After is its last checkpoint id not holding Ranges
	RescaleCommit    = "commit"    // coordinator → every node: the operator's placements from now on; upstreams re-route and replay
	RescaleCommitted = "committed" // node → coordinator: every local upstream has re-routed
	RescaleUnhold    = "unhold"    // coordinator → receiver's node: every upstream re-routed; the watermark may move again
	RescaleFull      = "full"      // coordinator → every node (--rescale restart): every instance takes a full checkpoint now
	RescaleStop      = "stop"      // coordinator → every node (--rescale restart): stop every instance (the restores follow)
	RescaleStopped   = "stopped"   // node → coordinator: every local instance is stopped
	RescaleFirst     = "first"     // new owner → coordinator: every key group of Ranges has applied a record (AtMs: the last of them)
	RescaleRewrite   = "rewrite"   // coordinator → old owner: write the capture File again from the copy kept until the commit (its load failed); answered by captured

	// Pre-copy moves (into a new instance; PROTOCOL.md, "Pre-copy").
	RescaleCheckpoint = "checkpoint" // coordinator → nodes: the instances of Hold take a checkpoint now (a fresh base for a pre-copy)
	RescalePin        = "pin"        // coordinator → old owner: stop trimming the upstream backup of Ranges (the new owner replays it from CkptID's positions)
	RescaleStage      = "stage"      // coordinator → new owner's node: create Place (not started) and load Ranges from Chain
	RescaleStaged     = "staged"     // new owner's node → coordinator: loaded (or Error)
	RescaleStart      = "start"      // coordinator → new owner's node: start the staged instance (held); answered by loaded
	RescaleDrop       = "drop"       // coordinator → old owner: at a batch boundary, stop owning Ranges, without a capture
	RescaleReleased   = "released"   // old owner → coordinator: Ranges dropped (AtMs, WM)
)

// Rescale is the body of a CtlRescale message.
type Rescale struct {
	ID       uint64                   `json:"id"` // the rescale's number in this run
	Step     string                   `json:"step"`
	Op       string                   `json:"op,omitempty"`
	Instance job.InstanceID           `json:"instance,omitempty"` // release, captured: the old owner; load, loaded, first: the new owner
	Gen      uint64                   `json:"gen,omitempty"`      // the generation Instance had when it acted
	Ranges   []job.Range              `json:"ranges,omitempty"`   // the key groups moving
	Place    *Placement               `json:"place,omitempty"`    // load: the new owner's placement, when it is a new instance
	Plan     []Placement              `json:"plan,omitempty"`     // prepare: the new instances; commit: every placement of the operator; stop (a resume's): the whole plan
	Hold     []job.InstanceID         `json:"hold,omitempty"`     // prepare, unhold: the receivers that hold (release) their watermark
	Holds    map[job.InstanceID]int64 `json:"holds,omitempty"`    // prepared: each held receiver's watermark
	MinWM    int64                    `json:"min_wm,omitempty"`   // release: capture once the old owner's watermark is at least this
	File     string                   `json:"file,omitempty"`     // captured, load: the capture's checkpoint file
	CkptID   uint64                   `json:"ckpt_id,omitempty"`  // captured: its checkpoint id (in the old owner's chain)
	WM       int64                    `json:"wm,omitempty"`       // captured: the old owner's watermark at the capture
	Bytes    int                      `json:"bytes,omitempty"`    // captured: the file's size
	AtMs     int64                    `json:"at_ms,omitempty"`    // captured: when it was captured; first: when the last key group got its first record (Unix ms)
	After    uint64                   `json:"after,omitempty"`    // loaded: the new owner's checkpoints after this id hold Ranges
	Chain    []string                 `json:"chain,omitempty"`    // stage, load: the old owner's complete checkpoint CkptID, as its chain (full, then deltas); load: instead of File
	Error    string                   `json:"error,omitempty"`
}

// SliceLoad is a moved slice an instance must load when it is restored
// from a checkpoint that does not hold it yet (id <= After): the old
// owner's capture File, restricted to Ranges.
type SliceLoad struct {
	File  string   `json:"file"`
	Chain []string `json:"chain,omitempty"` // instead of File: a checkpoint's chain (full, then deltas)
	// Fallback is the old owner's chain before Chain's, for a restore
	// that finds Chain damaged: the upstreams' backup of the range is
	// whole from its positions on.
	Fallback []string    `json:"fallback,omitempty"`
	Ranges   []job.Range `json:"ranges"`
	After    uint64      `json:"after"`
}
