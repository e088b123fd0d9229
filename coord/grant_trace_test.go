package coord

import (
	"strings"
	"testing"
)

// TestATraceDrainsNearWhereItWas: a paced run over a trace (a rate or
// record trace, whose rate is the file's and not --rate's) grants its
// sources a lead of what they read in a second at the rate measured, not
// --rate's, so that the drain, which ends every partition at its highest
// grant, reads little past where the sources were when the duration was
// up. Before, a partition whose measured rate was zero (a slow trace:
// the NASA request log, under one record a second) was granted --rate
// divided by the partitions ahead, 50,000 records at the default, and
// the drain read the whole file. A generator keeps --rate's lead.
func TestATraceDrainsNearWhereItWas(t *testing.T) {
	for _, tc := range []struct {
		source  string
		maxLead uint64
	}{
		{"rate:nasa.tbz2", traceGrantFloor},
		{"trace:nasa.tsv.gz?time=time&key=host", traceGrantFloor},
		{"gen:diurnal", 1 << 30}, // --rate's lead, as before
	} {
		t.Run(strings.SplitN(tc.source, ":", 2)[0], func(t *testing.T) {
			h := newCoreHarness(t)
			var out strings.Builder
			if err := h.line("deploy nodes=2 ready=0", &out); err != nil {
				t.Fatal(err)
			}
			h.c.cfg.Source = tc.source // before the start and its first grants; the plan does not depend on it
			for _, line := range []string{
				"ready n1", "ready n2",
				"heartbeat source#0 pos=0:3", "tick 600ms",
				"heartbeat source#0 pos=0:3", "tick 600ms",
				"heartbeat source#0 pos=0:4", "tick 600ms",
				"drain",
			} {
				if err := h.line(line, &out); err != nil {
					t.Fatalf("%v\n%s", err, out.String())
				}
			}
			end := h.c.drainAt[0]
			if end < 4 {
				t.Fatalf("the drain ends partition 0 at %d, before where its source was (4)", end)
			}
			if lead := end - 4; lead > tc.maxLead {
				t.Errorf("%s: the drain reads partition 0 on %d records past where its source was, want at most %d", tc.source, lead, tc.maxLead)
			}
			if tc.source == "gen:diurnal" && end-4 < grantFloor {
				t.Errorf("a generator's lead shrank to %d", end-4)
			}
		})
	}
}
