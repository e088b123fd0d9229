package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"spate/job"
)

// Scenario is a simulated job and what happens to it: the input, the
// instances, the costs, and the failures. See MODEL.md, "The simulator".
type Scenario struct {
	Load       []float64     // records arriving at the job in each second
	Instances  int           // keyed operator instances, one per node
	Keys       int           // distinct keys of the state
	Zipf       float64       // key skew: key j is drawn ∝ (j+1)^−Zipf
	Capacity   float64       // records/s the job can process, split equally between instances
	Base       time.Duration // fixed cost of a checkpoint
	PerKey     float64       // seconds per dirty key written by a checkpoint
	CostNoise  float64       // σ of the lognormal noise on each checkpoint's cost (mean 1)
	Detect     time.Duration // from a failure to its detection
	Restart    time.Duration // placing and starting the instance again
	LoadBase   time.Duration // state load: LoadBase + LoadPerKey·keys of the instance
	LoadPerKey float64
	Persist    time.Duration // from capture to durable
	Failures   *Failures     // time between failures of each instance
	Seed       int64
	Min, Max   time.Duration // bounds on every model policy's interval
	Online     Config        // the doci-online controller (Min, Max are taken from above)
}

// Policy names: FixedPrefix + a duration, or one of the model policies.
const (
	FixedPrefix  = "fixed-"
	PolicyYoung  = "young"
	PolicyDaly   = "daly"
	PolicyDOCI   = "doci"
	PolicyOnline = "doci-online"
)

// DefaultPolicies are the policies `spate tuner sim` compares.
var DefaultPolicies = []string{"fixed-1s", "fixed-10s", "fixed-60s", PolicyYoung, PolicyDaly, PolicyDOCI, PolicyOnline}

// Sim is a prepared scenario: the key layout, the failure times and the
// static intervals. It is immutable, and Run may be called concurrently
// for different policies.
type Sim struct {
	sc      Scenario
	layout  keyLayout
	mu      []float64 // capacity per instance
	mean    []float64 // mean rate per instance
	stateL  []float64 // state load time per instance, seconds
	fails   [][]float64
	horizon float64
	mtbf    float64
	ids     []job.InstanceID
	// The load per block of simBlock seconds: its sum and its largest second.
	blockSum, blockMax []float64
}

// NewSim checks the scenario and prepares it.
func NewSim(sc Scenario) (*Sim, error) {
	switch {
	case len(sc.Load) == 0:
		return nil, paramErr("no load")
	case sc.Instances < 1 || sc.Instances > job.DefaultGroups:
		return nil, paramErr("instances %d: want 1..%d", sc.Instances, job.DefaultGroups)
	case sc.Keys < 1 || sc.Keys > maxLayoutKeys:
		return nil, paramErr("keys %d: want 1..%d", sc.Keys, maxLayoutKeys)
	case !(sc.Zipf >= 0 && sc.Zipf <= 10):
		return nil, paramErr("zipf %v: want 0..10", sc.Zipf)
	case !(sc.Capacity > 0) || math.IsInf(sc.Capacity, 1):
		return nil, paramErr("capacity %v: want a finite number > 0", sc.Capacity)
	case !(sc.CostNoise >= 0 && sc.CostNoise <= 3):
		return nil, paramErr("cost noise %v: want 0..3", sc.CostNoise)
	case !finiteNonNeg(sc.LoadPerKey):
		return nil, paramErr("load per key %v: want >= 0", sc.LoadPerKey)
	case sc.Failures == nil:
		return nil, paramErr("no failure source")
	case sc.Min <= 0 || sc.Max < sc.Min:
		return nil, paramErr("interval bounds %v..%v: want 0 < min <= max", sc.Min, sc.Max)
	case sc.LoadBase < 0:
		return nil, paramErr("load base %v: want >= 0", sc.LoadBase)
	}
	if err := (Params{Capacity: sc.Capacity, Cost: CostModel{Base: sc.Base, PerKey: sc.PerKey}, Detect: sc.Detect, Restart: sc.Restart, Persist: sc.Persist}).Validate(); err != nil {
		return nil, err
	}
	for i, c := range sc.Load {
		if !finiteNonNeg(c) {
			return nil, paramErr("load of second %d is %v: want a finite number >= 0", i, c)
		}
	}
	online := sc.Online
	online.Min, online.Max = sc.Min, sc.Max
	online.Initial = min(max(online.Initial, sc.Min), sc.Max)
	if err := online.Validate(); err != nil {
		return nil, err
	}
	sc.Online = online
	s := &Sim{sc: sc, horizon: float64(len(sc.Load)), mtbf: sc.Failures.TBF.Mean()}
	s.layout = newKeyLayout(sc.Keys, sc.Zipf, sc.Instances)
	var total float64
	for _, c := range sc.Load {
		total += c
	}
	for b := 0; b < len(sc.Load); b += simBlock {
		blk := sc.Load[b:min(b+simBlock, len(sc.Load))]
		var sum float64
		for _, c := range blk {
			sum += c
		}
		s.blockSum = append(s.blockSum, sum)
		s.blockMax = append(s.blockMax, slices.Max(blk))
	}
	for i := range sc.Instances {
		s.ids = append(s.ids, job.MakeInstanceID("count", i))
		s.mu = append(s.mu, sc.Capacity/float64(sc.Instances))
		s.mean = append(s.mean, total/s.horizon*s.layout.share[i])
		s.stateL = append(s.stateL, sc.LoadBase.Seconds()+sc.LoadPerKey*float64(s.layout.keys[i]))
		ft, err := sc.Failures.Times(sc.Seed, i, s.horizon)
		if err != nil {
			return nil, err
		}
		s.fails = append(s.fails, ft)
	}
	return s, nil
}

