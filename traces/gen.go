package traces

import (
	"fmt"
	"time"

	"spate/job"
)

// Generators (gen:diurnal, gen:constant).
//
// The expected number of records of a partition before event time t (ms) is
//
//	Λ(t) = B(t) + bursts(t)
//	B(t) = m·(t + A·(1 − cos(2πt/day))),  A = amp·day/(2π)
//
// the integral of the rate m·(1 + amp·sin(2πt/day)), m being the mean rate
// of a partition in records per ms. Each burst period of 10 s holds, with
// probability burst (decided by hashing the seed and the period index), a
// 1 s burst at a random whole second of the period, during which the rate
// is burstx times the curve's. bursts(t) adds (burstx−1)·(B(end)−B(start))
// for each burst before t and the part of the current one.
//
// Record i of a partition has the tick (ms) t with ⌊Λ(t)⌋ <= i < ⌊Λ(t+1)⌋.
// Λ is only ever evaluated at whole ticks with the same arithmetic, and it
// increases strictly, so the times of records are a pure function of i, and
// Open seeks by search, not by generating: a binary search inside a burst
// period after a scan over the periods before it (0.1 to 0.2 µs per 10 s
// of event time).

const (
	burstPeriod = 10_000  // ms
	burstLen    = 1_000   // ms
	maxTick     = 1 << 50 // ms, about 35,000 years: the generators' time range
)

// curve is Λ of one partition. It is immutable.
type curve struct {
	m     float64 // mean records per ms
	a     float64 // A in ms; 0 for a flat curve
	day   int64   // ms
	bprob uint64  // burst probability in units of 2^-53; 0: no bursts
	bx    float64 // burstx − 1
	seed  uint64
}

// base is B(t).
func (c *curve) base(t int64) float64 {
	if c.a == 0 {
		return float64(c.m * float64(t))
	}
	cs := cos2pi(t%c.day, c.day)
	return float64(c.m * (float64(t) + float64(c.a*(1-cs))))
}

// burstStart returns the first tick of the burst of period k, or -1.
func (c *curve) burstStart(k int64) int64 {
	if c.bprob == 0 {
		return -1
	}
	h := mix(c.seed ^ mix(uint64(k)^saltBurst))
	if h>>11 >= c.bprob {
		return -1
	}
	off := int64(mix(h) % (burstPeriod / burstLen))
	return k*burstPeriod + off*burstLen
}

// period is the state of Λ over one burst period: the burst records of all
// periods before it, and its own burst.
type period struct {
	k     int64
	start int64   // first tick
	e     float64 // burst records before start
	e1    float64 // burst records before the next period
	bs    int64   // burst start, or -1
	bBase float64 // B(bs)
	endN  uint64  // ⌊Λ(start+burstPeriod)⌋: the first record after the period
}

// enter returns the state of period k, e being the burst records before it.
// Every caller computes e by the same sum, from period 0 on.
func (c *curve) enter(k int64, e float64) period {
	pd := period{k: k, start: k * burstPeriod, e: e, e1: e, bs: c.burstStart(k)}
	if pd.bs >= 0 {
		pd.bBase = c.base(pd.bs)
		pd.e1 = e + float64(c.bx*(c.base(pd.bs+burstLen)-pd.bBase))
	}
	pd.endN = count(c.lam(&pd, pd.start+burstPeriod))
	return pd
}

// lam is Λ(t) for t in [pd.start, pd.start+burstPeriod]. The canonical
// formula is (B(t) + e(period of t)) + burst part; the period end is the
// next period's start, whose burst part is 0.
func (c *curve) lam(pd *period, t int64) float64 {
	b := c.base(t)
	if t >= pd.start+burstPeriod {
		return b + pd.e1
	}
	l := b + pd.e
	if pd.bs >= 0 && t > pd.bs {
		bt := b
		if t > pd.bs+burstLen {
			bt = c.base(pd.bs + burstLen)
		}
		l += float64(c.bx * (bt - pd.bBase))
	}
	return l
}

// count is ⌊x⌋ for x >= 0.
func count(x float64) uint64 { return uint64(x) }

// genSource is an open generator spec.
type genSource struct {
	spec   string
	name   string
	parts  int
	seed   int64
	rate   float64 // records/s, all partitions
	day    time.Duration
	amp    float64
	burstp float64
	burstx float64
	zipf   float64
	keys   int
	c      curve // of one partition
	d      *keyDist
}

