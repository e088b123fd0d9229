package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"spate/events"
	"spate/spacetime"
)

// spaceRec keeps what package spacetime needs to draw the losses of the
// run so far, as events it can fold: the kinds its fold reads (placements,
// faults, losses, recoveries, replays, rescale plans), without their text,
// and of the checkpoints only ticks. Checkpoints are the one steady kind it
// reads: it keeps each instance's last maxSpaceTicks (and as many global
// ones) and, at a node lost and at each end of a recovery, pins those not
// pinned yet, so that a loss keeps the checkpoints around it after newer
// ones have pushed them out. The skim decodes what a pin needs
// (recording.plan), so a seek gives the same record as a fold.
type spaceRec struct {
	evs      []events.Event              // oldest first, at most maxSpaceEvents
	ticks    map[string][]spacetime.Tick // instance, as written -> its latest checkpoints
	global   []spacetime.Tick            // the latest global checkpoints
	pinned   []pinnedTick                // oldest first, at most maxPinned
	pinnedTo map[string]time.Time        // instance ("" the global ones) -> its latest tick pinned
}

// pinnedTick is a checkpoint of an instance ("" a global one) kept for
// the losses it belongs to.
type pinnedTick struct {
	Instance string
	Tick     spacetime.Tick
}

// Bounds of the record. The skim decodes an instance's last 16
// checkpoints before a pin; maxSpaceTicks must not exceed that.
const (
	maxSpaceEvents = 8192
	maxSpaceTicks  = 16
	maxPinned      = 16384
)

func newSpaceRec() spaceRec {
	return spaceRec{ticks: map[string][]spacetime.Tick{}, pinnedTo: map[string]time.Time{}}
}

func (r spaceRec) clone() spaceRec {
	c := r
	c.evs = append([]events.Event(nil), r.evs...)
	c.ticks = make(map[string][]spacetime.Tick, len(r.ticks))
	for k, ts := range r.ticks {
		c.ticks[k] = append([]spacetime.Tick(nil), ts...)
	}
	c.global = append([]spacetime.Tick(nil), r.global...)
	c.pinned = append([]pinnedTick(nil), r.pinned...)
	c.pinnedTo = make(map[string]time.Time, len(r.pinnedTo))
	for k, t := range r.pinnedTo {
		c.pinnedTo[k] = t
	}
	return c
}

// spaceKind says whether the spacetime fold reads events of kind k
// (checkpoints aside).
func spaceKind(k events.Kind) bool {
	switch k {
	case events.JobStarted, events.InstancePlaced, events.RescalePlanned, events.RecoverySplit,
		events.FaultStarted, events.NodeLost, events.RecoveryPlaced, events.RecoveryRestored,
		events.Replay, events.RecoveryDone:
		return true
	}
	return false
}

// pinKind says whether an event of kind k pins the ticks: a node lost, a
// recovery's end. The skim plans for a superset (classFault and
// classRecovery).
func pinKind(e events.Event) bool {
	switch e.Kind {
	case events.NodeLost, events.RecoveryDone:
		return true
	case events.RecoveryRestored:
		return e.Instance == "" // a global rollback is over
	}
	return false
}

func (r *spaceRec) add(e events.Event) {
	if e.Kind == events.Checkpoint {
		f, ok := e.Fields.(events.CheckpointFields)
		if !ok {
			return
		}
		t := spacetime.Tick{ID: f.ID, At: e.Time, Full: f.Full, Global: f.Global}
		switch {
		case f.Global:
			r.global = appendBounded(r.global, t, maxSpaceTicks)
		case e.Instance != "":
			r.ticks[e.Instance] = appendBounded(r.ticks[e.Instance], t, maxSpaceTicks)
		}
		return
	}
	if !spaceKind(e.Kind) {
		return
	}
	e.Text = "" // the fold reads the payloads only
	r.keep(e)
	if pinKind(e) {
		r.pin()
	}
}

// keep appends e; when the record is full it drops a quarter of it, the
// oldest first by rank (keepRank): replays (most of it, after rescales),
// then the steps of recoveries and rescales; the placements, the job's
// start, the faults and the losses only when nothing else is left.
func (r *spaceRec) keep(e events.Event) {
	if len(r.evs) >= maxSpaceEvents {
		drop := maxSpaceEvents / 4
		for rank := 0; rank < 3 && drop > 0; rank++ {
			j := 0
			for _, x := range r.evs {
				if drop > 0 && keepRank(x.Kind) == rank {
					drop--
					continue
				}
				r.evs[j] = x
				j++
			}
			clear(r.evs[j:])
			r.evs = r.evs[:j]
		}
	}
	r.evs = append(r.evs, e)
}

// keepRank orders the kinds of the record by what a loss loses without
// them: a replay's arrow, a step of a recovery, the loss itself.
func keepRank(k events.Kind) int {
	switch k {
	case events.Replay:
		return 0
	case events.JobStarted, events.InstancePlaced, events.FaultStarted, events.NodeLost:
		return 2
	}
	return 1
}

// pin keeps every tick not pinned yet, instance by instance in name order.
func (r *spaceRec) pin() {
	insts := make([]string, 0, len(r.ticks))
	for k := range r.ticks {
		insts = append(insts, k)
	}
	sort.Strings(insts)
	for _, id := range insts {
		r.pinFrom(id, r.ticks[id])
	}
	r.pinFrom("", r.global)
}

