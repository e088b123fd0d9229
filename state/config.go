package state

import "fmt"

// Config decides the kind of each checkpoint of an instance.
type Config struct {
	// FullEvery makes every FullEvery-th checkpoint of a chain a full one:
	// a full snapshot, then at most FullEvery-1 deltas. 1: always full.
	FullEvery int

	// MaxChainRatio replaces a delta chain by a full snapshot when the
	// deltas since the base, together, are stored in more than
	// MaxChainRatio times what a fresh base would be (ChainState.Current;
	// the base's size if it is not known): restoring would then read more
	// than a fresh base costs to write. 0 disables the rule. The sizes are
	// of the keyed state (ChainState): the plain sections, the upstream
	// backup's records, a restore reads back at a small part of what a
	// key costs it, and FullEvery bounds how many it reads; counted, they
	// made most of a chain's bytes, and full checkpoints, several times a
	// delta's cost, came after a few deltas instead of every FullEvery-th.
	MaxChainRatio float64
}

// DefaultConfig returns the defaults: a full snapshot every 10
// checkpoints, or as soon as the deltas outweigh a fresh base.
func DefaultConfig() Config {
	return Config{FullEvery: 10, MaxChainRatio: 1}
}

// Validate checks c. Errors wrap ErrInvalid.
func (c Config) Validate() error {
	if c.FullEvery < 1 {
		return fmt.Errorf("%w config: FullEvery %d, want >= 1", ErrInvalid, c.FullEvery)
	}
	if c.MaxChainRatio < 0 || c.MaxChainRatio != c.MaxChainRatio {
		return fmt.Errorf("%w config: MaxChainRatio %v, want >= 0", ErrInvalid, c.MaxChainRatio)
	}
	return nil
}

// ChainState is what the choice of the next checkpoint's kind depends on:
// the instance's current chain of durable snapshots.
type ChainState struct {
	Base      bool  // a durable full snapshot starts the chain, and every delta after it is durable
	Deltas    int   // durable deltas since the base
	BaseSize  int64 // stored bytes of the base, without its plain sections (Snapshot.PlainSize)
	DeltaSize int64 // stored bytes of those deltas, together, without theirs
	// Current is what a full snapshot of the state as it is now would be
	// stored in, an estimate (0: not known). A state that grows outgrows
	// its base: against the base, deltas of new keys soon outweighed it,
	// and a full checkpoint, of all the keys, came after a delta or two
	// while the state grew.
	Current int64
}

// WantFull reports whether the next checkpoint must be a full one: there is
// no intact chain to extend (none yet, or a capture was lost), the chain
// already has FullEvery-1 deltas, or its deltas cost more than
// MaxChainRatio fresh bases.
func (c Config) WantFull(s ChainState) bool {
	switch {
	case !s.Base:
		return true
	case s.Deltas+1 >= c.FullEvery:
		return true
	case c.MaxChainRatio > 0 && float64(s.DeltaSize) > c.MaxChainRatio*float64(s.fresh()):
		return true
	}
	return false
}

// fresh is what a fresh base would be stored in.
func (s ChainState) fresh() int64 {
	if s.Current > 0 {
		return s.Current
	}
	return s.BaseSize
}

// Planner tracks one instance's chain and says, for each checkpoint, whether
// it is full and which ids it links to. It is pure (no I/O, no clock) and
// not safe for concurrent use. The runtime keeps at most one checkpoint in
// flight per instance: Next, then Persisted or Failed.
type Planner struct {
	cfg   Config
	st    ChainState
	base  uint64 // id of the base
	last  uint64 // id of the latest durable snapshot of the chain
	next  uint64 // id of the next checkpoint
	plan  Plan
	begun bool
}

// Plan is the kind and links of one checkpoint.
type Plan struct {
	ID, Base, Parent uint64
	Full             bool
}

// NewPlanner returns a planner whose first checkpoint has id first (>= 1)
// and is full.
func NewPlanner(cfg Config, first uint64) *Planner {
	return &Planner{cfg: cfg, next: max(first, 1)}
}

// Resume returns a planner that extends a restored chain: the durable
// snapshot restored is id last, of the chain that starts at base, with st
// its state. Use NewPlanner to start over with a full snapshot instead.
func Resume(cfg Config, st ChainState, base, last uint64) *Planner {
	return &Planner{cfg: cfg, st: st, base: base, last: last, next: last + 1}
}

// Next plans the next checkpoint. Capture full if Plan.Full.
func (p *Planner) Next() Plan {
	pl := Plan{ID: p.next, Full: p.cfg.WantFull(p.st)}
	if pl.Full {
		pl.Base = pl.ID
	} else {
		pl.Base, pl.Parent = p.base, p.last
	}
	p.plan, p.begun = pl, true
	p.next++
	return pl
}

// Persisted records that the planned checkpoint is durable, stored in size
// bytes.
func (p *Planner) Persisted(size int64) {
	if !p.begun {
		return
	}
	p.begun = false
	if p.plan.Full {
		p.st = ChainState{Base: true, BaseSize: size}
		p.base = p.plan.ID
	} else {
		p.st.Deltas++
		p.st.DeltaSize += size
	}
	p.last = p.plan.ID
}

// Failed records that the planned checkpoint was not made durable (or its
// capture was abandoned): what it held is lost to the chain, so the next
// checkpoint is full.
func (p *Planner) Failed() {
	p.begun = false
	p.st = ChainState{}
}

// State returns the state of the current chain.
func (p *Planner) State() ChainState { return p.st }
