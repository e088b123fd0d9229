package sim

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"spate/chaos"
)

// comparable is the part of a resolved Config a run depends on, with the
// narrow nemesis's unset fields as the values they mean.
func comparable(cfg Config) (Axes, time.Duration) {
	cfg.Wide = true
	return axesOf(cfg), cfg.Duration
}

func TestAPrintedScheduleReadsBackAsTheSeedsRun(t *testing.T) {
	configs := map[string]Config{"wide": wide(nil), "narrow": DefaultConfig(), "pinned": wide(map[string]string{"ft": "none", "store": "coord"})}
	configs["narrow"] = func(c Config) Config { c.FT, c.Duration = "global", 5*time.Second; return c }(configs["narrow"])
	for name, cfg := range configs {
		for seed := uint64(1); seed <= 300; seed++ {
			f := ScheduleOf(seed, cfg)
			text := f.Format("spate sim --seed " + fmt.Sprint(seed) + " --print-schedule")
			g, err := ParseSchedule("s.yaml", []byte(text))
			if err != nil {
				t.Fatalf("%s seed %d: %v\n%s", name, seed, err, text)
			}
			if !reflect.DeepEqual(f, g) {
				t.Fatalf("%s seed %d: read back\n%+v\nwant\n%+v\n%s", name, seed, g, f, text)
			}
			if !reflect.DeepEqual(g.Steps, Plan(seed, cfg)) {
				t.Fatalf("%s seed %d: the steps are not the seed's plan", name, seed)
			}
			run := g.Apply(DefaultConfig())
			ga, gd := comparable(run)
			wa, wd := comparable(Resolve(seed, cfg))
			if !reflect.DeepEqual(ga, wa) || gd != wd || !reflect.DeepEqual(run.Schedule, Plan(seed, cfg)) {
				t.Fatalf("%s seed %d: the file runs %v %v, the seed %v %v", name, seed, ga, gd, wa, wd)
			}
		}
	}
}

// The steps are the chaos DSL's: every step a scenario file can hold
// reads there as the same action.
func TestTheStepsAreTheChaosDSLs(t *testing.T) {
	n := 0
	for seed := uint64(1); seed <= 200; seed++ {
		for _, s := range Plan(seed, wide(nil)) {
			a := s.Action
			if a.Verb == "crash" || a.Verb == "drain" || a.Target == "coord" || a.Verb == "partition" && a.Target != "" {
				continue // the sim's own: crash, drain, pause coord, an isolation
			}
			doc := "name: x\nschedule:\n  - " + stepYAML(s) + "\n"
			sc, err := chaos.Parse("x.yaml", []byte(doc))
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, stepYAML(s), err)
			}
			got := sc.Schedule[0]
			if got.At != s.At || !reflect.DeepEqual(got.Action, a) {
				t.Fatalf("seed %d: chaos reads %s as %v at %v, want %v at %v", seed, stepYAML(s), got.Action, got.At, a, s.At)
			}
			n++
		}
	}
	if n < 100 {
		t.Fatalf("only %d steps compared", n)
	}
}

func TestAHandWrittenSchedule(t *testing.T) {
	text := `# a kill under --ft none
seed: 7
duration: 4s
axes: {ft: none, autoscale: off}
schedule:
  - at: 1s
    fault: link
    target: n2
    latency: 50ms
  - {at: 2s, fault: kill, target: coordinator, resume_after: 500ms}
  - {at: 2.5s, fault: partition, groups: [[n1, n2], [n3, n4]], for: 1s}
  - {at: 3s, fault: scale, op: count, n: 3}
  - {at: 3s, fault: drain}
`
	f, err := ParseSchedule("h.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{At: time.Second, Action: act("link", "n2", "latency", "50ms")},
		{At: 2 * time.Second, Action: act("crash", "coord", "resume_after", "500ms")},
		{At: 2500 * time.Millisecond, Action: act("partition", "", "groups", "n1,n2|n3,n4", "for", "1s")},
		{At: 3 * time.Second, Action: act("scale", "count", "n", "3")},
		{At: 3 * time.Second, Action: act("drain", "")},
	}
	want[4].Action.Args = nil
	if !reflect.DeepEqual(f.Steps, want) {
		t.Fatalf("steps\n%v\nwant\n%v", f.Steps, want)
	}
	cfg := f.Apply(DefaultConfig())
	drawn := drawAxes(7, nil)
	if cfg.FT != "none" || cfg.Autoscale || cfg.Store != drawn["store"] || cfg.Duration != 4*time.Second {
		t.Fatalf("config %+v: want ft none, autoscale off, the store the seed draws (%s), 4s", cfg, drawn["store"])
	}
	if g, err := ParseSchedule("e.yaml", []byte("seed: 3\nschedule: []\n")); err != nil || g.Steps == nil || len(g.Steps) != 0 {
		t.Fatalf("an empty schedule: %+v, %v: want no step, and not the seed's", g, err)
	}
}