func (r *spaceRec) pinFrom(id string, ts []spacetime.Tick) {
	to := r.pinnedTo[id]
	for _, t := range ts {
		if t.At.After(to) {
			r.pinned = appendBounded(r.pinned, pinnedTick{Instance: id, Tick: t}, maxPinned)
			to = t.At
		}
	}
	if len(ts) > 0 {
		r.pinnedTo[id] = to
	}
}

// events is the record as the events spacetime.Losses folds: first an
// event at the run's first time (the origin when the job's start is not
// kept), then the kept events in order, then the checkpoints, each
// instance's in time order.
func (r *spaceRec) events(first time.Time) []events.Event {
	out := make([]events.Event, 0, 1+len(r.evs)+len(r.pinned)+maxSpaceTicks*(len(r.ticks)+1))
	if !first.IsZero() {
		out = append(out, events.Event{Time: first, Kind: kindNote})
	}
	out = append(out, r.evs...)
	tick := func(id string, t spacetime.Tick) events.Event {
		return events.Event{Time: t.At, Kind: events.Checkpoint, Instance: id,
			Fields: events.CheckpointFields{ID: t.ID, Full: t.Full, Global: t.Global}}
	}
	for _, p := range r.pinned {
		out = append(out, tick(p.Instance, p.Tick))
	}
	insts := make([]string, 0, len(r.ticks))
	for k := range r.ticks {
		insts = append(insts, k)
	}
	sort.Strings(insts)
	newer := func(id string, ts []spacetime.Tick) {
		to := r.pinnedTo[id]
		for _, t := range ts {
			if t.At.After(to) {
				out = append(out, tick(id, t))
			}
		}
	}
	for _, id := range insts {
		newer(id, r.ticks[id])
	}
	newer("", r.global)
	return out
}

// losses are the losses of the run so far, oldest first.
func (s *state) losses() []spacetime.Loss {
	return spacetime.Losses(s.space.events(s.first))
}

// losses caches s.losses for the frame: the state at a count of events
// applied is the fold of those events, so the pair names it.
func (m *model) losses() []spacetime.Loss {
	if m.lossesOf != m.s || m.lossesAt != m.s.total || m.lossesCache == nil {
		m.lossesCache = m.s.losses()
		m.lossesOf, m.lossesAt = m.s, m.s.total
	}
	return m.lossesCache
}

// comparedLoss is, in spate tour, the comparison of the current step or
// else of the latest step before it that has a loss; nil if none.
func (m *model) comparedLoss() *Comparison {
	if m.tour == nil {
		return nil
	}
	for i := m.tour.step; i >= 0; i-- {
		if c := m.tour.cmp[i]; c != nil && c.Loss != nil {
			return c
		}
	}
	return nil
}

// lossOf is the index (newest first, as the pane lists them) of the loss
// that recovery r is of, -1 if none.
func lossOf(ls []spacetime.Loss, r *recovery) int {
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].Node == r.Node && ls[i].Detected.Equal(r.Lost) {
			return len(ls) - 1 - i
		}
	}
	return -1
}

// ---- 0 spacetime ----

// spacetimePane draws a loss as a space-time diagram (package
// spacetime's text): one lane per instance, time to the right. j/k pick
// the loss, newest first; 0 from the recovery pane picks its selected
// one. The diagram is cut to the pane, never wrapped; enter shows all of
// it.
type spacetimePane struct{}

func (spacetimePane) name() string    { return "spacetime" }
func (spacetimePane) rows(v view) int { return len(v.losses) }

// selectedLoss is the loss the pane shows and its place, newest first;
// false if none.
func (v view) selectedLoss() (spacetime.Loss, int, bool) {
	n := len(v.losses)
	if n == 0 {
		return spacetime.Loss{}, 0, false
	}
	i := min(max(v.sel, 0), n-1)
	return v.losses[n-1-i], i, true
}

func (spacetimePane) render(v view, w, h int) []string {
	if h <= 0 || w <= 0 {
		return nil
	}
	l, i, ok := v.selectedLoss()
	if !ok {
		return []string{fit(v.st.title.Render("space-time diagram")+v.st.dim.Render("  no node lost yet"), w)}
	}
	head := v.st.title.Render("space-time diagram") +
		v.st.dim.Render(fmt.Sprintf("  loss %d of %d, newest first (j/k another, enter all of it)", len(v.losses)-i, len(v.losses)))
	lines := diagramLines(l, w)
	if v.cmp != nil && i == 0 {
		// spate tour's comparison: the newest loss beside the second
		// cluster's.
		head = v.st.title.Render("space-time diagrams") + v.st.dim.Render("  the same kill here and on the second cluster (enter: this one alone)")
		lines = diagrams(v.s, v.cmp, v.cmp.Figures["cmp_flags"], w)
	}
	out := []string{fit(head, w)}
	if body := h - 1; len(lines) > body {
		if body > 1 {
			rest := len(lines) - (body - 1)
			lines = append(lines[:body-1], v.st.dim.Render(fmt.Sprintf("… %d more lines (enter)", rest)))
		} else {
			lines = lines[:max(body, 0)]
		}
	}
	for _, ln := range lines {
		out = append(out, fit(ln, w))
	}
	return out
}

// diagramLines is spacetime.Text of l at width w, as lines.
func diagramLines(l spacetime.Loss, w int) []string {
	return strings.Split(strings.TrimSuffix(spacetime.Text(l, w), "\n"), "\n")
}

func (spacetimePane) detail(v view) (string, []string) {
	l, _, ok := v.selectedLoss()
	if !ok {
		return "space-time diagram", []string{"no node lost yet"}
	}
	return "space-time diagram of " + l.Node + "'s loss", diagramLines(l, max(v.width, 40))
}