func openGen(spec, rest string, opt Options) (Source, error) {
	name, q, err := splitSpec(spec, rest)
	if err != nil {
		return nil, err
	}
	g := &genSource{spec: spec, name: name, parts: opt.Partitions, seed: opt.Seed}
	var defAmp, defBurst float64
	switch name {
	case "diurnal":
		defAmp, defBurst = 0.6, 0.2
	case "constant":
	default:
		return nil, specErr(spec, "unknown generator %q (want diurnal or constant)", name)
	}
	if g.rate, err = q.float("rate", opt.Rate, 1e-6, 1e12); err != nil {
		return nil, err
	}
	if opt.Rate > 1e12 {
		return nil, specErr(spec, "rate %g: at most 1e12 records/s", opt.Rate)
	}
	if g.day, err = q.duration("day", 120*time.Second, time.Second, 365*24*time.Hour); err != nil {
		return nil, err
	}
	if g.amp, err = q.float("amp", defAmp, 0, 0.95); err != nil {
		return nil, err
	}
	if g.burstp, err = q.float("burst", defBurst, 0, 1); err != nil {
		return nil, err
	}
	if g.burstx, err = q.float("burstx", 3, 1, 100); err != nil {
		return nil, err
	}
	if g.zipf, err = q.float("zipf", 1.1, 0, 10); err != nil {
		return nil, err
	}
	if g.keys, err = q.int("keys", opt.Keys, 1, MaxKeys); err != nil {
		return nil, err
	}
	if err := q.done(); err != nil {
		return nil, err
	}
	g.c = newCurve(g.rate/float64(g.parts), g.day, g.amp, g.burstp, g.burstx, g.seed)
	g.d = zipfDist(g.keys, g.zipf)
	return g, nil
}

// newCurve builds Λ for a mean rate in records/s.
func newCurve(rate float64, day time.Duration, amp, burstp, burstx float64, seed int64) curve {
	c := curve{
		m:     rate / 1000,
		day:   day.Milliseconds(),
		bprob: uint64(float64(burstp * (1 << 53))),
		bx:    burstx - 1,
		seed:  uint64(seed),
	}
	if c.bx == 0 {
		c.bprob = 0
	}
	if amp > 0 {
		c.a = float64(amp*float64(c.day)) / (2 * 3.141592653589793)
	}
	return c
}

func (g *genSource) Partitions() int { return g.parts }
func (g *genSource) Finite() bool    { return false }
func (g *genSource) String() string  { return g.spec }

func (g *genSource) Open(p int, pos uint64) (Reader, error) {
	if err := checkPartition(g, p); err != nil {
		return nil, err
	}
	// Λ(t) >= (1−amp)·m·t: refuse positions beyond maxTick rather than search forever.
	if float64(pos)/((1-g.amp)*g.c.m) > maxTick {
		return nil, fmt.Errorf("%s: partition %d: position %d is beyond the generator's time range: %w", g.spec, p, pos, ErrPosition)
	}
	r := &genReader{c: g.c, d: g.d, base: streamBase(g.seed, uint64(p)), i: pos}
	r.pd = r.c.enter(0, 0)
	r.seek(0)
	return r, nil
}

// describe is the one-line description used by Show.
func (g *genSource) describe() string {
	s := fmt.Sprintf("generator %s: mean %s records/s in %d partition(s), %d keys (zipf s=%g), values 1..100",
		g.name, fmtFloat(g.rate), g.parts, g.keys, g.zipf)
	if g.amp > 0 {
		s += fmt.Sprintf(", day %v (amplitude %g)", g.day, g.amp)
	}
	if g.c.bprob > 0 {
		s += fmt.Sprintf(", bursts p=%g x%g", g.burstp, g.burstx)
	}
	return s
}

// genReader reads one generator partition. Next does not allocate.
type genReader struct {
	c    curve
	d    *keyDist
	pd   period
	t    int64          // tick of the records before hi
	hi   uint64         // ⌊Λ(t+1)⌋: the first record after tick t
	i    uint64         // the next record
	base uint64         // hash base of the partition
	gtab []job.KeyGroup // NextGroups: the key groups of the keys, for gn groups
	gn   int
}

func (r *genReader) Next() (job.Record, bool, error) {
	if r.i >= r.hi {
		r.advance()
	}
	j, v := r.d.draw(mix(r.base + r.i*golden))
	r.i++
	return job.Record{Key: r.d.key(j), Time: r.t, Value: v}, true, nil
}

