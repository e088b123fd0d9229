// Package backup is SPATE's upstream backup: an operator instance keeps
// what it sent downstream so that a downstream instance that fails, and
// restores its last complete checkpoint, can be sent again everything
// after that checkpoint's input positions.
//
// # What is kept
//
// A Buffer is the backup of one output port of one instance. Records are
// kept per stream, a (producer, destination key group): record seq s of
// (p, kg) is the s-th record producer p sent to key group kg (1-based,
// consecutive, never reused; see package job). Append takes them in that
// order (a stream's first record may start anywhere: nothing before it is
// held) and refuses a gap or a repeat. A stream holds records Low+1..High:
// Low is the highest trimmed sequence number (or the one before the first
// record held), High the highest appended.
//
// Replay(kg, after, fn) re-sends the held records of kg above the
// checkpointed positions after[p], in sequence order per producer. If a
// record it needs is not held any more it returns ErrTrimmed before sending
// anything: a hole is never skipped silently. Numbers are unchanged by
// replay, so downstream drops what it already applied.
//
// # When it may be trimmed
//
// Trim(p, kg, n) says records of (p, kg) up to n are no longer needed; it
// is idempotent and never moves a watermark backward. The coordinator
// orders it once the instance owning kg has a complete (durable)
// checkpoint covering n — and it must keep what the previous complete
// checkpoint of that instance needs as well, since that is what recovery
// falls back to when the latest checkpoint turns out corrupted. So n is the
// position of the second-newest complete checkpoint, not the newest. The
// buffer does not know checkpoints; it only refuses to replay what it no
// longer has. Memory is released by whole chunks, once every record in a
// chunk (of all producers of its key group) is trimmed.
//
// # Persistence with the checkpoint
//
// Mark returns what changed since the previous Mark (the records appended,
// the watermarks moved, the key groups extracted or absorbed), to be
// written with the instance's checkpoint, taken at the same batch boundary
// as the checkpoint's capture. Restore rebuilds a buffer from the chain of
// marks of the checkpoint being restored (its base and deltas in order).
// The first Mark of a new buffer is a full one; MarkFull makes one on
// demand (for a full checkpoint, so that older marks can be collected), and
// Compact merges a chain into one. Marks are checksummed and Restore
// validates everything: a bad chain gives ErrCorrupt naming the mark, byte
// offset and field, never a panic.
//
// A mark of a whole key group (a full mark's, or one absorbed) leaves out
// the records at the head of each chunk that are trimmed already: a chunk
// is freed only once all its records are, so it can hold, before the first
// record still needed, up to a chunk's worth that no restore needs.
//
// MarkInParts (and MarkFullInParts) makes the same mark without copying
// the records: in pieces that point into the chunks, which stay pinned
// until MarkParts.Release; MarkParts.Seal, off the owner's goroutine,
// leaves out the trimmed heads (from the stream watermarks the mark took)
// and computes the checksum. A chunk freed while pinned (trimmed, spilled,
// extracted and dropped) is left to the collector instead of the pool, and
// records are only ever appended past what a mark took, so the pieces keep
// their bytes while another goroutine checksums (Seal) and writes them.
//
// # Memory, spill and backpressure
//
// Records are copied into large chunks, one open chunk per key group, so
// Append does not allocate per record. A key group's chunks double when one
// fills up and halve when one is trimmed before it fills, between 4 KiB and
// MemLimit/16 (at most 256 KiB); freed chunks are kept for reuse up to
// MemLimit/16 (at most 4 MiB). Memory is counted as the capacity of the
// chunks holding records. When it exceeds MemLimit:
//
//   - with SpillDir set, Append writes the oldest sealed chunks that a Mark
//     already covered to files (one append-only file per chunk, with a
//     CRC-32C, read back and checked by Replay, MarkFull and Extract,
//     removed once trimmed and by Close). Unmarked records stay in memory
//     so that Mark never reads a file; if only they are over the limit, or
//     a spill fails, Full reports true until the next Mark or freeing Trim.
//   - without SpillDir, Full reports true: the caller stops sending
//     (backpressure) until trims free memory.
//
// # Elastic slices
//
// A slice is a contiguous key-group range of one upstream's backup toward
// one downstream operator. Extract(r) moves the key groups of r into a new
// buffer; Absorb merges a buffer whose key groups are disjoint. A buffer
// owns the key groups it has state for; sequence numbers, watermarks and
// replay results move with them unchanged. In the mark chains, the source
// records a drop and the receiver carries the moved key groups whole in its
// next Mark, so a restore after rescaling starts from the post-scaling
// ownership. SetSlices labels ranges for the per-slice figures of Stats.
//
// # Concurrency
//
// A Buffer is owned by one goroutine (its instance's); only Stats may be
// called from others. Record keys and data handed to Replay's callback are
// valid only during the call.
package backup
