package netfault

// The link fault layer.
//
// Every link of the cluster (coordinator to node, node to node) is one TCP
// connection carrying one yamux session. Each process owns one Layer and
// wraps every connection it dials or accepts with Layer.Wrap, naming the
// peer at the other end. The process's driver (the coordinator for itself,
// a node on the coordinator's order) then sets faults per peer with
// Layer.Set, and lifts them with Clear or ClearAll (heal).
//
// What a fault does to a wrapped connection:
//
//   - BlockSend holds every byte this process writes toward the peer. The
//     bytes are kept, in order, not dropped: TCP would retransmit packets
//     lost across a cut, so when the block is lifted they flow again,
//     exactly once and in order. The connection is never closed by a block.
//   - BlockRecv holds every byte arriving from the peer: the reader is not
//     handed them (and stops reading the socket, so the peer's TCP window
//     fills as it would behind a real cut). Together with BlockSend on the
//     other end this makes one-way partitions.
//   - Stall holds everything in both directions until cleared.
//   - Latency and Jitter deliver the bytes of each Write latency ± jitter
//     after the Write (uniformly drawn, never below zero), and never out of
//     order: a write is never released before an earlier one.
//   - Bandwidth (bytes per second) paces outbound bytes with a token bucket.
//   - Reset is an action, not a state: Set with Reset closes every current
//     connection to the peer now (with SO_LINGER 0 on TCP, so the peer sees
//     a reset) and both ends' reads and writes fail. Connections wrapped
//     later are not affected; the rest of the fault, if any, stays set.
//
// Held bytes are bounded (Config.MaxHeld, 64 MiB by default). Once that
// many bytes are held on a connection, Write blocks until some are delivered,
// as a writer blocks on a full TCP window. Writes therefore never block
// forever while the fault layer has room, and never grow memory without
// bound. A write deadline set on the connection ends such a blocked Write
// with os.ErrDeadlineExceeded; bytes already accepted stay queued and are
// still delivered, as bytes in a kernel send buffer would be.
//
// A fault takes effect for the bytes written and read after Set returns; a
// Write already handed to the socket when it is set is not held (it was on
// the wire before the cut).
//
// Faults act on what this process sends (BlockSend, Latency, Jitter,
// Bandwidth) or receives (BlockRecv); a symmetric cut is set at both ends or
// as both directions at one end. Faults set for a peer apply to every
// connection to it, present and future (a reconnect does not escape a
// partition).
//
// Control over a cut link: a process must never hold the traffic that
// carries its own orders, or nothing could lift the fault. Faults on the
// links between the coordinator and a node are therefore set in the
// coordinator's Layer only (PartitionPlan places them so); to heal, the
// coordinator clears its own Layer first and then tells the nodes.
//
// Cost: with no fault set on a connection, Read and Write cost one atomic
// load on top of the wrapped connection's own (see BenchmarkWrapNoFault).
//
// Concurrency: Layer's methods are safe for concurrent use. A wrapped
// connection is safe for the use yamux makes of it (one reader goroutine,
// concurrent writers, Close from anywhere), and for any use net.Conn
// allows. Close unblocks every Read and Write and discards held bytes (as a
// crash would; a closed partitioned TCP connection would not deliver them
// either).
//
// Time and randomness are injected (Config.Clock, Config.Rand). Deadlines
// on wrapped connections are compared with Config.Clock for the waits the
// layer does itself; they are also passed to the wrapped connection.
//
// Lock order: Layer.mu before faultConn.mu; Layer.rngMu is a leaf taken
// under faultConn.mu. No lock is held across a Read or Write of the wrapped
// connection.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrReset is the error, wrapped with the link's names, that Read and Write
// return on a connection closed by a Reset fault.
var ErrReset = errors.New("connection reset by link fault")

// DefaultMaxHeld bounds the bytes held toward one peer on one connection
// before Write blocks (backpressure, like a full TCP window).
const DefaultMaxHeld = 64 << 20

