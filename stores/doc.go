// Package stores holds the checkpoint and output stores that are not a
// directory, and the `--store` setting that chooses among them:
//
//   - the coordinator as a store (Server, on the coordinator, and Client,
//     on a node): requests travel on the node's own yamux session to the
//     coordinator, one stream per request (wire/SPEC.md, "Store streams"),
//     authenticated by the session's join (the token challenge) and,
//     when the run is TLS, inside the node's TLS link; the coordinator
//     keeps the files in the run directory. It is what a node that cannot
//     see the run directory (one on another host) uses by default.
//   - an S3-compatible object store (S3), with minio-go: one object per
//     store name under s3://BUCKET/PREFIX/RUN/{checkpoints,output}/.
//   - Files, a read-only store over files the caller names: the
//     coordinator serves the run's input file through it (the input
//     space), for a node on another host.
//
// # Contract
//
// Every Store here keeps the contract of state.Store that DirStore
// keeps, and is checked by the same table of tests (state/storetest):
// a Put is atomic (a reader sees the old content or the new, never a
// mix) and durable once it returns nil (fsync and rename on the
// coordinator; an acknowledged PUT on an object store); List returns the
// names under a prefix, sorted; Get and Delete of a missing name wrap
// state.ErrNotFound, a name that breaks state.CheckName wraps
// state.ErrBadName and is refused before any I/O. Content is
// checksummed with CRC-32C end to end: the coordinator store checks it
// on both ends of every transfer, the S3 store keeps it in the object's
// metadata and checks it on every read; content that fails its check is
// never handed back as good, the error wraps state.ErrCorrupt. (At rest
// in the run directory, the coordinator store is the DirStore, whose
// checkpoint files carry their own CRC-32C.) Neither needs append or
// rename: the sinks' output goes into immutable numbered segments and
// a manifest object written whole (node/output.go).
//
// Client, Server and ObjectStore count what crossed the network for them
// (Traffic, traffic.go): the store streams' bytes for the coordinator
// store, the HTTP bodies for an object store. A node reports its stores'
// count in store_traffic events, the coordinator its server's in
// run.json (store_traffic).
//
// Every type is safe for concurrent use. Requests have an idle timeout
// (Timeout): a store that stops answering fails the request, it never
// hangs a checkpoint for good.
//
// Bad settings fail early with one line naming the flag: a malformed
// --store URL, missing credentials (read from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, or MINIO_ACCESS_KEY and MINIO_SECRET_KEY, or
// MINIO_ROOT_USER and MINIO_ROOT_PASSWORD; never from the command line),
// an endpoint that does not answer.
package stores
