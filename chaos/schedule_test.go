package chaos

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"spate/control"
)

func mustParse(t *testing.T, text string) *Scenario {
	t.Helper()
	sc, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestPlanIssueExample(t *testing.T) {
	sc := mustParse(t, issueExample)
	steps := Plan(sc, sc.Duration)
	if !slices.IsSortedFunc(steps, func(a, b Step) int { return int(a.At - b.At) }) {
		t.Errorf("not sorted: %v", steps)
	}
	var fixed []string
	for _, s := range steps {
		if s.At >= time.Minute || s.At < 0 {
			t.Errorf("step %v outside the run", s)
		}
		if s.Action.Verb == "pause" && s.Action.Args["for"] == "3s" && s.At%(15*time.Second) == 0 {
			fixed = append(fixed, s.At.String()+" pause")
		}
		if s.Action.Verb == "kill" && s.At == 10*time.Second || s.Action.Verb == "link" && s.At == 5*time.Second {
			fixed = append(fixed, s.At.String()+" "+s.Action.Verb)
		}
	}
	// every: 15s fires at 15s, 30s, 45s (60s is the run's end).
	want := []string{"5s link", "10s kill", "15s pause", "30s pause", "45s pause"}
	if !reflect.DeepEqual(fixed, want) {
		t.Errorf("fixed steps %v, want %v", fixed, want)
	}
	// random: mean 8s over 60s: a handful, from its four faults only.
	random := 0
	for _, s := range steps {
		if s.At%time.Millisecond != 0 { // drawn times are not round
			random++
			if !slices.Contains([]string{"kill", "pause", "partition", "link"}, s.Action.Verb) {
				t.Errorf("random drew %v", s.Action)
			}
		}
	}
	if random < 2 || random > 20 {
		t.Errorf("%d random steps over 60s with mean 8s", random)
	}
}

func TestPlanDeterministicBySeed(t *testing.T) {
	text := func(seed string) string {
		return "name: r\ncluster: {duration: 10m}\nschedule:\n  - random: {seed: " + seed + ", mean: 5s, faults: [kill, pause, partition, link, store, restart]}\n"
	}
	a := Plan(mustParse(t, text("7")), 10*time.Minute)
	b := Plan(mustParse(t, text("7")), 10*time.Minute)
	c := Plan(mustParse(t, text("8")), 10*time.Minute)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed made two plans")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 7 and 8 made the same plan")
	}
	// 600s at a mean of 5s: about 120 faults, each verb drawn.
	if len(a) < 90 || len(a) > 150 {
		t.Errorf("%d faults, want about 120", len(a))
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s.Action.Verb] = true
		switch s.Action.Verb {
		case "kill", "restart":
			if s.Action.Target != "one" || s.Action.Args["for"] != "" {
				t.Errorf("%v", s.Action)
			}
		case "pause":
			if s.Action.Target != "one" || s.Action.Args["for"] != "3s" {
				t.Errorf("%v", s.Action)
			}
		case "partition":
			if !slices.Contains(partitionShapes, s.Action.Args["shape"]) {
				t.Errorf("%v", s.Action)
			}
		case "link":
			if s.Action.Args["latency"] == "" {
				t.Errorf("%v", s.Action)
			}
		case "store":
			if s.Action.Args["slow"] == "" {
				t.Errorf("%v", s.Action)
			}
		}
	}
	if len(seen) != 6 {
		t.Errorf("drew only %v", seen)
	}
}

func TestPlanBounds(t *testing.T) {
	sc := mustParse(t, `name: b
schedule:
  - every: 2s
    at: 1s
    until: 8s
    fault: pause
    target: n1
    for: 1s
  - random: {seed: 3, mean: 1s, faults: [kill], from: 20s, until: 30s}
  - at: 100s
    fault: heal
`)
	steps := Plan(sc, 0) // no run bound: each entry's own
	var pauses []time.Duration
	for _, s := range steps {
		switch s.Action.Verb {
		case "pause":
			pauses = append(pauses, s.At)
		case "kill":
			if s.At < 20*time.Second || s.At >= 30*time.Second {
				t.Errorf("random kill at %v outside [20s, 30s)", s.At)
			}
		}
	}
	if want := []time.Duration{time.Second, 3 * time.Second, 5 * time.Second, 7 * time.Second}; !reflect.DeepEqual(pauses, want) {
		t.Errorf("pauses at %v, want %v", pauses, want)
	}
	if last := steps[len(steps)-1]; last.Action.Verb != "heal" || last.At != 100*time.Second {
		t.Errorf("last %v", last)
	}
	// A run of 6s cuts everything after it.
	for _, s := range Plan(sc, 6*time.Second) {
		if s.At >= 6*time.Second {
			t.Errorf("step %v after the run", s)
		}
	}
}

