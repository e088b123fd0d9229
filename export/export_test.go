package export

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"spate/chaos"
	"spate/events"
)

// run is a recorded run with a kill, a live rescale and backup spills.
const run = "../chaos/testdata/run-rescale"

// TestCSVReadsBack reads every file back: one per kind, one row per event
// of the kind, the fixed columns first, every field of every event in a
// column of its own with its value.
func TestCSVReadsBack(t *testing.T) {
	out := t.TempDir()
	paths, err := CSV(run, out)
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := chaos.ReadEvents(filepath.Join(run, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	perKind := map[string]int{}
	for _, e := range evs {
		perKind[string(e.Kind)]++
	}
	if len(paths) != len(perKind) {
		t.Fatalf("%d files for %d kinds", len(paths), len(perKind))
	}
	tables := map[string][][]string{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		kind := strings.TrimSuffix(filepath.Base(p), ".csv")
		if len(rows)-1 != perKind[kind] {
			t.Errorf("%s: %d rows for %d events", p, len(rows)-1, perKind[kind])
		}
		if strings.Join(rows[0][:len(fixedColumns)], ",") != "seq,time,t_ms,node,instance,text" {
			t.Errorf("%s: header %v", p, rows[0])
		}
		tables[kind] = rows
	}
	col := func(kind, name string) int {
		for i, c := range tables[kind][0] {
			if c == name {
				return i
			}
		}
		t.Fatalf("%s.csv has no column %q: %v", kind, name, tables[kind][0])
		return -1
	}
	// The first checkpoint event against its row, field by field.
	for _, e := range evs {
		if e.Kind != "checkpoint" {
			continue
		}
		row := tables["checkpoint"][1]
		if row[0] != strconv.FormatUint(e.Seq, 10) || row[4] != e.Instance {
			t.Errorf("row %v for event %d of %s", row[:5], e.Seq, e.Instance)
		}
		ck := e.Fields.(events.CheckpointFields)
		for f, v := range map[string]int64{"bytes": int64(ck.Bytes), "raw_bytes": int64(ck.RawBytes), "keys": int64(ck.Keys),
			"capture_us": ck.CaptureUs, "persist_us": ck.PersistUs, "total_us": ck.TotalUs, "id": int64(ck.ID)} {
			if got, want := row[col("checkpoint", f)], strconv.FormatInt(v, 10); got != want {
				t.Errorf("checkpoint %s: %q, want %q", f, got, want)
			}
		}
		if got := row[col("checkpoint", "full")]; got != strconv.FormatBool(ck.Full) {
			t.Errorf("full: %q", got)
		}
		// Every field of the payload type has its column, even one no
		// event of this run has (a global checkpoint's took_ms).
		for _, f := range []string{"encode_us", "gen", "took_ms", "global"} {
			col("checkpoint", f)
		}
		break
	}
	// Nested objects are dotted columns; lists are JSON.
	iv := tables["interval"]
	if c := col("interval", "inputs.capacity"); iv[1][c] == "" {
		t.Error("interval inputs.capacity is empty")
	}
	lost := tables["node_lost"]
	var ids []string
	if err := json.Unmarshal([]byte(lost[1][col("node_lost", "instances")]), &ids); err != nil || len(ids) == 0 {
		t.Errorf("node_lost instances %q: %v", lost[1][col("node_lost", "instances")], err)
	}
	// Times since the job started are numbers, growing with seq.
	prev := -1e18
	for _, r := range tables["throughput"][1:] {
		ms, err := strconv.ParseFloat(r[2], 64)
		if err != nil || ms < prev {
			t.Errorf("t_ms %q after %v", r[2], prev)
		}
		prev = ms
	}
}

// TestPerfettoIsAValidTrace validates the exported trace against the
// trace-event format and checks it has what a reader looks for.
func TestPerfettoIsAValidTrace(t *testing.T) {
	var b bytes.Buffer
	if err := Perfetto(run, &b); err != nil {
		t.Fatal(err)
	}
	if err := ValidateJSON(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	var tr Trace
	if err := json.Unmarshal(b.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	threads := map[[2]int]string{}
	count := map[string]int{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" {
			threads[[2]int{e.Pid, e.Tid}] = e.Args["name"].(string)
		}
		count[e.Ph+" "+e.Cat+" "+strings.Fields(e.Name)[0]]++
	}
	for _, want := range []string{"count#0", "count#1", "count#2", "rollup#0", "sink#1", "source#1", "faults", "rescales"} {
		found := false
		for _, n := range threads {
			found = found || n == want
		}
		if !found {
			t.Errorf("no track %q; have %v", want, threads)
		}
	}
	for _, want := range []string{"X checkpoint checkpoint", "X checkpoint capture", "X recovery recovery", "X recovery restore",
		"X recovery catch_up", "X fault kill", "X rescale rescale", "i rescale rescale", "C metrics throughput", "C metrics output"} {
		if count[want] == 0 {
			t.Errorf("no %q events: %v", want, count)
		}
	}
	if tr.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit %q", tr.DisplayTimeUnit)
	}
}

func TestValidateJSONCatches(t *testing.T) {
	meta := `{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"a"}}`
	for _, tc := range []struct{ name, trace, want string }{
		{"no list", `{}`, "no traceEvents"},
		{"no dur", `{"traceEvents":[` + meta + `,{"name":"x","ph":"X","ts":1,"pid":1,"tid":1}]}`, "dur"},
		{"negative ts", `{"traceEvents":[` + meta + `,{"name":"x","ph":"i","ts":-1,"pid":1,"tid":1}]}`, "negative"},
		{"no thread name", `{"traceEvents":[{"name":"x","ph":"X","ts":1,"dur":1,"pid":1,"tid":2}]}`, "no thread_name"},
		{"string pid", `{"traceEvents":[{"name":"x","ph":"X","ts":1,"dur":1,"pid":"1","tid":2}]}`, "pid is not a number"},
		{"overlap", `{"traceEvents":[` + meta + `,{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"b","ph":"X","ts":5,"dur":10,"pid":1,"tid":1}]}`, "without nesting"},
		{"unknown ph", `{"traceEvents":[{"name":"x","ph":"Q","ts":1,"pid":1,"tid":1}]}`, "ph"},
		{"counter text", `{"traceEvents":[{"name":"x","ph":"C","ts":1,"pid":1,"tid":0,"args":{"a":"b"}}]}`, "not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateJSON([]byte(tc.trace))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error saying %q", err, tc.want)
			}
		})
	}
	nested := `{"traceEvents":[` + meta + `,{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"b","ph":"X","ts":2,"dur":3,"pid":1,"tid":1},{"name":"c","ph":"X","ts":10,"dur":3,"pid":1,"tid":1}]}`
	if err := ValidateJSON([]byte(nested)); err != nil {
		t.Errorf("nested and adjacent spans: %v", err)
	}
}

