package chaos

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func parseWith(t *testing.T, src string, set ...string) (*Scenario, error) {
	t.Helper()
	var over []Override
	for _, kv := range set {
		o, err := ParseOverride(kv)
		if err != nil {
			t.Fatal(err)
		}
		over = append(over, o)
	}
	return ParseWith("s.yaml", []byte(src), over)
}

func TestSetOverridesTheClusterBlock(t *testing.T) {
	src := `name: set
cluster: {nodes: 3, rate: 1000, duration: 10s, parallelism: {count: 3}}
schedule:
  - {at: 2s, fault: kill, target: n5}
  - random: {seed: 7, mean: 3s, faults: [kill], target: one}
`
	// Without the override n5 is not a node of a 3-node cluster.
	if _, err := parseWith(t, src); err == nil || !strings.Contains(err.Error(), `unknown node "n5"`) {
		t.Fatalf("without --set: %v", err)
	}
	sc, err := parseWith(t, src, "nodes=5", "rate=2500", "ft=global", "seed=42", "respawn=false", "duration=20s")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"--nodes=5": "", "--rate=2500": "", "--ft=global": "", "--seed=42": "", "--respawn=false": "", "--duration=20s": "", "--parallelism=count=3": ""}
	for _, f := range sc.Cluster {
		if _, ok := want[f]; !ok {
			t.Errorf("cluster flag %q not expected (have %q)", f, sc.Cluster)
		}
		delete(want, f)
	}
	if len(want) > 0 {
		t.Errorf("cluster flags %q lack %v", sc.Cluster, want)
	}
	if sc.Nodes != 5 || sc.Duration != 20*time.Second {
		t.Errorf("nodes %d duration %v", sc.Nodes, sc.Duration)
	}
	if r := sc.Schedule[1].Random; r == nil || r.Seed != 42 {
		t.Errorf("seed=42 did not reach the random entry: %+v", r)
	}
	if sc.Set["nodes"] != "5" || sc.ClusterLines["nodes"] != 0 {
		t.Errorf("Set %v, lines %v", sc.Set, sc.ClusterLines)
	}
}

func TestSetErrorsNameTheOverride(t *testing.T) {
	src := "name: set\ncluster: {nodes: 3}\nschedule: []\n"
	cases := []struct{ set, want string }{
		{"nodes=many", "--set nodes=many: want a whole number"},
		{"nodes=99", "--set nodes=99: 99 out of range"},
		{"ft=maybe", `--set ft=maybe: "maybe": want spate, global or none`},
		{"nodez=3", "--set nodez=3: unknown key"},
		{"data=/tmp/x", "--set data=/tmp/x: set by `spate chaos run`"},
		{"respawn=perhaps", "--set respawn=perhaps: want true or false"},
		{"parallelism=count=x", "--set parallelism=count=x:"},
	}
	for _, tc := range cases {
		_, err := parseWith(t, src, tc.set)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--set %s: %v, want %q...", tc.set, err, tc.want)
		}
	}
	if _, err := ParseOverride("nodes"); err == nil {
		t.Error("--set nodes: no error")
	}
}

func TestClusterBlockTakesFlagsAddedToUp(t *testing.T) {
	src := `name: flags
cluster: {failures: "poisson:1h", rescale: restart, autoscale: true, respawn: false, cost: "count=50us", recover-on: respawned}
schedule: []
`
	sc, err := parseWith(t, src)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(sc.Cluster, " ")
	for _, f := range []string{"--failures=poisson:1h", "--rescale=restart", "--autoscale=true", "--respawn=false", "--cost=count=50us", "--recover-on=respawned"} {
		if !strings.Contains(got, f) {
			t.Errorf("cluster %q lacks %s", got, f)
		}
	}
	if _, err := parseWith(t, "name: x\ncluster: {rescale: sideways}\nschedule: []\n"); err == nil || !strings.Contains(err.Error(), "s.yaml:2: cluster.rescale:") {
		t.Errorf("bad rescale: %v", err)
	}
}

func TestScaleInASchedule(t *testing.T) {
	sc, err := parseWith(t, "name: scale\ncluster: {duration: 20s}\nschedule:\n  - {at: 10s, fault: scale, op: count, n: 4}\n")
	if err != nil {
		t.Fatal(err)
	}
	a := sc.Schedule[0].Action
	if a.Verb != "scale" || a.Target != "count" || a.Args["n"] != "4" || a.String() != "scale count n=4" {
		t.Errorf("action %+v (%s)", a, a)
	}
	for _, tc := range []struct{ entry, want string }{
		{"{at: 1s, fault: scale, op: count}", "schedule[0].n: missing"},
		{"{at: 1s, fault: scale, n: 3}", "schedule[0].op: missing"},
		{"{at: 1s, fault: scale, op: sink, n: 3}", `"sink": only count and rollup scale`},
		{"{at: 1s, fault: scale, op: count, n: 0}", "0 out of range 1..128"},
		{"{at: 1s, fault: scale, op: count, n: 2, target: n1}", "unknown field for scale"},
	} {
		_, err := parseWith(t, "name: scale\nschedule:\n  - "+tc.entry+"\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.entry, err, tc.want)
		}
	}
}

