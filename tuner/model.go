package tuner

import (
	"math"
	"time"
)

// The interval model. MODEL.md derives every formula here; the names of
// the symbols follow it: λ input rate, μ processing capacity, ρ = min(λ/μ, 1)
// utilisation, T interval, C(n) checkpoint cost after n tuples, f failure
// rate, D detection, R restart, L state load, P persist time.

// Young returns Young's (1974) first-order optimum checkpoint interval,
// sqrt(2·C·M), for a checkpoint cost C and a mean time between failures M.
// It returns 0 if either is not positive.
func Young(cost, mtbf time.Duration) time.Duration {
	if cost <= 0 || mtbf <= 0 {
		return 0
	}
	return seconds(youngSec(cost.Seconds(), mtbf.Seconds()))
}

func youngSec(c, m float64) float64 { return math.Sqrt(2 * c * m) }

// Daly returns Daly's (2006) higher-order estimate of the optimum compute
// time between checkpoints: for C < 2M,
//
//	sqrt(2CM)·(1 + sqrt(C/2M)/3 + (C/2M)/9) − C
//
// and M when C >= 2M. It returns 0 if either input is not positive.
func Daly(cost, mtbf time.Duration) time.Duration {
	if cost <= 0 || mtbf <= 0 {
		return 0
	}
	return seconds(dalySec(cost.Seconds(), mtbf.Seconds()))
}

func dalySec(c, m float64) float64 {
	if c >= 2*m {
		return m
	}
	x := c / (2 * m)
	return math.Sqrt(2*c*m)*(1+math.Sqrt(x)/3+x/9) - c
}

// seconds converts seconds to a Duration, rounding to the nanosecond and
// saturating instead of overflowing.
func seconds(s float64) time.Duration {
	switch {
	case math.IsNaN(s) || s <= 0:
		return 0
	case s >= float64(math.MaxInt64)/1e9:
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(s * 1e9))
}

// CostModel is the cost of one checkpoint, in processing time taken from
// the instance, as a function of the state dirtied since the previous one:
//
//	C(n) = Base + PerKey·Dirty(n),  Dirty(n) = S·(1 − exp(−n/S))
//
// where n is the number of tuples processed since the previous checkpoint
// and S = StateKeys is the effective number of keys of the state: the
// expected number of distinct keys that n uniform draws from S keys touch.
// StateKeys = 0 means unbounded state (Dirty(n) = n: every tuple dirties a
// new key). The zero CostModel is free checkpoints.
type CostModel struct {
	Base      time.Duration // fixed cost of a checkpoint (capture, manifest, sync)
	PerKey    float64       // seconds of processing per dirty key (encode, compress, write)
	StateKeys float64       // effective state size S in keys; 0 = unbounded
}

// Dirty is the expected number of distinct keys dirtied by n tuples.
func (c CostModel) Dirty(n float64) float64 {
	if n <= 0 {
		return 0
	}
	if c.StateKeys <= 0 || math.IsInf(c.StateKeys, 1) {
		return n
	}
	return c.StateKeys * -math.Expm1(-n/c.StateKeys)
}

// Seconds is C(n) in seconds.
func (c CostModel) Seconds(n float64) float64 {
	return c.Base.Seconds() + c.PerKey*c.Dirty(n)
}

// Params are the inputs of the load-aware model for one operator instance.
// Rates are per second. The zero FailureRate means no failures.
type Params struct {
	Rate        float64       // λ: tuples/s arriving at the instance
	Capacity    float64       // μ: tuples/s the instance can process
	Cost        CostModel     // C(n)
	FailureRate float64       // f: failures of the instance per second (1/MTBF)
	Detect      time.Duration // D: from a failure to its detection
	Restart     time.Duration // R: placing and starting the instance again
	Load        time.Duration // L: loading its last checkpoint (full + deltas)
	Persist     time.Duration // P: from a checkpoint's capture to its being durable
}