// NextNumbered implements job.NumberedReader. Its body is Next's, written
// out again for the reason NextGroups's is.
func (r *genReader) NextNumbered() (job.Record, int, bool, error) {
	if r.i >= r.hi {
		r.advance()
	}
	j, v := r.d.draw(mix(r.base + r.i*golden))
	r.i++
	return job.Record{Key: r.d.key(j), Time: r.t, Value: v}, j, true, nil
}

// Keys implements job.NumberedReader.
func (r *genReader) Keys() int { return r.d.n }

// NextBatch implements BatchReader.
func (r *genReader) NextBatch(buf []job.Record) (int, error) {
	for n := range buf {
		if r.i >= r.hi {
			r.advance()
		}
		j, v := r.d.draw(mix(r.base + r.i*golden))
		r.i++
		buf[n] = job.Record{Key: r.d.key(j), Time: r.t, Value: v}
	}
	return len(buf), nil
}

// NextGroups implements GroupReader. Its loop is NextBatch's, written out
// again: through a shared helper returning the key index, NextBatch took
// 25 ns a record instead of 14 and Next 37 instead of 25 (BenchmarkGenNext*).
func (r *genReader) NextGroups(buf []job.Record, kgs []job.KeyGroup, groups int) (int, error) {
	if r.gn != groups {
		r.gtab, r.gn = r.d.groups(groups), groups
	}
	kgs = kgs[:len(buf)]
	for n := range buf {
		if r.i >= r.hi {
			r.advance()
		}
		j, v := r.d.draw(mix(r.base + r.i*golden))
		r.i++
		buf[n] = job.Record{Key: r.d.key(j), Time: r.t, Value: v}
		kgs[n] = r.gtab[j]
	}
	return len(buf), nil
}

func (r *genReader) Close() error { return nil }

// Skip implements Skipper: a record is a function of its position, and
// the next read finds its tick from there.
func (r *genReader) Skip(n uint64) { r.i += n }

// advance moves to the tick of record i, which is after tick t: it tries
// t+1, then searches from t+2.
func (r *genReader) advance() {
	t := r.t + 1
	if t+1 > r.pd.start+burstPeriod {
		r.seek(t)
		return
	}
	if hi := count(r.c.lam(&r.pd, t+1)); hi > r.i {
		r.t, r.hi = t, hi
		return
	}
	r.seek(t + 1)
}

// seek sets t to the first tick >= from whose records include i, i.e. the
// smallest t >= from with ⌊Λ(t+1)⌋ > i. from lies in period pd or is its end.
func (r *genReader) seek(from int64) {
	c, i := &r.c, r.i
	if c.bprob == 0 {
		r.skipFlat(from)
	}
	for r.pd.endN <= i {
		r.pd = c.enter(r.pd.k+1, r.pd.e1)
	}
	// The answer is in [lo, hi]: gallop from lo, then bisect.
	lo, hi := max(from, r.pd.start), r.pd.start+burstPeriod-1
	for step := int64(1); ; step *= 2 {
		probe := lo + step - 1
		if probe >= hi {
			break
		}
		if count(c.lam(&r.pd, probe+1)) > i {
			hi = probe
			break
		}
		lo = probe + 1
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if count(c.lam(&r.pd, mid+1)) > i {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	r.t, r.hi = lo, count(c.lam(&r.pd, lo+1))
}

// skipFlat jumps over whole periods by a galloping search when there are no
// bursts (Λ is then B alone and the periods hold no state).
func (r *genReader) skipFlat(from int64) {
	c, i := &r.c, r.i
	k := r.pd.k
	if from >= r.pd.start+burstPeriod {
		k++
	}
	endOf := func(k int64) uint64 { return count(c.base((k+1)*burstPeriod) + 0) } // = enter(k, 0).endN
	if endOf(k) > i {
		r.pd = c.enter(k, 0)
		return
	}
	lo, step := k, int64(1) // endOf(lo) <= i
	hi := lo + step
	for endOf(hi) <= i {
		lo = hi
		step *= 2
		hi = lo + step
	}
	for hi-lo > 1 { // endOf(lo) <= i < endOf(hi)
		mid := lo + (hi-lo)/2
		if endOf(mid) > i {
			hi = mid
		} else {
			lo = mid
		}
	}
	r.pd = c.enter(hi, 0)
}
