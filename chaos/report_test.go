package chaos

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"spate/events"
	"spate/job"
)

// killRun copies testdata/run-kill (a real 10s run in which n3 was killed
// with SIGKILL about 4s in) to a temporary directory and adds the fault
// events the coordinator will emit: a partition that healed, and the kill
// of n3 with no fault_ended.
func killRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/run-kill/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ri, err := os.ReadFile("testdata/run-kill/run.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), ri, 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	faults := []events.Event{
		{Time: at("2026-11-30T05:16:40.000Z"), Kind: events.FaultStarted, Fields: events.FaultStartedFields{ID: 1, Verb: "partition", Target: "", Nodes: []string{"n1", "n2"}, Args: map[string]string{"shape": "majority", "for": "1s"}}},
		{Time: at("2026-11-30T05:16:41.000Z"), Kind: events.FaultEnded, Fields: events.FaultEndedFields{ID: 1}},
		{Time: at("2026-11-30T05:16:42.500Z"), Kind: events.FaultStarted, Fields: events.FaultStartedFields{ID: 2, Verb: "kill", Target: "n3", Nodes: []string{"n3"}}},
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		var e events.Event
		if len(bytes.TrimSpace(line)) > 0 {
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatal(err)
			}
		}
		for len(faults) > 0 && !e.Time.IsZero() && faults[0].Time.Before(e.Time) {
			_ = enc.Encode(faults[0])
			faults = faults[1:]
		}
		out.Write(line)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const killChecks = `name: kill one
cluster: {nodes: 4, duration: 10s}
schedule: []
checks:
  - exactly_once
  - all_recovered
  - max_recovery: 5s
  - max_lag: 2s
  - min_throughput: 10000
`

func TestBuildReportKill(t *testing.T) {
	dir := killRun(t)
	sc := mustParse(t, killChecks)
	r, err := BuildReport(dir, sc, Verify{Windows: 59906})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictPass || !Passed(r.Checks) || len(r.Checks) != 5 {
		t.Errorf("verdict %s, checks %+v", r.Verdict, r.Checks)
	}
	if r.Scenario != "kill one" || r.FT != "spate" || r.Records != 576565 || r.Run != "20261130-051638-6cd7c2" {
		t.Errorf("header %q %q %d %q", r.Scenario, r.FT, r.Records, r.Run)
	}
	if r.DurationMs < 9900 || r.DurationMs > 10100 {
		t.Errorf("duration %vms", r.DurationMs)
	}
	// Recoveries: count#0 and sink#0 from n3, each with its phases.
	if len(r.Recoveries) != 2 {
		t.Fatalf("%d recoveries: %+v", len(r.Recoveries), r.Recoveries)
	}
	replayed := map[string]int64{"count#0": 12243 + 12251, "sink#0": 31 + 2866}
	for _, rc := range r.Recoveries {
		var names []string
		for _, ph := range rc.Phases {
			names = append(names, ph.Name)
			if ph.EndMs < ph.StartMs {
				t.Errorf("%s: phase %+v ends before it starts", rc.Instance, ph)
			}
		}
		if want := []string{"detect", "place", "restore", "catch_up"}; !reflect.DeepEqual(names, want) {
			t.Errorf("%s phases %v, want %v", rc.Instance, names, want)
		}
		if !rc.Done || rc.From != "n3" || rc.TotalMs != 209 || rc.Checkpoint != 3 || rc.Replayed != replayed[rc.Instance] {
			t.Errorf("recovery %+v", rc)
		}
		if rc.Phases[0].StartMs > rc.DetectedMs-200 {
			t.Errorf("detect phase %+v: the kill was 213ms before detection", rc.Phases[0])
		}
	}
	if r.Recoveries[0].To == r.Recoveries[1].To || r.Recoveries[0].To == "" {
		t.Errorf("placed on %q and %q", r.Recoveries[0].To, r.Recoveries[1].To)
	}
	// Faults: the partition ended; the kill had no end, so it lasts to the run's end.
	if len(r.Faults) != 2 {
		t.Fatalf("faults %+v", r.Faults)
	}
	if f := r.Faults[0]; f.Verb != "partition" || f.Open || f.EndMs-f.StartMs != 1000 || f.Args["shape"] != "majority" || !reflect.DeepEqual(f.Nodes, []string{"n1", "n2"}) {
		t.Errorf("partition %+v", f)
	}
	if f := r.Faults[1]; f.Verb != "kill" || !f.Open || f.EndMs != r.DurationMs || !f.End.Equal(r.Finished) {
		t.Errorf("kill %+v", f)
	}
	cp := r.Checkpoints
	if cp.Count != 71 || cp.Full != 30 || cp.Delta != 41 || cp.RawBytes != 10029528 || cp.StoredBytes != 2028701 {
		t.Errorf("checkpoints %+v", cp)
	}
	if cp.TotalUs.P50 <= 0 || cp.TotalUs.P99 < cp.TotalUs.P50 || cp.CaptureUs.P99 > cp.TotalUs.Max || len(r.Series.Checkpoints) != 71 {
		t.Errorf("checkpoint times %+v", cp)
	}
	if r.Throughput.Samples != 9 || r.Throughput.MaxInRps < r.Throughput.MeanInRps || r.Throughput.RecordsPS < 50000 || r.Throughput.RecordsPS > 60000 {
		t.Errorf("throughput %+v", r.Throughput)
	}
	if l := r.Latency; l.Samples != 99 || l.MaxMs != 1097 || l.P50Ms != 109 || l.P99Ms > l.MaxMs {
		t.Errorf("latency %+v", l)
	}

	// report.json has the fields the issue names.
	if err := WriteReport(dir, r); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("report.json: %v", err)
	}
	for _, k := range []string{"verdict", "lost", "duplicated", "wrong", "checks", "faults", "recoveries", "checkpoints", "throughput", "latency"} {
		if _, ok := m[k]; !ok {
			t.Errorf("report.json has no %q", k)
		}
	}
	if m["verdict"] != "pass" {
		t.Errorf("verdict %v", m["verdict"])
	}
	h, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	checkHTML(t, string(h), "PASS", []string{"throughput-in", "throughput-out", "lag", "recoveries", "checkpoints"})
}

