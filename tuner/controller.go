package tuner

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"spate/internal/human"
	"spate/job"
)

// Config configures the online controller. The zero value is not valid;
// start from DefaultConfig.
type Config struct {
	Min, Max   time.Duration // bounds on an interval
	Initial    time.Duration // an instance's interval before its first decision
	Every      time.Duration // an instance is reconsidered at most this often
	HalfLife   time.Duration // of the EWMA of input rate and capacity
	Hysteresis float64       // keep the interval while the optimum is within this relative distance of it
	CostMemory int           // checkpoints: forgetting horizon of the cost fit and of the other per-event averages

	// The failure-rate prior: PriorWeight failures' worth of evidence that
	// the mean time between failures of one instance is PriorMTBF (from a
	// fitted failure trace, or a guess). Observed failures and exposure are
	// added to it (a Gamma–Poisson posterior mean).
	PriorMTBF   time.Duration
	PriorWeight float64

	// InstanceWeight is the weight, in failures, of the pooled rate as the
	// prior of each instance's own rate: f_i = (w + k_i)/(w/f + x_i), with
	// k_i the instance's failures, x_i its exposure and f the pooled rate
	// above. 0 estimates w from the spread of the instances' counts (the
	// moment estimator of a Gamma–Poisson model; MODEL.md, section 5); +Inf
	// gives every instance the pooled rate.
	InstanceWeight float64

	// MaxBackup, if > 0, caps an interval at MaxBackup/rate: the upstream
	// backup must hold the tuples of one interval (two, with the fallback).
	MaxBackup float64

	// Assumed until measured.
	Cost                           CostModel
	Detect, Restart, Load, Persist time.Duration
}

// DefaultConfig is the controller's configuration for a live cluster.
func DefaultConfig() Config {
	return Config{
		Min:         time.Second,
		Max:         6 * time.Hour,
		Initial:     10 * time.Second,
		Every:       30 * time.Second,
		HalfLife:    5 * time.Minute,
		Hysteresis:  0.25,
		CostMemory:  20,
		PriorMTBF:   24 * time.Hour,
		PriorWeight: 1,
		Cost:        CostModel{Base: 50 * time.Millisecond},
		Detect:      time.Second,
		Restart:     time.Second,
		Load:        500 * time.Millisecond,
	}
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	switch {
	case c.Min <= 0:
		return paramErr("min interval %v: want > 0", c.Min)
	case c.Max < c.Min:
		return paramErr("max interval %v: want >= min %v", c.Max, c.Min)
	case c.Initial < c.Min || c.Initial > c.Max:
		return paramErr("initial interval %v: want within %v..%v", c.Initial, c.Min, c.Max)
	case c.Every <= 0:
		return paramErr("decision period %v: want > 0", c.Every)
	case c.HalfLife <= 0:
		return paramErr("half-life %v: want > 0", c.HalfLife)
	case !(c.Hysteresis >= 0 && c.Hysteresis <= 10):
		return paramErr("hysteresis %v: want 0..10", c.Hysteresis)
	case c.CostMemory < 1:
		return paramErr("cost memory %d: want >= 1", c.CostMemory)
	case c.PriorMTBF <= 0:
		return paramErr("prior MTBF %v: want > 0", c.PriorMTBF)
	case !(c.PriorWeight > 0) || math.IsInf(c.PriorWeight, 1):
		return paramErr("prior weight %v: want a finite number > 0", c.PriorWeight)
	case !(c.InstanceWeight >= 0):
		return paramErr("instance weight %v: want >= 0 (0: estimated, +Inf: pooled)", c.InstanceWeight)
	case math.IsNaN(c.MaxBackup) || c.MaxBackup < 0:
		return paramErr("max backup %v: want >= 0", c.MaxBackup)
	}
	return Params{Capacity: 1, Cost: c.Cost, Detect: c.Detect, Restart: c.Restart, Load: c.Load, Persist: c.Persist}.Validate()
}

// Checkpoint is what the controller learns from one completed checkpoint.
type Checkpoint struct {
	Tuples  float64       // tuples the instance processed since its previous checkpoint
	Dirty   float64       // distinct keys they dirtied (what the checkpoint wrote)
	Cost    time.Duration // processing time the checkpoint took from the instance
	Persist time.Duration // from capture to durable
}

// Recovery is what the controller learns from one failure of an instance.
type Recovery struct {
	Detect  time.Duration // from the failure to its detection
	Restart time.Duration // placing and starting the instance again
	Load    time.Duration // loading its checkpoint
}

