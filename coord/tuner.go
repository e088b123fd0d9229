package coord

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"spate/control"
	"spate/events"
	"spate/internal/human"
	"spate/job"
	"spate/tuner"
	"spate/wire"
)

// The interval tuner on the live cluster (--interval auto). The event
// loop feeds a tuner.Controller with what the nodes report: per instance,
// the records processed and the time spent processing them (heartbeats),
// each checkpoint's records, dirty keys, cost and persist time
// (onCheckpointed), each failure's detection, restart and load times
// (recover, onRestored). About once a second it ticks the controller,
// emits every decision as an `interval` event and sends each changed
// interval to the node hosting the instance (wire.CtlInterval). Time is
// the coordinator's injected clock, relative to the job's start.
//
// Whatever the interval policy, with --ft spate the same measurements are
// summed per instance into a TunerAccount, emitted at the end of the run
// (event tuner_summary): `spate bench tuner` computes the useful fraction
// from it (tuner/MODEL.md, "Live validation").

// LiveTunerConfig is the controller's configuration on a live cluster:
// tuner.DefaultConfig with bounds and pace for a lab cluster whose runs
// last minutes, not months. failures, if not empty, is a failure source
// (tuner.OpenFailures) whose MTBF is the failure-rate prior.
func LiveTunerConfig(failures string) (tuner.Config, error) {
	tc := tuner.DefaultConfig()
	tc.Min = 200 * time.Millisecond
	tc.Max = 30 * time.Second
	tc.Initial = time.Second // what the nodes start with: Config.IntervalDuration for auto
	tc.Every = 5 * time.Second
	tc.HalfLife = 30 * time.Second
	tc.MaxBackup = 200_000 // tuples one interval may leave to replay (and the upstream backup to hold)
	tc.Cost = tuner.CostModel{Base: 5 * time.Millisecond}
	tc.Detect, tc.Restart, tc.Load = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	if failures != "" {
		f, err := tuner.OpenFailures(failures)
		if err != nil {
			return tc, err
		}
		tc.PriorMTBF = f.MTBF()
	}
	return tc, tc.Validate()
}

// TunerAccount is what one instance did over a run, all its generations
// together: the measurements behind the live useful fraction. It is the
// payload of tuner_summary's instances.
type TunerAccount = events.TunerAccount

// tunerState is the coordinator's side of the interval tuner; the event
// loop owns it.
type tunerState struct {
	ctl     *tuner.Controller // --interval auto with --ft spate; nil otherwise
	fixed   time.Duration     // the interval a fixed policy keeps
	t0      time.Time         // the job's start: the controller's origin
	last    time.Time         // the previous tick
	insts   map[job.InstanceID]*tunedInst
	buf     []tuner.Decision
	global  time.Duration // --ft global: the barrier period
	enabled bool          // --ft spate: intervals and accounts per instance
}

// tunedInst is one instance as the tuner follows it.
type tunedInst struct {
	gen        uint64 // the generation the counters below belong to (0: none seen yet)
	in         uint64
	busyUs     int64
	at         time.Time
	capGen     uint64 // the generation and records at its latest checkpoint capture
	capIn      uint64
	rate       float64       // records/s processed over the last tick, for a lost generation's count after its last heartbeat
	iv         time.Duration // the interval in force
	pinned     bool          // set by hand: the controller's decisions are not applied
	lostBeat   time.Time     // the lost node's last heartbeat, for the detection time
	ivIntegral float64       // ∫ interval dt, seconds²
	acct       TunerAccount
}