func TestPlanTiesKeepFileOrder(t *testing.T) {
	sc := mustParse(t, "name: t\nschedule:\n  - {at: 1s, fault: kill, target: n1}\n  - {at: 1s, fault: kill, target: n2}\n  - {at: 0s, fault: kill, target: n3}\n")
	var got []string
	for _, s := range Plan(sc, 0) {
		got = append(got, s.Action.Target)
	}
	if !reflect.DeepEqual(got, []string{"n3", "n1", "n2"}) {
		t.Errorf("order %v", got)
	}
}

// TestPlanCopiesArgs: steps of one every: entry do not share a map.
func TestPlanCopiesArgs(t *testing.T) {
	sc := mustParse(t, "name: t\nschedule:\n  - {every: 1s, until: 3s, fault: pause, target: n1, for: 1s}\n")
	steps := Plan(sc, 0)
	steps[0].Action.Args["for"] = "9s"
	if steps[1].Action.Args["for"] != "1s" || sc.Schedule[0].Action.Args["for"] != "1s" {
		t.Error("steps share their arguments")
	}
}

// TestPlanCap: a hand-built scenario cannot make an unbounded plan.
func TestPlanCap(t *testing.T) {
	sc := &Scenario{Schedule: []Entry{
		{Every: time.Nanosecond, Action: control.Action{Verb: "kill", Target: "n1"}},
		{Every: time.Second}, // no end at all: nothing
		{Random: &Random{Seed: 1, Mean: time.Nanosecond, Faults: []string{"kill"}}},
	}}
	if n := len(Plan(sc, time.Hour)); n != MaxSteps {
		t.Errorf("%d steps, want the cap %d", n, MaxSteps)
	}
	sc.Schedule = sc.Schedule[1:2]
	if n := len(Plan(sc, 0)); n != 0 {
		t.Errorf("an endless every: made %d steps", n)
	}
}

// TestRandomBurstsAndNewKinds: a random entry with burst: 3 makes faults
// close together, draws corrupt and scale, and the plan of an entry
// without burst is the one it always was.
func TestRandomBurstsAndNewKinds(t *testing.T) {
	r := &Random{Seed: 7, Mean: 5 * time.Second, Faults: []string{"kill", "corrupt", "scale"}, For: time.Second, Target: "one", Burst: 3, Gap: 500 * time.Millisecond}
	steps := randomSteps(r, 10*time.Minute, MaxSteps)
	close, verbs := 0, map[string]bool{}
	for i, s := range steps {
		verbs[s.Action.Verb] = true
		if i > 0 && s.At-steps[i-1].At <= r.Gap {
			close++
		}
		if i > 0 && s.At < steps[i-1].At {
			t.Fatalf("steps out of order at %d: %v after %v", i, s.At, steps[i-1].At)
		}
		if s.Action.Verb == "scale" && (s.Action.Target != "count" && s.Action.Target != "rollup" || s.Action.Args["n"] == "") {
			t.Fatalf("a scale step %s", s.Action)
		}
	}
	if close < 10 || !verbs["store"] || !verbs["scale"] || !verbs["kill"] {
		t.Fatalf("%d steps, %d within %v of the previous one, verbs %v", len(steps), close, r.Gap, verbs)
	}
	one := *r
	one.Burst = 1
	a, b := randomSteps(&one, 10*time.Minute, MaxSteps), randomSteps(&Random{Seed: 7, Mean: 5 * time.Second, Faults: []string{"kill", "corrupt", "scale"}, For: time.Second, Target: "one", Burst: 1}, 10*time.Minute, MaxSteps)
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("without bursts the plan depends on gap: %d and %d steps", len(a), len(b))
	}
}