// Why says what a Decision did.
type Why uint8

// The kinds of decision.
const (
	Kept    Why = iota // the optimum is within the hysteresis band
	Moved              // the optimum left the band: the interval follows it
	Bounded            // the optimum is outside [Lower, Upper]: the interval is that bound
	NoInput            // no input measured: the interval goes to its maximum
	Unknown            // capacity not measured yet: the interval is kept
)

func (w Why) String() string {
	names := [...]string{"kept", "moved", "bounded", "no input", "unknown"}
	if int(w) < len(names) {
		return names[w]
	}
	return fmt.Sprintf("Why(%d)", w)
}

// Decision is one interval decision for one instance, with everything it
// was computed from. Reason renders it for a human.
type Decision struct {
	Instance   job.InstanceID
	At         time.Duration // controller time of the decision
	Interval   time.Duration // the interval to use from now on
	Previous   time.Duration
	Changed    bool
	Why        Why
	Optimum    time.Duration // the model's optimum before bounds (saturated if infinite; Max with no input)
	Lower      time.Duration // the effective lower bound: Config.Min, or the persist time if longer
	Upper      time.Duration // the effective upper bound: Max, or MaxBackup/rate
	Inputs     Params        // the smoothed measurements the model used
	Failures   int           // failures observed, all instances
	Exposure   time.Duration // instance-time observed, all instances
	Own        int           // failures observed of this instance
	OwnExp     time.Duration // time this instance was observed
	Weight     float64       // the pooled rate's weight in Inputs.FailureRate, in failures (+Inf: pooled)
	Efficiency float64       // the model's predicted efficiency at Interval
}

// Reason is the decision as one line: what changed, and the inputs.
func (d Decision) Reason() string {
	var b strings.Builder
	switch d.Why {
	case Kept:
		fmt.Fprintf(&b, "kept %s: optimum %s is within the hysteresis band", fmtDur(d.Interval), fmtDur(d.Optimum))
	case Moved:
		fmt.Fprintf(&b, "%s -> %s: optimum moved", fmtDur(d.Previous), fmtDur(d.Interval))
	case Bounded:
		if d.Changed {
			fmt.Fprintf(&b, "%s -> %s", fmtDur(d.Previous), fmtDur(d.Interval))
		} else {
			fmt.Fprintf(&b, "kept %s", fmtDur(d.Interval))
		}
		fmt.Fprintf(&b, ": optimum %s is outside the bounds %s..%s", fmtDur(d.Optimum), fmtDur(d.Lower), fmtDur(d.Upper))
	case NoInput:
		fmt.Fprintf(&b, "%s -> %s: no input, nothing to replay", fmtDur(d.Previous), fmtDur(d.Interval))
		if !d.Changed {
			b.Reset()
			fmt.Fprintf(&b, "kept %s: no input", fmtDur(d.Interval))
		}
		return b.String()
	case Unknown:
		return fmt.Sprintf("kept %s: capacity not measured yet", fmtDur(d.Interval))
	}
	p := d.Inputs
	fmt.Fprintf(&b, " (rate %s, util %.0f%%, checkpoint %s", human.Rate(p.Rate), 100*p.Util(), fmtSec(p.Cost.Seconds(p.Rate*d.Interval.Seconds())))
	mtbf := math.Inf(1)
	if p.FailureRate > 0 {
		mtbf = 1 / p.FailureRate
	}
	fmt.Fprintf(&b, ", MTBF %s from %s in %s of its own and %d in %s of all", fmtSec(mtbf), human.Plural(d.Own, "failure"), fmtDur(d.OwnExp), d.Failures, fmtDur(d.Exposure))
	if !math.IsInf(d.Weight, 1) {
		fmt.Fprintf(&b, " (prior weight %.2g)", d.Weight)
	}
	fmt.Fprintf(&b, ", recovery %s; predicted efficiency %.2f%%)", fmtDur(p.Detect+p.Restart+p.Load), 100*d.Efficiency)
	return b.String()
}

// Controller is the online interval controller: a pure state machine. It
// takes measurements (Observe*), and Tick hands back decisions. It has no
// clock, goroutine or randomness: time is the caller's, as a Duration
// from an origin of its choosing, and must not go backwards. A Controller
// is not safe for concurrent use.
type Controller struct {
	cfg       Config
	insts     map[job.InstanceID]*instEst
	order     []job.InstanceID // sorted, for a deterministic Tick
	failures  int
	retired   float64 // exposure of forgotten instances, seconds
	recovery  avg3
	lastTick  time.Duration
	forgetPer float64 // per-event weight 1/CostMemory
}