func TestABadScheduleFileIsOneLineNamingTheField(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"seed: 1\nschedule: [\n", "b.yaml:"},
		{"schedule: []\n", "b.yaml:1: seed: missing"},
		{"seed: -3\nschedule: []\n", "b.yaml:1: seed: want a positive whole number"},
		{"seed: 1\n", "b.yaml:1: schedule: missing"},
		{"seed: 1\nspeed: 2\nschedule: []\n", "b.yaml:2: speed: unknown field"},
		{"seed: 1\nduration: 1s\nschedule: []\n", "b.yaml:2: duration: 1s is shorter than 3s"},
		{"seed: 1\nduration: soon\nschedule: []\n", `b.yaml:2: duration: "soon" is not a duration`},
		{"seed: 1\naxes: {ft: paxos}\nschedule: []\n", `b.yaml:2: axes.ft: "paxos" is not one of spate, global, none`},
		{"seed: 1\naxes: {tls: on}\nschedule: []\n", "b.yaml:2: axes.tls: unknown axis"},
		{"seed: 1\nschedule:\n  - {fault: kill, target: n1}\n", "b.yaml:3: schedule[0].at: missing"},
		{"seed: 1\nschedule:\n  - {at: 1s, target: n1}\n", "b.yaml:3: schedule[0].fault: missing"},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: explode}\n", `b.yaml:3: schedule[0].fault: unknown fault "explode"`},
		{"seed: 1\nschedule:\n  - at: 1s\n    fault: kill\n    target: n9\n", `b.yaml:5: schedule[0].target: unknown node "n9"`},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: kill, target: count/0, for: 1s}\n", "b.yaml:3: schedule[0].for: unknown field for kill"},
		{"seed: 1\nschedule:\n  - {at: 2s, fault: kill, target: n1}\n  - {at: 1s, fault: heal}\n", "b.yaml:4: schedule[1].at: 1s is before the step above it (2s)"},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: link, target: n1, latency: fast}\n", `b.yaml:3: schedule[0].latency: "fast" is not a duration`},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: link, target: n1}\n", "b.yaml:3: schedule[0]: link needs latency:"},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: scale, op: sink, n: 2}\n", `b.yaml:3: schedule[0].op: "sink": only count and rollup scale`},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: scale, op: count}\n", "b.yaml:3: schedule[0].n: missing"},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: crash, target: coord}\n", "b.yaml:3: schedule[0].resume_after: missing"},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: restart, target: coord}\n", `b.yaml:3: schedule[0].target: "coord": only pause, crash and kill`},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: partition, groups: [[n1], [n1]]}\n", "b.yaml:3: schedule[0].groups[1]: n1 is in two groups"},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: store, target: n1, fail: yes}\n", "b.yaml:3: schedule[0].fail: want true or false"},
		{"seed: 1\nschedule:\n  - {at: 1s, fault: store, target: n1}\n", "b.yaml:3: schedule[0]: store needs exactly one of"},
		{"seed: 1\nschedule:\n  - at: 1s\n    fault: kill\n    fault: heal\n", `b.yaml:5: yaml: mapping key "fault" already defined`},
		{"seed: 1\nschedule: 3\n", "b.yaml:2: schedule: want a list of steps, got a number"},
		{"", "b.yaml:1: empty"},
	} {
		_, err := ParseSchedule("b.yaml", []byte(tc.text))
		if err == nil {
			t.Errorf("%q: no error, want %q", tc.text, tc.want)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%q:\n got %q\nwant %q... on one line", tc.text, msg, tc.want)
		}
	}
}

