// Package exact runs the simulation as a pure function of its seed and
// its build: the sim compiled for wasip1 (sim/guest) runs under wazero,
// on one thread, with
//
//   - a virtual clock that stands still while the guest works and jumps
//     to the next timer when every goroutine waits (the host's sleep);
//   - random bytes from a ChaCha8 stream keyed by the seed (the Go
//     runtime's own seeds, map order and select's choices included);
//   - a deterministic preemption: Go's wasm port has no preemption, and
//     a goroutine that loops without blocking (yamux's Stream.Read on a
//     session shut down under it) would starve every other one, so every
//     Every-th call of the mutex's Lock the host marks the running
//     goroutine for preemption (its stack guard, as the runtime's own
//     preemption does), and it yields at its next function call;
//   - a fixed environment, arguments and epoch, and the run directory
//     mounted as /run.
//
// The same guest, seed and arguments give the same run: the same events
// in the same order with the same fields, their times included, on any
// machine and under any load.
//
//	Build(ctx, src, cache)             -> the guest's wasm, built with the go command on first use
//	New(ctx, wasm, cache)              -> a Host, the guest compiled (cached on disk)
//	(*Host).Run(ctx, Spec)             -> Stats: one run, its exit code and virtual time
//
// The driver of `spate sim` (package sim) decides what to run; this
// package only runs it. It does no scheduling of its own beyond the
// preemption above.
package exact
