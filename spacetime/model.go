package spacetime

import (
	"slices"
	"strings"
	"time"

	"spate/events"
)

// Loss is one node lost while it hosted instances, and the recovery that
// followed: what a space-time diagram of it draws.
type Loss struct {
	Node   string // the lost node
	Reason string // why it was declared lost
	Global bool   // --ft global: the whole job rolled back
	// Origin is when the job started (the first event if the run has no
	// job_started): labels give times from it.
	Origin time.Time
	// Fault is the verb of the fault that took the node ("kill",
	// "pause"), "" if no fault of the run explains the loss; Killed is
	// when it began, or Detected if none.
	Fault    string
	Killed   time.Time
	Detected time.Time // node_lost: the coordinator noticed
	// Done is when the recovery ended: the last lost instance caught up
	// (--ft global: every instance restored). Zero: not within the run.
	Done time.Time
	// Start and End bound the window drawn: from a little before the
	// oldest checkpoint restored to a little after Done.
	Start, End time.Time
	Lanes      []Lane    // every instance known at the loss, in the order they were placed
	Restores   []Restore // one per lost instance placed again, in the order they were placed
	Replays    []Replay  // the upstreams' replays to the restored instances, in order
	Rollback   *Rollback // --ft global only
	// Split is a parallel recovery's (--recover parallel) plan: what each
	// instance keeps or gets of the lost one's key groups ("count#2 gets
	// [[21,42)]"); the new instances have lanes of their own.
	Split []string
}

// Lane is one operator instance's line in the diagram.
type Lane struct {
	Instance string // "count#0"
	Node     string // where it ran when the node was lost
	Lost     bool   // it ran on the lost node
	Ticks    []Tick // the checkpoints completed on it within the window, in time order
}

// Tick is a completed checkpoint on a lane: the instance's own or, under
// --ft global, a global one (on every lane).
type Tick struct {
	ID     uint64
	At     time.Time // when it was complete (durable)
	Full   bool
	Global bool
}

// Restore is one lost instance placed again and restored.
type Restore struct {
	Instance string
	Node     string // where it was placed
	Gen      uint64 // its new generation
	// Checkpoint is the checkpoint it loaded (0: none, it started from
	// nothing), CheckpointAt when that checkpoint was complete (zero if
	// the run does not hold it), Fellback whether the latest was damaged
	// and an older one used.
	Checkpoint   uint64
	CheckpointAt time.Time
	Fellback     bool
	Placed       time.Time
	Restored     time.Time // zero: never restored within the run
	Done         time.Time // caught up with its upstreams; zero: never within the run
}

// Replay is what an upstream replayed from its backup to a restored
// instance.
type Replay struct {
	From, To string
	Records  uint64
	At       time.Time // when the upstream reported it
}

// Rollback is a global rollback (--ft global): every instance restarts
// from global checkpoint Checkpoint and the sources read Records again.
type Rollback struct {
	Checkpoint   uint64
	CheckpointAt time.Time // zero: the start, or not in the run
	Records      uint64
	Unusable     []uint64  // the later global checkpoints it tried first, found damaged
	Placed       time.Time // the coordinator ordered it
	Restored     time.Time // every instance restored; zero: never within the run
}

// Lane is the lane of instance id, nil if the loss has none.
func (l *Loss) Lane(id string) *Lane {
	for i := range l.Lanes {
		if l.Lanes[i].Instance == id {
			return &l.Lanes[i]
		}
	}
	return nil
}

// Lost are the instances that ran on the lost node, in lane order.
func (l Loss) Lost() []string {
	var out []string
	for _, ln := range l.Lanes {
		if ln.Lost {
			out = append(out, ln.Instance)
		}
	}
	return out
}

// fault is a fault_started of the run.
type fault struct {
	verb  string
	nodes []string
	at    time.Time
}

// fold is the state Losses keeps while it reads the events.
type fold struct {
	origin   time.Time
	order    []string          // instances in the order first seen
	node     map[string]string // instance -> where it runs now
	ticks    map[string][]Tick // instance -> its checkpoints
	global   []Tick            // global checkpoints
	faults   []fault
	losses   []*Loss
	open     map[string]*Loss // instance -> the loss it is recovering from
	last     map[string]*Loss // instance -> the latest loss that took it
	lastLoss map[string]time.Time
	rescaled time.Time // the latest rescale_planned
}

