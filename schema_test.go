package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"spate/events"
)

// The JSON Schema files in schemas/ are checked against the files of a
// real run. The validator is the subset of JSON Schema 2020-12 the
// schemas use; a keyword outside it is an error, so that no part of a
// schema goes unchecked.

type schemaChecker struct {
	root map[string]any
}

func loadSchema(t *testing.T, path string) *schemaChecker {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &schemaChecker{root: root}
}

// check returns the places where v breaks the schema s.
func (c *schemaChecker) check(s map[string]any, v any, at string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kw := s[k]
		switch k {
		case "$schema", "$id", "title", "description", "$defs":
		case "$ref":
			ref, _ := kw.(string)
			name, ok := strings.CutPrefix(ref, "#/$defs/")
			defs, _ := c.root["$defs"].(map[string]any)
			sub, _ := defs[name].(map[string]any)
			if !ok || sub == nil {
				bad("unresolved $ref %q", ref)
				continue
			}
			errs = append(errs, c.check(sub, v, at)...)
		case "allOf":
			for _, sub := range kw.([]any) {
				errs = append(errs, c.check(sub.(map[string]any), v, at)...)
			}
		case "if":
			if len(c.check(kw.(map[string]any), v, at)) == 0 {
				if then, ok := s["then"].(map[string]any); ok {
					errs = append(errs, c.check(then, v, at)...)
				}
			}
		case "then": // with its if
		case "type":
			types, ok := kw.([]any)
			if !ok {
				types = []any{kw}
			}
			match := false
			for _, typ := range types {
				match = match || hasType(v, typ.(string))
			}
			if !match {
				bad("want %v, got %T %v", kw, v, v)
			}
		case "const":
			if !jsonEqual(v, kw) {
				bad("want %v, got %v", kw, v)
			}
		case "enum":
			ok := false
			for _, e := range kw.([]any) {
				ok = ok || jsonEqual(v, e)
			}
			if !ok {
				bad("%v not one of %v", v, kw)
			}
		case "minimum", "maximum", "exclusiveMinimum":
			n, isNum := v.(json.Number)
			if !isNum {
				continue
			}
			x, _ := n.Float64()
			lim := kw.(float64)
			if (k == "minimum" && x < lim) || (k == "maximum" && x > lim) || (k == "exclusiveMinimum" && x <= lim) {
				bad("%v breaks %s %v", x, k, lim)
			}
		case "pattern":
			if str, ok := v.(string); ok && !regexp.MustCompile(kw.(string)).MatchString(str) {
				bad("%q does not match %s", str, kw)
			}
		case "format":
			if str, ok := v.(string); ok && kw == "date-time" {
				if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
					bad("%q is not a date-time", str)
				}
			}
		case "required":
			if obj, ok := v.(map[string]any); ok {
				for _, r := range kw.([]any) {
					if _, ok := obj[r.(string)]; !ok {
						bad("missing %q", r)
					}
				}
			}
		case "properties":
			if obj, ok := v.(map[string]any); ok {
				props := kw.(map[string]any)
				for name, pv := range obj {
					if ps, ok := props[name].(map[string]any); ok {
						errs = append(errs, c.check(ps, pv, at+"."+name)...)
					}
				}
			}
		case "additionalProperties":
			if obj, ok := v.(map[string]any); ok {
				errs = append(errs, c.additional(s, obj, at)...)
			}
		case "propertyNames":
			if obj, ok := v.(map[string]any); ok {
				for name := range obj {
					errs = append(errs, c.check(kw.(map[string]any), name, at+" key "+name)...)
				}
			}
		case "items":
			if arr, ok := v.([]any); ok {
				for i, it := range arr {
					errs = append(errs, c.check(kw.(map[string]any), it, fmt.Sprintf("%s[%d]", at, i))...)
				}
			}
		case "minItems", "maxItems":
			if arr, ok := v.([]any); ok {
				n := float64(len(arr))
				if (k == "minItems" && n < kw.(float64)) || (k == "maxItems" && n > kw.(float64)) {
					bad("%d items breaks %s %v", len(arr), k, kw)
				}
			}
		default:
			bad("schema keyword %q is not checked by this test", k)
		}
	}
	return errs
}

// additional checks the properties of obj that properties does not name.
func (c *schemaChecker) additional(s map[string]any, obj map[string]any, at string) []string {
	props, _ := s["properties"].(map[string]any)
	var errs []string
	for name, pv := range obj {
		if _, named := props[name]; named {
			continue
		}
		switch ap := s["additionalProperties"].(type) {
		case bool:
			if !ap {
				errs = append(errs, fmt.Sprintf("%s: property %q is not in the schema", at, name))
			}
		case map[string]any:
			errs = append(errs, c.check(ap, pv, at+"."+name)...)
		}
	}
	return errs
}

func hasType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil || !strings.ContainsAny(n.String(), ".eE")
	}
	return false
}

func jsonEqual(a, b any) bool {
	if n, ok := a.(json.Number); ok {
		x, _ := n.Float64()
		return reflect.DeepEqual(x, b)
	}
	return reflect.DeepEqual(a, b)
}

