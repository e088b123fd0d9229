package tuner

import (
	"fmt"
	"strings"
	"time"

	"spate/job"
	"spate/traces"
)

// Load is a per-second arrival series: Counts[i] records arrived in second
// i. It is immutable once made.
type Load struct {
	Spec    string
	Counts  []float64 // records per second, after Scale
	Scale   float64
	Records uint64 // records read from the source (before Scale)
}

// Mean is the mean rate, records/s.
func (l *Load) Mean() float64 {
	if len(l.Counts) == 0 {
		return 0
	}
	var s float64
	for _, c := range l.Counts {
		s += c
	}
	return s / float64(len(l.Counts))
}

// LoadOptions say how to read a load source.
type LoadOptions struct {
	Seed     int64         // the source's seed (keys, generator bursts)
	Rate     float64       // mean records/s of a generator (gen:...); 0 is 10
	Duration time.Duration // how much of the source to read; 0 = all of a finite source, 7 days of a generator
	Scale    float64       // multiply every count by this; 0 is 1
}

// maxLoadSeconds bounds a load series (about 3 years).
const maxLoadSeconds = 100_000_000

// ReadLoad reads a load source (any traces spec) into per-second counts by
// bucketing its records by event time: second 0 is time 0 for generators
// and rate traces (so a rate trace gives back exactly its counts; its
// trailing zero seconds are dropped), and the first record's second for a
// record trace. Errors are those of traces.Open, or one line naming the
// spec.
func ReadLoad(spec string, opt LoadOptions) (*Load, error) {
	if opt.Scale == 0 {
		opt.Scale = 1
	}
	if !(opt.Scale > 0) || opt.Scale > 1e9 {
		return nil, specErr(spec, "scale %v: want a number in (0, 1e9]", opt.Scale)
	}
	if opt.Rate == 0 {
		opt.Rate = 10
	}
	if opt.Duration < 0 {
		return nil, specErr(spec, "duration %v: want >= 0", opt.Duration)
	}
	src, err := traces.Open(spec, traces.Options{Seed: opt.Seed, Rate: opt.Rate, Partitions: 1})
	if err != nil {
		return nil, err
	}
	limit := int64(-1) // ms, exclusive
	if opt.Duration > 0 {
		limit = opt.Duration.Milliseconds()
	} else if !src.Finite() {
		limit = (7 * 24 * time.Hour).Milliseconds()
	}
	var origin int64
	if sz, ok := src.(traces.Sized); ok && !strings.HasPrefix(spec, "rate:") {
		origin = sz.Stats().First / 1000 * 1000
	}
	r, err := src.Open(0, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	defer r.Close()
	br, _ := r.(traces.BatchReader)
	buf := make([]job.Record, 4096)
	var counts []float64
	l := &Load{Spec: spec, Scale: opt.Scale}
	for {
		var n int
		if br != nil {
			n, err = br.NextBatch(buf)
		} else {
			var ok bool
			buf[0], ok, err = r.Next()
			if ok {
				n = 1
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		if n == 0 {
			break
		}
		done := false
		for _, rec := range buf[:n] {
			t := rec.Time - origin
			if limit >= 0 && t >= limit {
				if !src.Finite() {
					done = true
					break
				}
				continue
			}
			if t < 0 {
				return nil, specErr(spec, "record at %d ms is before the first record's second %d ms", rec.Time, origin)
			}
			s := t / 1000
			if s >= maxLoadSeconds {
				return nil, specErr(spec, "spans more than %d seconds; use a shorter --duration", maxLoadSeconds)
			}
			if s >= int64(len(counts)) {
				counts = growTo(counts, int(s)+1)
			}
			counts[s]++
			l.Records++
		}
		if done {
			break
		}
	}
	if limit >= 0 && !src.Finite() {
		counts = growTo(counts, int(limit/1000))
	}
	if len(counts) == 0 {
		return nil, specErr(spec, "no records")
	}
	if opt.Scale != 1 {
		for i := range counts {
			counts[i] *= opt.Scale
		}
	}
	l.Counts = counts
	return l, nil
}

func growTo(s []float64, n int) []float64 {
	if n <= len(s) {
		return s
	}
	if n <= cap(s) {
		return s[:n]
	}
	t := make([]float64, n, max(n, 2*cap(s)))
	copy(t, s)
	return t
}