// Shares is each instance's share of the load.
func (s *Sim) Shares() []float64 { return slices.Clone(s.layout.share) }

// FailureCount is the number of failures of all instances in the run.
func (s *Sim) FailureCount() int {
	n := 0
	for _, f := range s.fails {
		n += len(f)
	}
	return n
}

// Params is the model's view of instance i at its mean rate, with the
// effective state size calibrated at n tuples per checkpoint.
func (s *Sim) params(i int, n float64) Params {
	sc := s.sc
	p := Params{
		Rate:        s.mean[i],
		Capacity:    s.mu[i],
		Cost:        CostModel{Base: sc.Base, PerKey: sc.PerKey},
		FailureRate: 1 / s.mtbf,
		Detect:      sc.Detect,
		Restart:     sc.Restart,
		Load:        seconds(s.stateL[i]),
		Persist:     sc.Persist,
	}
	if n > 0 {
		if d := s.layout.dirty[i].at(n); d > 0 {
			p.Cost.StateKeys = stateKeysFrom(n, d)
			if math.IsInf(p.Cost.StateKeys, 1) {
				p.Cost.StateKeys = 0
			}
		}
	}
	return p
}

// StaticIntervals returns the interval of a static policy for each
// instance, in seconds. Young and Daly get the mean checkpoint cost at
// their own interval (a fixed point: the cost grows with the interval)
// and the mean time between failures of the failure source; doci gets the
// instance's mean rate, its capacity, and the same costs and failure rate.
func (s *Sim) StaticIntervals(policy string) ([]float64, error) {
	lo, hi := s.sc.Min.Seconds(), s.sc.Max.Seconds()
	out := make([]float64, s.sc.Instances)
	for i := range out {
		var t float64
		switch {
		case strings.HasPrefix(policy, FixedPrefix):
			d, err := time.ParseDuration(strings.TrimPrefix(policy, FixedPrefix))
			if err != nil || d <= 0 {
				return nil, paramErr("policy %q: want fixed-DURATION with a positive Go duration", policy)
			}
			out[i] = d.Seconds()
			continue
		case policy == PolicyYoung || policy == PolicyDaly:
			f := youngSec
			if policy == PolicyDaly {
				f = dalySec
			}
			t = f(s.sc.Base.Seconds(), s.mtbf)
			for range 50 {
				c := s.sc.Base.Seconds() + s.sc.PerKey*s.layout.dirty[i].at(s.mean[i]*t)
				t = f(c, s.mtbf)
			}
		case policy == PolicyDOCI:
			t = s.params(i, 0).optimalSec()
			for range 50 {
				if math.IsInf(t, 1) {
					break
				}
				t = s.params(i, s.mean[i]*min(t, hi)).optimalSec()
			}
		default:
			return nil, paramErr("unknown policy %q (want fixed-DURATION, young, daly, doci or doci-online)", policy)
		}
		out[i] = min(max(t, lo), hi)
	}
	return out, nil
}