// instEst is what the controller knows about one instance.
type instEst struct {
	since    time.Duration // first observation
	decided  time.Duration // last decision (valid if hasDec)
	hasDec   bool
	interval time.Duration
	rate     ewma
	capacity ewma
	capAt    time.Duration // last capacity observation
	work     ewma          // tuples/s processed, over the spans ObserveBusy saw
	busy     ewma          // busy seconds per second, over the same spans: capacity = work/busy
	cost     costFit
	invS     avg // 1/StateKeys, smoothed; 0 = unbounded
	failures int // its own
	persist  avg
	max      time.Duration // its own upper bound (SetMax); 0: the config's
}

// ewma is an exponentially weighted moving average in time: the mean of
// the values, each weighted by its span and by 2^(−age/halfLife). It is
// normalised by the weights themselves, so the first values do not weigh
// more than their time (an EWMA started at its first value would let the
// first second of a 20-second run weigh two thirds of the mean at its end,
// with a 30 s half-life). A value with no span counts as a nanosecond.
type ewma struct {
	num, den float64
	v        float64
	ok       bool
}

func (e *ewma) add(x, span, halfLife float64) {
	w := max(span, 1e-9)
	d := math.Exp(-max(span, 0) / halfLife * math.Ln2)
	e.num = e.num*d + x*w
	e.den = e.den*d + w
	e.v, e.ok = e.num/e.den, true
}

// avg is a running mean with forgetting: the weight of the newest value
// is max(1/n, w).
type avg struct {
	v float64
	n int
}

func (a *avg) add(x, w float64) {
	a.n++
	a.v += (x - a.v) * max(1/float64(a.n), w)
}

type avg3 struct{ d, r, l avg }

// costFit is a weighted least-squares fit of cost = B + a·dirty with
// exponential forgetting.
type costFit struct {
	s0, sx, sy, sxx, sxy, syy float64
	n                         int
}

func (c *costFit) add(x, y, forget float64) {
	k := 1 - forget
	c.s0, c.sx, c.sy = c.s0*k+1, c.sx*k+x, c.sy*k+y
	c.sxx, c.sxy, c.syy = c.sxx*k+x*x, c.sxy*k+x*y, c.syy*k+y*y
	c.n++
}

// model returns B (seconds) and a (seconds per key). The slope is used
// only if it is positive and at least twice its standard error, and the
// intercept it implies is not negative; otherwise the cost is taken as
// constant, the weighted mean: noise in the costs must not turn into a
// slope (a zero base cost would send the optimum to the minimum).
func (c *costFit) model() (b, a float64) {
	mean := c.sy / c.s0
	if c.n < 3 || c.s0 <= 2 {
		return mean, 0
	}
	vxx := c.sxx - c.sx*c.sx/c.s0 // centred sums
	vxy := c.sxy - c.sx*c.sy/c.s0
	vyy := c.syy - c.sy*c.sy/c.s0
	if !(vxx > 1e-12*c.sxx) {
		return mean, 0
	}
	a = vxy / vxx
	b = mean - a*c.sx/c.s0
	resid := max(0, vyy-a*vxy) / (c.s0 - 2)
	if a <= 0 || b < 0 || a*a*vxx < 4*resid {
		return mean, 0
	}
	return b, a
}

// NewController returns a controller with no instances.
func NewController(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, insts: map[job.InstanceID]*instEst{}, forgetPer: 1 / float64(cfg.CostMemory)}, nil
}

// Config returns the controller's configuration.
func (c *Controller) Config() Config { return c.cfg }

// SetMax bounds instance id's interval at max (within the config's
// bounds) from its next decision on: for an instance whose interval is
// also a latency the model does not weigh (a sink's checkpoint commits
// its output, so its interval is how long results stay uncommitted).
func (c *Controller) SetMax(id job.InstanceID, at, max time.Duration) error {
	e, err := c.inst(id, at)
	if err != nil {
		return err
	}
	e.max = min(max, c.cfg.Max)
	if e.max < c.cfg.Min {
		e.max = c.cfg.Min
	}
	return nil
}

// upper is e's upper bound.
func (c *Controller) upper(e *instEst) time.Duration {
	if e.max > 0 {
		return e.max
	}
	return c.cfg.Max
}

