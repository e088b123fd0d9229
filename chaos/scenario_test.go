package chaos

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"spate/control"
)

// issueExample is the shape issue 6 asks for, verbatim.
const issueExample = `name: teaching demo
cluster:            # the options of ` + "`spate up`" + `
  nodes: 4
  source: gen:diurnal
  rate: 50000
  duration: 60s
  ft: spate
schedule:
  - at: 10s
    fault: kill
    target: one
  - at: 20s
    fault: partition
    shape: majority
    for: 5s
  - every: 15s
    fault: pause
    target: one
    for: 3s
  - at: 5s
    fault: link
    target: n2
    latency: 50ms
    jitter: 10ms
    for: 20s
  - random:
      seed: 7
      mean: 8s
      faults: [kill, pause, partition, link]
checks:
  - exactly_once
  - max_recovery: 5s
  - max_lag: 10s
`

func TestParseIssueExample(t *testing.T) {
	sc, err := Parse("demo.yaml", []byte(issueExample))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "teaching demo" || sc.Nodes != 4 || sc.Duration != time.Minute {
		t.Errorf("name %q nodes %d duration %v", sc.Name, sc.Nodes, sc.Duration)
	}
	wantCluster := []string{"--nodes=4", "--source=gen:diurnal", "--rate=50000", "--duration=60s", "--ft=spate"}
	if !reflect.DeepEqual(sc.Cluster, wantCluster) {
		t.Errorf("cluster %q, want %q", sc.Cluster, wantCluster)
	}
	if sc.ClusterLines["rate"] != 5 {
		t.Errorf("rate on line %d, want 5", sc.ClusterLines["rate"])
	}
	if len(sc.Schedule) != 5 {
		t.Fatalf("%d entries, want 5", len(sc.Schedule))
	}
	want := []Entry{
		{Line: 9, At: 10 * time.Second, Action: control.Action{Verb: "kill", Target: "one"}},
		{Line: 12, At: 20 * time.Second, Action: control.Action{Verb: "partition", Args: map[string]string{"shape": "majority", "for": "5s"}}},
		{Line: 16, At: 15 * time.Second, Every: 15 * time.Second, Action: control.Action{Verb: "pause", Target: "one", Args: map[string]string{"for": "3s"}}},
		{Line: 20, At: 5 * time.Second, Action: control.Action{Verb: "link", Target: "n2", Args: map[string]string{"latency": "50ms", "jitter": "10ms", "for": "20s"}}},
		{Line: 26, Random: &Random{Seed: 7, Mean: 8 * time.Second, Faults: []string{"kill", "pause", "partition", "link"}, For: 3 * time.Second, Target: "one", Burst: 1, Gap: 500 * time.Millisecond}},
	}
	for i := range want {
		if !reflect.DeepEqual(sc.Schedule[i], want[i]) {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, sc.Schedule[i], want[i])
		}
	}
	wantChecks := []Check{{Name: CheckExactlyOnce, Line: 31}, {Name: CheckMaxRecovery, Limit: 5 * time.Second, Line: 32}, {Name: CheckMaxLag, Limit: 10 * time.Second, Line: 33}}
	if !reflect.DeepEqual(sc.Checks, wantChecks) {
		t.Errorf("checks %+v, want %+v", sc.Checks, wantChecks)
	}
}

