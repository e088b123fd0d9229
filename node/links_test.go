package node

import (
	"net"
	"testing"
	"time"

	"spate/wire"
)

// TestARerouteAbandonsADialToTheOldPlacement: a connect waiting for the
// answer of a downstream's old node is closed when that downstream is
// rerouted (to a new node or generation), so the instance waiting in it
// sees the reroute at once, not after the 30 s deadline (seed 1535); a
// reroute of another instance, or to the placement dialled, leaves it.
func TestARerouteAbandonsADialToTheOldPlacement(t *testing.T) {
	in := &instance{}
	for _, tc := range []struct {
		name   string
		q      wire.Placement
		closed bool
	}{
		{"another instance", wire.Placement{ID: "rollup#0", Node: "n5", Gen: 2}, false},
		{"the placement dialled", wire.Placement{ID: "sink#0", Node: "n3", Gen: 1}, false},
		{"a new node", wire.Placement{ID: "sink#0", Node: "n6", Gen: 2}, true},
		{"a new generation on the same node", wire.Placement{ID: "sink#0", Node: "n3", Gen: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer b.Close()
			in.dialing.Store(&dialAttempt{to: "sink#0", node: "n3", gen: 1, st: a})
			in.abandonDial(tc.q)
			_ = a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			_, err := a.Read(make([]byte, 1))
			if closed := err != nil && !isTimeout(err); closed != tc.closed {
				t.Fatalf("stream closed %v (%v), want %v", closed, err, tc.closed)
			}
			a.Close()
		})
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
