package events

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"spate/job"
)

func TestBusStampsAndFansOut(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := NewBus(func() time.Time { return now })
	log := b.Subscribe(8, false)
	lossy := b.Subscribe(1, true)
	for i := range 3 {
		e := b.Publish(Event{Kind: NodeJoined, Node: "n1", Text: "joined"})
		if e.Seq != uint64(i+1) || !e.Time.Equal(now) {
			t.Fatalf("event %d stamped seq %d time %v", i, e.Seq, e.Time)
		}
	}
	b.Close()
	var n int
	for range log.C {
		n++
	}
	if n != 3 {
		t.Fatalf("must-deliver subscriber got %d events, want 3", n)
	}
	if got := len(lossy.C); got != 1 || lossy.Dropped() != 2 {
		t.Fatalf("lossy subscriber holds %d and dropped %d, want 1 and 2", got, lossy.Dropped())
	}
	// Publishing after Close is harmless.
	b.Publish(Event{Kind: Error})
}

func TestWriteJSONLAndLine(t *testing.T) {
	b := NewBus(func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) })
	s := b.Subscribe(4, false)
	b.Publish(Event{Kind: NodeLost, Node: "n3", Instance: "count#0", Text: "lost",
		Fields: NodeLostFields{Reason: "session closed", Instances: []job.InstanceID{"count#0"}}})
	b.Publish(Event{Kind: JobStarted, Text: "started", Fields: JobStartedFields{}})
	b.Close()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, s); err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"seq":1,"time":"2026-01-01T12:00:00Z","kind":"node_lost","node":"n3","instance":"count#0","text":"lost","fields":{"instances":["count#0"],"reason":"session closed"}}
{"v":1,"seq":2,"time":"2026-01-01T12:00:00Z","kind":"job_started","text":"started"}
`
	if buf.String() != want {
		t.Fatalf("events.jsonl\n%s\nwant\n%s", buf.String(), want)
	}
	var e Event
	if err := json.Unmarshal([]byte(strings.SplitN(buf.String(), "\n", 2)[0]), &e); err != nil {
		t.Fatal(err)
	}
	f, ok := e.Fields.(NodeLostFields)
	if !ok || e.Kind != NodeLost || f.Reason != "session closed" || !slices.Equal(f.Instances, []job.InstanceID{"count#0"}) {
		t.Fatalf("round trip: %+v", e)
	}
	if line := e.Line(); !strings.Contains(line, "[n3/count#0] lost") || !strings.HasPrefix(line, "12:00:00.000 node_lost") {
		t.Fatalf("line %q", line)
	}
}

// declaredKinds are the Kind constants declared in this package's source.
func declaredKinds(t *testing.T) map[Kind]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[Kind]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
					continue
				}
				for i, n := range vs.Names {
					lit := vs.Values[i].(*ast.BasicLit)
					out[Kind(strings.Trim(lit.Value, `"`))] = n.Name
				}
			}
		}
	}
	return out
}

// TestEveryKindHasAPayloadType: every Kind constant declared in the
// package has exactly one payload type, a struct whose Kind method names
// that constant, and no payload names a kind that is not declared.
func TestEveryKindHasAPayloadType(t *testing.T) {
	declared := declaredKinds(t)
	if len(declared) < 50 {
		t.Fatalf("found only %d Kind constants: the parser missed some", len(declared))
	}
	seen := map[Kind]int{}
	for _, p := range payloads {
		seen[p.Kind()]++
		if _, ok := declared[p.Kind()]; !ok {
			t.Errorf("%T names kind %q, which no constant declares", p, p.Kind())
		}
		if reflect.TypeOf(p).Kind() != reflect.Struct {
			t.Errorf("%T is not a struct", p)
		}
	}
	for k, name := range declared {
		switch {
		case seen[k] == 0:
			t.Errorf("%s (%q) has no payload type", name, k)
		case seen[k] > 1:
			t.Errorf("%s (%q) has %d payload types", name, k, seen[k])
		}
		typ, ok := TypeOf(k)
		if !ok || !Known(k) {
			t.Errorf("TypeOf(%s) unknown", name)
			continue
		}
		if got := reflect.Zero(typ).Interface().(Payload).Kind(); got != k {
			t.Errorf("TypeOf(%s) is %v, whose kind is %s", name, typ, got)
		}
	}
	if got := Kinds(); len(got) != len(declared) || !slices.IsSorted(got) {
		t.Errorf("Kinds() has %d kinds (sorted %v), want the %d declared", len(got), slices.IsSorted(got), len(declared))
	}
}

