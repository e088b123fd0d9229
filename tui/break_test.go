package tui

import (
	"strings"
	"testing"
	"time"

	"spate/events"
)

// A run broken on purpose (spate up --break) says so in the header, even
// at the compact width; a run of the protocol as it should be does not.
func TestTheHeaderSaysARunIsBrokenOnPurpose(t *testing.T) {
	for _, brk := range []string{"", "trim-newest"} {
		m := newModel(Options{Plain: true, Now: func() time.Time { return clock }, Title: "golden"})
		m.Update(eventsMsgOf([]events.Event{{Seq: 1, Time: clock, Kind: events.RunStarted,
			Text: "run r1: job windowcount on 4 nodes, source gen:diurnal, data in /tmp/r1", Fields: events.RunStartedFields{Dir: "/tmp/r1", Break: brk}}}))
		for _, compact := range []bool{false, true} {
			h := m.header(160, compact)
			if got := strings.Contains(h, "BROKEN"); got != (brk != "") || brk != "" && !strings.Contains(h, "BROKEN:"+brk) {
				t.Errorf("break %q, compact %v: %s", brk, compact, h)
			}
		}
	}
}