// Result is the outcome of one policy. Times are seconds summed over the
// instances.
type Result struct {
	Policy      string
	Useful      float64 // processing tuples for the first time
	Checkpoint  float64 // durable checkpoints' cost
	Lost        float64 // checkpoints and recoveries a failure cut short
	Replay      float64 // re-processing the tuples since the restored checkpoint
	Downtime    float64 // detection, restart, state load
	Checkpoints int
	Failures    int
	Backlog     float64   // records still queued at the end
	Intervals   []float64 // static policies: the interval of each instance, s
	// doci-online: the interval of each instance (Timeline[i][k]) at the
	// end of each decision period k, TimelineStep seconds apart, and
	// the decisions that changed an interval.
	Timeline     [][]float64
	TimelineStep float64
	Changes      int
}

// Waste is all the time that was not useful.
func (r *Result) Waste() float64 { return r.Checkpoint + r.Lost + r.Replay + r.Downtime }

// Efficiency is useful time over useful plus wasted time.
func (r *Result) Efficiency() float64 {
	if r.Useful+r.Waste() == 0 {
		return 0
	}
	return r.Useful / (r.Useful + r.Waste())
}

// activity kinds of a busy instance
const (
	actNone = iota
	actCapture
	actRecover
)

type pendingCkpt struct {
	at, pos, cost float64
}

// ring is a FIFO of pending checkpoints that does not allocate in steady
// state.
type ring struct {
	buf        []pendingCkpt
	head, size int
}

