package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"spate/internal/human"
)

// Dist is a distribution of positive durations, in seconds: a time between
// failures or a repair time. Implementations are immutable values.
type Dist interface {
	Mean() float64               // seconds
	Sample(r *rand.Rand) float64 // one draw, seconds, > 0
	String() string
}

// Exponential has density e^(−t/Scale)/Scale: failures of a Poisson process
// with rate 1/Scale.
type Exponential struct {
	Scale float64 // mean, seconds
}

// Mean is Scale.
func (e Exponential) Mean() float64 { return e.Scale }

// Sample draws Scale·E, E a standard exponential.
func (e Exponential) Sample(r *rand.Rand) float64 { return e.Scale * r.ExpFloat64() }

func (e Exponential) String() string { return "exponential mean " + fmtSec(e.Scale) }

// Weibull has survival exp(−(t/Scale)^Shape). Shape < 1 is a decreasing
// hazard (failures cluster), 1 is Exponential, > 1 wear-out.
type Weibull struct {
	Shape float64
	Scale float64 // seconds
}

// Mean is Scale·Γ(1 + 1/Shape).
func (w Weibull) Mean() float64 { return w.Scale * math.Gamma(1+1/w.Shape) }

// Sample draws Scale·E^(1/Shape), E a standard exponential.
func (w Weibull) Sample(r *rand.Rand) float64 {
	return w.Scale * math.Pow(r.ExpFloat64(), 1/w.Shape)
}

func (w Weibull) String() string {
	return fmt.Sprintf("Weibull shape %.3g scale %s (mean %s)", w.Shape, fmtSec(w.Scale), fmtSec(w.Mean()))
}

// Fit is the result of fitting a sample of durations, some of them right
// censored (an interval that ended without a failure being seen), by
// maximum likelihood.
type Fit struct {
	Failures      int         // uncensored durations
	Censored      int         // right-censored durations
	Exp           Exponential // MLE: total time / failures
	Weibull       Weibull     // MLE (see FitDurations)
	LogLikExp     float64     // log-likelihood of the sample under Exp
	LogLikWeibull float64     // log-likelihood under Weibull
}

// Best is the Weibull fit if its AIC is lower than the exponential's (one
// more parameter), else the exponential fit.
func (f Fit) Best() Dist {
	if 2*2-2*f.LogLikWeibull < 2*1-2*f.LogLikExp {
		return f.Weibull
	}
	return f.Exp
}

// FitDurations fits failed (uncensored) and censored durations, in seconds,
// by maximum likelihood. Exponential: scale = Σ all / r, r = len(failed).
// Weibull: the shape k solves
//
//	Σ t^k ln t / Σ t^k − 1/k − (1/r)·Σ_failed ln t = 0   (sums over all t)
//
// (increasing in k, solved by bisection on ln k in [1e-3, 1e3]) and
// scale^k = Σ t^k / r. Durations must be positive and finite; at least two
// failed durations, not all equal, are needed.
func FitDurations(failed, censored []float64) (Fit, error) {
	r := len(failed)
	if r < 2 {
		return Fit{}, fmt.Errorf("%d failure intervals: need at least 2 to fit", r)
	}
	tmax, sum := 0.0, 0.0
	for _, s := range [][]float64{failed, censored} {
		for _, t := range s {
			if !(t > 0) || math.IsInf(t, 1) {
				return Fit{}, fmt.Errorf("duration %v: want a positive finite number", t)
			}
			tmax = max(tmax, t)
			sum += t
		}
	}
	fit := Fit{Failures: r, Censored: len(censored)}
	fit.Exp = Exponential{Scale: sum / float64(r)}
	fit.LogLikExp = -float64(r)*math.Log(fit.Exp.Scale) - sum/fit.Exp.Scale

	// Work with u = t/tmax in (0, 1]: no overflow for any k.
	var meanLogU float64
	allEqual := true
	for _, t := range failed {
		meanLogU += math.Log(t / tmax)
		if t != failed[0] {
			allEqual = false
		}
	}
	meanLogU /= float64(r)
	if allEqual && len(censored) == 0 {
		return Fit{}, fmt.Errorf("all %d failure intervals are equal (%s): no spread to fit a shape", r, fmtSec(failed[0]))
	}
	logs := make([]float64, 0, r+len(censored)) // ln u of every duration
	for _, s := range [][]float64{failed, censored} {
		for _, t := range s {
			logs = append(logs, math.Log(t/tmax))
		}
	}
	g := func(k float64) (float64, float64) { // G(k) and Σ u^k
		var s0, s1 float64
		for _, l := range logs {
			p := math.Exp(k * l)
			s0 += p
			s1 += p * l
		}
		return s1/s0 - 1/k - meanLogU, s0
	}
	lo, hi := math.Log(1e-3), math.Log(1e3)
	for hi-lo > 1e-10 {
		mid := (lo + hi) / 2
		if v, _ := g(math.Exp(mid)); v < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	k := math.Exp((lo + hi) / 2)
	_, s0 := g(k)
	scale := tmax * math.Pow(s0/float64(r), 1/k)
	fit.Weibull = Weibull{Shape: k, Scale: scale}
	var ll float64
	for _, t := range failed {
		ll += math.Log(k) - math.Log(scale) + (k-1)*math.Log(t/scale)
	}
	for _, s := range [][]float64{failed, censored} {
		for _, t := range s {
			ll -= math.Pow(t/scale, k)
		}
	}
	fit.LogLikWeibull = ll
	return fit, nil
}

// fmtSec prints seconds as a short human duration: 850ms, 42s, 17m, 5.2h, 73d.
func fmtSec(s float64) string {
	a := math.Abs(s)
	switch {
	case math.IsInf(s, 1):
		return "∞"
	case math.IsInf(s, 0) || math.IsNaN(s):
		return fmt.Sprint(s)
	case a == 0:
		return "0s"
	case a < 1e-3:
		return fmt.Sprintf("%.3gµs", s*1e6)
	case a < 1:
		return fmt.Sprintf("%.3gms", s*1e3)
	case a < 120:
		return fmt.Sprintf("%.3gs", s)
	case a < 2*3600:
		return fmt.Sprintf("%.3gm", s/60)
	case a < 2*86400:
		return fmt.Sprintf("%.3gh", s/3600)
	}
	return human.Count(s/86400) + "d" // never an exponent, however long
}

// fmtDur is fmtSec for a Duration.
func fmtDur(d time.Duration) string { return fmtSec(d.Seconds()) }
