// Package sim is the seeded whole-cluster simulation: the coordinator and
// every node in one process, on the in-memory transport, checkpoints in
// one in-memory store and the sinks' output in a run directory, driven by
// a nemesis that draws a compound fault schedule from a seed, and checked
// by the oracle.
//
//	Plan(seed, cfg)            -> []Step: pure, the same seed gives the same schedule
//	Run(ctx, seed, cfg, dir)   -> Result: the run and its verdict
//	Main(args, stdout, stderr) -> `spate sim`
//
// How deterministic a replay is: the schedule is a pure function of the
// seed (and of the nemesis's code), so a replay applies the same faults at
// the same job times. The cluster's interleaving is not: goroutines,
// channels and the scheduler decide which message is taken first. Under
// testing/synctest (TestSeeds) the clock is virtual, so every timer,
// timeout and fault time is exact and only the scheduling of goroutines
// between two instants varies; `spate sim` runs on the real clock, where
// the machine's load moves every time too. A seed that fails once is
// recorded in sim_test.go's regressions and run by every `go test`.
//
// What the in-process twin changes: a kill closes every connection of the
// node (as the kernel does for a dead process) and cancels its goroutines;
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
package sim