// Clock is the time source of a Layer. RealClock is the product's.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (or, for a fake clock, from
	// the goroutine advancing time, never from within AfterFunc) once d
	// has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not happened yet and reports
	// whether it did so.
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// LinkFault is the fault on the link to one peer, seen from one process.
// The zero value is no fault.
type LinkFault struct {
	BlockSend bool          // hold what this process sends to the peer
	BlockRecv bool          // hold what arrives from the peer
	Stall     bool          // hold everything, both ways
	Latency   time.Duration // delay of each write's bytes
	Jitter    time.Duration // latency varies uniformly by ± Jitter
	Bandwidth int64         // bytes per second sent; 0 is unlimited
	Reset     bool          // close the current connections now (an action)
}

// IsZero reports whether f is no fault at all.
func (f LinkFault) IsZero() bool { return f == LinkFault{} }

// Validate returns a one-line error naming the first bad field.
func (f LinkFault) Validate() error {
	switch {
	case f.Latency < 0:
		return fmt.Errorf("latency %v is negative", f.Latency)
	case f.Jitter < 0:
		return fmt.Errorf("jitter %v is negative", f.Jitter)
	case f.Bandwidth < 0:
		return fmt.Errorf("bandwidth %d is negative", f.Bandwidth)
	}
	return nil
}

// String is a short description for events and reports, e.g.
// "block-send latency=50ms±10ms bandwidth=1000B/s".
func (f LinkFault) String() string {
	var parts []string
	if f.Stall {
		parts = append(parts, "stall")
	}
	if f.BlockSend {
		parts = append(parts, "block-send")
	}
	if f.BlockRecv {
		parts = append(parts, "block-recv")
	}
	if f.Latency > 0 || f.Jitter > 0 {
		s := "latency=" + f.Latency.String()
		if f.Jitter > 0 {
			s += "±" + f.Jitter.String()
		}
		parts = append(parts, s)
	}
	if f.Bandwidth > 0 {
		parts = append(parts, fmt.Sprintf("bandwidth=%dB/s", f.Bandwidth))
	}
	if f.Reset {
		parts = append(parts, "reset")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// sendShaped reports whether f changes what this process sends.
func (f LinkFault) sendShaped() bool {
	return f.BlockSend || f.Stall || f.Latency > 0 || f.Jitter > 0 || f.Bandwidth > 0
}

func (f LinkFault) sendBlocked() bool { return f.BlockSend || f.Stall }
func (f LinkFault) recvBlocked() bool { return f.BlockRecv || f.Stall }

// burst is the token bucket's depth for a bandwidth: about 50 ms of
// traffic, at least 512 bytes, at most 1 MiB.
func (f LinkFault) burst() float64 {
	return min(max(float64(f.Bandwidth)/20, 512), 1<<20)
}

// Config configures a Layer.
type Config struct {
	Clock   Clock      // nil: RealClock
	Rand    *rand.Rand // jitter draws; nil: a fixed seed
	MaxHeld int        // bytes held per connection before Write blocks; 0: DefaultMaxHeld
	// FrameAligned holds traffic only between two yamux frames of a
	// connection marked Framed: the frame under way when a fault starts
	// is delivered whole. For the simulation: yamux reads a frame's body
	// under its stream's lock, and a reader held mid-frame leaves the
	// stream's readers waiting on that mutex, which stops a synctest
	// bubble's clock for good. The product holds bytes wherever they are,
	// as a real network does.
	FrameAligned bool
}

// DefaultConfig is the product's configuration, with the wall clock.
func DefaultConfig() Config {
	return Config{Clock: RealClock{}, MaxHeld: DefaultMaxHeld}
}

// Validate returns a one-line error naming the first bad field.
func (c Config) Validate() error {
	if c.MaxHeld < 0 {
		return fmt.Errorf("chaos: config: max held %d is negative", c.MaxHeld)
	}
	return nil
}

// Layer is one process's link fault layer. Safe for concurrent use. A nil
// *Layer wraps nothing: Wrap returns the connection unchanged.
type Layer struct {
	clock        Clock
	maxHeld      int
	frameAligned bool

	rngMu sync.Mutex
	rng   *rand.Rand

	mu     sync.Mutex
	faults map[string]LinkFault           // by peer; never holds Reset
	conns  map[string]map[*faultConn]bool // live wrapped connections by peer
}

// NewLayer returns a Layer with no fault set.
func NewLayer(cfg Config) (*Layer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(0x5eed, 0x11f7))
	}
	if cfg.MaxHeld == 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	return &Layer{
		clock:        cfg.Clock,
		maxHeld:      cfg.MaxHeld,
		frameAligned: cfg.FrameAligned,
		rng:          cfg.Rand,
		faults:       map[string]LinkFault{},
		conns:        map[string]map[*faultConn]bool{},
	}, nil
}