func (c *Controller) inst(id job.InstanceID, at time.Duration) (*instEst, error) {
	if at < 0 {
		return nil, paramErr("%s: time %v before the origin", id, at)
	}
	if e, ok := c.insts[id]; ok {
		return e, nil
	}
	e := &instEst{since: at, interval: c.cfg.Initial}
	c.insts[id] = e
	i := sort.Search(len(c.order), func(i int) bool { return c.order[i] >= id })
	c.order = append(c.order, "")
	copy(c.order[i+1:], c.order[i:])
	c.order[i] = id
	return e, nil
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// ObserveLoad records that instance id took tuples from its input (and
// processed them, for the first time) over the span ending at at. That is
// its input rate when it keeps up, and its capacity while it works off a
// backlog: in both cases the rate at which tuples to replay, and dirty
// state, accrue.
func (c *Controller) ObserveLoad(id job.InstanceID, at time.Duration, tuples float64, span time.Duration) error {
	if !finiteNonNeg(tuples) || span <= 0 {
		return paramErr("%s: load of %v tuples in %v: want tuples >= 0 over a span > 0", id, tuples, span)
	}
	e, err := c.inst(id, at)
	if err != nil {
		return err
	}
	e.rate.add(tuples/span.Seconds(), span.Seconds(), c.cfg.HalfLife.Seconds())
	return nil
}

// ObserveBusy records that instance id processed tuples in busy
// processing time over the span ending at at. Its capacity is then the
// ratio of the smoothed tuples to the smoothed busy time (both EWMAs over
// the same spans), a ratio of sums: each second weighs by its busy time,
// as replay does, not equally (a mean of per-second ratios lets quiet
// seconds, whose tuples are cheap, stand for the busy ones). It replaces
// what ObserveCapacity set.
func (c *Controller) ObserveBusy(id job.InstanceID, at time.Duration, tuples float64, busy, span time.Duration) error {
	if !finiteNonNeg(tuples) || busy < 0 || span <= 0 {
		return paramErr("%s: %v tuples in %v busy over %v: want tuples >= 0, busy >= 0, span > 0", id, tuples, busy, span)
	}
	e, err := c.inst(id, at)
	if err != nil {
		return err
	}
	sp, hl := span.Seconds(), c.cfg.HalfLife.Seconds()
	e.work.add(tuples/sp, sp, hl)
	e.busy.add(busy.Seconds()/sp, sp, hl)
	if e.work.v > 0 && e.busy.v > 0 {
		e.capacity = ewma{v: e.work.v / e.busy.v, ok: true}
	}
	return nil
}

// ObserveCapacity records the instance's measured processing capacity in
// tuples/s (its true processing rate while busy), smoothed over the time
// since the previous one.
func (c *Controller) ObserveCapacity(id job.InstanceID, at time.Duration, rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 1) {
		return paramErr("%s: capacity %v: want a finite number > 0", id, rate)
	}
	e, err := c.inst(id, at)
	if err != nil {
		return err
	}
	e.capacity.add(rate, max(0, (at-e.capAt).Seconds()), c.cfg.HalfLife.Seconds())
	e.capAt = at
	return nil
}

// ObserveCheckpoint records a completed checkpoint of the instance.
func (c *Controller) ObserveCheckpoint(id job.InstanceID, at time.Duration, cp Checkpoint) error {
	if !finiteNonNeg(cp.Tuples) || !finiteNonNeg(cp.Dirty) || cp.Cost < 0 || cp.Persist < 0 {
		return paramErr("%s: checkpoint %+v: want finite values >= 0", id, cp)
	}
	e, err := c.inst(id, at)
	if err != nil {
		return err
	}
	e.cost.add(cp.Dirty, cp.Cost.Seconds(), c.forgetPer)
	e.persist.add(cp.Persist.Seconds(), c.forgetPer)
	if cp.Tuples > 0 && cp.Dirty > 0 {
		e.invS.add(1/stateKeysFrom(cp.Tuples, cp.Dirty), c.forgetPer)
	}
	return nil
}

