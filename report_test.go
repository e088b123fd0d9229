package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spate/chaos"
	"spate/export"
)

// TestReportAndExportOfAPlainUp runs a short plain `up`, then `spate
// report` and both exports on its run directory.
func TestReportAndExportOfAPlainUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster")
	}
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errs := spate(t, "up", "--headless", "--nodes", "2", "--duration", "3s", "--rate", "20000", "--interval", "500ms", "--data", dir); code != 0 {
		t.Fatalf("up: exit %d: %s", code, errs)
	}
	code, out, errs := spate(t, "report", "--data", dir)
	if code != 0 || !strings.Contains(out, "report: "+filepath.Join(dir, "report.html")+" (pass: 0 lost") {
		t.Fatalf("report: exit %d: %s%s", code, out, errs)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="verdict">PASS<`, "<h2>Checks</h2>", "<h2>Throughput</h2>", "<h2>Output lag</h2>", "<h2>Recoveries</h2>",
		"<h2>Checkpoints</h2>", "<h2>Upstream backup</h2>", "<h2>Checkpoint intervals</h2>", "<h2>Rescales</h2>", "<h2>Faults</h2>",
		`id="throughput-in"`, `id="throughput-out"`, `id="lag"`, `id="checkpoints"`, `id="checkpoint-durations"`, `id="checkpoint-bytes"`, "What the oracle checked"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html has no %s", want)
		}
	}
	// Every section explains itself, or says in one line that it is empty.
	if n, m, e := strings.Count(string(page), "<h2>"), strings.Count(string(page), `<p class="lead">`), strings.Count(string(page), `<p class="muted">no `); m+e < n {
		t.Errorf("%d sections but %d explanations and %d empty lines", n, m, e)
	}
	if strings.Contains(string(page), "<script") {
		t.Error("report.html has a script")
	}
	var r chaos.Report
	if b, err := os.ReadFile(filepath.Join(dir, "report.json")); err != nil || json.Unmarshal(b, &r) != nil || r.Verdict != "pass" || r.Checkpoints.Count == 0 {
		t.Errorf("report.json: %v, verdict %q, %d checkpoints", err, r.Verdict, r.Checkpoints.Count)
	}

	csvDir := filepath.Join(t.TempDir(), "csv")
	if code, out, errs := spate(t, "export", "--format", "csv", "--data", dir, "--out", csvDir); code != 0 {
		t.Fatalf("export csv: exit %d: %s%s", code, out, errs)
	}
	f, err := os.Open(filepath.Join(csvDir, "checkpoint.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows)-1 != r.Checkpoints.Count {
		t.Errorf("checkpoint.csv: %v, %d rows for %d checkpoints", err, len(rows)-1, r.Checkpoints.Count)
	}

	if code, out, errs := spate(t, "export", "--format", "perfetto", "--data", dir); code != 0 {
		t.Fatalf("export perfetto: exit %d: %s%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "export", "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := export.ValidateJSON(b); err != nil {
		t.Error(err)
	}
	if !strings.Contains(string(b), `"name":"count#0"`) || !strings.Contains(string(b), `"cat":"checkpoint"`) {
		t.Error("the trace has no count#0 track or no checkpoint")
	}

	// A sink's output lost: the report is written, says FAIL, exit 1.
	if err := os.Truncate(filepath.Join(dir, "output", "sink-0-g1.jsonl"), 0); err != nil {
		t.Fatal(err)
	}
	code, out, errs = spate(t, "report", "--data", dir)
	page, _ = os.ReadFile(filepath.Join(dir, "report.html"))
	if code != 1 || !strings.Contains(out, "(fail: ") || !strings.Contains(string(page), `id="verdict">FAIL<`) {
		t.Errorf("report of a run with lost output: exit %d, %s%s", code, out, errs)
	}
}

// TestReportAndExportRefuseBadInput: one line naming what is wrong, exit
// 2. (An unknown flag still prints the flag set's usage: the command line
// moves to cobra, which answers that in one line.)
func TestReportAndExportRefuseBadInput(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--data", empty}, "not a run directory"},
		{[]string{"report", "--data", empty, "extra"}, `unexpected argument "extra"`},
		{[]string{"export", "--format", "xml", "--data", empty}, `--format: "xml"`},
		{[]string{"export", "--data", empty}, "--format"},
		{[]string{"export", "--format", "csv", "--data", empty}, "not a run directory"},
		{[]string{"export", "--format", "perfetto", "--data", empty}, "not a run directory"},
	} {
		code, _, errs := spate(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("spate %v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, errs, tc.want)
		}
	}
}
