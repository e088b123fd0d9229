package chaos

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// copyRun copies a recorded run from testdata into a temporary directory.
func copyRun(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"events.jsonl", "run.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A recorded plain `up` with a live rescale of count 2→3, a kill and a
// small backup limit: the report folds the rescale's steps, the backups'
// trims, spills and pauses and the interval decisions.
func TestRunReportFoldsRescalesBackupsAndIntervals(t *testing.T) {
	dir := copyRun(t, "run-rescale")
	r, err := WriteRunReport(dir, Verify{Windows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictPass || len(r.Checks) != 1 || r.Checks[0].Name != CheckExactlyOnce || len(r.Limits) != 0 {
		t.Errorf("a plain run is judged by exactly_once alone: %s %+v %+v", r.Verdict, r.Checks, r.Limits)
	}
	if len(r.Rescales) != 1 {
		t.Fatalf("%d rescales, want 1", len(r.Rescales))
	}
	rs := r.Rescales[0]
	var names []string
	for _, st := range rs.Steps {
		names = append(names, st.Name)
	}
	if rs.Op != "count" || rs.From != 2 || rs.To != 3 || rs.Mode != "eds" || rs.DoneMs <= rs.PlannedMs || rs.Bytes <= 0 ||
		strings.Join(names, " ") != "planned staged staged captured moved captured moved rerouted done" {
		t.Errorf("rescale %+v, steps %v", rs, names)
	}
	kinds := map[string]int{}
	for _, b := range r.Series.Backup {
		kinds[b.Kind]++
		if b.Kind != "unblocked" && b.Held <= 0 {
			t.Errorf("backup point without bytes: %+v", b)
		}
	}
	if kinds["trim"] == 0 || kinds["spill"] != 2 || kinds["full"] != 1 || kinds["unblocked"] != 1 {
		t.Errorf("backup points by kind %v", kinds)
	}
	if len(r.Series.Intervals) == 0 {
		t.Error("no interval decisions")
	}
	for _, iv := range r.Series.Intervals {
		if iv.Instance == "" || iv.IntervalMs <= 0 {
			t.Errorf("interval point %+v", iv)
		}
	}
	var sized int
	for _, c := range r.Series.Checkpoints {
		if c.Bytes > 0 && c.RawBytes >= c.Bytes/2 {
			sized++
		}
	}
	if sized != len(r.Series.Checkpoints) {
		t.Errorf("%d of %d checkpoints have their sizes", sized, len(r.Series.Checkpoints))
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	checkHTML(t, string(page), "PASS", []string{"throughput-in", "throughput-out", "lag", "recoveries", "recovery-1", "checkpoints",
		"checkpoint-durations", "checkpoint-bytes", "backup", "intervals", "rescales"})
	checkLeads(t, string(page))
	var back Report
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil || json.Unmarshal(js, &back) != nil || len(back.Rescales) != 1 || len(back.Series.Backup) != len(r.Series.Backup) {
		t.Errorf("report.json does not hold the new series: %v", err)
	}
}

// checkLeads checks every section opens with its explanation, the
// recovery section explains each phase and the verdict what the oracle
// checked.
func checkLeads(t *testing.T, page string) {
	t.Helper()
	sections := regexp.MustCompile(`(?s)<h2>([^<]*)</h2>\n(<[a-z]+[^>]*>)`).FindAllStringSubmatch(page, -1)
	if len(sections) < 9 {
		t.Errorf("%d sections", len(sections))
	}
	for _, s := range sections {
		if s[2] != `<p class="lead">` {
			t.Errorf("section %q opens with %s, not its explanation", s[1], s[2])
		}
	}
	for _, want := range []string{"What the oracle checked", "<b>lost</b> means", "Phases: ", ">detect</span>, from the fault",
		">place</span>", ">restore</span>, loading its last complete checkpoint", ">catch up</span>, the upstreams replaying"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// A run of `chaos run` keeps its scenario's name and actions when its
// report is written again, and judges it by the scenario's checks when
// the file is still there; the limits are drawn.
func TestRunReportKeepsTheScenario(t *testing.T) {
	dir := copyRun(t, "run-kill")
	sc := filepath.Join(t.TempDir(), "kill.yaml")
	if err := os.WriteFile(sc, []byte("name: kill one\nschedule:\n  - at: 1s\n    fault: kill\n    target: one\nchecks:\n  - exactly_once\n  - max_recovery: 3s\n  - max_lag: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prev := Report{Scenario: "kill one", File: sc, Actions: []ActionLog{{AtMs: 1000, PlanMs: 1000, Action: "kill one", OK: true, Text: "kill n3"}}}
	b, _ := json.Marshal(prev)
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := WriteRunReport(dir, Verify{Windows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Scenario != "kill one" || len(r.Actions) != 1 || len(r.Checks) != 3 || len(r.Limits) != 2 {
		t.Fatalf("scenario %q, %d actions, checks %+v, limits %+v", r.Scenario, len(r.Actions), r.Checks, r.Limits)
	}
	var h bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	// The lag's limit is a line; each zoomed recovery draws its limit as
	// a line where it falls on its axis and says where it is otherwise.
	lines, far := strings.Count(h.String(), `class="limit"`), strings.Count(h.String(), "max_recovery: 3s: far to the right of this axis")
	if len(r.Recoveries) == 0 || lines+far != 1+len(r.Recoveries) || lines < 1 {
		t.Errorf("%d limit lines and %d limits off the axis for %d recoveries", lines, far, len(r.Recoveries))
	}
	// The scenario gone: exactly_once alone, and a note says why.
	os.Remove(sc)
	r, err = RunReport(dir, Verify{Windows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Checks) != 1 || !strings.Contains(strings.Join(r.Notes, "\n"), "could not be read again") {
		t.Errorf("checks %+v, notes %q", r.Checks, r.Notes)
	}
}

func TestRunReportOfNoRun(t *testing.T) {
	if _, err := RunReport(t.TempDir(), Verify{}); err == nil || !strings.Contains(err.Error(), "not a run directory") || strings.Contains(err.Error(), "\n") {
		t.Errorf("an empty directory: %v", err)
	}
}

// The coordinator's deaths are the runner's knowledge, not the events':
// a report made again keeps them, with the actions.
func TestRunReportKeepsTheCoordinatorsDowntime(t *testing.T) {
	dir := copyRun(t, "run-kill")
	prev := Report{V: ReportSchemaVersion, Scenario: "coordinator", Actions: []ActionLog{{AtMs: 4000, PlanMs: 4000, Action: "kill coord resume_after=2s", OK: true}},
		Faults: []FaultSpan{{ID: 0, Verb: "kill", Target: Coord, Nodes: []string{Coord}, StartMs: 4000, EndMs: 6100}, {ID: 1, Verb: "kill", Target: "n2", StartMs: 3000}}}
	b, _ := json.Marshal(prev)
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := RunReport(dir, Verify{Windows: 10})
	if err != nil {
		t.Fatal(err)
	}
	var coord []FaultSpan
	for _, f := range r.Faults {
		if f.Target == Coord {
			coord = append(coord, f)
		}
	}
	if len(coord) != 1 || coord[0].StartMs != 4000 || coord[0].EndMs != 6100 || len(r.Actions) != 1 {
		t.Errorf("coordinator spans %+v, actions %+v", coord, r.Actions)
	}
	for i := 1; i < len(r.Faults); i++ {
		if r.Faults[i].StartMs < r.Faults[i-1].StartMs {
			t.Errorf("faults out of order: %+v", r.Faults)
		}
	}
}