func decodeJSON(t *testing.T, b []byte, what string) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func TestRunFilesMatchTheirSchemas(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errOut := spate(t, "up", "--headless", "--quiet", "--timeout", "10s", "--nodes", "2", "--duration", "2s", "--rate", "20000", "--data", dir)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s%s", code, out, errOut)
	}

	b := checkFile(t, dir, "run.json", "run.schema.json")
	var ri struct {
		Provenance struct {
			Version, Go, OS, Arch string
			CPUs                  int
			Args                  []string
		}
	}
	if err := json.Unmarshal(b, &ri); err != nil {
		t.Fatal(err)
	}
	p := ri.Provenance
	if p.Go != runtime.Version() || p.OS != runtime.GOOS || p.CPUs < 1 || p.Version == "" || len(p.Args) < 2 || p.Args[1] != "up" {
		t.Errorf("provenance %+v", p)
	}

	checkReport(t, dir)
	kinds := checkEvents(t, dir)
	for _, k := range []events.Kind{events.RunStarted, events.NodeJoined, events.InstancePlaced, events.Checkpoint,
		events.WindowFired, events.Throughput, events.InstanceDone, events.RunFinished} {
		if kinds[k] == 0 {
			t.Errorf("the run has no %s event", k)
		}
	}

	// --quiet: lifecycle events and the summary, no throughput or
	// checkpoint lines.
	if strings.Contains(out, " throughput ") || strings.Contains(out, " checkpoint ") || !strings.Contains(out, "job_started") ||
		!strings.Contains(out, "summary: ") || !strings.Contains(out, "spate verify --data "+dir) {
		t.Errorf("--quiet output:\n%s", out)
	}
}

// checkReport checks a run's report.json against schemas/report.schema.json.
func checkReport(t *testing.T, dir string) { checkFile(t, dir, "report.json", "report.schema.json") }

// checkFile checks the file name of run directory dir against
// schemas/schema, and returns it.
func checkFile(t *testing.T, dir, name, schema string) []byte {
	t.Helper()
	s := loadSchema(t, filepath.Join("schemas", schema))
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if errs := s.check(s.root, decodeJSON(t, b, name), name); len(errs) > 0 {
		t.Errorf("%s breaks schemas/%s:\n%s", name, schema, strings.Join(errs, "\n"))
	}
	return b
}

// checkEvents checks every line of a run's events.jsonl against
// schemas/events.schema.json and against the payload types (each kind
// known, its fields decoding into its type with none the type lacks, the
// line written again the very same bytes: events.CheckLine), and returns
// the kinds it holds.
func checkEvents(t *testing.T, dir string) map[events.Kind]int {
	t.Helper()
	evSchema := loadSchema(t, filepath.Join("schemas", "events.schema.json"))
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	kinds := map[events.Kind]int{}
	n, bad := 0, 0
	for sc.Scan() {
		n++
		at := fmt.Sprintf("events.jsonl:%d", n)
		if errs := evSchema.check(evSchema.root, decodeJSON(t, sc.Bytes(), at), at); len(errs) > 0 {
			t.Fatalf("events.jsonl breaks schemas/events.schema.json:\n%s", strings.Join(errs, "\n"))
		}
		if err := events.CheckLine(sc.Bytes()); err != nil {
			if bad++; bad <= 10 {
				t.Errorf("%s: %v\n%s", at, err, sc.Bytes())
			}
		}
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err == nil {
			kinds[e.Kind]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("only %d events", n)
	}
	return kinds
}

// TestFaultyRunsFitThePayloads: the events of runs with faults, a live
// rescale, a restart rescale and a global rollback (the kinds with more
// than one shape) decode into their payload types and are written back
// as the same bytes.
func TestFaultyRunsFitThePayloads(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process chaos runs")
	}
	seen := map[events.Kind]int{}
	for _, sc := range []struct{ name, yaml string }{
		{"spate", `name: every shape, spate
cluster: {nodes: 4, rate: 30000, keys: 2000, duration: 12s, ft: spate, interval: auto, timeout: 2s, backup-mem: 1MiB}
schedule:
  - {at: 1500ms, fault: scale, op: count, n: 3}
  - {at: 3500ms, fault: link, target: n2, latency: 20ms, for: 1s}
  - {at: 4s, fault: store, target: count/0, corrupt: true}
  - {at: 4500ms, fault: kill, target: count/0}
  - {at: 7s, fault: pause, target: n1, for: 500ms}
  - {at: 8s, fault: partition, shape: majority, for: 1s}
  - {at: 10s, fault: heal}
checks: [exactly_once]
`},
		{"global", `name: every shape, global
cluster: {nodes: 4, rate: 30000, keys: 2000, duration: 9s, ft: global, interval: 500ms, timeout: 2s}
schedule:
  - {at: 4s, fault: kill, target: count/1}
checks: [exactly_once]
`},
		{"restart", `name: every shape, a restart rescale
cluster: {nodes: 3, rate: 30000, keys: 2000, duration: 8s, rescale: restart, timeout: 2s}
schedule:
  - {at: 2s, fault: scale, op: count, n: 3}
checks: [exactly_once]
`},
	} {
		t.Run(sc.name, func(t *testing.T) {
			code, out, dir := chaosRun(t, sc.yaml)
			if code != 0 {
				t.Fatalf("chaos run: exit %d\n%s", code, out)
			}
			checkReport(t, dir)
			for k, n := range checkEvents(t, dir) {
				seen[k] += n
			}
		})
	}
	for _, k := range []events.Kind{events.RescalePlanned, events.RescaleCaptured, events.RescaleDone, events.NodeLost,
		events.RecoveryPlaced, events.RecoveryRestored, events.RecoveryLoaded, events.RecoveryDone, events.FaultStarted, events.FaultEnded,
		events.Partition, events.Interval, events.Metrics, events.TunerSummary, events.CheckpointCorrupted} {
		if seen[k] == 0 {
			t.Errorf("no %s event in the runs", k)
		}
	}
	var never []string
	for _, k := range events.Kinds() {
		if seen[k] == 0 {
			never = append(never, string(k))
		}
	}
	t.Logf("kinds these runs did not have: %s", strings.Join(never, " "))
}