// Validate reports the first parameter out of range.
func (p Params) Validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
	switch {
	case bad(p.Rate):
		return paramErr("rate %v: want a finite number >= 0", p.Rate)
	case bad(p.Capacity) || p.Capacity == 0:
		return paramErr("capacity %v: want a finite number > 0", p.Capacity)
	case bad(p.FailureRate):
		return paramErr("failure rate %v: want a finite number >= 0", p.FailureRate)
	case bad(p.Cost.PerKey):
		return paramErr("per-key cost %v: want a finite number >= 0", p.Cost.PerKey)
	case math.IsNaN(p.Cost.StateKeys) || p.Cost.StateKeys < 0:
		return paramErr("state keys %v: want a number >= 0", p.Cost.StateKeys)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"checkpoint base cost", p.Cost.Base}, {"detect", p.Detect}, {"restart", p.Restart}, {"load", p.Load}, {"persist", p.Persist}} {
		if d.v < 0 {
			return paramErr("%s %v: want >= 0", d.name, d.v)
		}
	}
	return nil
}

// Util is ρ = min(λ/μ, 1): the fraction of time the instance is busy with
// useful work when nothing goes wrong. Tuples processed since a checkpoint
// accrue at λ, but never faster than μ.
func (p Params) Util() float64 {
	if p.Capacity <= 0 {
		return 0
	}
	return math.Min(p.Rate/p.Capacity, 1)
}

// Waste is the expected time lost per second of wall time, split as the
// simulator splits it (MODEL.md, "Waste terms").
type Waste struct {
	Checkpoint float64 // C(λT)/T: durable checkpoints
	Lost       float64 // f·(P/T)·C(λT): captures a failure catches before they are durable
	Replay     float64 // f·ReplayPerFailure(T): re-processing the tuples since the restored checkpoint
	Downtime   float64 // f·(D + R + L): detection, restart and state load
}

// Total is the sum of the terms.
func (w Waste) Total() float64 { return w.Checkpoint + w.Lost + w.Replay + w.Downtime }

// Waste is the expected waste per second at interval T (between checkpoint
// captures). It is zero for T <= 0.
func (p Params) Waste(interval time.Duration) Waste {
	t := interval.Seconds()
	if t <= 0 {
		return Waste{}
	}
	f := p.FailureRate
	c := p.Cost.Seconds(p.Rate * t)
	per := p.Persist.Seconds()
	return Waste{
		Checkpoint: c / t,
		Lost:       f * per / t * c,
		Replay:     f * p.replaySec(t),
		Downtime:   f * p.downSec(),
	}
}

func (p Params) downSec() float64 {
	return p.Detect.Seconds() + p.Restart.Seconds() + p.Load.Seconds()
}

// ReplayPerFailure is the expected processing time one failure makes the
// instance spend again, in the long run, at interval T (MODEL.md, section
// 3, "Failures before the first checkpoint after a recovery"):
//
//	ρ·(P + g(T) + (e^(f(T+P)) − 1)·(D + R + L + g(T+P))),  g(x) = 1/f − x/(e^(fx) − 1)
//
// g(x) is the mean of an exponential failure time modulo x (and given that
// it is below x); the second term is the replay carried over by failures
// that strike a restored instance before its first durable checkpoint. To
// first order in fT it is ρ·(T/2 + P). Without failures it is ρ·(T/2 + P).
func (p Params) ReplayPerFailure(interval time.Duration) float64 {
	return p.replaySec(interval.Seconds())
}

func (p Params) replaySec(t float64) float64 {
	rho, f, per := p.Util(), p.FailureRate, p.Persist.Seconds()
	if !(f > 0) {
		return rho * (t/2 + per)
	}
	tp := t + per
	return rho * (per + expMod(f, t) + math.Expm1(f*tp)*(p.downSec()+expMod(f, tp)))
}

