// Package slices is the pure core of elastic data slices (EDS): how an
// operator's key groups are cut into slices, how a change of parallelism
// moves them, how upstream backup follows, and when to change parallelism.
// It has no goroutines, no I/O, no clocks and no randomness: the
// coordinator calls it and carries out what it returns.
//
// # Slices and assignments
//
// The unit is the key group (G of them, 128 by default, fixed per job). A
// Slice is a contiguous key-group range of one operator's state; a
// BackupSlice is a contiguous range of one upstream instance's backup
// toward that operator, with a sequence number per (producer, key group).
// An Assignment says which instance (by index) owns which ranges; a valid
// one partitions [0,G) exactly and leaves no instance empty.
//
// # Plans
//
// Rescale(old, n, load) and Rebalance(old, load) return a Plan: the new
// assignment, one contiguous range per instance, and the Moves (maximal
// runs of key groups whose owner changes). The new assignment has, in this
// order of priority, the least largest instance load under the measured
// per-key-group load, the largest smallest instance load, the fewest key
// groups moved, the least sum of squared loads, and the first place in a
// fixed search order; so a plan is deterministic. The search keeps the
// surviving instances in their old order along [0,G) and slots new ones
// between them: scale-out makes the existing owners give up slices to new
// instances (indices old.N()..n-1); scale-in removes the highest indices
// and their neighbours take over their key groups.
//
// # Moving a slice
//
// A Move{R, From: A, To: B} is carried out in this order:
//
//  1. Capture. At a batch boundary A captures the state of R and its input
//     positions per (producer, key group of R): a per-slice checkpoint. It
//     is written durably and recorded in the manifest before anything
//     else happens; it is R's recovery point from then on (recovery
//     restores from the post-scaling status, never from a pre-scaling
//     checkpoint, and never redoes the move). From the capture on, A drops
//     records of R that still reach it: B gets them by replay.
//  2. Load. B loads the per-slice checkpoint and owns R, with the
//     captured positions as its input positions for R.
//  3. Re-route. Every upstream routes R to B and re-sends from its backup
//     everything of R after the captured positions, with the same
//     sequence numbers (B discards what it has already applied).
//  4. Backup follows. Each upstream's backup slices toward the operator
//     are recut (Recut: Split and Merge only) to the new assignment's Cuts,
//     so that every backup slice follows one owner and is trimmed by that
//     owner's checkpoints.
//  5. Drop. A drops R's state.
//
// Only R waits, from step 1 to step 3; records of key groups that do not
// move never wait. If A fails before the capture is durable, R is still
// A's and is recovered with A; once it is durable, R is B's.
//
// # Invariants (checked by the property tests)
//
//   - No key group is lost or owned twice, across any sequence of
//     Rescale and Rebalance with any loads and n in [1,16].
//   - Every move's range is owned by From in the old assignment and by To
//     in the new one; moves are disjoint; Apply(old, n, moves) is the new
//     assignment; key groups not in a move keep their owner.
//   - The same arguments give the same plan.
//   - On small G, against brute force: the least largest load and the
//     largest smallest load of all contiguous plans, and the fewest moves
//     of those that keep the survivors' order.
//   - Split, Merge and Recut of backup slices keep every (producer, key
//     group)'s position, and the slices keep covering their key groups
//     once each; merging slices that are not adjacent, overlap or belong to
//     different upstreams is an error.
//
// # The auto-scaler
//
// Decide applies, per operator, the rule of DS2 (Kalavri et al., OSDI
// 2018): the parallelism needed is ceil(target rate / true processing rate
// per instance), where the true rate is records processed per second of
// busy time, so it is not hidden by waiting or backpressure. Ours differs:
//
//   - The target rate is the operator's observed input rate, plus
//     Backlog/DrainTime while the backlog grows. DS2 instead propagates the
//     sources' rates through the graph with each operator's true
//     selectivity and sizes every operator in one step; under
//     backpressure the observed input of a downstream operator
//     underestimates its demand, so ours may need a step per operator
//     where DS2 needs one (the growing-backlog term makes up for part of
//     it).
//   - Instances are sized at a target utilisation (0.7 by default), not at
//     100% of the true rate, for headroom.
//   - No change while the projected utilisation stays within
//     TargetUtil·(1±Hysteresis), none during the cool-down after a change,
//     no scale-in while the backlog grows, and always within [Min, Max]
//     (a parallelism outside the bounds is brought inside at once, cool-down
//     or not).
//
// Every Decision carries its inputs and a reason naming the numbers, for
// its event: "input 180k/s > 2 × 70k/s true rate at 70% target: 2 → 4".
package slices