func (r *ring) push(p pendingCkpt) {
	if r.size == len(r.buf) { // len(r.buf) is a power of two
		nb := make([]pendingCkpt, max(4, 2*len(r.buf)))
		for i := range r.size {
			nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = p
	r.size++
}

func (r *ring) front() *pendingCkpt { return &r.buf[r.head] }

func (r *ring) pop() {
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
}

// simInst is one instance's state during a run.
type simInst struct {
	mu, invMu, share, stateL float64
	dirty                    *dirtyCurve
	interval                 float64
	q                        float64 // backlog
	pos                      float64 // input tuples processed (logical position)
	capPos, durPos           float64 // position of the last capture, of the last durable one
	prevCap                  float64 // position of the previous capture (for observations)
	act                      int
	busyUntil, actStart      float64
	actCost, actDown         float64 // capture cost; recovery's detect+restart+load
	actPos                   float64 // position captured
	nextCkpt, arm            float64 // next capture; when the timer was armed
	pending                  ring
	fails                    []float64
	fi                       int
	rng                      *rand.Rand
	epochPos                 float64 // pos at the start of the decision period
	r                        Result
}

// Run simulates one policy over the whole load. It is deterministic: a
// pure function of the scenario and the policy.
func (s *Sim) Run(policy string) (*Result, error) {
	online := policy == PolicyOnline
	var static []float64
	if !online {
		var err error
		if static, err = s.StaticIntervals(policy); err != nil {
			return nil, err
		}
	}
	sc := s.sc
	insts := make([]simInst, sc.Instances)
	for i := range insts {
		in := &insts[i]
		in.mu, in.invMu, in.share = s.mu[i], 1/s.mu[i], s.layout.share[i]
		in.stateL, in.dirty, in.fails = s.stateL[i], s.layout.dirty[i], s.fails[i]
		in.rng = rand.New(rand.NewPCG(uint64(sc.Seed), 0xc057^uint64(i)*0x9e3779b97f4a7c15))
		if online {
			in.interval = sc.Online.Initial.Seconds()
		} else {
			in.interval = static[i]
		}
		in.nextCkpt = in.interval
	}
	res := &Result{Policy: policy, Intervals: static}
	var ctl *Controller
	var every int
	var decisions []Decision
	if online {
		var err error
		if ctl, err = NewController(sc.Online); err != nil {
			return nil, err
		}
		every = max(1, int(sc.Online.Every/time.Second))
		res.TimelineStep = float64(every)
		res.Timeline = make([][]float64, sc.Instances)
		for i := range insts {
			if err := ctl.ObserveCapacity(s.ids[i], 0, insts[i].mu); err != nil {
				return nil, err
			}
		}
	}
	p := stepParams{
		persist: sc.Persist.Seconds(),
		down:    sc.Detect.Seconds() + sc.Restart.Seconds(),
		base:    sc.Base.Seconds(),
		perKey:  sc.PerKey,
		noise:   noiseTable(sc.CostNoise),
		detect:  sc.Detect,
		restart: sc.Restart,
	}
	chunk := len(sc.Load)
	if online {
		chunk = every
	}
	for from := 0; from < len(sc.Load); from += chunk {
		to := min(from+chunk, len(sc.Load))
		for i := range insts {
			insts[i].run(s, from, to, &p, ctl, s.ids[i])
		}
		if !online || to-from != every {
			continue
		}
		now := time.Duration(to) * time.Second
		for i := range insts {
			in := &insts[i]
			if err := ctl.ObserveLoad(s.ids[i], now, in.pos-in.epochPos, time.Duration(every)*time.Second); err != nil {
				return nil, err
			}
			in.epochPos = in.pos
		}
		decisions = ctl.Tick(now, decisions[:0])
		for _, d := range decisions {
			if !d.Changed {
				continue
			}
			res.Changes++
			in := &insts[slices.Index(s.ids, d.Instance)]
			in.interval = d.Interval.Seconds()
			if in.act != actRecover {
				in.nextCkpt = max(in.arm+in.interval, float64(to))
			}
		}
		for i := range insts {
			res.Timeline[i] = append(res.Timeline[i], insts[i].interval)
		}
	}
	for i := range insts {
		in := &insts[i]
		in.finish(s.horizon)
		r := &in.r
		res.Useful += r.Useful
		res.Checkpoint += r.Checkpoint
		res.Lost += r.Lost
		res.Replay += r.Replay
		res.Downtime += r.Downtime
		res.Checkpoints += r.Checkpoints
		res.Failures += r.Failures
		res.Backlog += in.q
	}
	return res, nil
}

type stepParams struct {
	persist, down, base, perKey float64
	detect, restart             time.Duration
	noise                       []float64 // noiseTable, nil without noise
}

const noiseSize = 4096

// noiseTable is the lognormal distribution with mean 1 and log-σ sigma,
// discretised into noiseSize equally likely values (its quantiles at
// (k+½)/noiseSize, normalised to mean exactly 1): drawing an index
// uniformly is a lognormal draw, without an exp per checkpoint.
func noiseTable(sigma float64) []float64 {
	if sigma == 0 {
		return nil
	}
	t := make([]float64, noiseSize)
	var sum float64
	for k := range t {
		z := math.Sqrt2 * math.Erfinv(2*(float64(k)+0.5)/noiseSize-1)
		t[k] = math.Exp(sigma * z)
		sum += t[k]
	}
	for k := range t {
		t[k] *= noiseSize / sum
	}
	return t
}

// simBlock is the length in seconds of the blocks the simulator crosses in
// one step when nothing happens in them.
const simBlock = 16

// run simulates the instance over seconds [from, to) of the load.
func (in *simInst) run(s *Sim, from, to int, p *stepParams, ctl *Controller, id job.InstanceID) {
	load := s.sc.Load
	q, pos, useful := in.q, in.pos, in.r.Useful
	mu, invMu, share := in.mu, in.invMu, in.share
	next := in.nextEvent()
	for sec := from; sec < to; {
		// A whole block free of events, with no backlog and no second
		// above capacity: the instance processes what arrives.
		if sec%simBlock == 0 && q == 0 && sec+simBlock <= to && next >= float64(sec+simBlock) {
			if b := sec / simBlock; s.blockMax[b]*share <= mu {
				a := s.blockSum[b] * share
				pos += a
				useful += a * invMu
				sec += simBlock
				continue
			}
		}
		a := load[sec] * share
		sec++
		t1 := float64(sec)
		if next >= t1 { // a second free of events
			if q == 0 && a <= mu {
				pos += a
				useful += a * invMu
			} else {
				done := min(q+a, mu)
				q += a - done
				pos += done
				useful += done * invMu
			}
			continue
		}
		in.q, in.pos, in.r.Useful = q, pos, useful
		in.step(t1-1, t1, a, p, ctl, id)
		q, pos, useful = in.q, in.pos, in.r.Useful
		next = in.nextEvent()
	}
	in.q, in.pos, in.r.Useful = q, pos, useful
}

// nextEvent is the time of the instance's next event when it is free
// (−Inf when busy: every second then goes through step).
func (in *simInst) nextEvent() float64 {
	if in.act != actNone {
		return math.Inf(-1)
	}
	t := in.nextCkpt
	if in.fi < len(in.fails) {
		t = min(t, in.fails[in.fi])
	}
	return t
}

// process runs the instance, free, for dt seconds at arrival rate a/s.
func (in *simInst) process(a, dt float64) {
	arr := a * dt
	cap := in.mu * dt
	var done float64
	if in.q == 0 && arr <= cap {
		done = arr
	} else {
		done = min(in.q+arr, cap)
		in.q += arr - done
	}
	in.pos += done
	in.r.Useful += done * in.invMu
}

// step runs the instance from t0 to t1 through its events.
func (in *simInst) step(t0, t1, a float64, p *stepParams, ctl *Controller, id job.InstanceID) {
	t := t0
	for {
		// The next event, plain comparisons (no NaN handling needed).
		ev := t1
		if in.act != actNone {
			if in.busyUntil < ev {
				ev = in.busyUntil
			}
		} else if in.nextCkpt < ev {
			ev = in.nextCkpt
		}
		if in.fi < len(in.fails) && in.fails[in.fi] < ev {
			ev = in.fails[in.fi]
		}
		if ev < t {
			ev = t
		}
		if dt := ev - t; dt > 0 {
			if in.act != actNone {
				in.q += a * dt
			} else {
				in.process(a, dt)
			}
		}
		t = ev
		if t >= t1 {
			return
		}
		// Events at t: completion, failure, then a new capture.
		if in.act != actNone && t >= in.busyUntil {
			in.complete(t, p, ctl, id)
		}
		if in.fi < len(in.fails) && in.fails[in.fi] <= t {
			in.fi++
			in.fail(t, p)
			if ctl != nil {
				rec := Recovery{Detect: p.detect, Restart: p.restart, Load: seconds(in.stateL)}
				_ = ctl.ObserveFailure(id, time.Duration(t*1e9), rec)
			}
		}
		if in.act == actNone && in.nextCkpt <= t {
			in.capture(t, p)
		}
	}
}

func (in *simInst) capture(t float64, p *stepParams) {
	n := in.pos - in.capPos
	c := p.base + p.perKey*in.dirty.at(n)
	if p.noise != nil {
		c *= p.noise[in.rng.Uint64()&(noiseSize-1)]
	}
	in.act, in.actStart, in.busyUntil, in.actCost, in.actPos = actCapture, t, t+c, c, in.pos
	in.prevCap, in.capPos = in.capPos, in.pos
	in.arm, in.nextCkpt = t, t+in.interval
}

func (in *simInst) complete(t float64, p *stepParams, ctl *Controller, id job.InstanceID) {
	switch in.act {
	case actCapture:
		in.r.Checkpoint += in.actCost
		in.r.Checkpoints++
		in.settle(t)
		in.pending.push(pendingCkpt{at: t + p.persist, pos: in.actPos, cost: in.actCost})
		if ctl != nil {
			n := in.actPos - in.prevCap
			_ = ctl.ObserveCheckpoint(id, time.Duration(t*1e9), Checkpoint{
				Tuples: n, Dirty: in.dirty.at(n), Cost: seconds(in.actCost), Persist: seconds(p.persist)})
		}
	case actRecover:
		in.r.Downtime += in.actDown
		in.r.Replay += in.busyUntil - in.actStart - in.actDown
		in.arm, in.nextCkpt = t, t+in.interval
	}
	in.act = actNone
}

// settle marks the pending checkpoints durable by t as such. Durability
// matters only at a failure, so it is settled lazily: there, and when a
// new checkpoint is queued.
func (in *simInst) settle(t float64) {
	for in.pending.size > 0 && in.pending.front().at <= t {
		in.durPos = in.pending.front().pos
		in.pending.pop()
	}
}

// fail: the instance's work in progress and its pending checkpoints are
// lost; it recovers from its last durable checkpoint.
func (in *simInst) fail(t float64, p *stepParams) {
	in.settle(t)
	in.r.Failures++
	if in.act != actNone {
		in.r.Lost += t - in.actStart
	}
	for in.pending.size > 0 {
		pc := in.pending.front()
		in.r.Checkpoint -= pc.cost
		in.r.Checkpoints--
		in.r.Lost += pc.cost
		in.pending.pop()
	}
	replay := (in.pos - in.durPos) * in.invMu
	in.capPos = in.durPos
	in.act, in.actStart, in.actDown = actRecover, t, p.down+in.stateL
	in.busyUntil = t + in.actDown + replay
}

// finish accounts an activity still running at the end.
func (in *simInst) finish(end float64) {
	if in.act == actNone {
		return
	}
	el := end - in.actStart
	switch in.act {
	case actCapture:
		in.r.Checkpoint += el
	case actRecover:
		in.r.Downtime += min(el, in.actDown)
		in.r.Replay += max(0, el-in.actDown)
	}
	in.act = actNone
}

// Describe is a one-line summary of a result.
func (r *Result) Describe() string {
	return fmt.Sprintf("%s: efficiency %.4f%%, %d checkpoints, %d failures", r.Policy, 100*r.Efficiency(), r.Checkpoints, r.Failures)
}