// tunerInit prepares the tuner when the job is deployed.
func (c *core) tunerInit() error {
	t := &c.tn
	t.insts = map[job.InstanceID]*tunedInst{}
	t.fixed = c.cfg.IntervalDuration()
	t.global = t.fixed
	t.enabled = c.ft.mode() == wire.FTSpate
	if c.cfg.Interval != "auto" || c.ft.mode() == wire.FTNone {
		return nil
	}
	tc, err := LiveTunerConfig(c.cfg.Failures)
	if err != nil {
		return fmt.Errorf("%w: --failures: %v", ErrUsage, err)
	}
	if c.ft.mode() == wire.FTGlobal {
		// One barrier period for the whole job, from the static model
		// evaluated once on the configured assumptions (a busy job, ρ = 1):
		// Young's interval with the assumed cost and the prior MTBF.
		p := tuner.Params{Rate: 1, Capacity: 1, Cost: tc.Cost, FailureRate: 1 / tc.PriorMTBF.Seconds(),
			Detect: tc.Detect, Restart: tc.Restart, Load: tc.Load, Persist: tc.Persist}
		t.global = p.Optimal(tc.Min, tc.Max)
		c.emit(events.Interval, "", "", events.IntervalFields{Instance: "global", IntervalMs: t.global.Milliseconds(),
			Reason: "static model at start (--ft global: one barrier period for the job)", Inputs: inputFields(p, 0)},
			"global checkpoint period %v: the static model once at start, on the assumed cost %v and prior MTBF %v", t.global, tc.Cost.Base, tc.PriorMTBF)
		return nil
	}
	if t.ctl, err = tuner.NewController(tc); err != nil {
		return err
	}
	for _, p := range c.plan.Instances {
		if c.spec.Ops[c.spec.Op(p.Op)].Kind == job.KindSink {
			if err := t.ctl.SetMax(p.ID, 0, sinkMaxInterval); err != nil {
				return err
			}
		}
	}
	return nil
}

// sinkMaxInterval bounds a sink's tuned interval: its checkpoint commits
// its output, so the interval is how long its results stay uncommitted,
// and how far back its output goes when it is restored. The model weighs
// neither (at 30 s, a restored sink took the 10-minute soak's output lag
// past its 30 s limit).
const sinkMaxInterval = 5 * time.Second

func (c *core) tunerInst(id job.InstanceID) *tunedInst {
	ti := c.tn.insts[id]
	if ti == nil {
		ti = &tunedInst{iv: c.tn.fixed, acct: TunerAccount{Instance: id}}
		c.tn.insts[id] = ti
	}
	return ti
}

// rel is the controller's time: since the job's start.
func (c *core) rel(now time.Time) time.Duration {
	return max(now.Sub(c.tn.t0), 0)
}

// tunerStart starts the clock when the job starts.
func (c *core) tunerStart() {
	c.tn.t0 = c.now
	c.tn.last = c.tn.t0
}

// globalInterval is the barrier period of --ft global.
func (c *core) globalInterval() time.Duration {
	if c.tn.global > 0 {
		return c.tn.global
	}
	return c.cfg.IntervalDuration()
}

// intervalOf is the interval in force for an instance (0 with --ft none).
func (c *core) intervalOf(id job.InstanceID) time.Duration {
	switch {
	case c.ft.mode() == wire.FTNone:
		return 0
	case c.ft.mode() == wire.FTGlobal:
		return c.globalInterval()
	}
	if ti := c.tn.insts[id]; ti != nil {
		return ti.iv
	}
	return c.tn.fixed
}