func TestParseForms(t *testing.T) {
	sc, err := Parse("f.yaml", []byte(`name: forms
cluster:
  nodes: 5
  parallelism: {count: 3}
  interval: auto
  speedup: 2.5
schedule:
  - at: 1s
    fault: partition
    groups: [[n1, n2], [n3, n4, n5]]
    oneway: true
  - at: 2s
    fault: link
    target: count/2
    bandwidth: 1MB/s
    stall: false
    reset: true
  - at: 3s
    fault: store
    fail: true
  - every: 1s
    at: 500ms
    until: 3s
    fault: restart
    target: count#0
  - at: 4s
    fault: heal
checks:
  - all_recovered
  - exactly_once: true
  - min_throughput: 1000
  - max_checkpoint: 2s
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Cluster; !reflect.DeepEqual(got, []string{"--nodes=5", "--parallelism=count=3", "--interval=auto", "--speedup=2.5"}) {
		t.Errorf("cluster %q", got)
	}
	if a := sc.Schedule[0].Action; a.Args["groups"] != "n1,n2|n3,n4,n5" || a.Args["oneway"] != "true" {
		t.Errorf("partition %v", a)
	}
	if a := sc.Schedule[1].Action; a.Target != "count/2" || !reflect.DeepEqual(a.Args, map[string]string{"bandwidth": "1MB/s", "reset": "true"}) {
		t.Errorf("link %v", a)
	}
	if e := sc.Schedule[3]; e.At != 500*time.Millisecond || e.Every != time.Second || e.Until != 3*time.Second {
		t.Errorf("every %+v", e)
	}
	if a := sc.Schedule[4].Action; a.Verb != "heal" || a.Args != nil {
		t.Errorf("heal %#v", a)
	}
	if len(sc.Checks) != 4 || sc.Checks[2].Min != 1000 || sc.Checks[3].Limit != 2*time.Second {
		t.Errorf("checks %+v", sc.Checks)
	}
}

func TestParseDefaultCheck(t *testing.T) {
	sc, err := Parse("d.yaml", []byte("name: x\nschedule: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Checks) != 1 || sc.Checks[0].Name != CheckExactlyOnce || sc.Nodes != 4 {
		t.Errorf("%+v", sc)
	}
}

// TestParseErrors: every bad input gets one line naming file, line and
// field.
func TestParseErrors(t *testing.T) {
	head := "name: bad\ncluster:\n  nodes: 4\n  duration: 30s\nschedule:\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"syntax", "name: [x\n", "s.yaml:1: yaml: "},
		{"empty", "", "s.yaml:1: empty scenario"},
		{"not a mapping", "- a\n- b\n", "s.yaml:1: want a mapping"},
		{"unknown top field", "name: x\nschedule: []\nchecks: []\nrun: 3\n", "s.yaml:4: run: unknown field"},
		{"missing name", "schedule: []\n", "s.yaml:1: name: missing"},
		{"missing schedule", "name: x\n", "s.yaml:1: schedule: missing"},
		{"name a list", "name: [a]\nschedule: []\n", "s.yaml:1: name: want a single value, got a list"},
		{"schedule a mapping", "name: x\nschedule:\n  at: 1s\n", "s.yaml:3: schedule: want a list, got a mapping"},
		{"two documents", "name: x\nschedule: []\n---\nname: y\n", "s.yaml:4: more than one YAML document"},
		{"alias", "name: &a x\nschedule: []\ndescription: *a\n", "s.yaml:3: description: aliases are not supported"},
		{"unknown cluster key", "name: x\ncluster:\n  nodes: 4\n  nodez: 3\nschedule: []\n", "s.yaml:4: cluster.nodez: unknown field"},
		{"cluster data", "name: x\ncluster:\n  data: /tmp\nschedule: []\n", "s.yaml:3: cluster.data: set by `spate chaos run`"},
		{"cluster nodes type", "name: x\ncluster:\n  nodes: four\nschedule: []\n", "s.yaml:3: cluster.nodes: want a whole number, got a string"},
		{"cluster nodes range", "name: x\ncluster:\n  nodes: 99\nschedule: []\n", "s.yaml:3: cluster.nodes: 99 out of range 1..64"},
		{"cluster duration", "name: x\ncluster:\n  duration: 30\nschedule: []\n", "s.yaml:3: cluster.duration: \"30\" is not a duration"},
		{"cluster ft", "name: x\ncluster:\n  ft: magic\nschedule: []\n", "s.yaml:3: cluster.ft: \"magic\": want spate, global or none"},
		{"cluster rate", "name: x\ncluster:\n  rate: -5\nschedule: []\n", "s.yaml:3: cluster.rate: must not be negative"},
		{"cluster parallelism op", "name: x\ncluster:\n  parallelism: {joiner: 2}\nschedule: []\n", "s.yaml:3: cluster.parallelism: unknown operator \"joiner\""},
		{"cluster interval", "name: x\ncluster:\n  interval: often\nschedule: []\n", "s.yaml:3: cluster.interval: \"often\": want auto"},
		{"cluster backup-mem", "name: x\ncluster:\n  backup-mem: 2 parsecs\nschedule: []\n", "s.yaml:3: cluster.backup-mem: \"2 parsecs\": unknown unit"},
		{"cluster backup-full", "name: x\ncluster:\n  backup-full: drop\nschedule: []\n", "s.yaml:3: cluster.backup-full: \"drop\": want spill or block"},
		{"cluster store", "name: x\ncluster:\n  store: nfs://x\nschedule: []\n", "s.yaml:3: cluster.store: --store \"nfs://x\": want dir, coord or s3://"},
		{"cluster recover-on", "name: x\ncluster:\n  recover-on: elsewhere\nschedule: []\n", "s.yaml:3: cluster.recover-on: \"elsewhere\": want survivors or respawned"},
		{"unknown fault", head + "  - at: 1s\n    fault: explode\n    target: n1\n", "s.yaml:7: schedule[0].fault: unknown fault \"explode\""},
		{"missing fault", head + "  - at: 1s\n    target: n1\n", "s.yaml:6: schedule[0].fault: missing"},
		{"missing when", head + "  - fault: kill\n    target: n1\n", "s.yaml:6: schedule[0]: missing at:, every: or random:"},
		{"bad duration", head + "  - at: soon\n    fault: kill\n    target: n1\n", "s.yaml:6: schedule[0].at: \"soon\" is not a duration"},
		{"negative duration", head + "  - at: -1s\n    fault: kill\n    target: n1\n", "s.yaml:6: schedule[0].at: -1s: must not be negative"},
		{"bad for", head + "  - at: 1s\n    fault: pause\n    target: n1\n    for: 0s\n", "s.yaml:9: schedule[0].for: must be positive"},
		{"unknown target", head + "  - at: 1s\n    fault: kill\n    target: everyone\n", "s.yaml:8: schedule[0].target: unknown target \"everyone\""},
		{"node out of cluster", head + "  - at: 1s\n    fault: kill\n    target: n9\n", "s.yaml:8: schedule[0].target: unknown node \"n9\" (the cluster has n1..n4)"},
		{"unknown instance", head + "  - at: 1s\n    fault: kill\n    target: count/2\n", "s.yaml:8: schedule[0].target: unknown instance \"count/2\""},
		{"unknown operator instance", head + "  - at: 1s\n    fault: kill\n    target: join/0\n", "s.yaml:8: schedule[0].target: unknown operator \"join\""},
		{"missing target", head + "  - at: 1s\n    fault: kill\n", "s.yaml:6: schedule[0].target: missing: kill needs a target"},
		{"unknown field for verb", head + "  - at: 1s\n    fault: kill\n    target: n1\n    latency: 5ms\n", "s.yaml:9: schedule[0].latency: unknown field for kill"},
		{"for on kill", head + "  - at: 1s\n    fault: kill\n    target: n1\n    for: 5s\n", "s.yaml:9: schedule[0].for: unknown field for kill"},
		{"target wrong type", head + "  - at: 1s\n    fault: kill\n    target: [n1]\n", "s.yaml:8: schedule[0].target: want a single value, got a list"},
		{"partition no shape", head + "  - at: 1s\n    fault: partition\n", "s.yaml:6: schedule[0].shape: missing: partition needs shape:"},
		{"partition bad shape", head + "  - at: 1s\n    fault: partition\n    shape: ring\n", "s.yaml:8: schedule[0].shape: unknown shape \"ring\""},
		{"partition both", head + "  - at: 1s\n    fault: partition\n    shape: one\n    groups: [[n1],[n2]]\n", "s.yaml:6: schedule[0].groups: give shape: or groups:, not both"},
		{"partition one group", head + "  - at: 1s\n    fault: partition\n    groups: [[n1, n2]]\n", "s.yaml:8: schedule[0].groups: want at least two groups"},
		{"partition node twice", head + "  - at: 1s\n    fault: partition\n    groups: [[n1, n2], [n2]]\n", "s.yaml:8: schedule[0].groups[1]: n2 is in two groups"},
		{"partition group unknown", head + "  - at: 1s\n    fault: partition\n    groups: [[n1], [n7]]\n", "s.yaml:8: schedule[0].groups[1]: unknown node \"n7\""},
		{"oneway not bool", head + "  - at: 1s\n    fault: partition\n    shape: one\n    oneway: yes please\n", "s.yaml:9: schedule[0].oneway: want true or false, got a string"},
		{"link nothing", head + "  - at: 1s\n    fault: link\n    target: n1\n", "s.yaml:6: schedule[0]: link needs latency:"},
		{"link bandwidth", head + "  - at: 1s\n    fault: link\n    target: n1\n    bandwidth: fast\n", "s.yaml:9: schedule[0].bandwidth: \"fast\" is not a bandwidth"},
		{"link latency", head + "  - at: 1s\n    fault: link\n    target: n1\n    latency: 50\n", "s.yaml:9: schedule[0].latency: \"50\" is not a duration"},
		{"store two", head + "  - at: 1s\n    fault: store\n    fail: true\n    corrupt: true\n", "s.yaml:6: schedule[0]: store needs exactly one of"},
		{"store slow", head + "  - at: 1s\n    fault: store\n    slow: true\n", "s.yaml:8: schedule[0].slow: \"true\" is not a duration"},
		{"until without every", head + "  - at: 1s\n    until: 5s\n    fault: kill\n    target: n1\n", "s.yaml:7: schedule[0].until: only an every: entry"},
		{"until before at", head + "  - every: 5s\n    until: 2s\n    fault: kill\n    target: n1\n", "s.yaml:7: schedule[0].until: ends before the first fault"},
		{"every forever", "name: x\nschedule:\n  - every: 5s\n    fault: kill\n    target: n1\n", "s.yaml:3: schedule[0].every: repeats forever"},
		{"every too many", head + "  - every: 1ms\n    fault: kill\n    target: n1\n", "s.yaml:6: schedule[0]: the schedule makes more than 10000 steps"},
		{"entry a string", head + "  - kill n1\n", "s.yaml:6: schedule[0]: want a mapping"},
		{"random beside", head + "  - random: {seed: 1, mean: 5s, faults: [kill]}\n    at: 3s\n", "s.yaml:7: schedule[0].at: unknown field beside random:"},
		{"random no seed", head + "  - random:\n      mean: 5s\n      faults: [kill]\n", "s.yaml:7: schedule[0].random.seed: missing"},
		{"random no mean", head + "  - random:\n      seed: 1\n      faults: [kill]\n", "s.yaml:7: schedule[0].random.mean: missing"},
		{"random no faults", head + "  - random:\n      seed: 1\n      mean: 1s\n", "s.yaml:7: schedule[0].random.faults: missing"},
		{"random bad fault", head + "  - random:\n      seed: 1\n      mean: 1s\n      faults: [kill, heal]\n", "s.yaml:9: schedule[0].random.faults: unknown fault \"heal\""},
		{"random unknown key", head + "  - random:\n      seed: 1\n      mean: 1s\n      rate: 3\n", "s.yaml:9: schedule[0].random.rate: unknown field"},
		{"random seed type", head + "  - random:\n      seed: abc\n", "s.yaml:7: schedule[0].random.seed: want a whole number"},
		{"random mean tiny", head + "  - random:\n      seed: 1\n      mean: 1us\n      faults: [kill]\n", "s.yaml:6: schedule[0].random.mean: 1µs over 30s makes about"},
		{"random target", head + "  - random:\n      seed: 1\n      mean: 1s\n      faults: [kill]\n      target: n8\n", "s.yaml:10: schedule[0].random.target: unknown node \"n8\""},
		{"unknown check", "name: x\nschedule: []\nchecks:\n  - fast\n", "s.yaml:4: checks[0]: unknown check \"fast\""},
		{"unknown check map", "name: x\nschedule: []\nchecks:\n  - max_fun: 3s\n", "s.yaml:4: checks[0].max_fun: unknown check"},
		{"check no limit", "name: x\nschedule: []\nchecks:\n  - max_lag\n", "s.yaml:4: checks[0]: max_lag needs a limit"},
		{"check bad limit", "name: x\nschedule: []\nchecks:\n  - max_lag: high\n", "s.yaml:4: checks[0].max_lag: \"high\" is not a duration"},
		{"check twice", "name: x\nschedule: []\nchecks:\n  - exactly_once\n  - exactly_once\n", "s.yaml:5: checks[1]: exactly_once given twice"},
		{"check throughput type", "name: x\nschedule: []\nchecks:\n  - min_throughput: lots\n", "s.yaml:4: checks[0].min_throughput: want a number, got a string"},
		{"checks not list", "name: x\nschedule: []\nchecks: exactly_once\n", "s.yaml:3: checks: want a list"},
		{"duplicate key", "name: x\nname: y\nschedule: []\n", "s.yaml:2: yaml: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.want) {
				t.Errorf("error\n %q\nwant prefix\n %q", msg, tt.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.File != "s.yaml" || pe.Line < 1 {
				t.Errorf("not a placed *Error: %#v", err)
			}
		})
	}
}

func TestParseBandwidth(t *testing.T) {
	for in, want := range map[string]float64{"1MB/s": 1e6, "512KiB/s": 512 << 10, "100B/s": 100, "2.5 GB/s": 2.5e9, "1mb/s": 1e6} {
		if got, err := ParseBandwidth(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1MB", "fast", "0MB/s", "-1MB/s", "1TB/s"} {
		if _, err := ParseBandwidth(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestExamples: every shipped example parses and plans.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("../examples/*/*.yaml")
	files = append(files, more...)
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := Parse(f, data)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Duration <= 0 {
				t.Errorf("no cluster duration")
			}
			if len(Plan(sc, sc.Duration)) == 0 && len(sc.Schedule) > 0 {
				t.Errorf("empty plan")
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(issueExample))
	f.Add([]byte("name: x\nschedule: []\n"))
	f.Add([]byte("name: &a x\nschedule: *a\n"))
	f.Add([]byte("name: x\nschedule:\n  - random: {seed: 1, mean: 1s, faults: [kill], until: 10s}\n"))
	f.Add([]byte("name: x\ncluster: {duration: 9s}\nschedule:\n  - {at: 2s, fault: kill, target: coordinator, resume_after: 1s}\n"))
	if files, _ := filepath.Glob("../examples/*.yaml"); len(files) > 0 {
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse("f.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			return
		}
		steps := Plan(sc, sc.Duration)
		if len(steps) > MaxSteps {
			t.Errorf("%d steps", len(steps))
		}
	})
}

func TestParseKillCoordinator(t *testing.T) {
	sc, err := Parse("k.yaml", []byte(`name: kill the coordinator
cluster: {nodes: 3, duration: 20s, coord-timeout: 10s}
schedule:
  - at: 5s
    fault: kill
    target: coordinator
    resume_after: 2s
  - {every: 6s, until: 19s, fault: kill, target: coord, resume_after: 1500ms}
  - {at: 7s, fault: kill, target: n2}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Line: 4, At: 5 * time.Second, Action: control.Action{Verb: "kill", Target: Coord, Args: map[string]string{ResumeAfter: "2s"}}},
		{Line: 8, At: 6 * time.Second, Every: 6 * time.Second, Until: 19 * time.Second, Action: control.Action{Verb: "kill", Target: Coord, Args: map[string]string{ResumeAfter: "1500ms"}}},
		{Line: 9, At: 7 * time.Second, Action: control.Action{Verb: "kill", Target: "n2"}},
	}
	if !reflect.DeepEqual(sc.Schedule, want) {
		t.Errorf("schedule\n got %+v\nwant %+v", sc.Schedule, want)
	}
	if !sc.KillsCoordinator() || sc.CoordTimeout != 10*time.Second {
		t.Errorf("kills the coordinator %v, coord-timeout %v", sc.KillsCoordinator(), sc.CoordTimeout)
	}
	if got := sc.Schedule[0].Action.String(); got != "kill coord resume_after=2s" {
		t.Errorf("the step reads %q", got)
	}

	// Never resumed: only a scenario that says it expects to fail.
	sc, err = Parse("k.yaml", []byte("name: x\nexpect: fail\ncluster: {duration: 10s}\nschedule:\n  - {at: 3s, fault: kill, target: coord}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := sc.Schedule[0].Action; a.Target != Coord || a.Args != nil {
		t.Errorf("never resumed: %#v", a)
	}

	sc, err = Parse("k.yaml", []byte("name: x\ncluster: {duration: 10s}\nschedule:\n  - {at: 3s, fault: kill, target: n1}\n  - {random: {seed: 1, mean: 2s, faults: [kill]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.KillsCoordinator() {
		t.Error("a scenario that kills only nodes kills the coordinator")
	}
}

// TestParseKillCoordinatorErrors: the exact one-line errors, each naming
// the file, the line and the field.
func TestParseKillCoordinatorErrors(t *testing.T) {
	head := "name: bad\ncluster: {nodes: 4, duration: 30s}\nschedule:\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"never resumed", head + "  - at: 5s\n    fault: kill\n    target: coordinator\n",
			"s.yaml:4: schedule[0].resume_after: missing: a coordinator never resumed cannot finish the run, so no check can pass; give resume_after: D (or expect: fail)"},
		{"resume_after on pause", head + "  - at: 5s\n    fault: pause\n    target: n1\n    resume_after: 2s\n",
			"s.yaml:7: schedule[0].resume_after: only kill takes resume_after (kill coordinator, to start a new coordinator that long after)"},
		{"resume_after on a node", head + "  - at: 5s\n    fault: kill\n    target: n1\n    resume_after: 2s\n",
			"s.yaml:7: schedule[0].resume_after: only the coordinator is resumed (target: coordinator); a node comes back with fault: restart"},
		{"resume_after zero", head + "  - at: 5s\n    fault: kill\n    target: coord\n    resume_after: 0s\n",
			"s.yaml:7: schedule[0].resume_after: must be positive"},
		{"resume_after negative", head + "  - {at: 5s, fault: kill, target: coord, resume_after: -2s}\n",
			"s.yaml:4: schedule[0].resume_after: -2s: must not be negative"},
		{"resume_after not a duration", head + "  - at: 5s\n    fault: kill\n    target: coord\n    resume_after: later\n",
			`s.yaml:7: schedule[0].resume_after: "later" is not a duration (want e.g. 500ms, 5s, 2m)`},
		{"resume_after a number", head + "  - at: 5s\n    fault: kill\n    target: coord\n    resume_after: 2\n",
			`s.yaml:7: schedule[0].resume_after: "2" is not a duration (want e.g. 500ms, 5s, 2m)`},
		{"pause the coordinator", head + "  - at: 5s\n    fault: pause\n    target: coordinator\n    for: 2s\n",
			`s.yaml:6: schedule[0].target: "coordinator": only kill takes the coordinator as a target (with resume_after: D, a new coordinator goes on with the run)`},
		{"restart coord", head + "  - {at: 5s, fault: restart, target: coord}\n",
			`s.yaml:4: schedule[0].target: "coord": only kill takes the coordinator as a target (with resume_after: D, a new coordinator goes on with the run)`},
		{"random coordinator", head + "  - random:\n      seed: 1\n      mean: 5s\n      faults: [kill]\n      target: coordinator\n",
			`s.yaml:8: schedule[0].random.target: "coordinator": random faults never target the coordinator (give kill coordinator an at: entry of its own)`},
		{"every too often", head + "  - every: 5s\n    fault: kill\n    target: coord\n    resume_after: 5s\n",
			"s.yaml:7: schedule[0].resume_after: 5s is not shorter than every: 5s: the next kill would find the coordinator still down"},
		{"set resume", "name: x\nschedule: []\ncluster:\n  resume: /tmp/x\n",
			"s.yaml:4: cluster.resume: set by `spate chaos run`, not by the scenario"},
		{"coord-timeout", "name: x\nschedule: []\ncluster:\n  coord-timeout: soon\n",
			`s.yaml:4: cluster.coord-timeout: "soon" is not a duration (want e.g. 500ms, 5s, 2m)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n %q\nwant\n %q", err, tt.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("not a placed *Error: %#v", err)
			}
		})
	}
	if _, err := ParseWith("s.yaml", []byte("name: x\nschedule: []\n"), []Override{{Key: "resume", Value: "/tmp/x"}}); err == nil || err.Error() != "--set resume=/tmp/x: set by `spate chaos run` itself" {
		t.Errorf("--set resume: %v", err)
	}
}

// TestPlanNeverDrawsTheCoordinator: a random: entry's kills are of nodes,
// whatever its seed and its target.
func TestPlanNeverDrawsTheCoordinator(t *testing.T) {
	for _, target := range []string{"one", "all", "majority", "count"} {
		sc := mustParse(t, "name: x\ncluster: {duration: 60s}\nschedule:\n  - {random: {seed: 3, mean: 1s, burst: 3, faults: [kill, restart, pause, partition], target: "+target+"}}\n")
		steps := Plan(sc, sc.Duration)
		if len(steps) < 20 {
			t.Fatalf("%s: only %d steps", target, len(steps))
		}
		for _, s := range steps {
			if s.Action.Target == Coord || slices.Contains(coordNames, s.Action.Target) {
				t.Fatalf("%s: a random step targets the coordinator: %v", target, s.Action)
			}
		}
		if sc.KillsCoordinator() {
			t.Errorf("%s: a random entry counts as a kill of the coordinator", target)
		}
	}
}
