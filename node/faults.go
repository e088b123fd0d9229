package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"spate/events"
	"spate/job"
	"spate/state"
	"spate/wire"
)

// Injected faults (CtlFaults): the node applies the link faults of its side
// of every peer link in its fault layer (package chaos), slows or fails its
// checkpoint writes, and damages checkpoint files on request. The
// coordinator decides; the node only applies.

// faultStore is the checkpoint store with the store faults applied.
type faultStore struct {
	state.Store
	mu sync.Mutex
	f  wire.StoreFault
}

func (s *faultStore) set(f wire.StoreFault) {
	s.mu.Lock()
	s.f = f
	s.mu.Unlock()
}

// errStoreFault is a checkpoint write failed on purpose.
var errStoreFault = errors.New("checkpoint store: write failed (injected store fault)")

// Put applies the faults, then writes.
func (s *faultStore) Put(name string, data ...[]byte) error {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f.SlowMs > 0 {
		time.Sleep(time.Duration(f.SlowMs) * time.Millisecond) // a slow disk, by design
	}
	if f.Fail {
		return errStoreFault
	}
	return s.Store.Put(name, data...)
}

// applyFaults replaces the node's injected faults with f.
func (n *Node) applyFaults(f *wire.Faults) {
	n.layer.ClearAll()
	for peer, lf := range f.Links {
		if err := n.layer.Set(peer, lf); err != nil {
			n.event(events.Error, "", events.ErrorFields{Peer: peer}, "link fault toward %s: %v", peer, err)
		}
	}
	n.mu.Lock()
	st := n.store
	n.mu.Unlock()
	if st != nil {
		st.set(f.Store)
		for _, id := range f.Corrupt {
			n.damage(st, wire.Damage{Instance: id})
		}
		for _, d := range f.Damage {
			n.damage(st, d)
		}
	}
}

// damage applies one damage and says so.
func (n *Node) damage(st *faultStore, d wire.Damage) {
	if name, err := st.damage(d); err != nil {
		n.event(events.Error, d.Instance, nil, "could not damage a checkpoint of %s: %v", d.Instance, err)
	} else {
		n.event(events.CheckpointCorrupted, d.Instance, events.CheckpointCorruptedFields{File: name}, "checkpoint file %s damaged on purpose", name)
	}
}

// damage changes one byte of a checkpoint file of d.Instance (d.File, or
// its newest), so that its checksum no longer holds: the byte d.Nth past
// the middle, plus one. Two damages with distinct Nth change distinct
// bytes, and two of the same byte never undo each other (a XOR of the
// same byte did: two damages of the newest file left it whole).
func (s *faultStore) damage(d wire.Damage) (string, error) {
	name := d.File
	if name == "" {
		var err error
		if name, err = s.latest(d.Instance); err != nil {
			return "", err
		}
	}
	data, err := s.Store.Get(name)
	if err != nil {
		return "", err
	}
	if len(data) == 0 {
		return "", fmt.Errorf("%s is empty", name)
	}
	data[(len(data)/2+max(d.Nth, 0))%len(data)]++
	return name, s.Store.Put(name, data)
}

// latest is the newest checkpoint file of instance id.
func (s *faultStore) latest(id job.InstanceID) (string, error) {
	names, err := s.Store.List(string(id) + "/")
	if err != nil {
		return "", err
	}
	var latest string
	for _, name := range names {
		if strings.HasSuffix(name, ".ckpt") {
			latest = name // List is sorted: generation, then id
		}
	}
	if latest == "" {
		return "", fmt.Errorf("no checkpoint file yet")
	}
	return latest, nil
}

// watchPeer redials a peer whose session ended while the node runs on: a
// link reset or a dropped connection must not cut the data path for good.
// The node that dialed at deploy redials; the other waits to be dialed. Once a new session is up, every link toward that peer
// reconnects and replays what the peer lacks.
func (n *Node) watchPeer(ctx context.Context, name string, sess *yamux.Session) {
	select {
	case <-ctx.Done():
		return
	case <-sess.CloseChan():
	}
	n.mu.Lock()
	addr, dialer := "", n.dials[name]
	if n.plan != nil {
		addr = n.plan.Nodes[name]
	}
	n.mu.Unlock()
	if n.peer(name) != sess || !dialer {
		return // replaced already, or the peer redials us
	}
	if addr == "" {
		return
	}
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		if err := n.dialPeer(ctx, name, addr); err == nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// reconnectPeer reopens every link toward instances on peer.
func (n *Node) reconnectPeer(ctx context.Context, peer string) {
	n.event(events.PeerReconnected, "", events.PeerReconnectedFields{Peer: peer}, "session to %s re-established; links reconnect", peer)
	for _, in := range n.instances() {
		in.do(func() { in.reconnectTo(ctx, peer) })
	}
}

// reconnectTo reopens this instance's links toward instances on node
// peer: the resume handshake tells what the receiver already has.
func (in *instance) reconnectTo(ctx context.Context, peer string) {
	for pi, pt := range in.ports {
		for _, l := range pt.links {
			if l.place.Node != peer || l.local != nil {
				continue
			}
			if l.st != nil {
				l.st.Close()
			}
			in.relink(ctx, pi, l, false)
		}
	}
}
