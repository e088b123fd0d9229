package node

import (
	"context"
	"net"
	"testing"
	"time"

	"spate/wire"
)

// TestARerouteAbandonsADialToTheOldPlacement: a connect waiting for the
// answer of a downstream's old node has its wait ended (its read deadline
// set to now) when that downstream is rerouted (to a new node or
// generation), so the instance waiting in it sees the reroute at once,
// not after the 30 s deadline (seed 1535); a reroute of another instance,
// or to the placement dialled, leaves it.
func TestARerouteAbandonsADialToTheOldPlacement(t *testing.T) {
	in := &instance{}
	for _, tc := range []struct {
		name  string
		q     wire.Placement
		ended bool
	}{
		{"another instance", wire.Placement{ID: "rollup#0", Node: "n5", Gen: 2}, false},
		{"the placement dialled", wire.Placement{ID: "sink#0", Node: "n3", Gen: 1}, false},
		{"a new node", wire.Placement{ID: "sink#0", Node: "n6", Gen: 2}, true},
		{"a new generation on the same node", wire.Placement{ID: "sink#0", Node: "n3", Gen: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &deadlineConn{}
			in.dialing.Store(&dialAttempt{to: "sink#0", node: "n3", gen: 1, st: st})
			before := time.Now()
			in.abandonDial(tc.q)
			ended := !st.read.IsZero() && !st.read.After(time.Now()) && !st.read.Before(before)
			if ended != tc.ended {
				t.Fatalf("wait ended %v (read deadline %v), want %v", ended, st.read, tc.ended)
			}
		})
	}
}

// deadlineConn is a stream that records its read deadline.
type deadlineConn struct {
	net.Conn
	read time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error { c.read = t; return nil }

// TestARerouteReadBeforeADialWaitsEndsItToo: a reroute the control
// reader took before a connect began waiting (supersede) ends that
// connect's wait as soon as it starts (supersededDial): the reroute's own
// handling may be queued behind a call to the instance that is dialing
// (seed 216). A reroute to an older generation does not.
func TestARerouteReadBeforeADialWaitsEndsItToo(t *testing.T) {
	n := &Node{}
	d := &dialAttempt{to: "count#0", node: "n1", gen: 2}
	if n.supersededDial(d) {
		t.Fatal("superseded with no reroute")
	}
	n.supersede(wire.Placement{ID: "count#0", Node: "n6", Gen: 3})
	n.supersede(wire.Placement{ID: "count#0", Node: "n1", Gen: 2}) // older news, read late: kept out
	if !n.supersededDial(d) {
		t.Fatal("not superseded after a reroute to count#0 on n6, generation 3")
	}
	if n.supersededDial(&dialAttempt{to: "count#0", node: "n6", gen: 3}) {
		t.Fatal("a dial to the rerouted placement itself is superseded")
	}
}

// TestARerouteToNoNodeUnplacesTheLink: a rescale's new instance lost with
// its node while staged is rerouted to no node. The link to it is closed
// and stays down, with nothing dialed and no failure said, until a
// reroute of a later generation places it; a reroute to no node of an
// older generation changes nothing (seed 2865: the link dialed the lost
// node and waited 30 s for it).
func TestARerouteToNoNodeUnplacesTheLink(t *testing.T) {
	in, _ := testCount(t, wire.FTSpate)
	l := in.ports[0].links[0]
	a, b := net.Pipe()
	defer b.Close()
	l.st, l.err, l.place.Gen = a, nil, 2
	id := l.place.ID

	in.reroute(context.Background(), wire.Placement{ID: id, Gen: 1})
	if l.err != nil || l.st != a {
		t.Fatalf("a reroute to no node of an older generation unplaced the link (err %v)", l.err)
	}
	in.reroute(context.Background(), wire.Placement{ID: id, Gen: 2})
	if l.err != errUnplaced || l.st != nil || l.place.Node != "" {
		t.Fatalf("after a reroute to no node: err %v, stream %v, node %q; want unplaced, none, none", l.err, l.st, l.place.Node)
	}
	if _, err := a.Write([]byte{0}); err == nil {
		t.Fatal("the stream to the lost node is still open")
	}
	if err := in.connect(context.Background(), 0, l, false); err != errUnplaced {
		t.Fatalf("connect of an unplaced link: %v, want %v", err, errUnplaced)
	}
	in.linkFailed(l, errUnplaced)
	if !l.retryAt.IsZero() {
		t.Fatal("an unplaced link is retried as a failed one")
	}
}
