package chaos

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Verify is what `spate verify` found: the run's output against the
// oracle. The caller converts its own report into it (chaos does not
// import the coordinator).
type Verify struct {
	Windows    int `json:"windows"`    // expected results
	Lost       int `json:"lost"`       // expected, never written (verify's "missing")
	Duplicated int `json:"duplicated"` // extra copies written
	Wrong      int `json:"wrong"`      // written with other fields, or not expected
}

// Evidence is everything the checks look at, gathered from a run.
type Evidence struct {
	Verify      Verify
	Recoveries  []time.Duration // each finished recovery, detection to caught up
	Unrecovered []string        // instances lost and never recovered ("job" for a global rollback)
	Lag         []time.Duration // output lag samples
	Checkpoints []time.Duration // each checkpoint's total time
	Throughput  float64         // records read per second of job time
}

// CheckResult is one check's outcome: Detail says what was observed
// against what limit.
type CheckResult struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// Evaluate runs the checks on the evidence. It is pure.
func Evaluate(checks []Check, ev Evidence) []CheckResult {
	out := make([]CheckResult, 0, len(checks))
	for _, c := range checks {
		out = append(out, evaluate(c, ev))
	}
	return out
}

// Passed reports whether every result passed (true for none).
func Passed(rs []CheckResult) bool {
	for _, r := range rs {
		if !r.Pass {
			return false
		}
	}
	return true
}

func evaluate(c Check, ev Evidence) CheckResult {
	r := CheckResult{Name: c.String()}
	v := ev.Verify
	switch c.Name {
	case CheckExactlyOnce:
		r.Pass = v.Lost == 0 && v.Duplicated == 0 && v.Wrong == 0
		r.Detail = fmt.Sprintf("%d lost, %d duplicated, %d wrong of %d results (limit 0 each)", v.Lost, v.Duplicated, v.Wrong, v.Windows)
	case CheckAllRecovered:
		r.Pass = len(ev.Unrecovered) == 0
		if r.Pass {
			r.Detail = recoveredText(len(ev.Recoveries))
		} else {
			r.Detail = "never recovered: " + strings.Join(ev.Unrecovered, ", ")
		}
	case CheckMaxRecovery:
		switch {
		case len(ev.Unrecovered) > 0:
			r.Detail = fmt.Sprintf("never recovered: %s (limit %v)", strings.Join(ev.Unrecovered, ", "), c.Limit)
		case len(ev.Recoveries) == 0:
			r.Pass, r.Detail = true, fmt.Sprintf("no recovery was needed (limit %v)", c.Limit)
		default:
			longest := slices.Max(ev.Recoveries)
			r.Pass = longest <= c.Limit
			r.Detail = fmt.Sprintf("longest %v of %d (limit %v)", longest.Round(time.Millisecond), len(ev.Recoveries), c.Limit)
		}
	case CheckMaxLag:
		if len(ev.Lag) == 0 {
			r.Detail = fmt.Sprintf("no lag samples: only a paced run (--rate > 0) measures lag (limit %v)", c.Limit)
			break
		}
		worst := slices.Max(ev.Lag)
		r.Pass = worst <= c.Limit
		r.Detail = fmt.Sprintf("largest %v, p99 %v of %d samples (limit %v)", worst, Percentile(ev.Lag, 99), len(ev.Lag), c.Limit)
	case CheckMaxCheckpoint:
		if len(ev.Checkpoints) == 0 {
			r.Detail = fmt.Sprintf("no checkpoints (limit %v)", c.Limit)
			break
		}
		p99 := Percentile(ev.Checkpoints, 99)
		r.Pass = p99 <= c.Limit
		r.Detail = fmt.Sprintf("p99 %v of %d checkpoints (limit %v)", p99.Round(time.Microsecond), len(ev.Checkpoints), c.Limit)
	case CheckMinThroughput:
		r.Pass = ev.Throughput >= c.Min
		r.Detail = fmt.Sprintf("%.0f records/s (limit %g)", ev.Throughput, c.Min)
	default:
		r.Detail = "unknown check"
	}
	return r
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of xs,
// 0 for none. xs is not modified.
func Percentile[T ~int64 | ~float64](xs []T, p float64) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}

// recoveredText is the detail of a passed all_recovered check with n
// recoveries.
func recoveredText(n int) string {
	switch n {
	case 0:
		return "no recovery was needed"
	case 1:
		return "1 recovery, finished"
	}
	return fmt.Sprintf("%d recoveries, every one finished", n)
}