// jsonNames are the JSON names of t's fields, in declaration order.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		out = append(out, name)
	}
	return out
}

// TestPayloadFieldsAreSorted: a payload's fields are declared in the order
// of their JSON names, the order the maps they replace were written in.
func TestPayloadFieldsAreSorted(t *testing.T) {
	check := func(typ reflect.Type) {
		names := jsonNames(typ)
		if !slices.IsSorted(names) {
			t.Errorf("%v: JSON names %q are not in order", typ, names)
		}
		for i := 1; i < len(names); i++ {
			if names[i] == names[i-1] {
				t.Errorf("%v: %q twice", typ, names[i])
			}
		}
	}
	for _, p := range payloads {
		check(reflect.TypeOf(p))
	}
	// These were maps too (Range: a node's, decoded at the coordinator);
	// TunerAccount was a struct and keeps its order.
	check(reflect.TypeOf(IntervalInputs{}))
	check(reflect.TypeOf(Range{}))
}

// TestShapes: each shape of the kinds that have several is written with
// exactly the keys its site wrote, and reads back to the same value.
func TestShapes(t *testing.T) {
	five := int64(5)
	two := 2.0
	cases := []struct {
		name string
		p    Payload
		want string
	}{
		{"checkpoint of an instance", CheckpointFields{Bytes: 10, CaptureUs: 1, EncodeUs: 2, Full: false, Gen: 1, ID: 3, Keys: 0, PersistUs: 4, RawBytes: 20, TotalUs: 9},
			`{"bytes":10,"capture_us":1,"encode_us":2,"full":false,"gen":1,"id":3,"keys":0,"persist_us":4,"raw_bytes":20,"total_us":9}`},
		{"global checkpoint", CheckpointFields{Global: true, ID: 4, TookMs: 12},
			`{"global":true,"id":4,"took_ms":12}`},
		{"recovery placed", RecoveryPlacedFields{Chain: nil, From: "n2", Gen: 2},
			`{"chain":null,"from":"n2","gen":2}`},
		{"global rollback placed", RecoveryPlacedFields{Checkpoint: 0, Records: 7},
			`{"checkpoint":0,"records":7}`},
		{"recovery restored", RecoveryRestoredFields{Checkpoint: 3, Gen: 2},
			`{"checkpoint":3,"fellback":false,"gen":2}`},
		{"global restored", RecoveryRestoredFields{Checkpoint: 3},
			`{"checkpoint":3}`},
		{"metrics of an instance", MetricsFields{Backlog: 0, Backpressure: "OK", InRate: 1.5},
			`{"backlog":0,"backpressure":"OK","in_rate":1.5,"out_rate":0}`},
		{"metrics of a node", MetricsFields{CPU: 0, RSS: 4096, OutRate: 2},
			`{"backlog":0,"cpu":0,"in_rate":0,"out_rate":2,"rss":4096}`},
		{"fallback on a node", CheckpointFallbackFields{Error: "bad crc"},
			`{"error":"bad crc"}`},
		{"global fallback", CheckpointFallbackFields{Checkpoint: 3, Error: "bad crc", Fallback: 0},
			`{"checkpoint":3,"error":"bad crc","fallback":0}`},
		{"fallback of a pre-copy base", CheckpointFallbackFields{Error: "bad crc", Ranges: []Range{{Lo: 0, Hi: 16}}},
			`{"error":"bad crc","ranges":[{"hi":16,"lo":0}]}`},
		{"forgotten after a restore", CheckpointsForgottenFields{Checkpoint: 4, Forgotten: []uint64{5, 6}},
			`{"checkpoint":4,"forgotten":[5,6]}`},
		{"forgotten with a damaged file", CheckpointsForgottenFields{File: "count#0/x.ckpt", Forgotten: []uint64{5}},
			`{"file":"count#0/x.ckpt","forgotten":[5]}`},
		{"interval decision", IntervalFields{Instance: "count#0", IntervalMs: 900, Why: "moved", Reason: "r", PriorWeight: &two,
			Inputs: IntervalInputs{Rate: 1, Capacity: 2, MTBFS: &two}},
			`{"changed":false,"exposure_s":0,"failures":0,"inputs":{"capacity":2,"cost_base_ms":0,"cost_per_key_us":0,"detect_ms":0,"failure_rate":0,"load_ms":0,"mtbf_s":2,"persist_ms":0,"rate":1,"restart_ms":0,"state_keys":0,"util":0},"instance":"count#0","interval_ms":900,"optimum_ms":0,"own_exposure_s":0,"own_failures":0,"predicted_efficiency":0,"previous_ms":0,"prior_weight":2,"reason":"r","why":"moved"}`},
		{"interval set by hand", IntervalFields{Instance: "count#0", IntervalMs: 500, PreviousMs: 1000, Pinned: true, Reason: "set by hand"},
			`{"inputs":{},"instance":"count#0","interval_ms":500,"pinned":true,"previous_ms":1000,"reason":"set by hand"}`},
		{"global barrier period", IntervalFields{Instance: "global", IntervalMs: 2000, Reason: "static", Inputs: IntervalInputs{Rate: 1}},
			`{"inputs":{"capacity":0,"cost_base_ms":0,"cost_per_key_us":0,"detect_ms":0,"failure_rate":0,"load_ms":0,"persist_ms":0,"rate":1,"restart_ms":0,"state_keys":0,"util":0},"instance":"global","interval_ms":2000,"reason":"static"}`},
		{"live rescale planned", RescalePlannedFields{From: 2, To: 3, ID: 1, KeyGroups: 42, Load: []float64{1}, Moves: []string{"[0,16) count#0→count#2"}, Op: "count", Why: "by hand", MaxLoadAfter: 1, MaxLoadBefore: 2},
			`{"from":2,"id":1,"key_groups":42,"load":[1],"max_load_after":1,"max_load_before":2,"moves":["[0,16) count#0→count#2"],"op":"count","to":3,"why":"by hand"}`},
		{"restart rescale planned", RescalePlannedFields{From: 2, To: 3, ID: 1, KeyGroups: 42, Load: nil, Mode: "restart", MoveCount: 2, Op: "count"},
			`{"from":2,"id":1,"key_groups":42,"load":null,"mode":"restart","moves":2,"op":"count","to":3}`},
		{"live slice captured", RescaleCapturedFields{Bytes: 5, Checkpoint: 7, File: "f", From: "count#0", To: "count#2", ID: 1, Op: "count", Range: "[0,16)", Watermark: -1},
			`{"bytes":5,"checkpoint":7,"file":"f","from":"count#0","id":1,"op":"count","range":"[0,16)","to":"count#2","watermark":-1}`},
		{"pre-copied slice captured", RescaleCapturedFields{From: "count#0", To: "count#2", ID: 1, Op: "count", Precopy: true},
			`{"bytes":0,"checkpoint":0,"file":"","from":"count#0","id":1,"op":"count","precopy":true,"range":"","to":"count#2","watermark":0}`},
		{"restart captured", RescaleCapturedFields{Bytes: 5, FromN: 2, ToN: 3, ID: 1, Mode: "restart", Ms: 40, Op: "count"},
			`{"bytes":5,"from":2,"id":1,"mode":"restart","ms":40,"op":"count","to":3}`},
		{"live rescale done", RescaleDoneFields{Bytes: 5, BytesMoved: 5, From: 2, To: 3, ID: 1, Moves: 0, Op: "count", PauseMs: 0, TotalMs: 9},
			`{"bytes":5,"bytes_moved":5,"from":2,"id":1,"moves":0,"op":"count","pause_ms":0,"to":3,"total_ms":9}`},
		{"restart done", RescaleDoneFields{Bytes: 5, BytesMoved: 5, CatchUpMs: 0, From: 2, To: 3, ID: 1, Mode: "restart", Op: "count", PauseMs: 3, TotalMs: 9},
			`{"bytes":5,"bytes_moved":5,"catch_up_ms":0,"from":2,"id":1,"mode":"restart","op":"count","pause_ms":3,"to":3,"total_ms":9}`},
		{"nothing held", HeldRecordsFields{}, `{"held":0}`},
		{"records held", HeldRecordsFields{Held: 3, Gaps: []string{"p0 kg 1 waits for 4"}}, `{"gaps":["p0 kg 1 waits for 4"],"held":3}`},
		{"backup full", BackupFullFields{Full: true, LimitBytes: 8, MemBytes: 8, SpillBytes: 0}, `{"full":true,"limit_bytes":8,"mem_bytes":8,"spill_bytes":0}`},
		{"backup has room", BackupFullFields{PausedMs: 0}, `{"full":false,"paused_ms":0}`},
		{"throughput with lag", ThroughputFields{In: 1, InRps: 2.5, LagMs: &five, Watermark: -9223372036854775808},
			`{"in":1,"in_rps":2.5,"lag_ms":5,"out":0,"out_rps":0,"watermark":-9223372036854775808}`},
		{"throughput, no lag yet", ThroughputFields{}, `{"in":0,"in_rps":0,"out":0,"out_rps":0,"watermark":0}`},
		{"error of a partition 0", ErrorFields{Partition: new(int)}, `{"partition":0}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.p)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Fatalf("got\n%s\nwant\n%s", b, c.want)
			}
			back, err := DecodeFields(c.p.Kind(), b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, c.p) {
				t.Fatalf("read back as %#v, want %#v", back, c.p)
			}
		})
	}
}

func TestDecodeFieldsErrorsAndUnknownKinds(t *testing.T) {
	for _, c := range []struct{ kind, raw, want string }{
		{"checkpoint", `{"id":"seven"}`, "fields of checkpoint: id: want an integer, got string"},
		{"node_lost", `{"instances":"count#0"}`, "fields of node_lost: instances: want a list, got string"},
		{"rescale_planned", `{"moves":"all"}`, "fields of rescale_planned: moves: want an integer, got string"},
		{"rescale_captured", `{"from":true}`, "fields of rescale_captured: from: want an integer, got bool"},
		{"checkpoint", `[1,2]`, "fields of checkpoint: want an object, got array"},
		{"mystery", `[1,2]`, "fields of mystery: not a JSON object"},
	} {
		_, err := DecodeFields(Kind(c.kind), []byte(c.raw))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s %s: %v, want %q", c.kind, c.raw, err, c.want)
		}
	}
	// A field this version does not have is skipped: a newer recording
	// may add one.
	p, err := DecodeFields(Checkpoint, []byte(`{"id":3,"next_year":true}`))
	if err != nil || p.(CheckpointFields).ID != 3 {
		t.Errorf("a newer field: %v %#v", err, p)
	}
	// An unknown kind is kept as it came, and written back unchanged.
	line := `{"seq":9,"time":"2026-01-01T00:00:00Z","kind":"mystery","text":"?","fields":{"b":1.50,"a":[1]}}`
	var e Event
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatal(err)
	}
	o, ok := e.Fields.(Other)
	if !ok || o.Kind() != "mystery" || FieldMap(o)["b"] != json.Number("1.50") {
		t.Fatalf("unknown kind: %#v", e.Fields)
	}
	if b, _ := json.Marshal(e); string(b) != line {
		t.Errorf("written back as\n%s\nwant\n%s", b, line)
	}
	// What a node sends that does not fit its kind is kept too.
	if o, ok := FieldsOf(Checkpoint, json.RawMessage(`{"id":"x"}`)).(Other); !ok || string(o.Raw) != `{"id":"x"}` {
		t.Errorf("FieldsOf a bad checkpoint: %#v", o)
	}
	if p := FieldsOf(Trim, nil); p != nil {
		t.Errorf("FieldsOf nothing: %#v", p)
	}
	if m := FieldMap(TrimFields{To: "count#1", Slice: []Range{{Lo: 0, Hi: 4}}}); m["to"] != "count#1" || m["positions"] != json.Number("0") {
		t.Errorf("FieldMap %v", m)
	}
}

// recordings are the runs recorded in the repository's testdata, written
// before the payloads were typed, by the coordinator that wrote
// string-keyed maps.
var recordings = []string{
	"../chaos/testdata/run-kill/events.jsonl",
	"../chaos/testdata/run-rescale/events.jsonl",
	"../chaos/testdata/run-ftnone/events.jsonl",
	"../tuner/testdata/calib-run/events.jsonl",
	"../tui/testdata/run-kill.jsonl",
	"../tui/testdata/run-global.jsonl",
}

// addedSince are the fields added to a kind (schema version 1 allows
// it) after some of the recordings were made: written now, absent there.
var addedSince = map[Kind][]string{
	Checkpoint:     {"encode_us"},
	RecoveryPlaced: {"chain"},
}

// TestRecordedRunsRoundTrip: every line of the recorded runs decodes into
// its kind's payload type without a field the type lacks, and writing the
// event again gives the very bytes the map-based writer gave, but for the
// fields added since the recording was made.
func TestRecordedRunsRoundTrip(t *testing.T) {
	kinds := map[Kind]bool{}
	for _, l := range recordedLines(t, false) {
		var e Event
		if err := json.Unmarshal(l.line, &e); err != nil {
			t.Errorf("%s: %v", l.at, err)
			continue
		}
		kinds[e.Kind] = true
		if err := CheckLine(l.line); err != nil && !onlyAdded(t, l.line, e) {
			t.Errorf("%s: %v", l.at, err)
		}
	}
	if len(kinds) < 25 {
		t.Errorf("the recordings hold %d kinds, fewer than expected", len(kinds))
	}
}

// onlyAdded says whether line, written again without the fields added
// since that it lacks, is the same bytes.
func onlyAdded(t *testing.T, line []byte, e Event) bool {
	t.Helper()
	var was struct {
		Fields map[string]json.RawMessage `json:"fields"`
	}
	if json.Unmarshal(line, &was) != nil || len(addedSince[e.Kind]) == 0 {
		return false
	}
	again, err := json.Marshal(e)
	if err != nil {
		return false
	}
	var env envelope
	if json.Unmarshal(again, &env) != nil {
		return false
	}
	env.Fields, err = keepKeys(env.Fields, func(k string) bool {
		_, had := was.Fields[k]
		return had || !slices.Contains(addedSince[e.Kind], k)
	})
	if err != nil {
		return false
	}
	b, _ := json.Marshal(env)
	if bytes.HasPrefix(line, []byte(`{"v":1,`)) {
		b = append([]byte(`{"v":1,`), b[1:]...)
	}
	return bytes.Equal(b, line)
}

func TestCheckLineFindsWhatDoesNotFit(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"v":1,"seq":1,"time":"2026-01-01T00:00:00Z","kind":"mystery","text":"x"}`, "unknown kind"},
		{`{"v":1,"seq":1,"time":"2026-01-01T00:00:00Z","kind":"trim","text":"x","fields":{"to":"a","extra":1}}`, "extra"},
		{`{"v":1,"seq":1,"time":"2026-01-01T00:00:00Z","kind":"trim","text":"x","fields":{"held_bytes":1,"freed_bytes":2}}`, "written back as"},
		{`{"v":1,"seq":1,"time":"2026-01-01T00:00:00Z","kind":"checkpoint","text":"x","fields":{"id":"x"}}`, "id: want an integer"},
	} {
		if err := CheckLine([]byte(c.line)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.line, err, c.want)
		}
	}
	good := `{"v":1,"seq":1,"time":"2026-01-01T00:00:00Z","kind":"replay","instance":"source#0","text":"x","fields":{"records":3,"to":"count#1"}}`
	if err := CheckLine([]byte(good)); err != nil {
		t.Errorf("good line: %v", err)
	}
}
