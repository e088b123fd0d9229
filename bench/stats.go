package bench

import (
	"encoding/json"
	"fmt"
	"math"
)

// CI is a 95 % confidence interval of the mean of per-round values (a
// ratio measured once a round, both sides a few seconds apart), by
// Student's t: the rounds are taken as independent draws, which
// interleaving makes them as nearly as one machine can.
type CI struct {
	Mean   float64 `json:"mean"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Width  float64 `json:"width"`  // Hi - Lo; +Inf with fewer than two rounds
	Rounds int     `json:"rounds"` // the values it is of
	// Need is how many rounds would give an interval narrower than the
	// target width, if the rounds keep the spread they have (0: no
	// estimate, with fewer than two rounds).
	Need int `json:"rounds_needed"`
}

// ci95 is the interval of the mean of xs, and the rounds that a width
// under target needs.
func ci95(xs []float64, target float64) CI {
	n := len(xs)
	c := CI{Rounds: n, Width: math.Inf(1), Lo: math.Inf(-1), Hi: math.Inf(1)}
	if n == 0 {
		return c
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	c.Mean = sum / float64(n)
	if n < 2 {
		return c
	}
	var ss float64
	for _, x := range xs {
		ss += (x - c.Mean) * (x - c.Mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	half := tQuantile975(n-1) * sd / math.Sqrt(float64(n))
	c.Lo, c.Hi, c.Width = c.Mean-half, c.Mean+half, 2*half
	c.Need = roundsNeeded(sd, target)
	return c
}

// roundsNeeded is the least number of rounds whose 95 % interval, at
// standard deviation sd, is narrower than width.
func roundsNeeded(sd, width float64) int {
	if sd == 0 {
		return 2
	}
	for n := 2; n < 100_000; n++ {
		if 2*tQuantile975(n-1)*sd/math.Sqrt(float64(n)) < width {
			return n
		}
	}
	return 100_000
}

// tTable is the 0.975 quantile of Student's t for 1 to 30 degrees of
// freedom.
var tTable = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom (df >= 1): the table up to 30, then the Cornish-Fisher
// expansion around the normal's 1.96, good to three decimals there.
func tQuantile975(df int) float64 {
	if df < 1 {
		return math.Inf(1)
	}
	if df <= len(tTable) {
		return tTable[df-1]
	}
	const z = 1.959964
	v := float64(df)
	return z + (z*z*z+z)/(4*v) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*v*v)
}

func (c CI) String() string {
	if c.Rounds < 2 {
		return fmt.Sprintf("%.3f (one round: no interval)", c.Mean)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", c.Mean, c.Lo, c.Hi)
}

// MarshalJSON writes the interval with null for what is not finite (the
// bounds and width of a single round's).
func (c CI) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mean   *float64 `json:"mean"`
		Lo     *float64 `json:"lo"`
		Hi     *float64 `json:"hi"`
		Width  *float64 `json:"width"`
		Rounds int      `json:"rounds"`
		Need   int      `json:"rounds_needed"`
	}{finite(c.Mean), finite(c.Lo), finite(c.Hi), finite(c.Width), c.Rounds, c.Need})
}

// Values are per-round values, written to JSON with null for a round
// without a value (NaN: the configuration did not run in it).
type Values []float64

// MarshalJSON implements json.Marshaler.
func (v Values) MarshalJSON() ([]byte, error) {
	out := make([]*float64, len(v))
	for i, x := range v {
		out[i] = finite(x)
	}
	return json.Marshal(out)
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// GeoCI is a 95 % interval of the geometric mean of per-round ratios:
// the interval of the mean of their logarithms, by Student's t, taken
// back by exp. A ratio of two times is multiplicative: a round at 2 and
// one at 0.5 average to 1 here, not to 1.25, so one round whose
// denominator happened to be short does not carry the mean.
type GeoCI struct {
	Mean   num     `json:"mean"` // the geometric mean
	Lo     num     `json:"lo"`
	Hi     num     `json:"hi"`
	Rounds int     `json:"rounds"`
	LogSD  float64 `json:"log_sd"` // the standard deviation of the logarithms
}

// geoCI95 is the interval of the geometric mean of xs (each > 0; others
// are left out).
func geoCI95(xs []float64) GeoCI {
	var ls []float64
	var sum float64
	for _, x := range xs {
		if x > 0 && !math.IsInf(x, 0) {
			ls = append(ls, math.Log(x))
			sum += ls[len(ls)-1]
		}
	}
	n := len(ls)
	nan := num(math.NaN())
	g := GeoCI{Mean: nan, Lo: nan, Hi: nan, Rounds: n}
	if n == 0 {
		return g
	}
	m := sum / float64(n)
	g.Mean = num(math.Exp(m))
	if n < 2 {
		return g
	}
	var ss float64
	for _, l := range ls {
		ss += (l - m) * (l - m)
	}
	g.LogSD = math.Sqrt(ss / float64(n-1))
	half := tQuantile975(n-1) * g.LogSD / math.Sqrt(float64(n))
	g.Lo, g.Hi = num(math.Exp(m-half)), num(math.Exp(m+half))
	return g
}

// roundsToClear is how many rounds would put the interval's low end at
// or above want, if the rounds kept the geometric mean and spread they
// have: 0 if it is there already, -1 if no number would (the geometric
// mean is not above want) or there are not two rounds to go by.
func (g GeoCI) roundsToClear(want float64) int {
	switch {
	case g.Rounds >= 2 && float64(g.Lo) >= want:
		return 0
	case g.Rounds < 2 || !(float64(g.Mean) > want):
		return -1
	}
	gap := math.Log(float64(g.Mean)) - math.Log(want)
	for n := max(g.Rounds, 2); n < 100_000; n++ {
		if tQuantile975(n-1)*g.LogSD/math.Sqrt(float64(n)) <= gap {
			return n
		}
	}
	return 100_000
}

func (g GeoCI) String() string {
	if g.Rounds < 2 {
		return fmt.Sprintf("%.3f (one round: no interval)", g.Mean)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", g.Mean, g.Lo, g.Hi)
}

// num is a float64 that JSON gets as null when it is not finite.
type num float64

// MarshalJSON implements json.Marshaler.
func (x num) MarshalJSON() ([]byte, error) {
	if p := finite(float64(x)); p != nil {
		return json.Marshal(*p)
	}
	return []byte("null"), nil
}
