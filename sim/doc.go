// Package sim is the seeded whole-cluster simulation: the coordinator and
// every node in one process, on the in-memory transport, the sinks' output
// in a run directory, driven by a nemesis that draws a configuration and a
// compound fault schedule from a seed, and checked by the oracle.
//
//	Resolve(seed, cfg)         -> Config: the seed's configuration (pure)
//	Plan(seed, cfg)            -> []Step: pure, the same seed gives the same schedule
//	Run(ctx, seed, cfg, dir)   -> Result: the run and its verdict
//	Main(args, stdout, stderr) -> `spate sim`
//	ScheduleOf(seed, cfg)      -> ScheduleFile: the seed's run written down (pure)
//	ParseSchedule(file, data)  -> ScheduleFile (or a one-line error); Format writes it
//	Shrink(file, fails)        -> the shortest failing file found (pure, over a predicate)
//	ShrinkRuns(ctx, file, ...) -> Shrunk: Shrink on the cluster, each schedule tried K times
//
// # The whole product (Config.Wide: `spate sim`, TestSeeds)
//
// Each seed draws its configuration from a PCG stream of its own (axes.go:
// axesSeq), apart from the fault schedule's, so that adding an axis never
// moves a seed's faults; `spate sim --only ft=global,rescale=restart`
// pins axes and leaves the others drawn. The axes, with their weights:
//
//	ft         spate 0.5, global 0.25, none 0.25   (coord's --ft)
//	rescale    live 0.6, restart 0.4               (--rescale eds|restart)
//	recover    single 0.6, parallel 0.4            (--recover)
//	store      mem 0.4, dir 0.3, coord 0.3         (one in-memory store; the
//	           run directory on disk; --store coord: the coordinator's store,
//	           in memory, served over the nodes' in-process sessions)
//	autoscale  off 0.7, on 0.3                     (--autoscale)
//	source     gen 0.7, trace 0.3                  (the generator; a record
//	           trace the harness writes into the run directory, at the
//	           generator's rate for three quarters of the duration, read
//	           through trace: and ended before the drain; the job drains
//	           once every source is at its end, so a fault drawn after
//	           the run has finished is not sent)
//
// TLS is not an axis: a node's peer links carry the link fault layer
// under TLS (the raw connection is wrapped, then the TLS client), so over
// the in-memory transport the layer sees ciphertext and cannot hold
// traffic between two yamux frames (netfault.Framed does nothing on a
// TLS connection); a held reader would wait inside a TLS record on a
// mutex, which stops the virtual clock. TLS is covered by the multi-process
// tests, not here.
//
// The schedule: one to three bursts, each of one to three faults within a
// few hundred milliseconds of each other around one instance (itself, an
// upstream or a downstream of it), some in the last moment before the
// drain or during it. Each fault is drawn from the whole chaos DSL with
// these weights (nemesis.go, wideWeights):
//
//	kill       0.18   SIGKILL's twin: every connection of the node closed
//	restart    0.06
//	isolate    0.08   pause's twin (below): the node's links held, 100 ms to 3 timeouts
//	partition  0.10   shape one, majority, bridge, one-way (one or majority),
//	                  or explicit groups of n1..nN, a fifth each; 100 ms to 3 timeouts
//	link       0.18   latency 5-150 ms with jitter 1-40 ms, bandwidth
//	                  256KiB/s-4MB/s, stall (100 ms to 3 timeouts), reset;
//	                  a quarter each
//	store      0.22   slow 20-400 ms, fail 200-1500 ms, corrupt the newest
//	                  checkpoint; a third each
//	scale      0.12   count or rollup by one or two, in every mode: the
//	                  cluster refuses what its mode does not allow (a live
//	                  rescale under --ft global or none), as `spate scale`
//	                  does, and the answer is in the steps
//	heal       0.06   every fault lifted
//
// and per seed, after the bursts: the coordinator paused past the nodes'
// timeout (one seed in five) and crashed and resumed (one in four; never
// under --ft none, whose run cannot resume). An --ft none seed is checked
// for what none promises: with even odds it draws only faults none
// survives (latency with jitter, bandwidth, a slow store, a stall shorter
// than half the timeout; no pause or crash of the coordinator) and is
// checked 0/0/0, or it draws from the whole table and, when its schedule
// has a fault that loses state (LosesState), is checked only to finish:
// its verdict says "not checked for exactly-once".
//
// Without Wide (the regressions, whose seeds keep the schedules they were
// found with) the configuration is Config's fields as set and the table
// is the narrower one of before: kills, restarts, isolations, damaged
// newest checkpoints, failing writes, rescales under --ft spate.
//
// How deterministic a replay is. The schedule is a pure function of the
// seed (and of the nemesis's code), so a replay applies the same faults at
// the same job times. In the native mode (`spate sim --seeds N`, TestSeeds)
// the cluster's interleaving is not: goroutines, channels and the
// scheduler decide which message is taken first. Under testing/synctest
// (TestSeeds) the clock is virtual, so every timer, timeout and fault time
// is exact and only the scheduling of goroutines between two instants
// varies; `spate sim --native` runs on the real clock, where the machine's
// load moves every time too.
//
// The exact mode (`spate sim --seed S`, `--exact`; package sim/exact)
// makes the whole run a function of the seed: this package built for
// wasip1 (sim/guest) runs under wazero on one thread, with a virtual clock
// that moves only when every goroutine waits, random bytes from the seed
// and a preemption every so many mutex locks, counted, not timed. Two runs
// of a seed give the same event log byte for byte, times included, and
// `spate sim --seed S` runs it twice and compares the logs' sha256
// (TestExactReplayIsAFunctionOfTheSeed does so loaded and at another
// GOMAXPROCS). Why wasm rather than a scheduler of our own: the product's
// code runs unchanged (its goroutines, yamux, the stores), where a
// single-threaded scheduler over pure cores would simulate a different
// program; Go's wasm port already runs every goroutine on one thread and
// takes its clock and its randomness from the host. What it costs: the
// guest runs several times slower than the native mode (the figures are in
// MEASUREMENTS.md), so bulk runs stay native, and a seed a native batch
// finds failing is run again exactly (`spate sim --seed S`); its exact run
// is a different interleaving, which may pass. The exact mode needs the go
// command and the source tree (it builds its guest on first use, cached in
// the user's cache directory).
//
// A seed that fails once is recorded in sim_test.go's regressions and run
// by every `go test`; a seed of the whole-product nemesis that finds a bug
// not fixed yet is in nemesis_test.go's knownFailingWide, with its class.
//
// What the in-process twin changes: a kill closes every connection of the
// node (as the kernel does for a dead process) and cancels its goroutines,
// and its checkpoint store refuses its writes from then on (a write it had
// begun, slowed by a store fault, would otherwise land after its death);
// a pause is not possible in process, so the nemesis isolates the node
// instead (its links, the coordinator's included, are held and flow again
// when the isolation ends); a pause of the coordinator stalls its event
// loop (`pause coord`) while its readers run on, where SIGSTOP would stop
// them too; a crash of the coordinator (`crash coord`, a quarter of the
// seeds, resumed 50-1550 ms later by a coordinator started with Resume on
// the same run) stops its loop where it is, drops the work it had not
// carried out and closes its sessions (coord.Options.Crash), and the
// resumed one adopts the in-process nodes (coord.Options.Adopt); the
// regressions found before the crash existed run without it
// (Config.NoCrash); the control API is handed over in process
// (coord.Options.Control), not served over HTTP; batches and watermarks
// are flushed every 20 ms of job time instead of 5 (fewer frames, the
// same interleavings of faults); and a link fault holds traffic only
// between two yamux frames (netfault.Config.FrameAligned), since a reader
// held inside one waits on a mutex, which stops the virtual clock.
//
// What the twin cannot draw: TLS (above); a stop of a node's process
// (SIGSTOP: isolation stands in, and the node's own timers run on); nodes
// joined from another host with --join (every node here is spawned by its
// coordinator and sees the run directory); an S3 store; a coordinator
// whose readers stop with its loop.
//
// # Broken on purpose (Config.Break, `spate sim --break NAME`)
//
// A seed can run with one mechanism of the protocol deliberately wrong
// (internal/breaks: trim-newest, accept-fenced, early-commit,
// replay-late, stale-slice), carried to the coordinator and every node
// as coord.Config.Break; its verdict says "BROKEN ON PURPOSE: NAME". It
// proves the nemesis and the checks can fail: TestEachBrokenVariantIsCaught
// pins, per variant, a seed that fails with it and passes without it,
// and TestHuntABrokenVariant (-sim.break NAME) finds the first such seed.
// The coordinator's invariants (CheckInvariants, always on here) are
// checks too: accept-fenced and early-commit are caught by them first.
package sim
