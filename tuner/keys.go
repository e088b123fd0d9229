package tuner

import (
	"math"

	"spate/job"
	"spate/traces"
)

// Keys: how a job's keys, and so its load and state, fall on its
// instances. Key j (rank j, traces.KeyName) is drawn with probability
// ∝ (j+1)^−zipf, as by the traces generators and rate traces; it belongs
// to key group job.GroupOf(name, job.DefaultGroups), and the key groups
// are split into contiguous ranges, one per instance (job.SplitRanges).

// keyLayout is the share of the load, the state size and the dirty curve
// of each instance.
type keyLayout struct {
	share []float64     // fraction of all records
	keys  []int         // keys owned
	dirty []*dirtyCurve // distinct keys dirtied by n of its records
}

// maxLayoutKeys bounds the keys a layout is computed for.
const maxLayoutKeys = 1 << 20

func newKeyLayout(keys int, zipf float64, instances int) keyLayout {
	group := make([]job.KeyGroup, keys)
	prob := make([]float64, keys)
	groupLoad := make([]float64, job.DefaultGroups)
	var total float64
	for j := range keys {
		prob[j] = math.Pow(float64(j+1), -zipf)
		group[j] = job.GroupOf([]byte(traces.KeyName(j, keys)), job.DefaultGroups)
		groupLoad[group[j]] += prob[j]
		total += prob[j]
	}
	owner := make([]int, job.DefaultGroups)
	for i, r := range balancedRanges(groupLoad, instances) {
		for g := r.Lo; g < r.Hi; g++ {
			owner[g] = i
		}
	}
	probs := make([][]float64, instances)
	for j := range keys {
		i := owner[group[j]]
		probs[i] = append(probs[i], prob[j])
	}
	kl := keyLayout{share: make([]float64, instances), keys: make([]int, instances), dirty: make([]*dirtyCurve, instances)}
	for i, ps := range probs {
		var s float64
		for _, p := range ps {
			s += p
		}
		kl.share[i] = s / total
		kl.keys[i] = len(ps)
		for k := range ps {
			ps[k] /= s
		}
		kl.dirty[i] = newDirtyCurve(ps)
	}
	return kl
}

// balancedRanges cuts the key groups into n contiguous ranges of nearly
// equal load, as the coordinator balances an assignment by measured load:
// range i ends at the group boundary closest to (i+1)/n of the total,
// every range keeping at least one group.
func balancedRanges(load []float64, n int) []job.Range {
	var total float64
	for _, l := range load {
		total += l
	}
	out := make([]job.Range, n)
	lo, cum := 0, 0.0
	for i := range n {
		hi := len(load) - (n - 1 - i) // leave one group for each later range
		if i < n-1 {
			target := total * float64(i+1) / float64(n)
			h := lo + 1
			c := cum + load[lo]
			for h < hi && math.Abs(c+load[h]-target) < math.Abs(c-target) {
				c += load[h]
				h++
			}
			hi, cum = h, c
		}
		out[i] = job.Range{Lo: job.KeyGroup(lo), Hi: job.KeyGroup(hi)}
		lo = hi
	}
	return out
}

// dirtyCurve is E[distinct keys among n draws] = Σ_j 1 − (1 − q_j)^n for
// key probabilities q, tabulated at n = 2^e·(1 + k/8) and interpolated
// linearly in n between those points.
type dirtyCurve struct {
	keys  float64
	tab   []float64 // tab[8·e + k] at n = 2^e·(1 + k/8), e >= 0
	slope []float64 // (tab[i+1] − tab[i]) / (dirtyGrid[i+1] − dirtyGrid[i])
}

const dirtySteps = 8

// dirtyGrid[i] is the n of tab[i]: 2^e·(1 + k/8) for i = 8e + k.
var dirtyGrid = func() []float64 {
	g := make([]float64, 0, 63*dirtySteps)
	for e := range 63 {
		for k := range dirtySteps {
			g = append(g, math.Ldexp(1+float64(k)/dirtySteps, e))
		}
	}
	return g
}()

func newDirtyCurve(q []float64) *dirtyCurve {
	c := &dirtyCurve{keys: float64(len(q))}
	if len(q) == 0 {
		return c
	}
	logs := make([]float64, len(q))
	for j, p := range q {
		logs[j] = math.Log1p(-min(p, 1-1e-16))
	}
	for e := 0; e < 62; e++ {
		for k := range dirtySteps {
			n := dirtyGrid[e*dirtySteps+k]
			var d float64
			for _, l := range logs {
				d -= math.Expm1(n * l)
			}
			c.tab = append(c.tab, d)
			if d >= c.keys*(1-1e-12) {
				return c.withSlopes()
			}
		}
	}
	return c.withSlopes()
}

func (c *dirtyCurve) withSlopes() *dirtyCurve {
	c.slope = make([]float64, len(c.tab))
	for i := 0; i+1 < len(c.tab); i++ {
		c.slope[i] = (c.tab[i+1] - c.tab[i]) / (dirtyGrid[i+1] - dirtyGrid[i])
	}
	return c
}

// at is the expected number of distinct keys dirtied by n draws. For
// n >= 1 the table index comes straight from n's bits: the exponent e and
// the top three bits of the mantissa k.
func (c *dirtyCurve) at(n float64) float64 {
	if n <= 0 || len(c.tab) == 0 {
		return 0
	}
	if n < 1 {
		return n * c.tab[0] // one draw dirties one key
	}
	b := math.Float64bits(n)
	i := int((b>>52)&0x7ff-1023)*dirtySteps + int(b>>49&(dirtySteps-1))
	if i+1 >= len(c.tab) {
		return min(c.tab[len(c.tab)-1], c.keys)
	}
	return c.tab[i] + c.slope[i]*(n-dirtyGrid[i])
}
