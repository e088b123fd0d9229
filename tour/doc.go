// Package tour is spate tour: a guided lesson on a live cluster, for
// someone who has never seen a streaming system fail. It starts a small
// cluster the way spate up does (coord.Up) and walks through the steps of
// lesson.md beside the live dashboard (tui.Options.Lesson), or, with
// --headless, prints them with their live figures. When the lesson ends
// (q, or the last step headless) the job drains and the tour checks the
// output with the oracle (coord.VerifyRun): exit 0 only if nothing was
// lost, duplicated or wrong.
//
// The lesson is lesson.md, embedded at build time; its format is
// tui.ParseLesson's. A step with a compare: line
// runs the tour's job again on a second cluster with other flags (--ft
// global), does the lesson's kill there too, and shows both clusters'
// figures side by side (compare.go); that cluster is drained and verified
// as well, and the tour waits for it before it ends. Both kills are
// aligned on the victim's checkpoints (align.go, as bench recovery
// --align does): the tour's comes half an interval after a capture of
// count#0's checkpoint, the second cluster runs at --interval of that
// interval and is killed as long after a global checkpoint's capture, so
// both lose state of the same age. The table's cells and the sentences
// that compare the two are written from both clusters' figures
// (claims.go): where a figure goes against the design's expectation, the
// sentence says so and why. After the table the step draws both
// recoveries as space-time diagrams side by side (its {diagrams}: the
// comparison hands over its cluster's loss, tui.Comparison.Loss; headless
// at half of 78 columns each, in the dashboard in the spacetime pane).
//
// The tour acts on its clusters only through their control APIs (the
// lesson's do: lines, a comparison's kill), and the dashboard folds the
// tour cluster's events as spate up's does.
package tour