func FuzzParseSchedule(f *testing.F) {
	f.Add([]byte(ScheduleOf(5, wide(nil)).Format()))
	f.Add([]byte("seed: 1\nschedule:\n  - {at: 1s, fault: partition, groups: [[n1], [n2]]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseSchedule("f.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		if h, err := ParseSchedule("f.yaml", []byte(g.Format())); err != nil || !reflect.DeepEqual(g, h) {
			t.Fatalf("formatted and read back: %v\n%+v\n%+v", err, g, h)
		}
	})
}

func TestSimPrintsAndReadsASchedule(t *testing.T) {
	var out, errb strings.Builder
	file := t.TempDir() + "/s.yaml"
	if code := Main([]string{"--seed", "42", "--only", "ft=global", "--print-schedule", "--schedule-out", file}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	cfg := wide(map[string]string{"ft": "global"})
	got, err := ParseSchedule("stdout", []byte(out.String()))
	if err != nil || !reflect.DeepEqual(got, ScheduleOf(42, cfg)) {
		t.Fatalf("printed %v:\n%s\nwant seed 42's schedule", err, out.String())
	}
	data, err := os.ReadFile(file)
	if err != nil || string(data) != out.String() {
		t.Fatalf("--schedule-out wrote %q (%v), want what was printed", data, err)
	}
	// --schedule with --print-schedule prints the file as it is read.
	out.Reset()
	if code := Main([]string{"--schedule", file, "--print-schedule"}, &out, &errb); code != 0 || !strings.Contains(out.String(), got.Format()) {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	bad := t.TempDir() + "/bad.yaml"
	os.WriteFile(bad, []byte("seed: 1\nschedule:\n  - {at: 1s, fault: kill, target: n7}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--schedule", bad}, "spate sim: " + bad + `:3: schedule[0].target: unknown node "n7"`},
		{[]string{"--schedule", file, "--ft", "none"}, "spate sim: --ft: not with --schedule"},
		{[]string{"--schedule", file, "--seed", "3"}, "spate sim: --seed: not with --schedule"},
		{[]string{"--schedule", t.TempDir() + "/none.yaml"}, "spate sim: --schedule: open"},
		{[]string{"--print-schedule"}, "spate sim: --print-schedule, --schedule-out and --shrink: need --seed S"},
		{[]string{"--seed", "3", "--print-schedule", "--seeds", "5"}, "spate sim: --seeds: not with"},
		{[]string{"--seed", "3", "--tries", "2"}, "spate sim: --tries: only with"},
		{[]string{"--seed", "3", "--print-schedule", "--json"}, "spate sim: --json: not with"},
		{[]string{"--seed", "3", "--print-schedule", "--shrink"}, "spate sim: --print-schedule: --shrink prints"},
		{[]string{"--shrink"}, "spate sim: --print-schedule, --schedule-out and --shrink: need --seed S"},
		{[]string{"--seed", "3", "--shrink", "--tries", "0"}, "spate sim: --tries: 0 is not a positive number"},
	} {
		var o, e strings.Builder
		code := Main(tc.args, &o, &e)
		if code != 2 || !strings.HasPrefix(e.String(), tc.want) || strings.Count(e.String(), "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q: want 2 and one line %q...", tc.args, code, e.String(), tc.want)
		}
	}
}

func TestAResolvedFileRunsAsItDid(t *testing.T) {
	f, err := ParseSchedule("r.yaml", []byte("seed: 9\naxes: {ft: global}\nschedule: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Resolved(DefaultConfig())
	if len(r.Axes) != len(axes) || r.Axes["ft"] != "global" || r.Duration != DefaultConfig().Duration {
		t.Fatalf("resolved %+v: want every axis, ft global, the default duration", r)
	}
	if a, b := f.Apply(DefaultConfig()), r.Apply(DefaultConfig()); !reflect.DeepEqual(a, b) {
		t.Fatalf("the resolved file runs\n%+v\nthe file\n%+v", b, a)
	}
}
