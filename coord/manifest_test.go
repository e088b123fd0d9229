package coord

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"spate/job"
	"spate/state"
	"spate/wire"
)

func cp(id uint64, full bool, parent uint64) wire.Checkpoint {
	kind := "delta"
	if full {
		kind = "full"
	}
	return wire.Checkpoint{Instance: "count#0", Gen: 1, ID: id, Full: full, Parent: parent, File: fmt.Sprintf("c%d-%s", id, kind)}
}

// The two restorable checkpoints share no file: the fallback of a delta
// is the newest checkpoint of the chain before its base, kept (files and
// trims) until the next full checkpoint is complete; a damaged base
// leaves the fallback whole.
func TestManifestChainsAndCollection(t *testing.T) {
	m := newManifest("run", "windowcount")
	for _, c := range []wire.Checkpoint{cp(1, true, 0), cp(2, false, 1), cp(3, false, 2), cp(4, true, 0), cp(5, false, 4)} {
		m.add(c)
	}
	chains, cps := m.restorable("count#0")
	want := [][]string{{"c4-full", "c5-delta"}, {"c1-full", "c2-delta", "c3-delta"}}
	if !reflect.DeepEqual(chains, want) || cps[0].ID != 5 || cps[1].ID != 3 {
		t.Fatalf("restorable = %v (%v), want %v", chains, cps, want)
	}
	if drop := m.collect("count#0"); len(drop) != 0 {
		t.Fatalf("collect dropped %v: the fallback's chain is still needed", drop)
	}
	if fb := m.add(cp(6, true, 0)); fb != 5 || m.Floor["count#0"] != 5 {
		t.Fatalf("full checkpoint 6 names fallback %d (floor %d), want 5", fb, m.Floor["count#0"])
	}
	drop := m.collect("count#0")
	if !reflect.DeepEqual(drop, []string{"c1-full", "c2-delta", "c3-delta"}) {
		t.Fatalf("collect dropped %v", drop)
	}
	if again := m.collect("count#0"); len(again) != 0 {
		t.Fatalf("a second collect dropped %v", again)
	}
	want = [][]string{{"c6-full"}, {"c4-full", "c5-delta"}}
	if chains, _ := m.restorable("count#0"); !reflect.DeepEqual(chains, want) {
		t.Fatalf("after collect restorable = %v, want %v", chains, want)
	}
}

// Within the first chain there is no fallback sharing no file with the
// latest: nothing is trimmed, and an empty start stays the fallback.
func TestManifestFirstChainTrimsNothing(t *testing.T) {
	m := newManifest("run", "windowcount")
	for _, c := range []wire.Checkpoint{cp(1, true, 0), cp(2, false, 1), cp(3, false, 2)} {
		if fb := m.add(c); fb != 0 {
			t.Fatalf("checkpoint %d names fallback %d, want none", c.ID, fb)
		}
	}
	if chains, _ := m.restorable("count#0"); len(chains) != 1 || !m.untrimmed("count#0") {
		t.Fatalf("restorable = %v, untrimmed %v: want one chain, untrimmed", chains, m.untrimmed("count#0"))
	}
}

func TestManifestSkipsABrokenChain(t *testing.T) {
	m := newManifest("run", "windowcount")
	// Checkpoint 2 was written but never completed: 3's chain is broken.
	m.add(cp(1, true, 0))
	m.add(cp(3, false, 2))
	chains, cps := m.restorable("count#0")
	if len(chains) != 1 || cps[0].ID != 1 {
		t.Fatalf("restorable = %v (%v), want only checkpoint 1", chains, cps)
	}
}

func TestManifestKeepsAPinnedCheckpoint(t *testing.T) {
	m := newManifest("run", "windowcount")
	for id := uint64(1); id <= 4; id++ {
		m.add(cp(id, true, 0))
	}
	drop := m.collect("count#0", 1) // global checkpoint 1 is the last complete one
	if !reflect.DeepEqual(drop, []string{"c2-full"}) {
		t.Fatalf("collect dropped %v, want only c2-full", drop)
	}
	if _, ok := m.byID["count#0"][1]; !ok {
		t.Fatal("the pinned checkpoint was forgotten")
	}
}