// ReplayOver is the expected processing time the first n failures of an
// instance make it spend again, from a start with nothing to replay and
// the first checkpoint T after it (a run of the live benchmark): the
// recursion of ReplayPerFailure started from zero. It tends to
// n·ReplayPerFailure(T) as n grows.
func (p Params) ReplayOver(interval time.Duration, n int) float64 {
	rho, f, per, t := p.Util(), p.FailureRate, p.Persist.Seconds(), interval.Seconds()
	if n <= 0 || t <= 0 {
		return 0
	}
	if !(f > 0) {
		return float64(n) * rho * (t/2 + per)
	}
	tp := t + per
	q := -math.Expm1(-f * tp)                     // a failure before the first durable checkpoint
	after := (1 - q) * rho * (per + expMod(f, t)) // one after it: the time since the latest durable capture
	early := q * rho * expMod(f, tp)              // one before it: all the generation processed since its start...
	var w, sum float64
	for i := range n {
		carry := 0.0
		if i > 0 {
			carry = q * (w + rho*p.downSec()) // ...and what it had to replay and what arrived while it was down
		}
		w = after + early + carry
		sum += w
	}
	return sum
}

// ReplayAt is the processing time failures at the given times (seconds
// from a clean start, ascending) make the instance spend again, by the
// mechanism of section 3b with the failure times given instead of drawn:
// captures every T from the start and from each restore, each durable P
// later; a failure at t restores the latest durable capture (or the
// start) and its successor, back D + R + L later, redoes ρ × the time
// from that capture to t. A failure while the instance is down counts as
// one at its restore. For Poisson failure times its mean over many draws
// is ReplayOver.
func (p Params) ReplayAt(interval time.Duration, at []float64) float64 {
	return p.ReplayUnder(interval, at, nil)
}

// ReplayUnder is ReplayAt under a load that varies over the run: arrived(a,
// b) is the input that arrives from a to b, in seconds of the mean rate λ
// (b − a for a steady load, which a nil arrived stands for). A failure at f
// replays ρ·arrived(base, f): the tuples that arrived since the restored
// capture over the processing rate, section 1's replay term with the
// arrivals counted instead of taken as λ × the time.
func (p Params) ReplayUnder(interval time.Duration, at []float64, arrived func(a, b float64) float64) float64 {
	if arrived == nil {
		arrived = func(a, b float64) float64 { return b - a }
	}
	t, per, rho := interval.Seconds(), p.Persist.Seconds(), p.Util()
	if t <= 0 {
		return 0
	}
	var base, restored, sum float64
	for _, f := range at {
		f = max(f, restored)
		if k := math.Floor((f - restored - per) / t); k >= 1 {
			base = restored + k*t
		}
		sum += rho * arrived(base, f)
		restored = f + p.downSec()
	}
	return sum
}

// expMod is E[X mod x] = E[X | X < x] for X exponential of rate f:
// 1/f − x/(e^(fx) − 1), by its series x/2 − f·x²/12 when fx is small.
func expMod(f, x float64) float64 {
	y := f * x
	if y < 1e-4 {
		return x/2 - f*x*x/12
	}
	if y > 700 {
		return 1 / f
	}
	return 1/f - x/math.Expm1(y)
}

// Efficiency is the expected efficiency at interval T: useful processing
// time over useful plus wasted time, ρ / (ρ + waste). It is 0 when there is
// no input (ρ = 0) or T <= 0.
func (p Params) Efficiency(interval time.Duration) float64 {
	rho := p.Util()
	if rho <= 0 || interval <= 0 {
		return 0
	}
	return rho / (rho + p.Waste(interval).Total())
}