// Wrap returns c wrapped by the layer: local is this process's name and
// peer the process at the other end ("coord", "n2"). The fault currently
// set for peer applies at once. A nil Layer or a nil c returns c.
func (l *Layer) Wrap(c net.Conn, local, peer string) net.Conn {
	if l == nil || c == nil {
		return c
	}
	fc := &faultConn{
		Conn:    c,
		layer:   l,
		local:   local,
		peer:    peer,
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.conns[peer]
	if set == nil {
		set = map[*faultConn]bool{}
		l.conns[peer] = set
	}
	set[fc] = true
	if f, ok := l.faults[peer]; ok {
		fc.mu.Lock()
		fc.setFaultLocked(f)
		fc.mu.Unlock()
	}
	return fc
}

// Set sets the fault on the link to peer, replacing any previous one, for
// every present and future connection to it. A fault with Reset also
// closes the present connections now. It returns a one-line error for an
// empty peer or a bad field, and then changes nothing.
func (l *Layer) Set(peer string, f LinkFault) error {
	if l == nil {
		return errors.New("chaos: link fault: no fault layer")
	}
	if peer == "" {
		return errors.New("chaos: link fault: empty peer")
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("chaos: link fault for %q: %w", peer, err)
	}
	reset := f.Reset
	f.Reset = false
	l.mu.Lock()
	if f.IsZero() {
		delete(l.faults, peer)
	} else {
		l.faults[peer] = f
	}
	var victims []*faultConn
	for c := range l.conns[peer] {
		if reset {
			victims = append(victims, c)
		}
		c.mu.Lock()
		c.setFaultLocked(f)
		c.mu.Unlock()
	}
	l.mu.Unlock()
	for _, c := range victims {
		c.reset()
	}
	return nil
}

// Clear lifts the fault on the link to peer: held bytes flow again, in
// order.
func (l *Layer) Clear(peer string) {
	if l == nil {
		return
	}
	_ = l.Set(peer, LinkFault{})
}

// ClearAll lifts every fault (heal).
func (l *Layer) ClearAll() {
	if l == nil {
		return
	}
	l.mu.Lock()
	peers := make([]string, 0, len(l.faults))
	for p := range l.faults {
		peers = append(peers, p)
	}
	l.mu.Unlock()
	for _, p := range peers {
		l.Clear(p)
	}
}

// Faults returns a copy of the faults set, by peer.
func (l *Layer) Faults() map[string]LinkFault {
	out := map[string]LinkFault{}
	if l == nil {
		return out
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, f := range l.faults {
		out[p] = f
	}
	return out
}

// Held returns the bytes currently held on the links to peer, both
// directions, over all its connections.
func (l *Layer) Held(peer string) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.conns[peer] {
		c.mu.Lock()
		n += c.held + len(c.in)
		c.mu.Unlock()
	}
	return n
}

// Peers returns the peers with at least one live wrapped connection,
// sorted.
func (l *Layer) Peers() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for p, set := range l.conns {
		if len(set) > 0 {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func (l *Layer) forget(c *faultConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if set := l.conns[c.peer]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(l.conns, c.peer)
		}
	}
}

// jitter draws a delay for one write.
func (l *Layer) delay(f LinkFault) time.Duration {
	d := f.Latency
	if f.Jitter > 0 {
		l.rngMu.Lock()
		u := l.rng.Float64()
		l.rngMu.Unlock()
		d += time.Duration((2*u - 1) * float64(f.Jitter))
	}
	return max(d, 0)
}

// Flags of faultConn.flags: set when the direction must take the slow path.
const (
	flagSendSlow = 1 << iota
	flagRecvSlow
)

// chunk is one write's bytes held until at.
type chunk struct {
	b  []byte
	at time.Time
}

// faultConn is a wrapped connection. The fast path (no fault, nothing
// held) is one atomic load of flags; everything else is under mu.
type faultConn struct {
	net.Conn
	layer       *Layer
	local, peer string

	flags atomic.Uint32

	mu      sync.Mutex
	fault   LinkFault
	queue   []chunk   // outbound bytes held, oldest first
	held    int       // bytes in queue
	lastAt  time.Time // release time of the newest chunk: never release earlier
	tokens  float64   // bandwidth bucket
	tokAt   time.Time // last refill
	pumping bool      // the pump goroutine runs
	timer   Timer     // the pump's wake-up
	timerAt time.Time
	wdl     time.Time     // write deadline set by the user
	rdl     time.Time     // read deadline set by the user
	in      []byte        // inbound bytes read but held
	rerr    error         // the read error that came with in, returned after it
	werr    error         // the pump's write error, sticky
	err     error         // closed or reset, sticky
	changed chan struct{} // closed and replaced on every change
	done    chan struct{} // closed by Close
	// framed (Framed, with Config.FrameAligned): holds fall between
	// frames. wcur follows the bytes delivered to the wrapped connection
	// (under mu), rcur those handed to the reader (its goroutine's).
	framed atomic.Bool
	wcur   frameCursor
	rcur   frameCursor

	closeOnce sync.Once
}

func (c *faultConn) name() string { return c.local + "->" + c.peer }

// broadcastLocked wakes every waiter to re-check the state.
func (c *faultConn) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *faultConn) broadcast() {
	c.mu.Lock()
	c.broadcastLocked()
	c.mu.Unlock()
}