// Losses folds a run's events, in the order of the run, into one Loss per
// node lost while it hosted instances, in the order of the losses. A
// node lost before the job was deployed (node_lost without instances) is
// not one. Events it cannot place are passed over.
func Losses(evs []events.Event) []Loss {
	f := &fold{node: map[string]string{}, ticks: map[string][]Tick{}, open: map[string]*Loss{},
		last: map[string]*Loss{}, lastLoss: map[string]time.Time{}}
	for _, e := range evs {
		f.add(e)
	}
	out := make([]Loss, 0, len(f.losses))
	for _, l := range f.losses {
		f.finish(l)
		out = append(out, *l)
	}
	return out
}

// see notes instance id, on node if known: a new one gets a lane in
// every loss still recovering (a parallel recovery's new instances, a
// rescale's), after the lanes of its operator.
func (f *fold) see(id, node string) {
	if id == "" || slices.Contains(f.order, id) {
		return
	}
	f.order = append(f.order, id)
	if node == "" {
		node = f.node[id]
	}
	for _, l := range f.losses {
		if f.recovering(l) {
			l.addLane(Lane{Instance: id, Node: node})
		}
	}
}

// recovering says whether l has an instance still recovering.
func (f *fold) recovering(l *Loss) bool {
	for _, ol := range f.open {
		if ol == l {
			return true
		}
	}
	return false
}

// addLane puts ln after the last lane of its operator, or last.
func (l *Loss) addLane(ln Lane) {
	op, _, _ := strings.Cut(ln.Instance, "#")
	at := len(l.Lanes)
	for i, o := range l.Lanes {
		if oop, _, _ := strings.Cut(o.Instance, "#"); oop == op {
			at = i + 1
		}
	}
	l.Lanes = slices.Insert(l.Lanes, at, ln)
}

func (f *fold) add(e events.Event) {
	if f.origin.IsZero() {
		f.origin = e.Time
	}
	if e.Instance != "" && e.Node != "" && e.Kind != events.Fenced {
		f.see(e.Instance, e.Node)
		f.node[e.Instance] = e.Node // an instance's events come from its node
	}
	switch p := e.Fields.(type) {
	case events.JobStartedFields, nil:
		if e.Kind == events.JobStarted {
			f.origin = e.Time
		}
	case events.RescalePlannedFields:
		f.rescaled = e.Time
	case events.RecoverySplitFields:
		if len(p.Instances) > 0 {
			if l := f.open[string(p.Instances[0])]; l != nil {
				l.Split = append(l.Split, p.Parts...)
			}
		}
	case events.CheckpointFields:
		t := Tick{ID: p.ID, At: e.Time, Full: p.Full, Global: p.Global}
		if p.Global {
			f.global = append(f.global, t)
			return
		}
		if e.Instance == "" {
			return
		}
		f.ticks[e.Instance] = append(f.ticks[e.Instance], t)
	case events.FaultStartedFields:
		f.faults = append(f.faults, fault{verb: p.Verb, nodes: p.Nodes, at: e.Time})
	case events.NodeLostFields:
		f.lost(e, p)
	case events.RecoveryPlacedFields:
		f.placed(e, p)
	case events.RecoveryRestoredFields:
		f.restored(e, p)
	case events.ReplayFields:
		f.see(p.To, "")
		f.replay(e, p)
	case events.RecoveryDoneFields:
		if l := f.open[e.Instance]; l != nil {
			if r := l.restore(e.Instance); r != nil {
				r.Done = e.Time
			}
			delete(f.open, e.Instance)
		}
	}
}