func TestBuildReportFails(t *testing.T) {
	dir := killRun(t)
	r, err := BuildReport(dir, mustParse(t, killChecks), Verify{Windows: 100, Lost: 5, Duplicated: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictFail || r.Lost != 5 || r.Duplicated != 1 || r.Checks[0].Pass {
		t.Errorf("verdict %s lost %d checks %+v", r.Verdict, r.Lost, r.Checks)
	}
	if !strings.Contains(r.Checks[0].Detail, "5 lost, 1 duplicated, 0 wrong of 100") {
		t.Errorf("detail %q", r.Checks[0].Detail)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, b.String(), "FAIL", nil)
}

// writeRun writes a synthetic run directory.
func writeRun(t *testing.T, ft string, evs []events.Event, lag [][2]int64) string {
	t.Helper()
	dir := t.TempDir()
	start := evs[0].Time
	end := evs[len(evs)-1].Time
	ri := map[string]any{"run": "synthetic", "started": start, "job_started": start, "finished": end,
		"config": map[string]any{"ft": ft}, "positions": map[string]uint64{"0": 1000, "1": 1000}, "lag_ms": lag}
	b, _ := json.Marshal(ri)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for i, e := range evs {
		e.Seq = uint64(i + 1)
		_ = json.NewEncoder(&out).Encode(e)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestBuildReportNoFT(t *testing.T) {
	dir := writeRun(t, "none", []events.Event{
		{Time: at(0), Kind: events.JobStarted},
		{Time: at(5000), Kind: events.FaultStarted, Fields: events.FaultStartedFields{ID: 1, Verb: "kill", Target: "count", Nodes: []string{"n3"}}},
		{Time: at(5001), Kind: events.FaultEnded, Fields: events.FaultEndedFields{ID: 1}},
		{Time: at(5100), Kind: events.NodeLost, Node: "n3", Fields: events.NodeLostFields{Instances: []job.InstanceID{"count#0"}, Reason: "EOF"}},
		{Time: at(9000), Kind: events.Error, Text: "something odd"},
		{Time: at(10000), Kind: events.RunFinished, Fields: events.RunFinishedFields{Lost: []string{"count#0"}}},
	}, nil)
	sc := mustParse(t, "name: none\nschedule: []\nchecks: [exactly_once, all_recovered, {max_recovery: 5s}, {max_lag: 1s}]\n")
	r, err := BuildReport(dir, sc, Verify{Windows: 100, Lost: 40})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictFail || r.Lost != 40 || !reflect.DeepEqual(r.LostInstances, []string{"count#0"}) {
		t.Errorf("verdict %s lost %d instances %v", r.Verdict, r.Lost, r.LostInstances)
	}
	for _, c := range r.Checks {
		if c.Pass {
			t.Errorf("%s passed: %s", c.Name, c.Detail)
		}
	}
	if !strings.Contains(r.Checks[2].Detail, "never recovered: count#0") || !strings.Contains(r.Checks[3].Detail, "no lag samples") {
		t.Errorf("details %+v", r.Checks)
	}
	rc := r.Recoveries[0]
	if rc.Done || rc.TotalMs != 4900 || len(rc.Phases) != 2 || rc.Phases[0].Name != "detect" || rc.Phases[1].Name != "unrecovered" || rc.Phases[1].EndMs != 10000 {
		t.Errorf("recovery %+v", rc)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "something odd") {
		t.Errorf("notes %v", r.Notes)
	}
}

func TestBuildReportGlobal(t *testing.T) {
	dir := writeRun(t, "global", []events.Event{
		{Time: at(0), Kind: events.JobStarted},
		{Time: at(1000), Kind: events.Checkpoint, Fields: events.CheckpointFields{ID: 1, Global: true, TookMs: 40}},
		{Time: at(3000), Kind: events.NodeLost, Node: "n2", Fields: events.NodeLostFields{Instances: []job.InstanceID{"count#1", "sink#1"}}},
		{Time: at(3010), Kind: events.RecoveryPlaced, Node: "n2", Fields: events.RecoveryPlacedFields{Checkpoint: 1, Records: 9000}},
		{Time: at(3200), Kind: events.RecoveryRestored, Fields: events.RecoveryRestoredFields{Checkpoint: 1}},
		{Time: at(6000), Kind: events.RunFinished},
	}, [][2]int64{{100, 50}, {200, 70}, {300, 900}})
	r, err := BuildReport(dir, nil, Verify{Windows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Recoveries) != 1 {
		t.Fatalf("recoveries %+v", r.Recoveries)
	}
	rc := r.Recoveries[0]
	if rc.Instance != "job" || !rc.Done || rc.TotalMs != 200 || rc.Replayed != 9000 || rc.Checkpoint != 1 || len(rc.Phases) != 2 {
		t.Errorf("global recovery %+v", rc)
	}
	if c := r.Checkpoints; c.Count != 1 || c.Global != 1 || c.TotalUs.P50 != 40000 {
		t.Errorf("checkpoints %+v", c)
	}
	if l := r.Latency; l.Samples != 3 || l.MaxMs != 900 || l.P50Ms != 70 {
		t.Errorf("latency %+v", l)
	}
	if r.Verdict != VerdictPass || len(r.Checks) != 1 || r.Checks[0].Name != CheckExactlyOnce {
		t.Errorf("default check: %s %+v", r.Verdict, r.Checks)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, b.String(), "PASS", []string{"lag", "recoveries"})
}

func TestReadEvents(t *testing.T) {
	dir := t.TempDir()
	good := `{"seq":1,"time":"2026-01-02T03:04:05Z","kind":"job_started","text":"x"}` + "\n"
	path := filepath.Join(dir, "events.jsonl")

	os.WriteFile(path, []byte(good+`{"seq":2,"ti`), 0o644)
	evs, note, err := ReadEvents(path)
	if err != nil || len(evs) != 1 || !strings.Contains(note, ":2: a cut-short last line") {
		t.Errorf("cut short: %v %q %v", evs, note, err)
	}
	os.WriteFile(path, []byte(good+"{oops\n"+good), 0o644)
	if _, _, err := ReadEvents(path); err == nil || !strings.Contains(err.Error(), "events.jsonl:2: ") {
		t.Errorf("bad line: %v", err)
	}
	if _, err := BuildReport(dir, nil, Verify{}); err == nil || !strings.Contains(err.Error(), "no run.json") {
		t.Errorf("no run.json: %v", err)
	}
}

// checkHTML checks the page shows the verdict, shades a fault in an SVG
// when there are faults, has the charts named, and parses as XML.
func checkHTML(t *testing.T, page, verdict string, svgs []string) {
	t.Helper()
	if !strings.Contains(page, `id="verdict">`+verdict+`<`) {
		t.Errorf("no verdict %s", verdict)
	}
	if !strings.Contains(page, "<svg") {
		t.Error("no <svg>")
	}
	for _, id := range svgs {
		if !strings.Contains(page, `<svg xmlns="http://www.w3.org/2000/svg" id="`+id+`"`) {
			t.Errorf("no %s chart", id)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "http://") && strings.Count(page, "http://") != strings.Count(page, "http://www.w3.org/2000/svg") {
		t.Error("the page is not self-contained")
	}
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict = true
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
	}
}

func TestHTMLShadesFaults(t *testing.T) {
	r, err := BuildReport(killRun(t), nil, Verify{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// Each fault is shaded in each of the seven charts on the job's time
	// axis this run has: throughput in and out, lag, recoveries, the
	// checkpoint Gantt, checkpoint durations and checkpoint sizes.
	if n := strings.Count(page, `<rect class="fault"`); n != 2*7 {
		t.Errorf("%d shaded fault rects, want 14", n)
	}
	// Each recovery is zoomed on its own axis too.
	for i := range r.Recoveries {
		if !strings.Contains(page, fmt.Sprintf(`id="recovery-%d"`, i+1)) {
			t.Errorf("no zoomed chart of recovery %d", i+1)
		}
	}
	if !strings.Contains(page, "<title>partition  1.3s..2.3s on n1,n2</title>") || !strings.Contains(page, "<title>kill n3 3.8s..10.0s on n3</title>") {
		t.Error("no fault titles")
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if Percentile(xs, 50) != 3 || Percentile(xs, 99) != 5 || Percentile(xs, 1) != 1 || Percentile([]float64(nil), 50) != 0 {
		t.Error("percentile")
	}
	if xs[0] != 5 {
		t.Error("input sorted in place")
	}
}

// TestBuildReportRealNoFT: a real --ft none run in which n3 was killed:
// the example that must fail does fail, and counts what was lost.
func TestBuildReportRealNoFT(t *testing.T) {
	data, err := os.ReadFile("../examples/ftnone-kill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse("ftnone-kill.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	// What `spate verify --data` said of this run.
	r, err := BuildReport("testdata/run-ftnone", sc, Verify{Windows: 48541, Lost: 15647, Wrong: 198})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictFail || r.FT != "none" || r.Lost != 15647 || r.Wrong != 198 {
		t.Errorf("verdict %s ft %s lost %d wrong %d", r.Verdict, r.FT, r.Lost, r.Wrong)
	}
	if !reflect.DeepEqual(r.LostInstances, []string{"count#0", "sink#0"}) {
		t.Errorf("lost instances %v", r.LostInstances)
	}
	if len(r.Recoveries) != 2 || r.Recoveries[0].Done || r.Recoveries[1].Done {
		t.Errorf("recoveries %+v", r.Recoveries)
	}
	if r.Checkpoints.Count != 0 {
		t.Errorf("%d checkpoints with --ft none", r.Checkpoints.Count)
	}
}

// An instance lost again before it caught up has two recoveries: the first
// superseded, the second timed (by the coordinator) from the first
// detection. The checks judge the second: it finished, so nothing is
// unrecovered and the longest recovery is the whole span.
func TestBuildReportLostAgainDuringItsRecovery(t *testing.T) {
	dir := writeRun(t, "spate", []events.Event{
		{Time: at(0), Kind: events.JobStarted},
		{Time: at(5000), Kind: events.NodeLost, Node: "n5", Fields: events.NodeLostFields{Instances: []job.InstanceID{"source#0"}, Reason: "EOF"}},
		{Time: at(5020), Kind: events.RecoveryPlaced, Node: "n11", Instance: "source#0"},
		{Time: at(6200), Kind: events.RecoveryRestored, Node: "n11", Instance: "source#0", Fields: events.RecoveryRestoredFields{Checkpoint: 84, Gen: 2}},
		{Time: at(8900), Kind: events.NodeLost, Node: "n11", Fields: events.NodeLostFields{Instances: []job.InstanceID{"source#0"}, Reason: "EOF"}},
		{Time: at(8950), Kind: events.RecoveryPlaced, Node: "n13", Instance: "source#0"},
		{Time: at(8960), Kind: events.RecoveryRestored, Node: "n13", Instance: "source#0", Fields: events.RecoveryRestoredFields{Checkpoint: 84, Gen: 2}},
		{Time: at(9100), Kind: events.RecoveryDone, Node: "n13", Instance: "source#0", Fields: events.RecoveryDoneFields{TotalMs: 4100}},
		{Time: at(10000), Kind: events.RunFinished},
	}, nil)
	sc := mustParse(t, "name: twice\nschedule: []\nchecks: [all_recovered, {max_recovery: 5s}]\n")
	r, err := BuildReport(dir, sc, Verify{Windows: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictPass {
		t.Errorf("verdict %s: %+v", r.Verdict, r.Checks)
	}
	if len(r.Recoveries) != 2 || !r.Recoveries[0].Superseded || r.Recoveries[0].Done || r.Recoveries[0].TotalMs != 3900 ||
		r.Recoveries[1].Superseded || !r.Recoveries[1].Done {
		t.Fatalf("recoveries %+v", r.Recoveries)
	}
	if ev := r.Evidence(Verify{}); len(ev.Unrecovered) != 0 || !slices.Equal(ev.Recoveries, []time.Duration{4100 * time.Millisecond}) {
		t.Errorf("evidence: unrecovered %v, recoveries %v", ev.Unrecovered, ev.Recoveries)
	}
	sc = mustParse(t, "name: twice\nschedule: []\nchecks: [{max_recovery: 4s}]\n")
	if r, err = BuildReport(dir, sc, Verify{Windows: 100}); err != nil || r.Verdict != VerdictFail {
		t.Errorf("max_recovery 4s against a 4.1 s recovery: %v %v", r.Verdict, err)
	}
}
