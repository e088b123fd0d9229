package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spate/events"
)

type junitFile struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name      string    `xml:"name,attr"`
			Failure   *struct{} `xml:"failure"`
			SystemOut string    `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestChaosRunForCI: a scenario that expects to fail, run with --set and
// --junit, exits 0 on the failure it shows and says so in JUnit XML; a
// schedule's scale step rescales the live cluster as spate scale does.
func TestChaosRunForCI(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos test")
	}
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("expect fail, --set, --junit", func(t *testing.T) {
		t.Parallel()
		file := write("mustfail.yaml", `name: kill without fault tolerance
expect: fail
cluster: {nodes: 4, rate: 30000, keys: 2000, duration: 60s, ft: none}
schedule:
  - {at: 2s, fault: kill, target: count}
checks: [exactly_once]
`)
		dir, junit := filepath.Join(tmp, "run1"), filepath.Join(tmp, "junit1.xml")
		code, out, errOut := spate(t, "chaos", "run", file, "--data", dir, "--junit", junit, "--set", "duration=5s", "--set", "nodes=3")
		if code != 0 {
			t.Fatalf("chaos run: exit %d, want 0 (it failed, as expected)\n%s%s", code, out, errOut)
		}
		if !strings.Contains(out, "expects to fail, and it did") {
			t.Errorf("output:\n%s", out)
		}
		if r := readReport(t, dir); r.Verdict != "fail" || r.Lost == 0 {
			t.Errorf("report: verdict %s, %d lost", r.Verdict, r.Lost)
		}
		var ri struct {
			Config struct {
				Nodes    int   `json:"nodes"`
				Duration int64 `json:"duration"`
			} `json:"config"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "run.json"))
		if err != nil || json.Unmarshal(b, &ri) != nil {
			t.Fatalf("run.json: %v", err)
		}
		if ri.Config.Nodes != 3 || ri.Config.Duration != 5e9 {
			t.Errorf("--set did not reach the cluster: %+v", ri.Config)
		}
		b, err = os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		var j junitFile
		if err := xml.Unmarshal(b, &j); err != nil {
			t.Fatalf("junit: %v\n%s", err, b)
		}
		if j.Tests != 2 || j.Failures != 0 || len(j.Suites) != 1 || j.Suites[0].Cases[0].Name != "exactly_once" ||
			!strings.Contains(j.Suites[0].Cases[0].SystemOut, "failed, as the scenario expects") {
			t.Errorf("junit:\n%s", b)
		}
	})

	t.Run("scale in a schedule", func(t *testing.T) {
		t.Parallel()
		file := write("scale.yaml", `name: scale out under load
cluster: {nodes: 3, rate: 30000, keys: 2000, duration: 5s, ft: spate, interval: 300ms}
schedule:
  - {at: 1500ms, fault: scale, op: count, n: 3}
checks: [exactly_once]
`)
		dir := filepath.Join(tmp, "run2")
		code, out, errOut := spate(t, "chaos", "run", file, "--data", dir)
		if code != 0 {
			t.Fatalf("chaos run: exit %d\n%s%s", code, out, errOut)
		}
		r := readReport(t, dir)
		if len(r.Actions) == 0 || r.Actions[0].Action != "scale count n=3" || !r.Actions[0].OK {
			t.Fatalf("actions %+v", r.Actions)
		}
		c := &cluster{t: t, dir: dir}
		if findEvent(c.events(), events.Kind("rescale_done"), "") == nil {
			t.Errorf("no rescale_done event")
		}
		c.verifyOK()
	})
}