func TestExportOfNoRun(t *testing.T) {
	if _, err := CSV(t.TempDir(), t.TempDir()); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("CSV of an empty directory: %v", err)
	}
	var b bytes.Buffer
	if err := Perfetto(t.TempDir(), bufio.NewWriter(&b)); err == nil {
		t.Error("Perfetto of an empty directory")
	}
}

// A checkpoint that the report dates before the job's start (its total
// time is longer than the job had run) is cut at 0, not refused.
func TestPerfettoCutsSpansBeforeTheStart(t *testing.T) {
	dir := t.TempDir()
	run := `{"run":"r","job_started":"2026-12-01T10:00:00Z","finished":"2026-12-01T10:00:02Z","config":{"ft":"spate"}}`
	evs := `{"seq":1,"time":"2026-12-01T10:00:00Z","kind":"job_started","text":"go"}
{"seq":2,"time":"2026-12-01T10:00:00.001Z","kind":"checkpoint","instance":"count#0","text":"c","fields":{"id":1,"full":true,"bytes":10,"capture_us":3000,"persist_us":2000,"total_us":5000}}
`
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(evs), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Perfetto(dir, &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"name":"checkpoint 1 (full)","cat":"checkpoint","ph":"X","ts":0,"dur":1000`) {
		t.Errorf("the checkpoint is not cut to [0, 1 ms]:\n%s", b.String())
	}
}