// An instance a scale-out of the schedule makes can be the target of a
// later entry; without the scale-out it is refused.
func TestTargetMadeByAScaleOut(t *testing.T) {
	const kill = "  - {at: 5s, fault: kill, target: count#3}\n"
	if _, err := parseWith(t, "name: x\nschedule:\n  - {at: 3s, fault: scale, op: count, n: 4}\n"+kill); err != nil {
		t.Fatalf("after a scale-out to 4: %v", err)
	}
	if _, err := parseWith(t, "name: x\nschedule:\n"+kill); err == nil || !strings.Contains(err.Error(), `unknown instance "count#3"`) {
		t.Fatalf("without the scale-out: %v", err)
	}
}

func TestExpectField(t *testing.T) {
	sc, err := parseWith(t, "name: x\nexpect: fail\nschedule: []\n")
	if err != nil || sc.Expect != ExpectFail {
		t.Fatalf("%v %+v", err, sc)
	}
	if sc, _ := parseWith(t, "name: x\nschedule: []\n"); sc.Expect != ExpectPass {
		t.Errorf("default expect %q", sc.Expect)
	}
	if _, err := parseWith(t, "name: x\nexpect: maybe\nschedule: []\n"); err == nil || !strings.Contains(err.Error(), `s.yaml:2: expect: "maybe": want pass or fail`) {
		t.Errorf("bad expect: %v", err)
	}
	for _, tc := range []struct {
		expect, verdict string
		code            int
	}{
		{ExpectPass, VerdictPass, ExitPass}, {ExpectPass, VerdictFail, ExitFail},
		{ExpectFail, VerdictFail, ExitPass}, {ExpectFail, VerdictPass, ExitFail},
	} {
		if got := Outcome(&Scenario{Expect: tc.expect}, tc.verdict); got != tc.code {
			t.Errorf("expect %s, verdict %s: exit %d, want %d", tc.expect, tc.verdict, got, tc.code)
		}
	}
}

// readJUnit parses a JUnit file back.
func readJUnit(t *testing.T, path string) junitSuites {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s junitSuites
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	if len(s.Suites) != 1 {
		t.Fatalf("%d suites", len(s.Suites))
	}
	return s
}

func TestExpectFailRunWithJUnit(t *testing.T) {
	const src = `name: must fail
expect: fail
cluster: {nodes: 4, duration: 30s, rate: 1000, ft: none}
schedule:
  - {at: 10s, fault: kill, target: n2}
checks: [exactly_once, {max_lag: 1s}]
`
	junit := filepath.Join(t.TempDir(), "junit.xml")
	run := func(v Verify) (int, junitSuites, string) {
		fc := newFakeCluster(t)
		clock := &stepClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		var out bytes.Buffer
		code, _, err := Run(t.Context(), mustParse(t, src), RunOptions{Start: fc.start, Verify: func(string) (Verify, error) { return v, nil },
			Now: clock.Now, After: clock.After, Out: &out, JUnit: junit})
		if err != nil {
			t.Fatalf("%v\n%s", err, &out)
		}
		return code, readJUnit(t, junit), out.String()
	}
	// Records lost: the verdict fails, as the scenario expects: exit 0,
	// and no failing test case.
	code, s, out := run(Verify{Windows: 300, Lost: 12})
	if code != ExitPass || !strings.Contains(out, "expects to fail, and it did") {
		t.Fatalf("lost records: exit %d\n%s", code, out)
	}
	if s.Tests != 3 || s.Failures != 0 || s.Errors != 0 {
		t.Errorf("tests %d failures %d errors %d, want 3 0 0", s.Tests, s.Failures, s.Errors)
	}
	cases := s.Suites[0].Cases
	if cases[0].Name != "exactly_once" || !strings.Contains(cases[0].SystemOut, "failed, as the scenario expects: 12 lost") ||
		cases[2].Name != "expect: fail" || cases[0].ClassName != "chaos.t" {
		t.Errorf("cases %+v", cases)
	}
	// Nothing lost: every check passes, which this scenario must not.
	code, s, _ = run(Verify{Windows: 300})
	if code != ExitFail || s.Failures != 1 || s.Suites[0].Cases[2].Failure == nil {
		t.Errorf("nothing lost: exit %d, %d failures: %+v", code, s.Failures, s.Suites[0].Cases)
	}
}

func TestJUnitOfAFailedCheckAndOfARunThatCouldNotRun(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	fc := newFakeCluster(t)
	clock := &stepClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	sc := mustParse(t, runScenario)
	code, _, err := Run(t.Context(), sc, RunOptions{Start: fc.start, Verify: func(string) (Verify, error) { return Verify{Windows: 300, Lost: 7}, nil },
		Now: clock.Now, After: clock.After, JUnit: junit})
	if err != nil || code != ExitFail {
		t.Fatalf("exit %d, %v", code, err)
	}
	s := readJUnit(t, junit)
	c := s.Suites[0].Cases
	if s.Tests != 2 || s.Failures != 1 || c[0].Failure == nil || !strings.Contains(c[0].Failure.Message, "7 lost") || c[1].Failure != nil {
		t.Errorf("junit %+v", s)
	}
	fc = newFakeCluster(t)
	fc.startErr = errors.New("no binary")
	code, _, _ = Run(t.Context(), sc, RunOptions{Start: fc.start, Verify: func(string) (Verify, error) { return Verify{}, nil }, JUnit: junit})
	s = readJUnit(t, junit)
	if code != ExitNotRun || s.Errors != 1 || s.Suites[0].Cases[0].Name != "run" || !strings.Contains(s.Suites[0].Cases[0].Error.Message, "no binary") {
		t.Errorf("exit %d, junit %+v", code, s)
	}
}
