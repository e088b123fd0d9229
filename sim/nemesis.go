package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
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
//
// With cfg.Wide the configuration is the seed's (Resolve) and each fault
// is drawn from the whole chaos DSL (wideFault); an --ft none seed draws,
// with even odds, only faults none survives (benignFault: no pause or
// crash of the coordinator either) or the whole table (then it is checked
// only to finish: LosesState).
func Plan(seed uint64, cfg Config) []Step {
	cfg = Resolve(seed, cfg)
	rng := rand.New(rand.NewPCG(seed, nemesisSeq))
	draw := fault
	benign := false
	if cfg.Wide {
		draw = wideFault
		if cfg.FT == "none" && rng.IntN(2) == 0 {
			draw, benign = benignFault, true
		}
	}
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
			steps = append(steps, Step{At: at, Action: draw(rng, cfg, op, anchor, scaled)})
			at += time.Duration(rng.IntN(400)) * time.Millisecond
		}
	}
	// Drawn after the bursts, so that the schedules of the seeds without
	// one stay what they were: the coordinator itself paused past the
	// nodes' timeout, next to a fault of a burst.
	if rng.Float64() < 0.2 && !benign {
		near := steps[rng.IntN(len(steps))].At + time.Duration(rng.IntN(600)-300)*time.Millisecond
		pause := cfg.Timeout + time.Duration(rng.Int64N(int64(2*cfg.Timeout)))
		steps = append(steps, Step{At: max(near, 500*time.Millisecond), Action: control.Action{Verb: "pause", Target: "coord",
			Args: map[string]string{"for": pause.Round(time.Millisecond).String()}}})
	}
	// Drawn after the rest, so that the schedules of the seeds without
	// one stay what they were: the coordinator crashed (SIGKILL) next to
	// a fault of a burst, resumed on the same run a moment later.
	if rng.Float64() < 0.25 && !cfg.NoCrash && !benign && cfg.FT != "none" { // a none run cannot resume
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

// near returns a target near anchor, an instance of op: anchor itself,
// or an instance upstream or downstream of it.
func nearOf(rng *rand.Rand, op, anchor string) string {
	switch r := rng.IntN(4); {
	case r == 0 && upstreamOf[op] != "":
		return fmt.Sprintf("%s/%d", upstreamOf[op], rng.IntN(2))
	case r == 1 && downOf[op] != "":
		return fmt.Sprintf("%s/%d", downOf[op], rng.IntN(2))
	}
	return anchor
}

// msArg is a duration of lo to hi milliseconds, as an action's argument.
func msArg(rng *rand.Rand, lo, hi int) string {
	return (time.Duration(lo+rng.IntN(hi-lo)) * time.Millisecond).String()
}

// wideWeights is the whole table's draw: each fault of the chaos DSL
// with its weight (they sum to 1). The coordinator's pause and crash are
// drawn per seed after the bursts (Plan).
var wideWeights = []struct {
	name string
	w    float64
}{
	{"kill", 0.18},
	{"restart", 0.06},
	{"isolate", 0.08}, // the in-process twin of pause
	{"partition", 0.10},
	{"link", 0.18},
	{"store", 0.22},
	{"scale", 0.12},
	{"heal", 0.06},
}

// wideFault draws one fault of a burst around anchor from the whole
// chaos DSL (wideWeights): kills, restarts, isolations; partitions of
// every shape (one, majority, bridge, one-way, explicit groups); link
// faults (latency with jitter, bandwidth, stall, reset); store faults
// (slow, fail, corrupt); rescales of count and rollup in every mode (the
// cluster refuses those its mode does not allow, as `spate scale` does:
// the answer is in the steps); and heal.
func wideFault(rng *rand.Rand, cfg Config, op, anchor string, scaled map[string]int) control.Action {
	r, kind := rng.Float64(), wideWeights[len(wideWeights)-1].name
	for _, k := range wideWeights {
		if r < k.w {
			kind = k.name
			break
		}
		r -= k.w
	}
	timeout := int(cfg.Timeout / time.Millisecond)
	args := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	switch kind {
	case "kill", "restart":
		return control.Action{Verb: kind, Target: nearOf(rng, op, anchor)}
	case "isolate":
		return control.Action{Verb: "partition", Target: nearOf(rng, op, anchor), Args: args("for", msArg(rng, 100, 3*timeout))}
	case "partition":
		a := control.Action{Verb: "partition", Args: args("for", msArg(rng, 100, 3*timeout))}
		switch rng.IntN(5) {
		case 0:
			a.Args["shape"] = "one"
		case 1:
			a.Args["shape"] = "majority"
		case 2:
			a.Args["shape"] = "bridge"
		case 3: // one-way: the cut side's sends are lost, it still hears
			a.Args["shape"] = []string{"one", "majority"}[rng.IntN(2)]
			a.Args["oneway"] = "true"
		default:
			a.Args["groups"] = groups(rng, cfg.Nodes)
		}
		return a
	case "link":
		a := control.Action{Verb: "link", Target: nearOf(rng, op, anchor), Args: args("for", msArg(rng, 200, 3000))}
		switch rng.IntN(4) {
		case 0:
			a.Args["latency"], a.Args["jitter"] = msArg(rng, 5, 150), msArg(rng, 1, 40)
		case 1:
			a.Args["bandwidth"] = []string{"256KiB/s", "512KiB/s", "1MB/s", "4MB/s"}[rng.IntN(4)]
		case 2:
			a.Args["stall"], a.Args["for"] = "true", msArg(rng, 100, 3*timeout)
		default:
			a.Args["reset"], a.Args["for"] = "true", msArg(rng, 100, 500)
		}
		return a
	case "store":
		t := nearOf(rng, op, anchor)
		switch rng.IntN(3) {
		case 0:
			return control.Action{Verb: "store", Target: t, Args: args("slow", msArg(rng, 20, 400), "for", msArg(rng, 300, 3000))}
		case 1:
			return control.Action{Verb: "store", Target: t, Args: args("fail", "true", "for", msArg(rng, 200, 1500))}
		}
		return control.Action{Verb: "store", Target: t, Args: args("corrupt", "true")}
	case "scale":
		return scaleOf(rng, scaled)
	}
	return control.Action{Verb: "heal"}
}

// benignFault draws one fault an --ft none run survives without a loss:
// latency with jitter, a bandwidth limit, a slow store, a stall shorter
// than half the detection timeout.
func benignFault(rng *rand.Rand, cfg Config, op, anchor string, _ map[string]int) control.Action {
	t := nearOf(rng, op, anchor)
	switch r := rng.Float64(); {
	case r < 0.35:
		return control.Action{Verb: "link", Target: t, Args: map[string]string{"latency": msArg(rng, 5, 150), "jitter": msArg(rng, 1, 40), "for": msArg(rng, 200, 3000)}}
	case r < 0.6:
		return control.Action{Verb: "link", Target: t, Args: map[string]string{"bandwidth": []string{"512KiB/s", "1MB/s", "4MB/s"}[rng.IntN(3)], "for": msArg(rng, 200, 3000)}}
	case r < 0.85:
		return control.Action{Verb: "store", Target: t, Args: map[string]string{"slow": msArg(rng, 20, 400), "for": msArg(rng, 300, 3000)}}
	}
	return control.Action{Verb: "link", Target: t, Args: map[string]string{"stall": "true", "for": msArg(rng, 50, int(cfg.Timeout/time.Millisecond)/2)}}
}

// groups is an explicit partition of nodes n1..nN into two non-empty
// groups, drawn: "n2,n4|n1,n3".
func groups(rng *rand.Rand, nodes int) string {
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	cut := 1 + rng.IntN(nodes-1)
	return strings.Join(names[:cut], ",") + "|" + strings.Join(names[cut:], ",")
}

// LosesState reports whether a schedule has a fault that loses the state
// of an --ft none run (no checkpoints, no backup): anything but latency,
// jitter, bandwidth, a slow store, a stall shorter than half of timeout,
// heal and the drain.
func LosesState(steps []Step, timeout time.Duration) bool {
	for _, s := range steps {
		a := s.Action
		switch a.Verb {
		case "drain", "heal":
			continue
		case "store":
			if a.Args["slow"] != "" && a.Args["fail"] == "" && a.Args["corrupt"] == "" {
				continue
			}
		case "link":
			if a.Args["reset"] == "" {
				if a.Args["stall"] == "" {
					continue
				}
				if d, err := time.ParseDuration(a.Args["for"]); err == nil && d <= timeout/2 {
					continue
				}
			}
		}
		return true
	}
	return false
}

// scaleOf draws a rescale of count or rollup by one or two instances
// from what scaled says they have.
func scaleOf(rng *rand.Rand, scaled map[string]int) control.Action {
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

// fault draws one fault of a burst around anchor, an instance of op: the
// regressions' table (Config.Wide false).
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
