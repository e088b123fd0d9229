// Package coord is the coordinator: `spate up` and `spate verify`.
//
// Up creates the run directory (run.json, the token, events.jsonl,
// checkpoints/, output/, logs/), listens for nodes, spawns the local ones
// (the binary re-executed as `spate node`, each in its own process group),
// authenticates every connection by the token challenge (the token never
// crosses the wire: wire/SPEC.md, "Joining the coordinator"), places the
// instances and sends the plan.
//
// TLS (tls.go): the run's links are TLS 1.3 when --tls asks for it or when
// the coordinator listens on an address off loopback (--listen 0.0.0.0:P:
// the only way a node can join from another host). The coordinator then
// makes the run's CA (ca.crt, and ca.key with mode 0600, in the run
// directory), certifies each node by the name it gives it as it joins, and
// runs each node's session inside TLS, requiring the very certificate it
// issued. Without TLS it refuses a join from another host. run.json says
// which (tls). Every refused connection is one node_refused event naming
// the remote address.
//
// Its decisions are a core with no I/O (core.go): inputs in, each with its
// time, and a batch of work out (control messages, spawns, signals,
// deletes, manifest writes, events). The driver (driver.go, work.go) owns
// the sessions, processes, stores and clock: its event loop is the only
// goroutine that touches the core, and an executor carries the work out
// in the order the core decided it, off the loop. Reader goroutines, the
// manifest writer, the executor and the accept loop talk to the loop
// through channels only, so the protocol logic never races
// (PROTOCOL.md, "The coordinator: a core and its driver").
//
// What it guarantees, with --ft spate (coord/PROTOCOL.md has the details):
//   - a checkpoint is complete once its file is durable and a manifest that
//     lists it is written atomically; only then is it acknowledged, and
//     only the files that no restorable chain (latest two complete
//     checkpoints per instance) needs are deleted;
//   - a node is lost when its session ends or no heartbeat has arrived
//     within the timeout (judged by arrival time, after taking in what is
//     queued); its instances get a new generation on the least-loaded
//     survivor and are restored from their latest complete checkpoint, or
//     the previous one; reports from an older generation are refused;
//   - output/MANIFEST.json bounds every older generation's sink file to
//     its committed length; it is written whole into the output store
//     (the run directory's output/, or the object store of --store s3://),
//     where the sinks' files are files or immutable segments (output.go).
//   - the coordinator's own state (placements and generations, the
//     drain, grants, moved slices) is a record in the same file as the
//     manifest, durable before any work that depends on it is carried
//     out (record.go), so that `spate up --resume DIR` can take over a
//     run whose coordinator died: the nodes rejoin, every instance is
//     restored from its checkpoints with a new generation, the job goes
//     on (resume.go, adopt.go; PROTOCOL.md, "A coordinator that can
//     crash").
//
// Checkpoints and output go where --store says (store.go): the run
// directory, the coordinator (it answers the store streams of every node
// session: a node that joined from a host that cannot see the run
// directory uses it by default), or an S3-compatible object store. The
// input file of a trace: or rate: source is served read-only on the same
// streams, for the nodes on other hosts.
//
// Nodes on other hosts: with --local K < --nodes, the others join with
// `spate node --join ADDR --token T` and are named in the order they
// join. The coordinator has no process of theirs: chaos kill, restart,
// pause and resume of one are refused; a lost one is not respawned, its
// instances are restored on the survivors (PROTOCOL.md, "Failure and
// local recovery"); a node that joins once the job is deployed is
// refused.
//
// With --ft global it runs aligned global checkpoints and rolls the whole
// job back on any loss; with --ft none a loss is reported and the
// downstreams treat the lost streams as ended.
//
// With --interval auto (the default) the interval tuner (tuner.go) sets
// each instance's checkpoint interval from live measurements and reports
// every decision as an interval event; the control action interval pins
// an instance's interval by hand.
//
// The run ends when every instance has drained (or is lost): run.json then
// records the final source positions, which fix the oracle's input for
// VerifyRun. The coordinator itself is assumed to survive.
//
// Config.Break (`spate up --break NAME`, internal/breaks) runs the
// protocol with one mechanism deliberately wrong; none unless named. The
// coordinator holds two (acceptFenced, restoreSink) and passes the set to
// the nodes in the plan; PROTOCOL.md, "Broken on purpose", lists them.
package coord
