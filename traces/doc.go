// Package traces provides the load sources of a job: built-in generators,
// record traces and rate traces, each a replayable, partitioned log.
//
// # Specs
//
// A source is named by a spec, opened with Open(spec, Options):
//
//	gen:diurnal[?PARAMS]   the default: a daily curve with bursts
//	gen:constant[?PARAMS]  a constant rate
//	trace:PATH?time=COL&key=COL[&value=COL][&sep=SEP]
//	rate:PATH[?zipf=S&keys=N]
//
// Generator parameters (both generators take all of them; gen:constant is
// gen:diurnal with amp=0 and burst=0):
//
//	rate=R     mean records/s of event time, all partitions (default Options.Rate)
//	day=D      length of the compressed day, a Go duration or seconds (default 120s)
//	amp=A      amplitude of the daily sine, 0..0.95 (diurnal 0.6)
//	burst=P    probability of a burst in each 10 s period (diurnal 0.2)
//	burstx=X   rate multiplier during the 1 s burst (default 3)
//	zipf=S     Zipf exponent of the key distribution, 0 (uniform)..10 (default 1.1)
//	keys=N     number of distinct keys (default Options.Keys)
//
// The rate at event time t (ms from 0) is R·(1 + A·sin(2πt/day)), times X
// during a burst. Keys are "k" and the key's rank, zero-padded to 6 digits
// (k000000 is the most frequent), drawn with probability ∝ (rank+1)^-S;
// values are uniform in 1..100.
//
// A record trace is CSV or TSV with a header naming the columns; COL is a
// header name (matched exactly, else ignoring case). The separator is the
// one the header uses (tab or comma), else the one of the file extension
// (.tsv, .tab, .csv); sep=tab|comma|semicolon|pipe forces it. CSV fields may
// be "quoted" ("" for a quote) but may not span lines; fields are trimmed
// of spaces; blank lines are skipped; a UTF-8 BOM and a leading '#' on the
// header are dropped. Times are epoch seconds (integer or fractional), RFC
// 3339, or "2006-01-02 15:04:05[.fraction]" (UTC); event time is epoch ms,
// fractions truncated. value, if given, must be an integer (else 1).
//
// A rate trace is whitespace-separated non-negative integers, value i being
// the number of records in second i. Second s with count c gives c records
// at s·1000 + j·1000/c ms (j = 0..c-1), with keys and values drawn as by
// the generators from (seed, global record index).
//
// Files may be gzip or bzip2 compressed (recognised by their magic bytes,
// whatever their name) and may be a tar, plain or compressed, whose first
// regular file is read. PATH runs to the first '?'.
//
// # Determinism and partitioning
//
// Record i of partition p is a pure function of the spec, the Options and
// (p, i); Open(p, pos) then Next gives exactly the records that reading
// partition p from 0 gives from its pos-th on. Nothing depends on time,
// scheduling or global state.
//
//   - Generators: each of the Options.Partitions partitions carries
//     Rate/Partitions. The records of a partition before tick t are
//     ⌊Λ(t)⌋, Λ the integral of its rate (see gen.go), so record i is at
//     the tick t with ⌊Λ(t)⌋ <= i < ⌊Λ(t+1)⌋: times start at 0 and never
//     decrease. Keys and values hash (Seed, p, i); bursts hash (Seed,
//     period). Open seeks by search (tens of µs per hour of event time),
//     not by generating. The floating point is done with + − × ÷ only and
//     explicit roundings (detmath.go), so the records are the same on every
//     platform and GOAMD64 level.
//   - Rate traces: global record k goes to partition k mod P; record i of
//     partition p is global record i·P + p. Keys and values depend on
//     (Seed, k) only, not on P.
//   - Record traces: data row j (0-based, blank lines not counted) goes to
//     partition j mod P; record i of partition p is row i·P + p.
//
// Finite sources (trace:, rate:) implement Sized; every Reader implements
// BatchReader.
//
// # Errors
//
// Open reads and checks a whole file trace, so bad input is reported there
// and not in the middle of a run. A malformed line is a *LineError (wraps
// ErrMalformed) reading "PATH:LINE: what is wrong", LINE being the 1-based
// line of the decompressed file (the header is line 1); inside a tar, PATH
// is "ARCHIVE(MEMBER)". Rate trace errors also give the token's index in
// its line:
//
//	trace.csv:17: time "abc": not epoch seconds, RFC 3339 or 2006-01-02 15:04:05
//	trace.csv:1: no column "foo" (have host, time, bytes)
//	nasa.tbz2(workload.txt):1: token 3521: "x1" is not a count
//
// Any other error is one line that starts with the spec (wrapping ErrSpec
// for a bad spec or Options) or names the file. Nothing panics on any input.
//
// # Concurrency
//
// A Source is immutable once open and safe for concurrent use. A Reader is
// not: each belongs to one goroutine. Record keys are valid until the
// reader's next call and must not be modified.
package traces