// replay adds a replay to the recovery of the instance it went to: one
// that has not caught up yet, or caught up with no rescale since (the
// upstream may report its replay a little after the coordinator saw the
// instance catch up; a rescale's re-sends are not the recovery's). A
// replay to a lane the loss does not have yet gives it one.
func (f *fold) replay(e events.Event, p events.ReplayFields) {
	l := f.open[p.To]
	if l == nil {
		l = f.splitting(p.To, e.Instance)
	}
	if l == nil {
		l = f.last[p.To]
		if l == nil || e.Time.Before(l.Detected) {
			return
		}
		r := l.restore(p.To)
		if r == nil || r.Done.IsZero() || f.rescaled.After(r.Done) {
			return
		}
	}
	for _, id := range []string{e.Instance, p.To} {
		if l.Lane(id) == nil {
			l.addLane(Lane{Instance: id, Node: f.node[id]})
		}
	}
	l.Replays = append(l.Replays, Replay{From: e.Instance, To: p.To, Records: p.Records, At: e.Time})
}

// splitting is the loss still recovering whose parallel recovery gave
// key groups to one of ids, nil if none.
func (f *fold) splitting(ids ...string) *Loss {
	for i := len(f.losses) - 1; i >= 0; i-- {
		l := f.losses[i]
		if !f.recovering(l) {
			continue
		}
		for _, part := range l.Split {
			if name, _, _ := strings.Cut(part, " "); slices.Contains(ids, name) {
				return l
			}
		}
	}
	return nil
}

// lost opens a Loss for a node_lost that names instances.
func (f *fold) lost(e events.Event, p events.NodeLostFields) {
	if len(p.Instances) == 0 {
		return
	}
	l := &Loss{Node: e.Node, Reason: p.Reason, Detected: e.Time, Killed: e.Time}
	// The fault that explains it: the latest on the node that began
	// before the loss was noticed and after the node's previous loss.
	prev := f.lastLoss[e.Node]
	for _, ft := range f.faults {
		if slices.Contains(ft.nodes, e.Node) && !ft.at.After(e.Time) && ft.at.After(prev) {
			l.Fault, l.Killed = ft.verb, ft.at
		}
	}
	f.lastLoss[e.Node] = e.Time
	lost := map[string]bool{}
	for _, id := range p.Instances {
		f.see(string(id), e.Node)
		lost[string(id)] = true
	}
	for _, id := range f.order {
		l.Lanes = append(l.Lanes, Lane{Instance: id, Node: f.node[id], Lost: lost[id]})
		if lost[id] {
			if l.Lanes[len(l.Lanes)-1].Node == "" {
				l.Lanes[len(l.Lanes)-1].Node = e.Node
			}
			f.open[id], f.last[id] = l, l
		}
	}
	f.losses = append(f.losses, l)
}

func (f *fold) placed(e events.Event, p events.RecoveryPlacedFields) {
	if e.Instance == "" { // --ft global: the whole job rolls back
		l := f.globalLoss()
		if l == nil {
			return
		}
		l.Global = true
		if rb := l.Rollback; rb != nil && rb.Restored.IsZero() {
			// The checkpoint it rolled back to was damaged: it falls
			// back to an older one.
			if rb.Checkpoint != p.Checkpoint {
				rb.Unusable = append(rb.Unusable, rb.Checkpoint)
			}
			rb.Checkpoint, rb.Records = p.Checkpoint, p.Records
			return
		}
		l.Rollback = &Rollback{Checkpoint: p.Checkpoint, Records: p.Records, Placed: e.Time}
		return
	}
	l := f.open[e.Instance]
	if l == nil {
		return
	}
	if r := l.restore(e.Instance); r != nil { // placed again before it was restored
		r.Node, r.Gen, r.Placed = e.Node, p.Gen, e.Time
		return
	}
	l.Restores = append(l.Restores, Restore{Instance: e.Instance, Node: e.Node, Gen: p.Gen, Placed: e.Time})
}

func (f *fold) restored(e events.Event, p events.RecoveryRestoredFields) {
	if e.Instance == "" {
		l := f.globalLoss()
		if l == nil || l.Rollback == nil {
			return
		}
		l.Rollback.Restored = e.Time
		l.Done = e.Time
		for id, ol := range f.open {
			if ol == l {
				delete(f.open, id)
			}
		}
		return
	}
	l := f.open[e.Instance]
	if l == nil {
		return
	}
	if r := l.restore(e.Instance); r != nil {
		r.Checkpoint, r.Fellback, r.Restored = p.Checkpoint, p.Fellback, e.Time
	}
}

