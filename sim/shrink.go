package sim

import (
	"context"
	"time"
)

// The search for the shortest failing schedule (`spate sim --shrink`).
// The core is pure: it knows nothing of the cluster, only a predicate
// that says whether a candidate still fails, and it counts the calls.

// ShrinkSteps is the search over the steps alone, the run's end fixed:
// delta debugging removes steps (halves, then quarters, down to one at a
// time, each piece tried alone and left out, until no single step can
// go), then each remaining step is moved
// later, halfway to the next one (the last: to end) up to three times,
// while the schedule still fails. It returns the steps found and how
// many times it called fails. steps must fail.
func ShrinkSteps(steps []Step, end time.Duration, fails func([]Step) bool) ([]Step, int) {
	steps, a := removeSteps(steps, fails)
	steps, b := moveLater(steps, end, fails)
	return steps, a + b
}

// Shrink is the whole search on a file: the steps removed (ShrinkSteps'
// delta debugging), the duration shortened (shrinkDuration), then the
// steps moved later toward the new drain, over again while a round
// changes anything (three rounds at most). A candidate tried before is
// not tried again. It returns the shortest failing file found and how
// many candidates it tried. f must fail.
func Shrink(f ScheduleFile, fails func(ScheduleFile) bool) (ScheduleFile, int) {
	seen := map[string]bool{f.Format(): true}
	n := 0
	test := func(g ScheduleFile) bool {
		k := g.Format()
		if v, ok := seen[k]; ok {
			return v
		}
		n++
		v := fails(g)
		seen[k] = v
		return v
	}
	withSteps := func(s []Step) bool { g := f; g.Steps = s; return test(g) }
	for range 3 {
		before := f.Format()
		f.Steps, _ = removeSteps(f.Steps, withSteps)
		if f.Duration > 0 {
			f.Duration, _ = shrinkDuration(f.Duration, durationFloor(f.Steps), func(d time.Duration) bool { g := f; g.Duration = d; return test(g) })
		}
		end := f.Duration
		if end == 0 {
			end = DefaultConfig().Duration
		}
		f.Steps, _ = moveLater(f.Steps, end, withSteps)
		if f.Format() == before {
			break
		}
	}
	return f, n
}

// removeSteps is delta debugging (ddmin) over the steps: the empty
// schedule first; then, cut in two halves, four quarters, ... down to
// single steps, each piece alone and the schedule without each piece,
// going back to coarser pieces after each cut that still fails. It ends
// when no single step can be removed.
func removeSteps(steps []Step, fails func([]Step) bool) ([]Step, int) {
	n := 0
	try := func(s []Step) bool { n++; return fails(s) }
	if len(steps) == 0 {
		return steps, 0
	}
	if try([]Step{}) {
		return []Step{}, n
	}
	gran := 2
	for len(steps) > 1 {
		gran = min(gran, len(steps))
		removed := false
		// Each piece alone (at two pieces, the same as each removed),
		// then the schedule without each piece.
		if gran > 2 {
			for i := range gran {
				lo, hi := i*len(steps)/gran, (i+1)*len(steps)/gran
				if piece := append([]Step{}, steps[lo:hi]...); try(piece) {
					steps, removed, gran = piece, true, 2
					break
				}
			}
		}
		for i := range gran {
			if removed {
				break
			}
			lo, hi := i*len(steps)/gran, (i+1)*len(steps)/gran
			rest := append(append([]Step{}, steps[:lo]...), steps[hi:]...)
			if try(rest) {
				steps, removed = rest, true
				gran = max(gran-1, 2)
			}
		}
		if !removed {
			if gran == len(steps) {
				break
			}
			gran *= 2
		}
	}
	return steps, n
}

// moveLater moves each step later, from the last to the first: halfway
// to the next step's time (the last one's: end), up to three times,
// while the schedule still fails. The order stays.
func moveLater(steps []Step, end time.Duration, fails func([]Step) bool) ([]Step, int) {
	n := 0
	steps = append([]Step{}, steps...)
	for i := len(steps) - 1; i >= 0; i-- {
		limit := end
		if i+1 < len(steps) {
			limit = steps[i+1].At
		}
		for range 3 {
			at := min((steps[i].At + (limit-steps[i].At)/2).Round(time.Millisecond), limit)
			if at-steps[i].At < 10*time.Millisecond {
				break
			}
			moved := append([]Step{}, steps...)
			moved[i].At = at
			n++
			if !fails(moved) {
				break
			}
			steps = moved
		}
	}
	return steps, n
}

// durationFloor is the shortest duration shrinkDuration tries: every
// step at least 100 ms before the drain, and no shorter than the
// shortest run `spate sim` takes.
func durationFloor(steps []Step) time.Duration {
	floor := MinDuration
	if len(steps) > 0 {
		floor = max(floor, steps[len(steps)-1].At.Truncate(100*time.Millisecond)+200*time.Millisecond)
	}
	return floor
}

// shrinkDuration is the shortest duration from floor to d that still
// fails: floor itself first, then a bisection to within 250 ms (d
// fails). It returns the duration and how many it tried.
func shrinkDuration(d, floor time.Duration, fails func(time.Duration) bool) (time.Duration, int) {
	if floor >= d {
		return d, 0
	}
	n := 1
	if fails(floor) {
		return floor, n
	}
	lo, hi := floor, d // lo passes, hi fails
	for hi-lo > 250*time.Millisecond {
		mid := ((lo + hi) / 2).Round(50 * time.Millisecond)
		if mid <= lo || mid >= hi {
			break
		}
		n++
		if fails(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, n
}

// failureClass is how a run failed: it did not finish (or could not be
// verified), or it broke exactly-once. A shrunk schedule keeps its
// start's class, so that the search does not slip to another bug.
func failureClass(r Result) string {
	if r.Err != "" {
		return "did not finish"
	}
	return "broke exactly-once"
}

// Shrunk is what ShrinkRuns found.
type Shrunk struct {
	Start  ScheduleFile
	File   ScheduleFile // the shortest failing schedule found (Start if it did not fail)
	Failed bool         // Start failed in one of its tries: there was something to shrink
	Tried  int          // schedules run, Start's included
	Runs   int          // runs of the cluster: up to tries a schedule
	Kept   Result       // a failing run of File
}

// ShrinkRuns shrinks start on the cluster: run runs a schedule once, and
// a schedule still fails if one of tries runs of it fails as start's
// first failing run did (failureClass). log, if set, is told of each
// schedule tried. When ctx ends the search stops trying, and what it has
// found so far is returned.
func ShrinkRuns(ctx context.Context, start ScheduleFile, tries int, run func(ScheduleFile) Result, log func(tried int, f ScheduleFile, failed bool, r Result)) Shrunk {
	out := Shrunk{Start: start, File: start}
	class := ""
	kept := map[string]Result{}
	try := func(g ScheduleFile) bool {
		out.Tried++
		var last Result
		for range max(tries, 1) {
			if ctx.Err() != nil {
				return false
			}
			last = run(g)
			out.Runs++
			if ctx.Err() != nil { // a run cut short fails as "did not finish": not this schedule's failure
				return false
			}
			if last.Failed() && (class == "" || failureClass(last) == class) {
				kept[g.Format()] = last
				if log != nil {
					log(out.Tried, g, true, last)
				}
				return true
			}
		}
		if log != nil {
			log(out.Tried, g, false, last)
		}
		return false
	}
	if !try(start) {
		return out
	}
	out.Failed, class = true, failureClass(kept[start.Format()])
	out.File, _ = Shrink(start, try)
	out.Kept = kept[out.File.Format()]
	return out
}