// waitLocked releases mu until something changes, the deadline passes or
// the connection closes, and takes it again.
func (c *faultConn) waitLocked(deadline time.Time) {
	ch := c.changed
	var t Timer
	if !deadline.IsZero() {
		if d := deadline.Sub(c.layer.clock.Now()); d > 0 {
			t = c.layer.clock.AfterFunc(d, c.broadcast)
		} else {
			return
		}
	}
	c.mu.Unlock()
	select {
	case <-ch:
	case <-c.done:
	}
	if t != nil {
		t.Stop()
	}
	c.mu.Lock()
}

func (c *faultConn) expiredLocked(deadline time.Time) bool {
	return !deadline.IsZero() && !c.layer.clock.Now().Before(deadline)
}

// setFaultLocked installs f (without Reset).
func (c *faultConn) setFaultLocked(f LinkFault) {
	if c.err != nil {
		return
	}
	old := c.fault
	c.fault = f
	if f.Bandwidth != old.Bandwidth {
		c.tokens = f.burst()
		c.tokAt = c.layer.clock.Now()
	}
	c.updateFlagsLocked()
	c.broadcastLocked()
}

// updateFlagsLocked recomputes the fast-path flags. While the send side is
// slow the pump owns the wrapped connection's writes, so the user's write
// deadline is lifted from it (held bytes are delivered whatever the
// deadline, as a kernel send buffer's would be) and restored on return to
// the fast path.
func (c *faultConn) updateFlagsLocked() {
	var f uint32
	if c.err != nil || c.werr != nil || c.fault.sendShaped() || len(c.queue) > 0 {
		f |= flagSendSlow
	}
	if c.err != nil || c.fault.recvBlocked() || len(c.in) > 0 || c.rerr != nil {
		f |= flagRecvSlow
	}
	old := c.flags.Load()
	if c.err == nil && (old^f)&flagSendSlow != 0 {
		if f&flagSendSlow != 0 {
			_ = c.Conn.SetWriteDeadline(time.Time{})
		} else {
			_ = c.Conn.SetWriteDeadline(c.wdl)
		}
	}
	c.flags.Store(f)
}

// Write writes p to the peer, or holds it under a fault.
func (c *faultConn) Write(p []byte) (int, error) {
	if c.flags.Load()&flagSendSlow == 0 {
		n, err := c.Conn.Write(p)
		if c.framed.Load() {
			c.mu.Lock()
			c.wcur.advance(p[:n])
			c.mu.Unlock()
		}
		if err != nil {
			err = c.ownErr(err)
		}
		return n, err
	}
	return c.writeSlow(p)
}

// ownErr replaces err, from the wrapped connection, with the reason the
// layer closed it (a reset), if it did.
func (c *faultConn) ownErr(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil && !errors.Is(c.err, net.ErrClosed) {
		return c.err
	}
	return err
}

