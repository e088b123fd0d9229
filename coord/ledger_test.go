package coord

import (
	"maps"
	"reflect"
	"testing"

	"spate/wire"
)

func sinkCP(gen, id uint64, n int64) *wire.Checkpoint {
	return &wire.Checkpoint{Instance: "sink#0", Gen: gen, ID: id, SinkFile: SinkFileName("sink", 0, gen), SinkLen: n}
}

func TestRestoreSinkBoundsEveryOlderGeneration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before map[string]int64
		gen    uint64
		cp     *wire.Checkpoint
		want   map[string]int64
	}{
		{"the first restore bounds the first file", nil, 2, sinkCP(1, 5, 500),
			map[string]int64{"sink-0-g1.jsonl": 500}},
		{"from no checkpoint nothing older counts", nil, 3, nil,
			map[string]int64{"sink-0-g1.jsonl": 0, "sink-0-g2.jsonl": 0}},
		{"a fallback after an earlier restore lowers the earlier limit",
			// g2 was restored from c5 (g1 up to 500), had no checkpoint of
			// its own, and g3 fell back to c4: what g1 wrote between c4 and
			// c5 is written again by g3.
			map[string]int64{"sink-0-g1.jsonl": 500}, 3, sinkCP(1, 4, 400),
			map[string]int64{"sink-0-g1.jsonl": 400, "sink-0-g2.jsonl": 0}},
		{"a generation lost before it reported leaves its predecessor bounded",
			// g2 was placed and lost before its restore reported: g1 was
			// never bounded, and g3 restores c5 of g1.
			nil, 3, sinkCP(1, 5, 500),
			map[string]int64{"sink-0-g1.jsonl": 500, "sink-0-g2.jsonl": 0}},
		{"a restore of the restored generation's own checkpoint keeps the older limits",
			map[string]int64{"sink-0-g1.jsonl": 500}, 3, sinkCP(2, 7, 300),
			map[string]int64{"sink-0-g1.jsonl": 500, "sink-0-g2.jsonl": 300}},
		{"a checkpoint taken before the file opened commits none of it",
			map[string]int64{"sink-0-g1.jsonl": 500}, 3, &wire.Checkpoint{Instance: "sink#0", Gen: 2, ID: 6},
			map[string]int64{"sink-0-g1.jsonl": 500, "sink-0-g2.jsonl": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := OutputManifest{Limits: maps.Clone(tc.before)}
			if o.Limits == nil {
				o.Limits = map[string]int64{}
			}
			o.restoreSink("sink", 0, tc.gen, tc.cp)
			if !reflect.DeepEqual(o.Limits, tc.want) {
				t.Fatalf("limits = %v, want %v", o.Limits, tc.want)
			}
			if o.restoreSink("sink", 0, tc.gen, tc.cp) {
				t.Fatal("the same restore again changed a limit")
			}
		})
	}
}

func TestRestoreFromAFallbackForgetsTheDeadBranch(t *testing.T) {
	m := newManifest("run", "windowcount")
	for _, c := range []wire.Checkpoint{cp(1, true, 0), cp(2, false, 1), cp(3, false, 2)} {
		m.add(c)
	}
	// 3 was damaged: the new generation restored 2.
	if gone := m.restoredAt("count#0", 2); !reflect.DeepEqual(gone, []uint64{3}) {
		t.Fatalf("restoredAt forgot %v, want [3]", gone)
	}
	if m.nextID("count#0") != 4 {
		t.Fatalf("nextID = %d, want 4: ids of the dead branch are never given out again", m.nextID("count#0"))
	}
	// The new generation's first checkpoint builds on 2 and takes id 4.
	c4 := cp(4, false, 2)
	c4.Gen = 2
	m.add(c4)
	chains, cps := m.restorable("count#0")
	// 2 shares 4's files: no fallback until the next full checkpoint
	// (nothing was trimmed, so an empty start is one).
	want := [][]string{{"c1-full", "c2-delta", "c4-delta"}}
	if !reflect.DeepEqual(chains, want) || cps[0].ID != 4 || !m.untrimmed("count#0") {
		t.Fatalf("restorable = %v (%v), want %v: the fallback must never be the dead branch", chains, cps, want)
	}
	drop := m.collect("count#0")
	if !reflect.DeepEqual(drop, []string{"c3-delta"}) {
		t.Fatalf("collect dropped %v, want the dead branch's file", drop)
	}
}

func TestRestoreKeepsAPinnedDeadCheckpointKnown(t *testing.T) {
	m := newManifest("run", "windowcount")
	for _, c := range []wire.Checkpoint{cp(1, true, 0), cp(2, true, 0)} {
		m.add(c)
	}
	m.restoredAt("count#0", 1, 2) // 2 is a moved slice's capture
	if _, ok := m.byID["count#0"][2]; !ok {
		t.Fatal("a pinned checkpoint was forgotten by id")
	}
	if _, cps := m.restorable("count#0"); len(cps) != 1 || cps[0].ID != 1 {
		t.Fatalf("restorable = %v, want only checkpoint 1", cps)
	}
}
