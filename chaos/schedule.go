package chaos

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"spate/control"
)

// Step is one action of a plan, At after the job started.
type Step struct {
	At     time.Duration  `json:"at"`
	Action control.Action `json:"action"`
}

// Plan expands a scenario's schedule into the actions to send, sorted by
// time (entries at the same time keep their order in the file), all
// before runFor; runFor <= 0 means no bound but each entry's own until.
// It is pure and deterministic: random: entries draw from a PCG seeded by
// their seed. A plan holds at most MaxSteps steps.
func Plan(s *Scenario, runFor time.Duration) []Step {
	var steps []Step
	before := func(t, until time.Duration) bool {
		if until > 0 && t >= until {
			return false
		}
		return runFor <= 0 || t < runFor
	}
	for _, e := range s.Schedule {
		switch {
		case e.Random != nil:
			steps = append(steps, randomSteps(e.Random, runFor, MaxSteps-len(steps))...)
		case e.Every > 0:
			if e.Until <= 0 && runFor <= 0 {
				continue // Parse refuses this; a hand-built scenario gets nothing
			}
			for t := e.At; before(t, e.Until) && len(steps) < MaxSteps; t += e.Every {
				steps = append(steps, Step{At: t, Action: cloneAction(e.Action)})
			}
		default:
			if before(e.At, 0) && len(steps) < MaxSteps {
				steps = append(steps, Step{At: e.At, Action: cloneAction(e.Action)})
			}
		}
	}
	slices.SortStableFunc(steps, func(a, b Step) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return steps
}

// randomSeq is the second word of a random entry's PCG state, fixed so a
// seed means the same schedule in every version.
const randomSeq = 0x5eed_c4a0_5eed_c4a0

// randomSteps draws the faults of one random: entry: exponential
// inter-arrival times of mean r.Mean from r.From, the fault uniform over
// r.Faults, until r.Until or runFor, at most max steps.
func randomSteps(r *Random, runFor time.Duration, max int) []Step {
	end := runFor
	if r.Until > 0 && (end <= 0 || r.Until < end) {
		end = r.Until
	}
	if end <= 0 || r.Mean <= 0 || len(r.Faults) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(r.Seed, randomSeq))
	var steps []Step
	t := r.From
	for len(steps) < max {
		t += time.Duration(rng.ExpFloat64() * float64(r.Mean))
		if t >= end || t < 0 {
			break
		}
		verb := r.Faults[rng.IntN(len(r.Faults))]
		steps = append(steps, Step{At: t, Action: randomAction(verb, r, rng)})
		if r.Burst > 1 { // no draw otherwise: a seed's plan without bursts is as it was
			at := t
			for n := rng.IntN(r.Burst); n > 0 && len(steps) < max; n-- {
				at += time.Duration(rng.Int64N(int64(r.Gap) + 1))
				if at >= end {
					break
				}
				verb := r.Faults[rng.IntN(len(r.Faults))]
				steps = append(steps, Step{At: at, Action: randomAction(verb, r, rng)})
			}
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	return steps
}

// partitionShapes are the shapes a random partition draws from.
var partitionShapes = []string{"one", "majority", "bridge"}

// randomAction is a drawn fault with the arguments it needs: a random
// partition draws its shape too; a link fault is 100ms±20ms of latency; a
// store fault is 200ms slow writes on the entry's target. Lasting faults
// last r.For.
func randomAction(verb string, r *Random, rng *rand.Rand) control.Action {
	a := control.Action{Verb: verb, Target: r.Target, Args: map[string]string{}}
	switch verb {
	case "partition":
		a.Target = ""
		a.Args["shape"] = partitionShapes[rng.IntN(len(partitionShapes))]
	case "link":
		a.Args["latency"], a.Args["jitter"] = "100ms", "20ms"
	case "store":
		a.Args["slow"] = "200ms"
	case "corrupt": // the target's newest checkpoint files damaged, at once
		a.Verb, a.Args["corrupt"] = "store", "true"
		return a
	case "scale": // count or rollup to 1-4 instances
		a.Target = []string{"count", "rollup"}[rng.IntN(2)]
		a.Args = map[string]string{"n": fmt.Sprint(1 + rng.IntN(4))}
		return a
	}
	if lasting[verb] {
		a.Args["for"] = r.For.String()
	}
	if len(a.Args) == 0 {
		a.Args = nil
	}
	return a
}

func cloneAction(a control.Action) control.Action {
	if a.Args != nil {
		a.Args = maps.Clone(a.Args)
	}
	return a
}