// tunerTick feeds the controller the counters of the last second, ticks
// it, and applies and reports its decisions.
func (c *core) tunerTick() {
	t := &c.tn
	if !t.enabled || !c.started || c.plan == nil {
		return
	}
	now := c.now
	dt := now.Sub(t.last)
	if dt < time.Second {
		return
	}
	t.last = now
	at := c.rel(now)
	for _, p := range c.plan.Instances {
		if c.done[p.ID] != nil || c.lost[p.ID] {
			continue
		}
		ti := c.tunerInst(p.ID)
		ti.acct.ExposureS += dt.Seconds()
		ti.ivIntegral += dt.Seconds() * ti.iv.Seconds()
		ti.acct.PlannedCkpts += dt.Seconds() / ti.iv.Seconds()
		ns := c.nodes[p.Node]
		s, ok := ns.stats[p.ID]
		if !ok || s.Gen != p.Gen {
			continue
		}
		if ti.gen != s.Gen || s.In < ti.in || s.BusyUs < ti.busyUs {
			ti.gen, ti.in, ti.busyUs, ti.at = s.Gen, s.In, s.BusyUs, now
			continue
		}
		span := now.Sub(ti.at)
		dIn, dBusy := s.In-ti.in, s.BusyUs-ti.busyUs
		ti.in, ti.busyUs, ti.at = s.In, s.BusyUs, now
		if span > 0 {
			ti.rate = float64(dIn) / span.Seconds()
		}
		if t.ctl == nil || span <= 0 {
			continue
		}
		_ = t.ctl.ObserveLoad(p.ID, at, float64(dIn), span)
		_ = t.ctl.ObserveBusy(p.ID, at, float64(dIn), time.Duration(dBusy)*time.Microsecond, span)
	}
	if t.ctl == nil {
		return
	}
	t.buf = t.ctl.Tick(at, t.buf[:0])
	for _, d := range t.buf {
		ti := c.tunerInst(d.Instance)
		if ti.pinned || c.done[d.Instance] != nil || c.lost[d.Instance] {
			continue
		}
		if d.Changed {
			ti.iv = d.Interval
			c.sendInterval(d.Instance)
		}
		c.emitDecision(d)
	}
}

// sendInterval tells the node hosting id its interval.
func (c *core) sendInterval(id job.InstanceID) {
	p := c.placeOf[id]
	ti := c.tn.insts[id]
	if p == nil || ti == nil {
		return
	}
	if ns := c.nodes[p.Node]; ns.live() {
		c.send(ns, wire.Control{Kind: wire.CtlInterval, Interval: &wire.Interval{Instance: id, Ms: max(ti.iv.Milliseconds(), 1)}})
	}
}

