package node

import (
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"spate/events"
	"spate/internal/human"
	"spate/job"
	"spate/state"
	"spate/wire"
)

// Early restore (doc.go, "Early restore"). A keyed instance restored from
// a checkpoint (CtlRestore, --ft spate) answers restored once it has
// read, checked and merged its chain and rebuilt everything but its key
// groups' state: input positions, output counters, watermark, upstream
// backups. It starts at once; the key groups are built off its state on
// loader goroutines and each is attached on the instance's goroutine as
// soon as it is whole (every file of the chain that holds it has been
// applied, in order: the chain is merged before any group is built).
//
//   - A record of a key group that is live (attached, or held by no file
//     of the chain) is applied at once. A record of a key group still
//     loading is held, in arrival order per key group, its position not
//     advanced, and applied the moment the group is attached, through
//     the same duplicate and gap checks as any other record: exactly
//     once, in the order it came.
//   - The watermark stays where the checkpoint left it until every group
//     is attached: no window fires, for a live group or a loading one,
//     and none is sent downstream, so a record held for a loading group
//     is never behind the watermark, and the order in which windows fire
//     (window end, then key, over all groups) is what it would be after
//     a whole load. The operators emit only when windows fire, so the
//     output and its numbers are what a whole load gives.
//   - No checkpoint is captured while groups load (state.Table forbids a
//     capture between a group's build and its attach), nor a rescale's
//     release or drop: a checkpoint then holds every held record's group
//     and positions that cover only what was applied. A load of a slice
//     into the instance waits for the end too, as does its end of input
//     (finish).
//   - Held records are bounded (maxLoadHeld): past it the instance takes
//     no input until groups attach, which backpressures its upstreams.
//   - A group that fails to build (its file passed its checksum, so only
//     a writer's bug can do it) stops the node: its instances are
//     restored elsewhere, never run on part of their state.

// earlyLoad is an early restore in progress. The instance goroutine owns
// it; the loader goroutines read groups (each its own) and gl.
type earlyLoad struct {
	began     time.Time // when the chain was merged: about when restored went out
	gl        job.GroupLoader
	groups    []state.MergedGroup // still to build, by the loaders
	snaps     []*state.Snapshot   // the chain the groups alias, kept alive
	loading   []bool              // by key group: its state is not attached yet
	pending   int                 // groups not attached yet
	held      map[job.KeyGroup][]loadHeld
	nheld     int
	maxHeld   int // the most records held at once (recovery_loaded)
	heldBytes int
	after     []func()     // what waits for the end of the load, in order
	finish    bool         // every input ended during the load
	next      atomic.Int64 // the loaders' next group
}

// loadHeld is a record of a loading key group, kept until it is attached.
type loadHeld struct {
	p   job.Producer
	seq uint64
	rec job.Record
}

// maxLoadHeld bounds the bytes of the records held for loading groups.
const maxLoadHeld = 64 << 20

// earlyLoader returns the operator as a GroupLoader if the restore of
// groups may be early: asked for, --ft spate, a keyed operator that can
// load group by group, and every group of the chain its own (a group
// the placement no longer gives it is dropped after a whole load, and
// that drop goes into its next delta).
func (in *instance) earlyLoader(early bool, groups []state.MergedGroup) job.GroupLoader {
	gl, ok := in.stateful.(job.GroupLoader)
	if !early || !ok || in.plan.FT != wire.FTSpate || len(groups) == 0 {
		return nil
	}
	for _, g := range groups {
		if g.KG < 0 || g.KG >= len(in.owned) || !in.owned[g.KG] {
			return nil
		}
	}
	return gl
}

func newEarlyLoad(gl job.GroupLoader, groups []state.MergedGroup, snaps []*state.Snapshot, ngroups int) *earlyLoad {
	ld := &earlyLoad{began: time.Now(), gl: gl, groups: groups, snaps: snaps, loading: make([]bool, ngroups), held: map[job.KeyGroup][]loadHeld{}}
	for _, g := range groups {
		if !ld.loading[g.KG] {
			ld.loading[g.KG] = true
			ld.pending++
		}
	}
	return ld
}

// hold keeps a record of a loading key group (its key and data copied).
func (ld *earlyLoad) hold(p job.Producer, kg job.KeyGroup, seq uint64, rec job.Record) {
	rec.Key = append([]byte(nil), rec.Key...)
	rec.Data = append([]byte(nil), rec.Data...)
	ld.held[kg] = append(ld.held[kg], loadHeld{p: p, seq: seq, rec: rec})
	ld.nheld++
	ld.maxHeld = max(ld.maxHeld, ld.nheld)
	ld.heldBytes += heldSize(rec)
}

// heldSize is what a held record counts toward maxLoadHeld.
func heldSize(rec job.Record) int { return len(rec.Key) + len(rec.Data) + 64 }

// full reports whether the held records have reached their bound.
func (ld *earlyLoad) full() bool { return ld.heldBytes >= maxLoadHeld }

// loadGroups builds the groups of ld on up to GOMAXPROCS goroutines and
// hands each, built, to the instance's goroutine (attachLoaded). It
// returns at once; the loaders end with the load, or with the instance.
func (in *instance) loadGroups(ld *earlyLoad) {
	workers := min(runtime.GOMAXPROCS(0), len(ld.groups))
	for range workers {
		go func() {
			for {
				i := int(ld.next.Add(1)) - 1
				if i >= len(ld.groups) {
					return
				}
				g := &ld.groups[i]
				b, err := ld.gl.BuildGroup(g)
				kg := job.KeyGroup(g.KG)
				if !in.do(func() { in.attachLoaded(ld, kg, b, err) }) {
					return // the instance has stopped
				}
			}
		}()
	}
}

// attachLoaded runs on the instance's goroutine when a loader has built
// key group kg: it attaches it and applies the records held for it, in
// the order they came; after the last group, what waited for the load.
func (in *instance) attachLoaded(ld *earlyLoad, kg job.KeyGroup, b job.BuiltGroup, err error) {
	if in.ld != ld {
		return
	}
	if err == nil {
		err = ld.gl.AttachGroup(b)
	}
	if err != nil {
		in.n.event(events.Error, in.id, nil, "restore of %s: key group %d: %v; the node stops: its instances are restored elsewhere", in.id, kg, err)
		in.stop()
		if in.n.cancel != nil {
			in.n.cancel()
		}
		return
	}
	ld.loading[kg] = false
	ld.pending--
	if q := ld.held[kg]; len(q) > 0 {
		delete(ld.held, kg)
		gaps := in.gapHolding()
		for i := range q {
			h := &q[i]
			in.accept(h.p, kg, h.seq, h.rec, in.dedupOf(h.p), gaps)
			ld.heldBytes -= heldSize(h.rec)
		}
		ld.nheld -= len(q)
	}
	if ld.pending > 0 {
		return
	}
	took := time.Since(ld.began).Round(time.Millisecond)
	in.n.event(events.RecoveryLoaded, in.id, events.RecoveryLoadedFields{Groups: len(ld.groups), LoadMs: took.Milliseconds(), HeldMax: ld.maxHeld},
		"%s's state is whole: %s built %v after the load began, %s held at most meanwhile", in.id, human.Plural(len(ld.groups), "key group"), took.Round(time.Millisecond), human.Plural(ld.maxHeld, "record"))
	in.ld = nil
	for _, f := range ld.after {
		f()
	}
	in.advance()
	if ld.finish && !in.finished && !slices.Contains(in.ended, false) { // (an input added since, by a rescale, has not ended)
		in.finish()
	}
}
