// Package node is the worker process: `spate node`, started by the
// coordinator (or joining one with --join and --token).
//
// A node dials the coordinator, joins by the token challenge (which never
// sends the token: wire/SPEC.md, "Joining the coordinator") and runs yamux
// over that one TCP connection; its first stream is the control
// stream (wire.Control messages one way, wire.Control and wire.Heartbeat
// the other). It listens for its peers: between two nodes there is one TCP
// connection and one yamux session, dialled by the node whose name sorts
// first, and every (upstream instance, downstream instance) pair of the job
// is one yamux stream on it. Instances on the same node exchange the same
// encoded batches through a channel instead.
//
// # TLS
//
// The coordinator's challenge says whether the run is TLS (`spate up
// --tls`, or a coordinator listening off loopback); a node has no flag of
// its own for it. With TLS the node makes a key, gets its certificate
// (naming it) from the run's CA in the join, and then every link it has
// is TLS 1.3 with mutual authentication (tls.go): the coordinator link
// (control and store streams), the peers it dials (whose certificate must
// name the peer it dials) and the peers it accepts (a certificate of the
// run's CA is required, and the hello's name must be the certificate's).
// A peer connection without a valid certificate of this run is refused
// with one log line and one node_refused event naming its address, and
// nothing it sent is acted on. Without TLS, peers greet each other with
// the token, as before.
//
// The life of a node: hello → deploy (build the instances it hosts, connect
// its peers) → ready → start (sources begin, each partition read only as
// far as the coordinator's latest grant) → drain (sources read exactly to
// the end the drain names and stop, a final watermark fires every window,
// every stream ends) → done per instance → stop. A node whose coordinator
// connection ends without a stop keeps its instances and their streams
// and dials the coordinator again every 200 ms for --coord-timeout (30 s):
// it rejoins under its own name a coordinator of the same run (one started
// with `spate up --resume`), which then stops and restores its instances;
// with none in time, or told to stop (a refused rejoin: a fenced zombie),
// it stops its instances and exits cleanly.
//
// # A node on another host
//
// A node that joined with --join decides at deploy whether it sees the
// run directory: it does when the directory the plan names holds the
// run's token file with its own token (store.go). One that does not (a
// node on another host, without a shared file system) writes nothing
// there: its checkpoints and its sinks' output go to the coordinator's
// store over its own session (unless --store says s3://; --store dir is
// refused with one line), the input file of a trace: or rate: source is
// fetched from the coordinator at deploy (wire.SpaceInput) and read from
// its copy, and its backups spill into a directory of its own under the
// system's temporary directory, which it removes when it exits. It logs
// to its own stderr, a deploy it cannot carry out included. With no
// --listen it accepts its peers on the address it reaches the
// coordinator from, port 0, so that peers on the same network can dial
// it.
//
// Each instance runs in one goroutine that owns its operator: keyed
// instances consume a bounded input channel of encoded frames (backpressure
// reaches the upstream through yamux flow control; a keyed instance whose
// upstream backup is full stops taking input until trims make room, see
// backpressure.go), drop sequence numbers they have already applied,
// forward the minimum watermark of their inputs, at most once a flush
// period (up --flush, 20 ms by default), and flush output batches by
// size and by time. A paced source sends, with its watermark, what a
// flush period brought, as one batch per link, in one write. A malformed frame
// closes the one stream that carried it and is reported as an event; it
// never stops the process.
//
// # Early restore
//
// A keyed instance restored from a checkpoint (CtlRestore under --ft
// spate, with no slices to load after the chain, and every key group of
// the chain its own) does not wait for its whole state before it runs.
// It reads, checks and merges the chain and rebuilds its input
// positions, output counters, watermark and upstream backups, answers
// restored and starts; its key groups' state is built off the table on
// loader goroutines, and each group is attached on the instance's
// goroutine as soon as it is whole (the chain is merged first, so every
// file that holds the group has been applied, in order). Until then:
//
//   - a record of a live key group (attached, or held by no file of the
//     chain) is applied at once; a record of a key group still loading
//     is held, in arrival order per key group, without moving its
//     position, and applied when the group is attached, through the
//     same duplicate and gap checks as any record: once, in order;
//   - the watermark stays at the checkpoint's: no window fires and none
//     is sent on, for any key group, until every group is attached, so
//     the output, its order and its numbers are a whole load's (the
//     operators emit only when windows fire, and the backup they append
//     to is whole before the instance starts);
//   - no checkpoint, rescale capture or drop is taken, and a slice
//     loaded into the instance and the end of its input (finish) wait:
//     a checkpoint never holds part of the state, and its positions
//     cover only what was applied;
//   - held records are bounded (64 MiB): past it the instance takes no
//     input, which backpressures its upstreams.
//
// A failure to build a group after the answer (its file passed its
// checksum, so only a writer's bug can cause it) stops the node, whose
// instances are then restored elsewhere. Sources, sinks, --ft global and
// a restore with slices load the whole chain before they answer, as
// before.
//
// # Memory
//
// A node process (`spate node`; not the nodes the simulation and the
// tests run in one process) trades memory for CPU. Its garbage collector
// runs at GOGC 400 under a soft limit of 2 GiB (GOGC and GOMEMLIMIT in
// the environment win). Where the kernel's transparent huge pages are in
// mode "madvise", the node asks for them over its heap (hugepages.go): at
// start it advises the first GiB of heap address space, before anything
// is allocated there, and every second any mapping the heap grew by
// since. A node's state is read at random and fills while it runs: with
// 4 KiB pages each page costs a fault when first touched and each random
// read a walk of the page tables; with 2 MiB pages, 512 times fewer
// faults and a TLB that reaches 512 times as far. The log says once how
// much it advised. SPATE_HUGEPAGES=off turns it off; modes "always" and
// "never" leave nothing to do. The price is memory: a node holds its heap
// in 2 MiB pages, so its resident size grows by up to a huge page per
// sparsely used region.
//
// Every node, in a process of its own or not, recycles the buffers that
// carry batches from a stream to its instance (payload.go): a batch is
// applied, then its buffer goes back to a pool by size, as a record is
// only borrowed by what applies it.
//
// # Profiling
//
// A node whose environment has SPATE_CPUPROFILE=DIR writes a CPU profile
// of its whole life to DIR/NAME-PID.prof (the coordinator passes its
// environment on to the nodes it spawns; `spate bench overhead --profile`
// sets it per run). The profile is written when the node exits after a
// stop or its coordinator's loss; a node killed by a signal leaves an
// empty file. Each instance's goroutines carry profiler labels (instance,
// gen, and role: persist or replay, none for its loop), so that
// -tagfocus cuts a profile by instance, generation and role.
//
// # Broken on purpose
//
// The plan's Break (wire.Deploy, from `spate up --break`) turns on a
// broken variant of the protocol (internal/breaks); none unless named.
// The node holds three, each at one place: trim-newest (onCompleted
// trims at the newest checkpoint), replay-late (oneLate: a replay starts
// one record late) and stale-slice (sliceState: a moved slice's state
// from before its move). coord/PROTOCOL.md, "Broken on purpose", lists
// them with the rule each breaks.
package node