// ObserveFailure records a failure of the instance and how long its
// recovery phases took. The failure counts in the instance's own rate and
// in the pooled rate, its prior (InstanceRate). Every instance is then
// reconsidered at the next Tick, whatever Every says.
func (c *Controller) ObserveFailure(id job.InstanceID, at time.Duration, r Recovery) error {
	if r.Detect < 0 || r.Restart < 0 || r.Load < 0 {
		return paramErr("%s: recovery %+v: want durations >= 0", id, r)
	}
	e, err := c.inst(id, at)
	if err != nil {
		return err
	}
	e.failures++
	c.failures++
	for _, o := range c.insts {
		o.hasDec = false // new evidence on the failure rates: every instance is reconsidered at the next Tick
	}
	w := c.forgetPer
	c.recovery.d.add(r.Detect.Seconds(), w)
	c.recovery.r.add(r.Restart.Seconds(), w)
	c.recovery.l.add(r.Load.Seconds(), w)
	return nil
}

// Forget drops an instance (it was scaled away); its exposure is kept in
// the failure-rate estimate.
func (c *Controller) Forget(id job.InstanceID, at time.Duration) {
	e, ok := c.insts[id]
	if !ok {
		return
	}
	c.retired += max(0, (at - e.since).Seconds())
	delete(c.insts, id)
	i := sort.Search(len(c.order), func(i int) bool { return c.order[i] >= id })
	c.order = append(c.order[:i], c.order[i+1:]...)
}

// Interval is the instance's current interval (Config.Initial before its
// first decision, 0 for an unknown instance).
func (c *Controller) Interval(id job.InstanceID) time.Duration {
	if e, ok := c.insts[id]; ok {
		return e.interval
	}
	return 0
}

