// Package spacetime draws each recovery of a run as the picture a lecture
// draws by hand: a space-time diagram in the manner of Chandy and Lamport,
// one horizontal lane per operator instance ("count#0"), time running to
// the right.
//
// Losses folds a run's events (as events.jsonl decodes them, in their
// order) into one Loss per node lost while it hosted instances: the lanes
// and where each ran, the checkpoints completed on each lane within the
// window, the fault that took the node and when its loss was noticed,
// each lost instance's restore (where it was placed, the checkpoint it
// loaded, when it had caught up), each replay from an upstream's backup
// (from, to, records) and, under --ft global, the rollback of every lane
// to the global checkpoint (and the damaged ones it passed over). A
// parallel recovery's new instances get lanes too, with the split plan.
// A replay belongs to a loss while the instance it goes to (or, in a
// parallel recovery, a new one it comes from or goes to) recovers, or
// after that instance caught up if no rescale began since. It reads
// nothing but the events: a kind it does not use, or an event it cannot
// place, is passed over; it never fails and never panics.
//
// A Loss's window runs from a little before the oldest checkpoint a lost
// instance restored to a little after the recovery ended, never the whole
// run. When the checkpoint lies far before the fault, Axis breaks the
// time axis in two, so that a recovery of a few milliseconds is not
// squeezed against a checkpoint taken seconds earlier; both parts keep
// the same time scale and the break is drawn.
//
// Text renders one Loss in plain text and box-drawing characters, every
// line at most the width it is given; SideBySide puts two of them next
// to each other, each at half the width under a caption (spate tour's
// comparison); chaos draws the same model as SVG
// in report.html. Nothing here does I/O, keeps state between calls or
// reads a clock: the same events give the same Losses and the same text.
// Every function is safe for concurrent use.
//
// spacetime imports only events and the standard library.
package spacetime