// inputFields are a decision's model inputs as event fields.
func inputFields(p tuner.Params, interval time.Duration) events.IntervalInputs {
	mtbf := math.Inf(1)
	if p.FailureRate > 0 {
		mtbf = 1 / p.FailureRate
	}
	f := events.IntervalInputs{
		Rate: p.Rate, Capacity: p.Capacity, Util: p.Util(),
		CostBaseMs: ms(p.Cost.Base), CostPerKeyUs: p.Cost.PerKey * 1e6, StateKeys: p.Cost.StateKeys,
		FailureRate: p.FailureRate, DetectMs: ms(p.Detect), RestartMs: ms(p.Restart), LoadMs: ms(p.Load),
		PersistMs: ms(p.Persist),
	}
	if !math.IsInf(mtbf, 1) {
		f.MTBFS = &mtbf
	}
	if interval > 0 {
		cost := p.Cost.Seconds(p.Rate*interval.Seconds()) * 1000
		f.CheckpointCostMs = &cost
	}
	return f
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// emitDecision reports one decision as an interval event.
func (c *core) emitDecision(d tuner.Decision) {
	node := ""
	if p := c.placeOf[d.Instance]; p != nil {
		node = p.Node
	}
	reason := d.Reason()
	f := events.IntervalFields{
		Instance: string(d.Instance), IntervalMs: d.Interval.Milliseconds(), Reason: reason,
		Inputs: inputFields(d.Inputs, d.Interval), PreviousMs: d.Previous.Milliseconds(),
		OptimumMs: d.Optimum.Milliseconds(), Changed: d.Changed, Why: d.Why.String(),
		PredictedEfficiency: d.Efficiency, Failures: d.Failures, ExposureS: d.Exposure.Seconds(),
		OwnFailures: d.Own, OwnExposureS: d.OwnExp.Seconds()}
	if w := d.Weight; !math.IsInf(w, 1) {
		f.PriorWeight = &w // absent: the pooled rate
	}
	c.emit(events.Interval, node, string(d.Instance), f, "%s interval %s", d.Instance, reason)
}

// tunerCheckpointed takes in a complete checkpoint.
func (c *core) tunerCheckpointed(cp *wire.Checkpoint) {
	if !c.tn.enabled {
		return
	}
	ti := c.tunerInst(cp.Instance)
	tuples := cp.In
	if ti.capGen == cp.Gen && cp.In >= ti.capIn {
		tuples = cp.In - ti.capIn
	}
	ti.capGen, ti.capIn = cp.Gen, cp.In
	cost := time.Duration(cp.CaptureUs+cp.EncodeUs) * time.Microsecond
	persist := time.Duration(cp.TotalUs) * time.Microsecond
	ti.acct.Checkpoints++
	ti.acct.CheckpointS += cost.Seconds()
	ti.acct.PersistS += persist.Seconds()
	if c.tn.ctl == nil {
		return
	}
	n := float64(tuples)
	if cp.Full {
		n = 0 // a full checkpoint writes every key: a point of the cost line, not of the dirty curve
	}
	_ = c.tn.ctl.ObserveCheckpoint(cp.Instance, c.rel(c.now), tuner.Checkpoint{Tuples: n, Dirty: float64(cp.Keys), Cost: cost, Persist: persist})
}

// tunerLost folds the lost generation of id into its account: what it
// processed, and what of it its successor will process again (since the
// checkpoint it will restore). It runs before recover places id anew.
func (c *core) tunerLost(id job.InstanceID, lost string) {
	p := c.placeOf[id]
	if !c.tn.enabled || p == nil {
		return
	}
	ti := c.tunerInst(id)
	ns := c.nodes[lost]
	var in uint64
	var busy int64
	if s, ok := ns.stats[id]; ok && s.Gen == p.Gen {
		in, busy = s.In, s.BusyUs
	}
	ti.acct.Processed += in
	ti.acct.BusyS += float64(busy) / 1e6
	// The heartbeat's count is up to a heartbeat period old: what the
	// generation processed after it is estimated at its recent rate.
	stale := min(max(c.now.Sub(ns.lastBeat), 0), c.cfg.Heartbeat)
	var cp *wire.Checkpoint
	if _, cps := c.manifest.restorable(id); len(cps) > 0 {
		cp = &cps[0]
	}
	ti.acct.Replayed += lostReplay(p.Gen, in, ti.rate*stale.Seconds(), cp)
	ti.acct.Failures++
	ti.gen, ti.lostBeat = 0, ns.lastBeat
}

// lostReplay is what a lost generation gen had processed since the
// checkpoint cp its successor restores (nil: none), in records: its count
// at the loss (in, from its last heartbeat, plus extra, an estimate of
// what it processed after that heartbeat) minus its count at cp's capture;
// all of it when cp is an older generation's, or none. cp may have been
// captured after the last heartbeat (its count is then the better bound on
// the count at the loss): the generation processed at least that much.
func lostReplay(gen, in uint64, extra float64, cp *wire.Checkpoint) uint64 {
	at := float64(in) + max(extra, 0)
	if cp == nil || cp.Gen != gen {
		return uint64(math.Round(at))
	}
	return uint64(math.Round(max(at, float64(cp.In)) - float64(cp.In)))
}

// tunerRestored takes in a finished restore: the recovery's phase times,
// and the interval the new instance must use.
func (c *core) tunerRestored(p *wire.Placement, r *recovery) {
	if !c.tn.enabled {
		return
	}
	ti := c.tunerInst(p.ID)
	c.sendInterval(p.ID)
	if r == nil {
		return
	}
	detect := max(r.detected.Sub(ti.lostBeat), 0)
	if ti.lostBeat.IsZero() {
		detect = 0
	}
	rec := tuner.Recovery{Detect: detect, Restart: max(r.placed.Sub(r.detected), 0), Load: max(r.restored.Sub(r.placed), 0)}
	ti.acct.DowntimeS += (rec.Detect + rec.Restart + rec.Load).Seconds()
	if c.tn.ctl != nil {
		_ = c.tn.ctl.ObserveFailure(p.ID, c.rel(r.restored), rec)
	}
}

// tunerFinish emits every instance's account (event tuner_summary).
func (c *core) tunerFinish() {
	if !c.tn.enabled || c.plan == nil {
		return
	}
	var accts []TunerAccount
	for _, p := range c.plan.Instances {
		ti := c.tunerInst(p.ID)
		a := ti.acct
		if d := c.done[p.ID]; d != nil {
			a.Processed += d.In
		}
		if ns := c.nodes[p.Node]; ns != nil {
			if s, ok := ns.stats[p.ID]; ok && s.Gen == p.Gen {
				a.BusyS += float64(s.BusyUs) / 1e6
			}
		}
		if a.ExposureS > 0 {
			a.MeanIntervalS = ti.ivIntegral / a.ExposureS
		}
		accts = append(accts, a)
	}
	policy := c.cfg.Interval
	c.emit(events.TunerSummary, "", "", events.TunerSummaryFields{Interval: policy, Instances: accts},
		"interval tuner summary (--interval %s): %s", policy, summaryText(accts))
}

func summaryText(accts []TunerAccount) string {
	var busy, ck, down float64
	var fails, cps int
	var rep uint64
	for _, a := range accts {
		busy += a.BusyS
		ck += a.CheckpointS
		down += a.DowntimeS
		fails += a.Failures
		cps += a.Checkpoints
		rep += a.Replayed
	}
	return fmt.Sprintf("%s costing %s, %s (%s down, %s replayed), %s processing", human.Plural(cps, "checkpoint"), human.Seconds(ck),
		human.Plural(fails, "failure"), human.Seconds(down), human.PluralCount(float64(rep), "record"), human.Seconds(busy))
}

// actInterval is the control action `interval TARGET interval=DURATION|auto`:
// it pins the interval of the target's instances (an instance, an
// operator or all), or gives them back to the tuner.
func (c *core) actInterval(a control.Action) (control.Result, error) {
	v, ok := a.Args["interval"]
	if !ok {
		return control.Result{}, errors.New("interval: want interval=DURATION or interval=auto")
	}
	var d time.Duration
	if v != "auto" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			return control.Result{}, fmt.Errorf("interval: %q is not a positive duration or auto", v)
		}
	}
	switch {
	case c.ft.mode() == wire.FTNone:
		return control.Result{}, errors.New("interval: this run takes no checkpoints (--ft none)")
	case c.ft.mode() == wire.FTGlobal:
		return control.Result{}, errors.New("interval: --ft global has one barrier period for the whole job, not one per instance")
	case c.plan == nil:
		return control.Result{}, errors.New("interval: the job is not deployed yet")
	}
	target := strings.Replace(a.Target, "/", "#", 1)
	var ids []job.InstanceID
	for _, p := range c.plan.Instances {
		if target == "all" || string(p.ID) == target || p.Op == target {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return control.Result{}, fmt.Errorf("interval: target %q names no instance or operator of this job (or all)", a.Target)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var names []string
	for _, id := range ids {
		ti := c.tunerInst(id)
		prev := ti.iv
		reason := "set by hand"
		if d > 0 {
			ti.iv, ti.pinned = d, true
		} else {
			ti.pinned = false
			ti.iv = c.tn.fixed
			if c.tn.ctl != nil {
				ti.iv = c.tn.ctl.Interval(id)
				reason = "set by hand: back to auto, the tuner's interval"
			} else {
				reason = "set by hand: back to the run's --interval"
			}
			if ti.iv <= 0 {
				ti.iv = c.tn.fixed
			}
		}
		c.sendInterval(id)
		names = append(names, string(id))
		node := ""
		if p := c.placeOf[id]; p != nil {
			node = p.Node
		}
		c.emit(events.Interval, node, string(id), events.IntervalFields{Instance: string(id), IntervalMs: ti.iv.Milliseconds(),
			PreviousMs: prev.Milliseconds(), Reason: reason, Pinned: ti.pinned, Inputs: events.IntervalInputs{}},
			"%s interval %v -> %v: %s", id, prev, ti.iv, reason)
	}
	what := v
	if d > 0 {
		what = d.String()
	}
	return control.Result{Text: fmt.Sprintf("interval %s for %s", what, strings.Join(names, ","))}, nil
}