func (c *faultConn) writeSlow(p []byte) (int, error) {
	c.mu.Lock()
	if c.flags.Load()&flagSendSlow == 0 {
		// The fault was lifted and the queue drained meanwhile.
		n, err := c.Conn.Write(p)
		if c.framed.Load() {
			c.wcur.advance(p[:n])
		}
		c.mu.Unlock()
		return n, err
	}
	if err := c.writeErrLocked(); err != nil {
		c.mu.Unlock()
		return 0, err
	}
	total := 0
	for len(p) > 0 {
		if err := c.writeErrLocked(); err != nil {
			c.mu.Unlock()
			return total, err
		}
		if c.expiredLocked(c.wdl) {
			c.mu.Unlock()
			return total, os.ErrDeadlineExceeded
		}
		room := c.layer.maxHeld - c.held
		if room <= 0 {
			// Backpressure: the held bytes are at their bound.
			c.waitLocked(c.wdl)
			continue
		}
		n := min(room, len(p))
		at := c.layer.clock.Now().Add(c.layer.delay(c.fault))
		if at.Before(c.lastAt) {
			at = c.lastAt
		}
		c.lastAt = at
		c.queue = append(c.queue, chunk{b: append([]byte(nil), p[:n]...), at: at})
		c.held += n
		p = p[n:]
		total += n
		c.updateFlagsLocked()
		if !c.pumping {
			c.pumping = true
			go c.pump()
		}
		c.broadcastLocked()
	}
	c.mu.Unlock()
	return total, nil
}

func (c *faultConn) writeErrLocked() error {
	if c.err != nil {
		return c.err
	}
	return c.werr
}

