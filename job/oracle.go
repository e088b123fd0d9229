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
	// known key does not allocate. Each (key, window) is a cell. Most of a
	// partition's records of a key fall in the window of the one before:
	// they find their cell as the key's latest, and only the others (a
	// late record, the next partition's first) look it up in the index.
	keyIDs := map[string]int32{}
	var keys []string // raw key bytes, by number
	type cell struct {
		key        int32
		window     int64
		count, sum int64
	}
	var cells []cell
	var latest []int32 // by key: its latest cell
	type keyWindow struct {
		key    int32
		window int64
	}
	index := map[keyWindow]int32{}

	for p, r := range readers {
		clock := SourceClock{Lateness: spec.Lateness}
		nr, numbered := r.(NumberedReader)
		var byNumber []int32 // a NumberedReader's key numbers: their keys' IDs
		if numbered {
			byNumber = make([]int32, nr.Keys())
			for i := range byNumber {
				byNumber[i] = -1
			}
		}
		for n := uint64(0); limits == nil || n < limits[p]; n++ {
			var rec Record
			var ok bool
			var err error
			num := -1
			if numbered {
				rec, num, ok, err = nr.NextNumbered()
			} else {
				rec, ok, err = r.Next()
			}
			if err != nil {
				return nil, fmt.Errorf("oracle: partition %d: record %d: %w", p, n, err)
			}
			if !ok {
				break
			}
			if clock.Observe(rec.Time) {
				continue
			}
			w := WindowStart(rec.Time, spec.Window)
			hasNum := num >= 0 && num < len(byNumber)
			var id int32 = -1
			if hasNum {
				id = byNumber[num]
			}
			if id < 0 {
				var known bool
				if id, known = keyIDs[string(rec.Key)]; !known {
					id = int32(len(keys))
					keys = append(keys, string(rec.Key))
					keyIDs[keys[id]] = id
					latest = append(latest, -1)
				}
				if hasNum {
					byNumber[num] = id
				}
			}
			c := latest[id]
			if c < 0 || cells[c].window != w {
				kw := keyWindow{id, w}
				var found bool
				if c, found = index[kw]; !found {
					c = int32(len(cells))
					cells = append(cells, cell{key: id, window: w})
					index[kw] = c
				}
				latest[id] = c
			}
			cells[c].count++
			cells[c].sum += rec.Value
		}
	}
	clear(index)

	// The keys in byte order, then the cells by (key, window): a count of
	// cells per key places them, so only the keys' strings are compared.
	byName := make([]int32, len(keys))
	for i := range byName {
		byName[i] = int32(i)
	}
	slices.SortFunc(byName, func(a, b int32) int { return strings.Compare(keys[a], keys[b]) })
	start := make([]int32, len(keys)+1) // by rank: where its cells begin
	rank := make([]int32, len(keys))
	for r, id := range byName {
		rank[id] = int32(r)
	}
	for _, c := range cells {
		start[rank[c.key]+1]++
	}
	for r := range byName {
		start[r+1] += start[r]
	}
	order := make([]int32, len(cells))
	next := slices.Clone(start[:len(keys)])
	for i, c := range cells {
		r := rank[c.key]
		order[next[r]] = int32(i)
		next[r]++
	}
	for r := range byName {
		run := order[start[r]:start[r+1]]
		slices.SortFunc(run, func(a, b int32) int { return cmp.Compare(cells[a].window, cells[b].window) })
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
	groupOf := make([]string, len(keys))
	for id, k := range keys {
		groupOf[id] = GroupName([]byte(k), spec.Rollups)
	}
	perGroup := map[groupWindow]*rollup{}
	for _, c := range cells {
		gw := groupWindow{groupOf[c.key], c.window}
		g := perGroup[gw]
		if g == nil {
			g = &rollup{}
			perGroup[gw] = g
		}
		g.count += c.count
		g.sum += c.sum
		g.members = append(g.members, member{keys[c.key], c.count})
	}

	// count: every (key, window), with the running total of the key's
	// windows in window order.
	out := make([]Result, 0, len(cells)+len(perGroup))
	for r, id := range byName {
		key := ResultKey([]byte(keys[id]))
		var total int64
		for _, i := range order[start[r]:start[r+1]] {
			c := &cells[i]
			total += c.count
			out = append(out, Result{
				Op: KindCount, Key: key, Window: c.window,
				Count: c.count, Sum: c.sum, Total: total,
			})
		}
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
