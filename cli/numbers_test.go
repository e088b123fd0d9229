package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"spate/events"
	"spate/job"
)

// A killed node closes every stream from it at once: one line says so,
// by default and under --quiet, and the summary counts the rest.
func TestAPeersEndedStreamsAreOneLine(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	eof := func(inst, peer string) events.Event {
		return events.Event{Time: t0, Kind: events.FrameError, Node: "n4", Instance: inst,
			Text: "stream from " + peer + " closed: stream x -> " + inst + ": EOF", Fields: events.FrameErrorFields{Peer: peer}}
	}
	for _, quiet := range []bool{false, true} {
		var b bytes.Buffer
		p := newPrinter(&b, outputMode{quiet: quiet})
		for _, e := range []events.Event{
			eof("sink#1", "n2"), eof("sink#0", "n2"), eof("count#0", "n2"), eof("count#1", "n2"),
			{Time: t0, Kind: events.NodeLost, Node: "n2", Text: "node n2 lost", Fields: events.NodeLostFields{Instances: []job.InstanceID{"rollup#0"}}},
			{Time: t0, Kind: events.FrameError, Node: "n1", Instance: "count#1", Text: "stream to rollup#0 on n2 failed: stream closed", Fields: events.FrameErrorFields{To: "rollup#0"}},
			eof("sink#1", "n3"),
			{Time: t0, Kind: events.FrameError, Node: "n4", Instance: "sink#1", Text: "stream from n3 closed: bad frame", Fields: events.FrameErrorFields{Peer: "n3"}},
		} {
			p.Add(e)
		}
		p.Close()
		p.Summary("")
		out := b.String()
		if n := strings.Count(out, "frame_error"); n != 3 {
			t.Errorf("quiet %v: %d frame_error lines, want one for each peer's EOF and the bad frame:\n%s", quiet, n, out)
		}
		if !strings.Contains(out, "6 streams closed as their peer ended") {
			t.Errorf("quiet %v: summary does not count the streams:\n%s", quiet, out)
		}
	}
}
