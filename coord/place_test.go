package coord

import (
	"testing"

	"spate/job"
	"spate/wire"
)

// A lost source goes to a node that was there at the start, which has the
// generator's key table, even when a respawned node hosts fewer instances;
// other instances go to the least loaded node whatever its age.
func TestLeastLoadedSendsSourcesToNodesThatWereThereAtTheStart(t *testing.T) {
	live := func(late bool) *nodeState {
		return &nodeState{state: "ready", joined: true, late: late}
	}
	c := &core{spec: job.WindowCount(map[string]int{"source": 2, "count": 2, "rollup": 2, "sink": 2}, 1000, 0), order: []string{"n1", "n2", "n5"},
		nodes: map[string]*nodeState{"n1": live(false), "n2": live(false), "n5": live(true)},
		plan: &wire.Deploy{Instances: []wire.Placement{{ID: "count#0", Op: "count", Node: "n1"}, {ID: "rollup#0", Op: "rollup", Node: "n1"},
			{ID: "count#1", Op: "count", Node: "n2"}}}}
	if got := c.leastLoaded("n3", true); got != "n2" {
		t.Errorf("a source goes to %s, want n2 (the least loaded of the nodes there at the start)", got)
	}
	if got := c.leastLoaded("n3", false); got != "n5" {
		t.Errorf("a count goes to %s, want n5 (the least loaded)", got)
	}
	c.nodes["n1"].state, c.nodes["n2"].state = "lost", "exited"
	if got := c.leastLoaded("n3", true); got != "n5" {
		t.Errorf("with only the respawned node live, a source goes to %s, want n5", got)
	}
}

// A recovering instance's catch-up target waits until every upstream has
// reported from where it is placed: a source restored a moment ago on
// another node has no statistics there yet, and the lowest watermark of
// the others (of none: MaxWatermark) would be out of reach or too low.
func TestUpstreamWatermarkWaitsForEveryUpstream(t *testing.T) {
	node := func(stats map[job.InstanceID]wire.InstanceStats) *nodeState {
		return &nodeState{state: "ready", joined: true, stats: stats}
	}
	c := &core{spec: job.WindowCount(map[string]int{"source": 2, "count": 1, "rollup": 1, "sink": 1}, 1000, 0),
		nodes: map[string]*nodeState{"n1": node(map[job.InstanceID]wire.InstanceStats{"source#0": {Watermark: 500}}), "n5": node(nil)},
		plan: &wire.Deploy{Instances: []wire.Placement{{ID: "source#0", Op: "source", Node: "n1"}, {ID: "source#1", Op: "source", Node: "n5"},
			{ID: "count#0", Op: "count", Node: "n5"}}},
		lost: map[job.InstanceID]bool{}}
	c.placeOf = map[job.InstanceID]*wire.Placement{}
	for i := range c.plan.Instances {
		c.placeOf[c.plan.Instances[i].ID] = &c.plan.Instances[i]
	}
	if wm, ok := c.upstreamWatermark("count#0"); ok {
		t.Fatalf("source#1 has not reported from n5, yet the target is %d", wm)
	}
	c.nodes["n5"].stats = map[job.InstanceID]wire.InstanceStats{"source#1": {Watermark: 300}}
	if wm, ok := c.upstreamWatermark("count#0"); !ok || wm != 300 {
		t.Fatalf("target %d (known %v), want 300, the lowest of the sources", wm, ok)
	}
}