// stateKeysFrom solves S·(1 − exp(−n/S)) = d for the effective state size
// S (+Inf if d >= n: no key was written twice).
func stateKeysFrom(n, d float64) float64 {
	if d >= n*(1-1e-12) {
		return math.Inf(1)
	}
	lo, hi := d, d
	for hi*-math.Expm1(-n/hi) < d { // F(S) = S(1 − e^(−n/S)) increases to n
		hi *= 2
	}
	for range 100 {
		mid := (lo + hi) / 2
		if mid <= lo || mid >= hi {
			break
		}
		if mid*-math.Expm1(-n/mid) < d {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// exposure is the instance-time observed up to now, all instances.
func (c *Controller) exposure(now time.Duration) float64 {
	x := c.retired
	for _, id := range c.order { // in order: the sum is the same in every run
		x += max(0, (now - c.insts[id].since).Seconds())
	}
	return x
}

// FailureRate is the current estimate of one instance's failures per
// second: (w + k) / (w·PriorMTBF + exposure), with w = PriorWeight and k
// the failures observed.
func (c *Controller) FailureRate(now time.Duration) float64 {
	w := c.cfg.PriorWeight
	return (w + float64(c.failures)) / (w*c.cfg.PriorMTBF.Seconds() + c.exposure(now))
}

// InstanceWeight is the weight w, in failures, that the pooled rate f
// has as each instance's prior now: Config.InstanceWeight if set, else
// the moment estimate f²/τ², where τ² estimates the variance of the
// instances' own rates around f (+Inf, pooling, when the counts spread no
// more than Poisson counts at one common rate would):
//
//	τ² = (Σ x_i (k_i/x_i − r)² − (n − 1)·r) / (X − Σ x_i²/X)
//
// over the n current instances, with exposures x_i (X their sum), counts
// k_i and r = Σk_i/X.
func (c *Controller) InstanceWeight(now time.Duration) float64 {
	if c.cfg.InstanceWeight > 0 {
		return c.cfg.InstanceWeight
	}
	var n, k, x, xx float64
	for _, id := range c.order {
		e := c.insts[id]
		xi := (now - e.since).Seconds()
		if xi <= 0 {
			continue
		}
		n++
		k += float64(e.failures)
		x += xi
		xx += xi * xi
	}
	if n < 2 || k == 0 {
		return math.Inf(1)
	}
	r := k / x
	var ss float64
	for _, id := range c.order {
		e := c.insts[id]
		if xi := (now - e.since).Seconds(); xi > 0 {
			d := float64(e.failures)/xi - r
			ss += xi * d * d
		}
	}
	tau2 := (ss - (n-1)*r) / (x - xx/x)
	f := c.FailureRate(now)
	if !(tau2 > 0) {
		return math.Inf(1)
	}
	return f * f / tau2
}

// InstanceRate is the estimate of instance id's own failure rate now, a
// Gamma–Poisson posterior mean whose prior is the pooled rate f with
// weight w (InstanceWeight): (w + k)/(w/f + x), for the instance's k
// failures in its exposure x; f itself when w is +Inf.
func (c *Controller) InstanceRate(id job.InstanceID, now time.Duration) float64 {
	f := c.FailureRate(now)
	e, ok := c.insts[id]
	if !ok {
		return f
	}
	return c.instRate(e, now, f, c.InstanceWeight(now))
}

func (c *Controller) instRate(e *instEst, now time.Duration, f, w float64) float64 {
	if math.IsInf(w, 1) || !(f > 0) {
		return f
	}
	return (w + float64(e.failures)) / (w/f + max(0, (now-e.since).Seconds()))
}

// Estimate returns the model inputs the controller would use for the
// instance now (false for an unknown instance).
func (c *Controller) Estimate(id job.InstanceID, now time.Duration) (Params, bool) {
	e, ok := c.insts[id]
	if !ok {
		return Params{}, false
	}
	return c.params(e, c.instRate(e, now, c.FailureRate(now), c.InstanceWeight(now))), true
}

func (c *Controller) params(e *instEst, f float64) Params {
	p := Params{
		Rate:        e.rate.v,
		Capacity:    e.capacity.v,
		Cost:        c.cfg.Cost,
		FailureRate: f,
		Detect:      c.cfg.Detect,
		Restart:     c.cfg.Restart,
		Load:        c.cfg.Load,
		Persist:     c.cfg.Persist,
	}
	if e.cost.n > 0 {
		b, a := e.cost.model()
		p.Cost.Base, p.Cost.PerKey = seconds(b), a
	}
	if e.invS.n > 0 {
		if e.invS.v > 0 {
			p.Cost.StateKeys = 1 / e.invS.v
		} else {
			p.Cost.StateKeys = 0
		}
	}
	if e.persist.n > 0 {
		p.Persist = seconds(e.persist.v)
	}
	if c.recovery.d.n > 0 {
		p.Detect, p.Restart, p.Load = seconds(c.recovery.d.v), seconds(c.recovery.r.v), seconds(c.recovery.l.v)
	}
	return p
}

// Tick decides, for every instance whose last decision is at least Every
// old and whose input rate has been measured, the interval to use from now
// on, and appends the decisions to buf (in instance order). Every
// decision is returned, changed or not; Decision.Changed says which to act
// on. now must not be before a previous Tick's.
func (c *Controller) Tick(now time.Duration, buf []Decision) []Decision {
	if now < c.lastTick {
		now = c.lastTick
	}
	c.lastTick = now
	f, w := c.FailureRate(now), c.InstanceWeight(now)
	failures, exposure := c.failures, seconds(c.exposure(now))
	for _, id := range c.order {
		e := c.insts[id]
		if !e.rate.ok || now-e.since < c.cfg.Every || (e.hasDec && now-e.decided < c.cfg.Every) {
			continue // no decision on less than Every of measurements, nor more often than Every (unless a failure)
		}
		e.decided, e.hasDec = now, true
		d := Decision{Instance: id, At: now, Previous: e.interval, Interval: e.interval,
			Failures: failures, Exposure: exposure, Lower: c.cfg.Min, Upper: c.upper(e),
			Own: e.failures, OwnExp: max(0, now-e.since), Weight: w}
		d.Inputs = c.params(e, c.instRate(e, now, f, w))
		switch {
		case !e.capacity.ok:
			d.Why = Unknown
		case d.Inputs.Rate <= 0:
			d.Why, d.Optimum, d.Interval = NoInput, c.upper(e), c.upper(e)
		default:
			p := d.Inputs
			// Captures wait for the previous one to be durable: an interval
			// below the persist time is not what the instance would do.
			d.Lower = min(max(c.cfg.Min, p.Persist), d.Upper)
			if c.cfg.MaxBackup > 0 {
				d.Upper = max(d.Lower, min(d.Upper, seconds(c.cfg.MaxBackup/p.Rate)))
			}
			opt := p.optimalSec()
			d.Optimum = seconds(opt)
			target := min(max(d.Optimum, d.Lower), d.Upper)
			cur := e.interval
			h := 1 + c.cfg.Hysteresis
			inBand := float64(target) <= float64(cur)*h && float64(target)*h >= float64(cur)
			if cur < d.Lower || cur > d.Upper || !inBand {
				d.Interval = target
			}
			switch {
			case target != d.Optimum:
				d.Why = Bounded
			case d.Interval != cur:
				d.Why = Moved
			default:
				d.Why = Kept
			}
		}
		d.Changed = d.Interval != e.interval
		e.interval = d.Interval
		d.Efficiency = d.Inputs.Efficiency(d.Interval)
		buf = append(buf, d)
	}
	return buf
}