// Optimal returns the interval in [lo, hi] that maximises Efficiency: the
// unique root of
//
//	f·ρ·T²/2 = B' + a'·S·φ(λT/S),  φ(x) = 1 − (1+x)·e^(−x)
//
// with B' = Base·(1+fP) and a' = PerKey·(1+fP) (MODEL.md, "The optimum"),
// found by bisection between its closed-form bounds sqrt(2B'/(fρ)) and
// sqrt(2(B'+a'S)/(fρ)); for unbounded state (S = 0) the lower bound is the
// root. Without failures or without input it returns hi; lo > hi is
// treated as lo = hi.
func (p Params) Optimal(lo, hi time.Duration) time.Duration {
	if lo > hi {
		lo = hi
	}
	t := p.optimalSec()
	return min(max(seconds(t), lo), hi)
}

// FirstOrder returns the root of (*) in [lo, hi]: the optimum to first
// order in fT, where the closed forms of MODEL.md section 4 hold. Optimal
// refines it with the second-order replay term.
func (p Params) FirstOrder(lo, hi time.Duration) time.Duration {
	if lo > hi {
		lo = hi
	}
	return min(max(seconds(p.firstOrderSec()), lo), hi)
}

// optimalSec is the unbounded optimum in seconds (+Inf when no failures
// or no input).
func (p Params) optimalSec() float64 {
	t := p.firstOrderSec()
	if math.IsInf(t, 1) || p.FailureRate*(t+p.Persist.Seconds()+p.downSec()) < 1e-2 {
		return t // the second-order terms move the optimum by less than 1%, the waste by less than 3e-5 of itself
	}
	return p.refineSec(t)
}

// refineSec minimises the waste with the second-order replay term
// (ReplayPerFailure) by golden-section search on log T over [t1/16, t1]:
// that term minus its first-order part grows with T, so the optimum is
// not above the first-order root t1.
func (p Params) refineSec(t1 float64) float64 {
	w := func(lt float64) float64 { return p.Waste(seconds(math.Exp(lt))).Total() }
	a, b := math.Log(t1/16), math.Log(t1)
	const g = 0.6180339887498949
	c, d := b-g*(b-a), a+g*(b-a)
	wc, wd := w(c), w(d)
	for b-a > 1e-4 { // T to 0.01%
		if wc <= wd {
			b, d, wd = d, c, wc
			c = b - g*(b-a)
			wc = w(c)
		} else {
			a, c, wc = c, d, wd
			d = a + g*(b-a)
			wd = w(d)
		}
	}
	t := math.Exp((a + b) / 2)
	if w(math.Log(t1)) <= w(math.Log(t)) {
		return t1
	}
	return t
}

// firstOrderSec is the root of (*), the optimum to first order in fT.
func (p Params) firstOrderSec() float64 {
	rho, f := p.Util(), p.FailureRate
	if rho <= 0 || f <= 0 {
		return math.Inf(1)
	}
	k := 1 + f*p.Persist.Seconds()
	b := p.Cost.Base.Seconds() * k
	a := p.Cost.PerKey * k
	s := p.Cost.StateKeys
	q := f * rho / 2 // h(T) = q·T² − b − a·S·φ(λT/S)
	if b == 0 && a > 0 && s > 0 {
		b = 1e-12 * a * s // h(0) < 0 still brackets the root
	}
	lower := math.Sqrt(b / q)
	if s <= 0 || math.IsInf(s, 1) || a == 0 || p.Rate == 0 {
		return lower
	}
	upper := math.Sqrt((b + a*s) / q)
	// h is negative at lower and positive at upper, with one root between:
	// Newton's method, falling back to bisection when a step leaves the
	// bracket.
	t := lower
	for range 100 {
		x := p.Rate * t / s
		ex := math.Exp(-x)
		h := q*t*t - b - a*s*(-math.Expm1(-x)-x*ex)
		if h == 0 {
			return t
		}
		if h < 0 {
			lower = t
		} else {
			upper = t
		}
		dh := 2*q*t - a*p.Rate*x*ex
		next := t - h/dh
		if !(dh > 0) || next <= lower || next >= upper {
			next = (lower + upper) / 2
		}
		if math.Abs(next-t) <= 1e-12*t || upper-lower <= 1e-12*upper {
			return next
		}
		t = next
	}
	return t
}
