package tui

import (
	"strings"
	"testing"
)

// Each jump key of spate view lands on the next event of its own kind,
// and ] passes over the checkpoints: from the start, the recorded kill's
// node loss is a few presses of ] away, and one of f.
func TestViewJumpsToEachKindOnItsOwnKey(t *testing.T) {
	m := viewing(t, "run-kill.jsonl", 160, 48)
	rec := m.rp.rec
	shown := func() string {
		e, err := rec.event(m.rp.pos - 1)
		if err != nil {
			t.Fatal(err)
		}
		return string(e.Kind)
	}
	for _, c := range []struct {
		key   string
		kinds []string
	}{
		{"f", []string{"fault_started", "node_lost", "node_suspect", "partition", "node_paused"}},
		{"r", []string{"recovery_placed", "recovery_restored", "recovery_loaded", "recovery_done"}},
		{"c", []string{"checkpoint", "checkpoint_fallback"}},
	} {
		pressView(m, "g", c.key)
		if m.rp.pos == 0 {
			t.Errorf("%s from the start did not move (%s)", c.key, m.flash)
			continue
		}
		got := shown()
		ok := false
		for _, k := range c.kinds {
			ok = ok || got == k
		}
		if !ok {
			t.Errorf("%s landed on %s, want one of %v", c.key, got, c.kinds)
		}
		// Back from one further on returns to it.
		at := m.rp.pos
		pressView(m, c.key, strings.ToUpper(c.key))
		if m.rp.pos != at {
			t.Errorf("%s then %s: at %d, want %d", c.key, strings.ToUpper(c.key), m.rp.pos, at)
		}
	}
	// The recording has no rescale: s says so and stays.
	pressView(m, "g", "s")
	if m.rp.pos != 0 || m.flash != "no later rescale" {
		t.Errorf("s without a rescale: at %d, flash %q", m.rp.pos, m.flash)
	}
	// ] never stops at a checkpoint, and reaches the loss in fewer presses
	// than there are checkpoints before it.
	pressView(m, "g")
	presses, ckpts := 0, 0
	for shown := ""; shown != "node_lost"; presses++ {
		before := m.rp.pos
		pressView(m, "]")
		if m.rp.pos == before {
			t.Fatal("] never reached node_lost")
		}
		for i := before; i < m.rp.pos-1; i++ {
			if rec.class[i] == classCheckpoint {
				ckpts++
			}
		}
		e, _ := rec.event(m.rp.pos - 1)
		shown = string(e.Kind)
		if rec.class[m.rp.pos-1] == classCheckpoint {
			t.Fatalf("] stopped at a checkpoint (press %d)", presses+1)
		}
	}
	if ckpts == 0 || presses >= ckpts {
		t.Errorf("] took %d presses past %d checkpoints to the loss", presses, ckpts)
	}
	// The help names every jump key.
	help := strings.Join(m.keys.helpText(m.st), "\n")
	for _, k := range []string{"next fault", "next step of a recovery", "next step of a rescale", "next checkpoint", "not checkpoints"} {
		if !strings.Contains(help, k) {
			t.Errorf("the help does not say %q", k)
		}
	}
}