// armLocked makes sure the pump is woken at at.
func (c *faultConn) armLocked(at time.Time, now time.Time) {
	if c.timer != nil && c.timerAt.Equal(at) {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timerAt = at
	c.timer = c.layer.clock.AfterFunc(at.Sub(now), c.broadcast)
}

// pump delivers the held bytes, in order, when the fault lets it. It runs
// while the queue is not empty.
func (c *faultConn) pump() {
	c.mu.Lock()
	for {
		if c.err != nil || c.werr != nil || len(c.queue) == 0 {
			c.pumping = false
			if c.timer != nil {
				c.timer.Stop()
				c.timer = nil
			}
			c.updateFlagsLocked()
			c.broadcastLocked()
			c.mu.Unlock()
			return
		}
		// Framed, the frame under way goes out whole before the hold.
		finish := c.fault.sendBlocked() && c.framed.Load() && c.wcur.left() > 0
		if c.fault.sendBlocked() && !finish {
			c.waitLocked(time.Time{})
			continue
		}
		now := c.layer.clock.Now()
		head := &c.queue[0]
		if head.at.After(now) {
			c.armLocked(head.at, now)
			c.waitLocked(time.Time{})
			continue
		}
		n := len(head.b)
		if finish {
			n = min(n, c.wcur.left())
		}
		if bw := c.fault.Bandwidth; bw > 0 {
			burst := c.fault.burst()
			c.tokens = min(burst, c.tokens+float64(bw)*now.Sub(c.tokAt).Seconds())
			c.tokAt = now
			want := min(float64(n), burst)
			if c.tokens < want {
				d := time.Duration(math.Ceil((want - c.tokens) / float64(bw) * 1e9))
				c.armLocked(now.Add(max(d, 1)), now)
				c.waitLocked(time.Time{})
				continue
			}
			n = int(want)
			c.tokens -= want
		}
		b := head.b[:n]
		c.mu.Unlock()
		w, err := c.Conn.Write(b)
		c.mu.Lock()
		if c.framed.Load() {
			c.wcur.advance(b[:w])
		}
		if w > 0 && len(c.queue) > 0 {
			// Close may have emptied the queue meanwhile.
			c.queue[0].b = c.queue[0].b[w:]
			c.held -= w
			if len(c.queue[0].b) == 0 {
				c.queue[0] = chunk{}
				c.queue = c.queue[1:]
			}
		}
		if err != nil && c.werr == nil && c.err == nil {
			c.werr = fmt.Errorf("chaos: link %s: %w", c.name(), err)
		}
		c.broadcastLocked() // room for blocked writers
	}
}

// Read reads from the peer, or waits while its traffic is held.
func (c *faultConn) Read(p []byte) (int, error) {
	framed := c.framed.Load()
	for {
		slow := c.flags.Load()&flagRecvSlow != 0
		if !slow || framed && c.rcur.left() > 0 && c.nothingHeld() {
			q := p
			if slow { // framed, mid-frame: the rest of the frame only
				q = p[:min(len(p), c.rcur.left())]
			}
			n, err := c.Conn.Read(q)
			if n == 0 && err != nil {
				return 0, c.ownErr(err)
			}
			if n == 0 || c.flags.Load()&flagRecvSlow == 0 {
				if framed {
					c.rcur.advance(q[:n])
				}
				return n, err
			}
			// A fault arrived while we were reading: these bytes are
			// on the far side of the cut now, but for the rest of the
			// frame under way, framed.
			k := 0
			if framed {
				k = c.rcur.boundaryIn(q[:n])
				c.rcur.advance(q[:k])
			}
			c.mu.Lock()
			c.in = append(c.in, q[k:n]...)
			if err != nil && c.rerr == nil {
				c.rerr = err
			}
			c.updateFlagsLocked()
			c.mu.Unlock()
			if k > 0 {
				return k, nil
			}
		}
		n, err, again := c.readHeld(p)
		if !again {
			return n, err
		}
	}
}

// readHeld serves a Read on the slow path: it hands out held bytes once the
// fault allows, or reports (again) that the fast path may be taken.
func (c *faultConn) readHeld(p []byte) (int, error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.err != nil {
			return 0, c.err, false
		}
		if mid := c.framed.Load() && c.rcur.left() > 0; !c.fault.recvBlocked() || mid && len(c.in) > 0 {
			if len(c.in) > 0 {
				q := p
				if c.fault.recvBlocked() { // framed: the rest of the frame under way only
					q = p[:min(len(p), c.rcur.left())]
				}
				n := copy(q, c.in)
				if c.framed.Load() {
					c.rcur.advance(q[:n])
				}
				c.in = c.in[n:]
				if len(c.in) == 0 {
					c.in = nil
				}
				c.updateFlagsLocked()
				return n, nil, false
			}
			if c.rerr != nil {
				err := c.rerr
				c.rerr = nil
				c.updateFlagsLocked()
				return 0, err, false
			}
			c.updateFlagsLocked()
			return 0, nil, true
		}
		if c.expiredLocked(c.rdl) {
			return 0, os.ErrDeadlineExceeded, false
		}
		c.waitLocked(c.rdl)
	}
}

// nothingHeld reports whether no inbound byte or error waits in the hold.
func (c *faultConn) nothingHeld() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.in) == 0 && c.rerr == nil && c.err == nil
}

// Close closes the connection, unblocks every Read and Write, and discards
// the held bytes.
func (c *faultConn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		c.mu.Lock()
		if c.err == nil {
			c.err = net.ErrClosed
		}
		c.queue, c.held, c.in, c.rerr = nil, 0, nil, nil
		if c.timer != nil {
			c.timer.Stop()
			c.timer = nil
		}
		c.flags.Store(flagSendSlow | flagRecvSlow)
		close(c.done)
		c.broadcastLocked()
		c.mu.Unlock()
		err = c.Conn.Close()
		c.layer.forget(c)
	})
	return err
}

// reset closes the connection so that both ends see an error now.
func (c *faultConn) reset() {
	c.mu.Lock()
	if c.err == nil {
		c.err = fmt.Errorf("chaos: link %s: %w", c.name(), ErrReset)
	}
	c.mu.Unlock()
	if l, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	_ = c.Close()
}

// SetDeadline sets both deadlines.
func (c *faultConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline, here and on the wrapped
// connection.
func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.broadcastLocked()
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline sets the write deadline. It bounds Writes waiting for
// room; the wrapped connection gets it only while nothing is held.
func (c *faultConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wdl = t
	c.broadcastLocked()
	if c.flags.Load()&flagSendSlow == 0 {
		return c.Conn.SetWriteDeadline(t)
	}
	return nil
}
