package sim

import (
	"testing"
)

// TestARestartedOwnerLostBeforeItsFirstCheckpoint pins a --rescale
// restart followed by the loss of an instance whose key groups changed
// before its own checkpoints hold them: the new instance of a scale-out
// of rollup and of count (it restored its key groups from their old
// owners' chains only), and an old instance that gave key groups away.
// Its restore must load the moved key groups from the same chains again,
// and the upstreams must still hold what that restore replays.
func TestARestartedOwnerLostBeforeItsFirstCheckpoint(t *testing.T) {
	long(t, "simulated runs")
	cfg := DefaultConfig()
	cfg.Rescale = "restart"
	var shapes []shape
	for _, after := range []int{120, 200, 300} {
		shapes = append(shapes,
			shape{name: "rollup 1→3, the new rollup/2 lost " + ms(after).String() + " later", steps: []Step{
				{At: ms(4000), Action: act("scale", "rollup", "n", "3")},
				{At: ms(4000 + after), Action: act("kill", "rollup/2")},
			}},
			shape{name: "count 2→3, the new count/2 lost " + ms(after).String() + " later", steps: []Step{
				{At: ms(4000), Action: act("scale", "count", "n", "3")},
				{At: ms(4000 + after), Action: act("kill", "count/2")},
			}},
		)
	}
	shapes = append(shapes,
		shape{name: "count 2→4, the old count/0 lost after it gave key groups away", steps: []Step{
			{At: ms(4000), Action: act("scale", "count", "n", "4")},
			{At: ms(4200), Action: act("kill", "count/0")},
		}},
		shape{name: "count 2→3, the new count/2 lost twice", steps: []Step{
			{At: ms(4000), Action: act("scale", "count", "n", "3")},
			{At: ms(4150), Action: act("kill", "count/2")},
			{At: ms(5600), Action: act("kill", "count/2")},
		}},
	)
	runShapes(t, cfg, shapes)
}

// TestACoordinatorCrashInARestartRescale pins a coordinator crash at
// each point of a --rescale restart (while the full checkpoints are
// awaited, while the nodes stop, while the instances restore, while they
// catch up), resumed 50 ms to 1.5 s later: the resumed coordinator must
// finish the restart or roll it back, never lose the moved key groups.
func TestACoordinatorCrashInARestartRescale(t *testing.T) {
	long(t, "simulated runs")
	cfg := DefaultConfig()
	cfg.Rescale = "restart"
	var shapes []shape
	for _, at := range []int{1, 10, 19, 20, 21, 40, 120, 400} {
		for _, resume := range []string{"50ms", "600ms", "1500ms"} {
			shapes = append(shapes,
				shape{name: "count 2→1, the coordinator crashed " + ms(at).String() + " in, resumed after " + resume, steps: []Step{
					{At: ms(4000), Action: act("scale", "count", "n", "1")},
					{At: ms(4000 + at), Action: act("crash", "coord", "resume_after", resume)},
				}})
		}
	}
	shapes = append(shapes,
		shape{name: "rollup 1→3 then 3→1, the coordinator crashed in the scale-in", steps: []Step{
			{At: ms(3000), Action: act("scale", "rollup", "n", "3")},
			{At: ms(5000), Action: act("scale", "rollup", "n", "1")},
			{At: ms(5100), Action: act("crash", "coord", "resume_after", "300ms")},
		}},
		shape{name: "count 2→3, the coordinator crashed, then the new count/2 lost", steps: []Step{
			{At: ms(4000), Action: act("scale", "count", "n", "3")},
			{At: ms(4150), Action: act("crash", "coord", "resume_after", "200ms")},
			{At: ms(4900), Action: act("kill", "count/2")},
		}},
	)
	runShapes(t, cfg, shapes)
}
