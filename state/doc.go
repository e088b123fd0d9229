// Package state is the keyed state of spate's operators and its
// checkpoints: state per key group with dirty tracking and a
// copy-on-write capture, full and delta snapshots, their merge, and the
// checkpoint store.
//
// # Capture, then persist
//
// A checkpoint follows hashicorp/raft's snapshot contract: a quick capture
// on the owner's goroutine pins a consistent view; a slow persist on
// another goroutine encodes it while the owner goes on.
//
//  1. At a batch boundary the owner calls Table.Capture (through its
//     operator). It costs O(key groups), whatever the number of keys or
//     dirty keys: it hands each group's entry list (full) or dirty list
//     (delta) over, touches no entry and copies no value. The captured
//     entries are pinned.
//  2. A background goroutine runs EncodeCapture (Capture.Each), which
//     reads each pinned value in place, concurrently with the owner's
//     Process and Advance, and writes each entry in its stored form as it
//     goes; once Each has returned, it puts each group's entries in key
//     order (the format's, which a restore's merge of a chain needs). If
//     the owner changes a pinned value first (Entry.Mut), it saves a
//     clone for the capture: only what is written during the persist is
//     copied, never the whole state. When Each returns, nothing is pinned
//     any more.
//  3. The goroutine builds a Snapshot (adding the runtime's Sections),
//     encodes it (the groups' entries copied as they are, the body
//     compressed with S2, CRC-32C) and Puts it in the Store (temporary
//     name, write, fsync, rename, fsync the directory). EncodeCapture and
//     EncodeParts take a Scratch, the storage the previous checkpoint's
//     encoding used, so that a checkpoint of a large state allocates
//     nothing; the plain sections (the upstream backup's records) are
//     written from the caller's storage, never copied behind the header.
//  4. Only then may the coordinator count the checkpoint as complete.
//
// At most one capture per Table is in flight; Table.Capture waits for the
// previous one to end, and Table.Busy tells whether it would. The runtime
// keeps at most one checkpoint per instance in flight (Planner). If a
// checkpoint is not made durable, the next one must be full: the table's
// dirty tracking was reset by the lost capture (Planner.Failed).
//
// # Table and Entry
//
// Get, Upsert, Delete, Range, DropGroup and Capture belong to the owner
// goroutine, and so does every Entry. Call Entry.Mut before every change of
// a value. On the hot path (no capture running, entry already dirty) Mut is
// one atomic load and an epoch comparison.
//
// A restore builds each key group off the table (GroupBuilder), on as many
// goroutines as it likes, and attaches the groups once they are all
// built: a restore that fails leaves the table as it was.
//
// # Snapshots and chains
//
// A Snapshot is full (every key of every group) or a delta (the keys changed
// or deleted since its parent, and whole the groups created or restored
// since, marked Reset, as are the groups dropped since). Checkpoint ids
// increase per instance; a delta names its predecessor (Parent), which is
// what links a chain, and the full snapshot its writer's chain started at
// (Base), or the checkpoint a restored writer continued from. A writer that
// continues a restored chain (next id, Parent the restored id) may do so
// only if it restored every group of that checkpoint: otherwise the chain
// would still hold the groups it did not take; it starts over with a full
// snapshot instead. Ids in a chain are consecutive. Merge folds a chain into
// one full snapshot; a restore uses MergeGroups instead, whose key groups
// are merged as they are read, on snapshots from DecodeLazy, which leaves
// the entries in the decompressed body: every entry is read once, copied
// nowhere. Chain picks the files of a chain from their names;
// Collectable says which files garbage collection may delete while keeping
// the latest complete checkpoint and the previous one restorable;
// Config.WantFull and Planner decide when a checkpoint is full (every
// FullEvery-th, or when the deltas outweigh a fresh base: ChainState).
//
// The stored form is a 28-byte header (magic "SPCK", version, codec, raw
// and stored lengths, CRC-32C of header and body), the plain sections
// (Snapshot.Plain: the upstream backup's records, compact already, kept
// as they are) and the compressed body: S2, cheaper to encode and to
// decode than zstd at its fastest level for somewhat more bytes
// (MEASUREMENTS.md has the figures); zstd (codec 1), what the body was
// before, is still read. snapshot.go has the layout. Decode checks
// everything and fails with ErrCorrupt, saying what is wrong, never with
// a panic. A group of a snapshot that DecodeLazy or EncodeCapture made
// holds its entries in the stored form (GroupData.Len and KVs read it);
// encoding copies them as they are.
//
// File names carry the instance, the generation and the id
// ("count#0/g00000002-c000000017-full.ckpt"), so a zombie of an older
// generation never overwrites its successor's files. A new generation
// either starts with a full snapshot or continues the chain of the
// checkpoint it restored with the next id; Chain prefers, for each id, the
// newest generation not above the target's.
//
// # Store
//
// Store is the I/O seam: DirStore on a file system, MemStore in memory
// with fault hooks (failing, slow puts; corrupted files) for tests; the
// coordinator store and the S3 store are in package stores. Every
// implementation passes the one table of contract tests in
// state/storetest: atomic and durable puts, damage caught on read (by
// the store's own checksum, or by the content's), lists by prefix,
// deletes, not-found and bad-name errors, concurrent puts.
//
// Errors are the sentinels of errors.go, wrapped with what and where.
package state