func TestManifestCompactedChain(t *testing.T) {
	m := newManifest("run", "windowcount")
	for _, c := range []wire.Checkpoint{cp(1, true, 0), cp(2, false, 1), cp(3, false, 2), cp(4, false, 3)} {
		m.add(c)
	}
	if !m.compacted("count#0", 4, "c4-compacted") {
		t.Fatal("compacted(4) = false for a checkpoint in the manifest")
	}
	if m.compacted("count#0", 9, "c9-compacted") {
		t.Fatal("compacted(9) = true for a checkpoint not in the manifest")
	}
	m.add(cp(5, false, 4))
	chains, _ := m.restorable("count#0")
	// The compacted file is a base of its own: 3's chain shares no file
	// with 5's.
	want := [][]string{{"c4-compacted", "c5-delta"}, {"c1-full", "c2-delta", "c3-delta"}}
	if !reflect.DeepEqual(chains, want) {
		t.Fatalf("restorable = %v, want %v", chains, want)
	}
	drop := m.collect("count#0")
	if !reflect.DeepEqual(drop, []string{"c4-delta"}) {
		t.Fatalf("collect dropped %v: the compacted file replaces 4's own file", drop)
	}
}

// The latest checkpoint's own file stays when a compaction covers it: the
// instance's next delta is written on it (the node names it as the parent
// and reads it back first), and goes once a newer checkpoint is complete.
func TestManifestKeepsTheParentOfTheNextDelta(t *testing.T) {
	m := newManifest("run", "windowcount")
	for _, c := range []wire.Checkpoint{cp(1, true, 0), cp(2, false, 1), cp(3, false, 2), cp(4, false, 3)} {
		m.add(c)
	}
	m.compacted("count#0", 4, "c4-compacted")
	if drop := m.collect("count#0"); len(drop) != 0 {
		t.Fatalf("collect dropped %v; c4-delta is the next delta's parent, and 3's chain is the fallback", drop)
	}
	m.add(cp(5, false, 4))
	chains, _ := m.restorable("count#0")
	if want := []string{"c4-compacted", "c5-delta"}; !reflect.DeepEqual(chains[0], want) {
		t.Fatalf("restorable = %v, want %v first", chains, want)
	}
	if drop := m.collect("count#0"); !reflect.DeepEqual(drop, []string{"c4-delta"}) {
		t.Fatalf("collect dropped %v, want c4-delta once checkpoint 5 is complete (3's chain is the fallback)", drop)
	}
	// Two more deltas on the compacted checkpoint: it is no longer one of
	// the latest two, but both their chains start at its compacted file.
	for id := uint64(6); id <= 7; id++ {
		m.add(cp(id, false, id-1))
		m.collect("count#0")
	}
	chains, _ = m.restorable("count#0")
	want := [][]string{{"c4-compacted", "c5-delta", "c6-delta", "c7-delta"}, {"c1-full", "c2-delta", "c3-delta"}}
	if !reflect.DeepEqual(chains, want) {
		t.Fatalf("restorable = %v, want %v: the compacted checkpoint was forgotten", chains, want)
	}
}

// No compaction starts while a recovery is in flight; once it is over, the
// next checkpoint starts one.
func TestCompactionWaitsForRecoveries(t *testing.T) {
	m := newManifest("run", "windowcount")
	m.add(cp(1, true, 0))
	for id := uint64(2); id <= compactAt; id++ {
		m.add(cp(id, false, id-1))
	}
	c := &core{cfg: Config{FT: "spate"}, ft: spateFT{}, manifest: m,
		compacting: map[job.InstanceID]bool{},
		recovering: map[job.InstanceID]*recovery{"count#1": {}}}
	last := cp(compactAt, false, compactAt-1)
	c.maybeCompact(last)
	if c.compacting["count#0"] {
		t.Fatal("a compaction started during a recovery")
	}
	delete(c.recovering, "count#1")
	c.maybeCompact(last)
	if !c.compacting["count#0"] {
		t.Fatalf("no compaction of a chain of %d files", compactAt)
	}
	w := c.take()
	if len(w.ops) != 1 {
		t.Fatalf("work %v, want one compaction", w.ops)
	}
	o, ok := w.ops[0].(compactOp)
	if !ok || o.cp.ID != last.ID || len(o.files) != compactAt {
		t.Fatalf("work %+v, want the compaction of the %d files up to checkpoint %d", w.ops[0], compactAt, last.ID)
	}
	if _, _, err := compactChain(state.NewMemStore(), o.cp, o.files); err == nil { // the store holds none of the files
		t.Fatal("compaction of missing files succeeded")
	}
}

// A run directory given with --data that holds an earlier run is
// refused: its sink files would be read as the new run's output.
func TestCreateRunDirRefusesAnEarlierRun(t *testing.T) {
	dir := t.TempDir()
	if _, err := CreateRunDir(dir, "r1", "t"); err != nil {
		t.Fatalf("an empty directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "output", "sink-0-g1.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateRunDir(dir, "r2", "t"); err == nil || !strings.Contains(err.Error(), "--data") {
		t.Fatalf("a directory with an earlier run's output: %v, want a refusal naming --data", err)
	}
}