// globalLoss is the latest loss a global rollback or restore belongs to:
// the newest one still open.
func (f *fold) globalLoss() *Loss {
	for i := len(f.losses) - 1; i >= 0; i-- {
		if f.recovering(f.losses[i]) {
			return f.losses[i]
		}
	}
	return nil
}

// restore is the restore of instance id, nil if it has none yet.
func (l *Loss) restore(id string) *Restore {
	for i := range l.Restores {
		if l.Restores[i].Instance == id {
			return &l.Restores[i]
		}
	}
	return nil
}

// checkpointAt is when checkpoint id of ticks was complete, the latest
// one before t (ids restart with nothing, but a dead branch may repeat
// one); zero if none.
func checkpointAt(ticks []Tick, id uint64, t time.Time) time.Time {
	var at time.Time
	for _, tk := range ticks {
		if tk.ID == id && tk.At.Before(t) {
			at = tk.At
		}
	}
	return at
}

// finish sets what needs the whole run: the restored checkpoints' times,
// Done, the window and the ticks in it.
func (f *fold) finish(l *Loss) {
	l.Origin = f.origin
	var last time.Time // the latest thing the recovery did
	bump := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	bump(l.Detected)
	done := len(l.Restores) > 0
	for i := range l.Restores {
		r := &l.Restores[i]
		if r.Checkpoint > 0 {
			r.CheckpointAt = checkpointAt(f.ticks[r.Instance], r.Checkpoint, l.Detected)
		}
		bump(r.Placed)
		bump(r.Restored)
		bump(r.Done)
		if r.Done.IsZero() {
			done = false
		}
	}
	if done {
		l.Done = last
	}
	if rb := l.Rollback; rb != nil {
		if rb.Checkpoint > 0 {
			rb.CheckpointAt = checkpointAt(f.global, rb.Checkpoint, l.Detected)
		}
		bump(rb.Placed)
		bump(rb.Restored)
	}
	for _, rp := range l.Replays {
		bump(rp.At)
	}
	if !l.Done.IsZero() {
		bump(l.Done)
	}
	span := last.Sub(l.Killed)
	m := max(span/10, time.Millisecond)
	first := l.Killed.Add(-max(span/4, m))
	for _, ck := range l.restoredAt() {
		if ck.Add(-m).Before(first) {
			first = ck.Add(-m)
		}
	}
	l.Start, l.End = first, last.Add(m)
	for i := range l.Lanes {
		ln := &l.Lanes[i]
		var ticks []Tick
		ticks = append(ticks, f.ticks[ln.Instance]...)
		ticks = append(ticks, f.global...)
		for _, tk := range ticks {
			if !tk.At.Before(l.Start) && !tk.At.After(l.End) {
				ln.Ticks = append(ln.Ticks, tk)
			}
		}
		slices.SortStableFunc(ln.Ticks, func(a, b Tick) int { return a.At.Compare(b.At) })
	}
}

// restoredAt are the times of the checkpoints the recovery restored that
// the run holds.
func (l Loss) restoredAt() []time.Time {
	var out []time.Time
	for _, r := range l.Restores {
		if !r.CheckpointAt.IsZero() {
			out = append(out, r.CheckpointAt)
		}
	}
	if l.Rollback != nil && !l.Rollback.CheckpointAt.IsZero() {
		out = append(out, l.Rollback.CheckpointAt)
	}
	return out
}

// Restored is the checkpoint a lane's instance was restored from and
// when it was complete: the instance's own restore or the global
// rollback; false if the lane was not restored.
func (l Loss) Restored(id string) (uint64, time.Time, bool) {
	for _, r := range l.Restores {
		if r.Instance == id && !r.Restored.IsZero() {
			return r.Checkpoint, r.CheckpointAt, true
		}
	}
	if rb := l.Rollback; rb != nil && !rb.Restored.IsZero() {
		return rb.Checkpoint, rb.CheckpointAt, true
	}
	return 0, time.Time{}, false
}
