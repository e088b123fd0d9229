package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"spate/control"
)

// Step is one action of a schedule, At after the job started.
type Step struct {
	At     time.Duration  `json:"at"`
	Action control.Action `json:"action"`
}

func (s Step) String() string { return fmt.Sprintf("%6.3fs %s", s.At.Seconds(), s.Action) }

// nemesisSeq is the second word of the nemesis's PCG state: fixed, so a
// seed means the same schedule in every version of the nemesis that draws
// in the same order.
const nemesisSeq = 0x4e3e_5151_4e3e_5151

// instances of the default job the nemesis aims at, by operator, with the
// operators upstream and downstream of each.
var (
	jobOps     = []string{"source", "count", "rollup", "sink"}
	keyedOps   = []string{"count", "rollup"}
	upstreamOf = map[string]string{"count": "source", "rollup": "count", "sink": "rollup"}
	downOf     = map[string]string{"source": "count", "count": "rollup", "rollup": "sink"}
)

// Plan draws seed's compound schedule for a job of cfg: one to three
// bursts, each of one to three faults within a few hundred milliseconds
// of each other around one instance (the instance, its upstreams, its
// downstreams): kills, restarts, isolations (the in-process twin of a
// pause: the node's links are held, the coordinator's included, and flow
// again when it ends), damaged newest checkpoints, failing checkpoint
// writes, and rescales out and in of count and rollup; one seed in five
// also pauses the coordinator itself past the nodes' timeout next to a
// fault of a burst. Some bursts fall in
// the last moment before the drain or during it (the schedule then asks
// for the drain itself). Plan is pure: the same seed and cfg give the same
// schedule.
func Plan(seed uint64, cfg Config) []Step {
	rng := rand.New(rand.NewPCG(seed, nemesisSeq))
	d := cfg.Duration
	var steps []Step
	scaled := map[string]int{"count": 2, "rollup": 2}
	bursts := 1 + rng.IntN(3)
	drainAt := time.Duration(0)
	for range bursts {
		var at time.Duration
		switch r := rng.Float64(); {
		case r < 0.15: // the last moment before the drain
			at = d - time.Duration(rng.IntN(300))*time.Millisecond
		case r < 0.25: // during the drain: the schedule drains first
			drainAt = d - 500*time.Millisecond
			at = drainAt + time.Duration(rng.IntN(400))*time.Millisecond
		default:
			at = time.Second + time.Duration(rng.Int64N(int64(d-2*time.Second)))
		}
		op := jobOps[rng.IntN(len(jobOps))]
		anchor := fmt.Sprintf("%s/%d", op, rng.IntN(2))
		for k, n := 0, 1+rng.IntN(3); k < n; k++ {
			steps = append(steps, Step{At: at, Action: fault(rng, cfg, op, anchor, scaled)})
			at += time.Duration(rng.IntN(400)) * time.Millisecond
		}
	}
	// Drawn after the bursts, so that the schedules of the seeds without
	// one stay what they were: the coordinator itself paused past the
	// nodes' timeout, next to a fault of a burst.
	if rng.Float64() < 0.2 {
		near := steps[rng.IntN(len(steps))].At + time.Duration(rng.IntN(600)-300)*time.Millisecond
		pause := cfg.Timeout + time.Duration(rng.Int64N(int64(2*cfg.Timeout)))
		steps = append(steps, Step{At: max(near, 500*time.Millisecond), Action: control.Action{Verb: "pause", Target: "coord",
			Args: map[string]string{"for": pause.Round(time.Millisecond).String()}}})
	}
	// Drawn after the rest, so that the schedules of the seeds without
	// one stay what they were: the coordinator crashed (SIGKILL) next to
	// a fault of a burst, resumed on the same run a moment later.
	if rng.Float64() < 0.25 && !cfg.NoCrash {
		near := steps[rng.IntN(len(steps))].At + time.Duration(rng.IntN(800)-400)*time.Millisecond
		after := time.Duration(50+rng.IntN(1500)) * time.Millisecond
		steps = append(steps, Step{At: max(near, 500*time.Millisecond), Action: control.Action{Verb: "crash", Target: "coord",
			Args: map[string]string{"resume_after": after.String()}}})
	}
	if drainAt > 0 {
		steps = append(steps, Step{At: drainAt, Action: control.Action{Verb: "drain"}})
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	return steps
}

// fault draws one fault of a burst around anchor, an instance of op.
func fault(rng *rand.Rand, cfg Config, op, anchor string, scaled map[string]int) control.Action {
	near := func() string {
		switch r := rng.IntN(4); {
		case r == 0 && upstreamOf[op] != "":
			return fmt.Sprintf("%s/%d", upstreamOf[op], rng.IntN(2))
		case r == 1 && downOf[op] != "":
			return fmt.Sprintf("%s/%d", downOf[op], rng.IntN(2))
		}
		return anchor
	}
	ms := func(lo, hi int) string { return (time.Duration(lo+rng.IntN(hi-lo)) * time.Millisecond).String() }
	switch r := rng.Float64(); {
	case r < 0.38:
		return control.Action{Verb: "kill", Target: near()}
	case r < 0.45:
		return control.Action{Verb: "restart", Target: near()}
	case r < 0.60:
		// Shorter or longer than the detection timeout: a slow node, or a
		// zombie fenced when it comes back.
		return control.Action{Verb: "partition", Target: near(), Args: map[string]string{"for": ms(100, int(3*cfg.Timeout/time.Millisecond))}}
	case r < 0.75:
		return control.Action{Verb: "store", Target: near(), Args: map[string]string{"corrupt": "true"}}
	case r < 0.82:
		return control.Action{Verb: "store", Target: near(), Args: map[string]string{"fail": "true", "for": ms(200, 1500)}}
	case cfg.FT == "spate":
		keyed := keyedOps[rng.IntN(len(keyedOps))]
		n := scaled[keyed]
		switch {
		case n <= 1:
			n += 1 + rng.IntN(2)
		case n >= 4:
			n -= 1 + rng.IntN(2)
		case rng.IntN(2) == 0:
			n++
		default:
			n--
		}
		scaled[keyed] = n
		return control.Action{Verb: "scale", Target: keyed, Args: map[string]string{"n": fmt.Sprint(n)}}
	}
	return control.Action{Verb: "kill", Target: anchor}
}
