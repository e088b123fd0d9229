// Package plot draws the charts of spate's pages as hand-written SVG:
// the chaos and run reports (chaos), the tuner simulator's --plot (tuner)
// and the benchmarks' --html (bench).
//
// A Canvas accumulates SVG elements; a Frame maps data coordinates onto a
// rectangle of it and draws axes, ticks, series, dots and limit lines.
// Output is deterministic (fixed precision, no maps iterated) and
// well-formed XML, so pages that embed it can be tested by parsing them.
// No scripts, no fonts or styles fetched: a page that embeds the SVG stays
// self-contained.
//
// Nothing here does I/O or holds state beyond the Canvas being written;
// a Canvas is not safe for concurrent use.
package plot
