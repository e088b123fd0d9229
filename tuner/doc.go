// Package tuner is the checkpoint-interval tuner (DOCI): the load-aware
// interval model, the online controller that applies it per operator
// instance, the failure sources it is fed with, and the trace-driven
// simulator behind `spate tuner sim`. MODEL.md derives the model and
// reports what the simulator measures.
//
// # The model (model.go)
//
// Efficiency is useful processing time over useful plus wasted time. The
// waste of an instance with interval T is checkpoint cost C(n)/T, where n is
// the tuples processed since the previous checkpoint and C grows with the
// keys they dirtied (CostModel), plus, per failure, detection, restart,
// state load, and replay: the tuples processed since the restored
// checkpoint divided by the processing rate, ρ·(T/2 + P) in time. Params
// holds the inputs, Waste and Efficiency evaluate an interval (the replay
// term exact for Poisson failures: ReplayPerFailure; ReplayOver and
// ReplayAt for a run of a few failures from a clean start), FirstOrder
// returns the first-order optimum in closed form or by a bracketed Newton
// iteration, and Optimal refines it when failures are frequent. Young and Daly are the classical formulas, for comparison.
// All are pure functions.
//
// # The controller (controller.go)
//
// Controller is a pure state machine, like etcd's raft core: measurements
// go in through ObserveLoad (tuples an instance processed over a span),
// ObserveBusy (those tuples' processing time) or ObserveCapacity, ObserveCheckpoint (tuples, dirty keys, cost, persist
// time) and ObserveFailure (detection, restart and load times); Tick(now)
// hands back a Decision per instance that is due, with the interval, the
// smoothed inputs, the predicted efficiency and a Reason. Input rate and
// capacity are EWMAs in time normalised by their weights (capacity a ratio
// of smoothed tuples to smoothed busy time); the cost fit is a forgetting
// least-squares line in dirty keys (a slope only when it is significant);
// the failure rate is per instance, a Gamma–Poisson posterior mean whose
// prior is the pooled rate, itself a posterior mean over all instances
// from a prior (PriorMTBF, PriorWeight; typically a fitted failure trace's
// MTBF); the instance prior's weight is estimated from the spread of the
// instances' counts (InstanceWeight). A failure makes every instance due
// at the next Tick. Intervals are bounded by Min, Max and MaxBackup/rate
// and move only when the optimum leaves a hysteresis band.
//
// The caller owns time: a Duration from an origin of its choosing, which
// must not go backwards between Ticks. The controller has no clock,
// goroutine or randomness, so a sequence of calls always gives the same
// decisions. The driver's loop is:
//
//	for each measurement: ctl.Observe...(id, now, ...)
//	every tick:           for _, d := range ctl.Tick(now, buf[:0]) {
//	                          emit d (with d.Reason()); if d.Changed { set id's interval to d.Interval }
//	                      }
//
// The live driver is the coordinator (coord/tuner.go, `--interval auto`);
// MODEL.md, section 12, says what it feeds the controller and how
// `spate bench tuner` measures the result.
//
// A Controller is not safe for concurrent use. A Sim is immutable once
// made, and Run may be called from several goroutines at once.
//
// # Failure sources (failures.go, lanl.go, fta.go, dist.go)
//
// OpenFailures reads "poisson:MTBF", "weibull:SHAPE,SCALE", "lanl:PATH" (the
// LANL LA-UR-05-7318 CSV) and "fta:PATH" (a Failure Trace Archive
// event_trace table), gzip or plain. A trace is reduced per node to the
// times from a repair to the next failure (pooled over nodes; FTA's last up
// intervals are right-censored) and to repair times, and both are fitted by
// maximum likelihood to an exponential and a Weibull distribution; the one
// with the lower AIC is used unless fit= says otherwise. Failures.Times
// draws an instance's failure times from the fitted renewal process,
// deterministically from (seed, instance).
//
// # The simulator (sim.go, keys.go, load.go, simmain.go, plot.go)
//
// ReadLoad turns any traces source into per-second counts. NewSim lays the
// keys (Zipf, hashed into key groups, key-group ranges balanced by load)
// onto instances, draws their failures and prepares the static intervals;
// Run(policy) replays the load second by second through a fluid model of
// each instance (queue, checkpoint captures that pause it, asynchronous
// persistence, failures, recovery with replay), and accounts every second
// of its time as useful, checkpoint, lost work, replay or downtime. Run is
// deterministic. SimMain is `spate tuner sim`; it runs the policies
// concurrently (the only goroutines in the package) and prints a table,
// JSON and an SVG.
//
// # Calibration (calibrate.go)
//
// Calibrate reads a run's events.jsonl and measures the simulator's costs:
// the checkpoint cost line (least squares of capture plus encoding against
// the keys written, full and delta checkpoints of the keyed instances
// alike), the persist time, the capacity per busy second, and the
// detection, placing and restore times of the run's kills, each with the
// samples it rests on. It is pure: a reader in, a Calibration out.
// `spate tuner sim --calibrate RUN_DIR` opens the file and applies the
// measured values to the flags not given explicitly.
//
// # Errors
//
// Bad input is one line: "FILE:LINE: what" (*LineError, wrapping
// ErrMalformed) for a failure-trace line or an events line, "SPEC: what" (wrapping ErrSpec)
// for a spec, ErrParams for out-of-range parameters or observations.
// Nothing panics on any input.
package tuner