func TestSchemaCheckerCatchesABrokenFile(t *testing.T) {
	s := loadSchema(t, filepath.Join("schemas", "events.schema.json"))
	for _, line := range []string{
		`{"seq":1,"time":"2030-01-01T00:00:00Z","kind":"run_started","text":"x"}`,                               // no v
		`{"v":2,"seq":1,"time":"2030-01-01T00:00:00Z","kind":"run_started","text":"x"}`,                         // another version
		`{"v":1,"seq":0,"time":"2030-01-01T00:00:00Z","kind":"run_started","text":"x"}`,                         // seq from 1
		`{"v":1,"seq":1,"time":"yesterday","kind":"run_started","text":"x"}`,                                    // time
		`{"v":1,"seq":1,"time":"2030-01-01T00:00:00Z","kind":"Run Started","text":"x"}`,                         // kind
		`{"v":1,"seq":1,"time":"2030-01-01T00:00:00Z","kind":"x","text":"x","extra":true}`,                      // unknown field
		`{"v":1,"seq":1.5,"time":"2030-01-01T00:00:00Z","kind":"x","text":"x"}`,                                 // seq integer
		`{"v":1,"seq":1,"time":"2030-01-01T00:00:00Z","kind":"x","text":"x","fields":[1, 2]}`,                   // fields object
		`{"v":1,"seq":1,"time":"2030-01-01T00:00:00Z","kind":"checkpoint","text":"x","fields":{"id":"x"}}`,      // a field's type
		`{"v":1,"seq":1,"time":"2030-01-01T00:00:00Z","kind":"checkpoint","text":"x","fields":{"idd":1}}`,       // not a checkpoint's field
		`{"v":1,"seq":1,"time":"2030-01-01T00:00:00Z","kind":"job_started","text":"x","fields":{"a":1}}`,        // a kind without fields
		`{"v":1,"seq":1,"time":"2030-01-01T00:00:00Z","kind":"trim","text":"x","fields":{"slice":[{"lo":-1}]}}`, // nested
	} {
		if errs := s.check(s.root, decodeJSON(t, []byte(line), line), "line"); len(errs) == 0 {
			t.Errorf("no error for %s", line)
		}
	}
	rs := loadSchema(t, filepath.Join("schemas", "run.schema.json"))
	noProvenance := `{"run":"20300101-000000-abcdef","started":"2030-01-01T00:00:00Z","complete":false,"config":{},"job":{}}`
	if errs := rs.check(rs.root, decodeJSON(t, []byte(noProvenance), "run.json"), "run.json"); len(errs) < 3 {
		t.Errorf("a run.json without provenance, config or job: %q", errs)
	}
	rp := loadSchema(t, filepath.Join("schemas", "report.schema.json"))
	for _, bad := range []string{
		`{"scenario":"","run":"20300101-000000-abcdef"}`, // no v, and most fields missing
		`{"v":1,"scenario":"","run":"20300101-000000-abcdef","dir":"d","verdict":"maybe","windows":1,"lost":0,"duplicated":0,"wrong":0,"records":1,"job_started":"2030-01-01T00:00:00Z","finished":"2030-01-01T00:00:00Z","duration_ms":1,"checks":[],"faults":[],"recoveries":[],"checkpoints":{},"throughput":{},"latency":{},"series":{"throughput":null,"lag":null,"checkpoints":null}}`,
	} {
		if errs := rp.check(rp.root, decodeJSON(t, []byte(bad), "report.json"), "report.json"); len(errs) < 2 {
			t.Errorf("a broken report.json passes: %q", errs)
		}
	}
	ok := `{"v":1,"seq":1,"time":"2030-01-01T00:00:00.123456789Z","kind":"a_kind_of_later","node":"n1","text":"x","fields":{"a":1}}`
	if errs := s.check(s.root, decodeJSON(t, []byte(ok), ok), "line"); len(errs) > 0 {
		t.Errorf("a good line: %v", errs)
	}
}
