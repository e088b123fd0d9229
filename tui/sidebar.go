package tui

import (
	"fmt"
	"strings"
	"time"

	"spate/events"
	"spate/internal/human"
)

// The side pane: the nodes at a glance (unless the cluster pane beside it
// lists them already) and the recent events that change the run. Routine
// events come many times a second and would bury a kill: metrics, fired
// windows and throughput samples are left to their panes; checkpoints,
// trims, replays and compactions are summed, one line a second; an
// interval decision shows only when it changed the interval.

// summed are the kinds the side pane counts in one line a second, and the
// noun of each.
var summed = map[events.Kind]string{
	events.Checkpoint:          "checkpoint",
	events.Trim:                "trim",
	events.Replay:              "replay",
	events.CheckpointCompacted: "compaction",
	events.StoreTraffic:        "store report",
}

// hidden are the kinds the side pane leaves out: each has a pane of its
// own that shows it better.
var hidden = map[events.Kind]bool{
	events.Metrics: true, events.WindowFired: true, events.Throughput: true,
}

// sideLine is one line of the recent events: an event, or the routine
// events of one second summed.
type sideLine struct {
	at    time.Time
	entry int            // the log entry; -1 for a sum
	n     map[string]int // a sum: events by noun
	also  int            // frame errors of the same second after this one, on one line
}

// recentLines are the side pane's last (at most limit) lines from the log
// entries idx (indexes into s.log), oldest first.
func recentLines(s *state, idx []int, limit int) []sideLine {
	var out []sideLine
	var sum *sideLine
	flush := func() {
		if sum != nil {
			out = append(out, *sum)
			sum = nil
		}
	}
	for j := len(idx) - 1; j >= 0 && len(out) < limit; j-- {
		le := s.log[idx[j]]
		k := le.E.Kind
		if hidden[k] && !le.Local && !le.Bad {
			continue
		}
		if k == events.Interval && !le.Local && !le.Bad {
			if f, ok := le.E.Fields.(events.IntervalFields); ok && !f.Changed {
				continue
			}
		}
		if noun, ok := summed[k]; ok && !le.Local && !le.Bad {
			sec := le.E.Time.Truncate(time.Second)
			if sum != nil && !sum.at.Truncate(time.Second).Equal(sec) {
				flush()
				if len(out) >= limit {
					break
				}
			}
			if sum == nil {
				sum = &sideLine{at: le.E.Time, entry: -1, n: map[string]int{}}
			}
			sum.n[noun]++
			continue
		}
		flush()
		if k == events.FrameError && len(out) > 0 {
			// A kill closes every stream of its node at once: one line.
			if l := &out[len(out)-1]; l.entry >= 0 && s.log[l.entry].E.Kind == k && l.at.Truncate(time.Second).Equal(le.E.Time.Truncate(time.Second)) {
				l.at, l.entry, l.also = le.E.Time, idx[j], l.also+1
				continue
			}
		}
		if len(out) < limit {
			out = append(out, sideLine{at: le.E.Time, entry: idx[j]})
		}
	}
	flush()
	if len(out) > limit {
		out = out[:limit]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// sumText is a sum's words: "8 checkpoints, 12 trims", in a fixed order.
func (l sideLine) sumText() string {
	var parts []string
	for _, noun := range []string{"checkpoint", "trim", "replay", "compaction", "store report"} {
		if n := l.n[noun]; n > 0 {
			parts = append(parts, human.Plural(n, noun))
		}
	}
	return strings.Join(parts, ", ")
}

// side is the side pane: the nodes at a glance and the recent events.
func (m *model) side(w, h int) []string {
	s := m.s
	var out []string
	if m.pane != paneCluster || m.mode != modeNormal {
		out = append(out, m.st.title.Render("nodes"))
		sel := m.selectedNode()
		for _, id := range s.nodeOrder {
			n := s.nodes[id]
			mark := "  "
			if id == sel {
				mark = "▸ "
			}
			line := fmt.Sprintf("%s%-4s %s %s", mark, id, m.st.stateStyle(n.State).Render(pad(stateMark(n.State)+n.State, 13)), strings.Join(s.nodeInsts(id), " "))
			out = append(out, fit(line, w))
			if len(out) > h/3 {
				break
			}
		}
		out = append(out, "")
	}
	out = append(out, m.st.title.Render("recent events")+m.st.dim.Render("  (every one: 9 log)"))
	v := m.view(paneLog)
	for _, l := range recentLines(s, v.log, max(h-len(out), 0)) {
		if l.entry < 0 {
			out = append(out, fit(m.st.dim.Render(l.at.Format("15:04:05")+" "+l.sumText()), w))
			continue
		}
		le := s.log[l.entry]
		kind := string(le.E.Kind)
		if l.also > 0 {
			kind += fmt.Sprintf(" (and %d more)", l.also)
		}
		text := le.E.Time.Format("15:04:05") + " " + kind + " " + le.E.Text
		switch {
		case le.Bad:
			text = m.st.bad.Render(text)
		case le.Local:
			text = m.st.key.Render(text)
		}
		out = append(out, fit(text, w))
	}
	return out
}
