package job

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Oracle computes the results of windowcount over the given source
// partitions in one process: what a correct run of the job must write.
//
// It reads partition i up to limits[i] records (limits nil: to the end),
// drops late records with one SourceClock per partition exactly as the
// sources do, and fires every window, as the final watermark is
// MaxWatermark. The results are sorted by (op, key, window).
//
// Oracle is deliberately a separate, plain implementation: it shares the
// contract (GroupName, WindowStart, SourceClock, ResultKey, Result) but no
// code with Count and Rollup, so a bug in either is caught by the other.
func Oracle(spec *Spec, readers []Reader, limits []uint64) ([]Result, error) {
	if spec.Window <= 0 {
		return nil, fmt.Errorf("oracle: job %s: window must be positive", spec.Name)
	}
	if limits != nil && len(limits) != len(readers) {
		return nil, fmt.Errorf("oracle: %d limits for %d partitions", len(limits), len(readers))
	}

	// Keys are numbered in order of appearance, so that the lookup of a
	// known key does not allocate.
	keyIDs := map[string]int{}
	var keys []string // raw key bytes, by number
	type keyWindow struct {
		key    int
		window int64
	}
	type sums struct{ count, sum int64 }
	perKey := map[keyWindow]*sums{}

	for p, r := range readers {
		clock := SourceClock{Lateness: spec.Lateness}
		for n := uint64(0); limits == nil || n < limits[p]; n++ {
			rec, ok, err := r.Next()
			if err != nil {
				return nil, fmt.Errorf("oracle: partition %d: record %d: %w", p, n, err)
			}
			if !ok {
				break
			}
			if clock.Observe(rec.Time) {
				continue
			}
			id, ok := keyIDs[string(rec.Key)]
			if !ok {
				id = len(keys)
				keys = append(keys, string(rec.Key))
				keyIDs[keys[id]] = id
			}
			kw := keyWindow{id, WindowStart(rec.Time, spec.Window)}
			s := perKey[kw]
			if s == nil {
				s = &sums{}
				perKey[kw] = s
			}
			s.count++
			s.sum += rec.Value
		}
	}

	// count: every (key, window), with the running total of the key's
	// windows in window order.
	kws := make([]keyWindow, 0, len(perKey))
	for kw := range perKey {
		kws = append(kws, kw)
	}
	slices.SortFunc(kws, func(a, b keyWindow) int {
		return cmp.Or(strings.Compare(keys[a.key], keys[b.key]), cmp.Compare(a.window, b.window))
	})
	out := make([]Result, 0, len(kws))
	var total int64
	for i, kw := range kws {
		if i == 0 || kws[i-1].key != kw.key {
			total = 0
		}
		s := perKey[kw]
		total += s.count
		out = append(out, Result{
			Op: KindCount, Key: ResultKey([]byte(keys[kw.key])), Window: kw.window,
			Count: s.count, Sum: s.sum, Total: total,
		})
	}

	// rollup: per (group, window), the totals and the keys it holds.
	type groupWindow struct {
		group  string
		window int64
	}
	type member struct {
		key   string // raw key bytes
		count int64
	}
	type rollup struct {
		count, sum int64
		members    []member
	}
	perGroup := map[groupWindow]*rollup{}
	for _, kw := range kws {
		gw := groupWindow{GroupName([]byte(keys[kw.key]), spec.Rollups), kw.window}
		g := perGroup[gw]
		if g == nil {
			g = &rollup{}
			perGroup[gw] = g
		}
		s := perKey[kw]
		g.count += s.count
		g.sum += s.sum
		g.members = append(g.members, member{keys[kw.key], s.count})
	}
	for gw, g := range perGroup {
		slices.SortFunc(g.members, func(a, b member) int {
			return cmp.Or(cmp.Compare(b.count, a.count), strings.Compare(a.key, b.key))
		})
		var top []TopKey
		for _, m := range g.members[:min(3, len(g.members))] {
			top = append(top, TopKey{Key: ResultKey([]byte(m.key)), Count: m.count})
		}
		out = append(out, Result{
			Op: KindRollup, Key: gw.group, Window: gw.window,
			Count: g.count, Sum: g.sum, Top: top,
		})
	}

	SortResults(out)
	return out, nil
}

// SortResults sorts results by (op, key, window).
func SortResults(rs []Result) {
	slices.SortFunc(rs, func(a, b Result) int {
		return cmp.Or(strings.Compare(a.Op, b.Op), strings.Compare(a.Key, b.Key), cmp.Compare(a.Window, b.Window))
	})
}
