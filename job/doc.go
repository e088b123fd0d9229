// Package job is the dataflow vocabulary of spate and the operators of its
// built-in jobs.
//
// # Records and key groups
//
// A Record is {Key, Time, Value} plus an operator payload (Data). Time is
// event time in milliseconds. Key and Data are borrowed: they are valid only
// during the call that hands the record over, and an operator that keeps a
// key copies it.
//
// A key belongs to key group GroupOf(key, G) = Hash(key) mod G (FNV-1a, 64
// bit); G (Spec.Groups, 128 by default) is fixed for a job. The key group is
// the unit of keyed state, of routing and of movement: an operator instance
// owns a set of key groups, and Count and Rollup keep their state per key
// group (Groups lists them) so that it can be captured and moved one key
// group at a time.
//
// # Producers and sequence numbers
//
// Every record is numbered per (Producer, destination key group). A
// producer is a source partition or, for a keyed operator, the key group
// the record was computed from (the from argument of Emitter.Emit). Numbers
// belong to key groups, not to instances, so they survive replay, recovery
// and rescaling unchanged, and a receiver de-duplicates replayed records by
// number. This is exact because the output of each key group is a
// deterministic sequence: only sources make watermarks, from their own
// partition (SourceClock); operators forward the minimum over their inputs;
// windows fire only in Advance, in a fixed order. Whatever the interleaving
// of inputs and of Advance calls, and wherever a key group runs, it emits the
// same records in the same order.
//
// # The windowcount job
//
// WindowCount is source -> count -> rollup -> sink, with count also feeding
// the sink. Its semantics, which the oracle reproduces:
//
//   - Lateness: each source partition runs a SourceClock. Its watermark is
//     the largest event time seen so far minus Spec.Lateness; a record whose
//     time is below the watermark before it is late and dropped at the
//     source. No other record is dropped by design.
//   - Windows: tumbling, of Spec.Window ms, aligned on 0: a record at time t
//     is in [WindowStart(t, W), WindowStart(t, W)+W), negative times
//     included (WindowStart rounds down).
//   - Firing: Advance(wm) fires every window whose end is <= wm (the end of
//     a window near the top of int64 counts as MaxWatermark), in a
//     canonical order across all key groups of the instance (by window
//     end, then key hash, then key: the same whatever the input's batching
//     and the watermark's steps), and forgets it.
//     A watermark that does not move forward fires nothing. At the end of a
//     stream the watermark is MaxWatermark and every window fires. A record
//     for a window that has already fired cannot come from a correct runtime;
//     if one does, the operator counts it (Late) and drops it.
//   - count: per key and window, the number of records and the sum of their
//     values, and Total, the lifetime count of the key up to and including
//     that window (the sum of the counts of the key's windows fired so far,
//     which fire in window order). Each fired window goes to the sink as a
//     Result {op "count", key, window start, count, sum, total} (port 1) and
//     to rollup (port 0) keyed by the key's rollup group.
//   - Rollup group: GroupName(key, Spec.Rollups) = "g" + Hash(key) mod
//     Spec.Rollups in decimal, at least two digits ("g07").
//   - rollup: per group and window, the total count, the total sum and the
//     top 3 keys by count, ties broken by key in ascending byte order. It
//     fires in (window end, group) order and sends the Result {op "rollup",
//     key group name, window start, count, sum, top} to the sink.
//   - sink: writes each result as one JSON line (Result.AppendJSON, the same
//     bytes as encoding/json). Keys that are not valid UTF-8 read back with
//     U+FFFD in place of each bad byte (ResultKey).
//
// A Result is identified by (op, key, window); a correct run writes each
// identity exactly once.
//
// # The oracle
//
// Oracle computes windowcount in one process from the source partitions.
// It is an independent, plain implementation (maps, a sort, no windows in
// flight) that shares only the contract above with Count and Rollup, so
// that a bug in one is caught by the other. ReadResults parses sink output
// and Compare reports what is missing, duplicated or wrong.
//
// None of the types here is safe for concurrent use unless it says so: the
// runtime drives each operator instance from one goroutine.
package job
