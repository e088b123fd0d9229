package events

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite ../schemas/events.schema.json from the payload types")

// schemaPath is the published schema of an events.jsonl line.
const schemaPath = "../schemas/events.schema.json"

// unions are the fields whose JSON type depends on the event's shape (a
// restart rescale's moves and parallelism are numbers).
var unions = map[Kind]map[string]any{
	RescalePlanned:  {"moves": map[string]any{"type": []any{"array", "null", "integer"}, "items": map[string]any{"type": "string"}}},
	RescaleCaptured: {"from": map[string]any{"type": []any{"string", "integer"}}, "to": map[string]any{"type": []any{"string", "integer"}}},
}

// typeSchema is the JSON Schema of the values of Go type t.
func typeSchema(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Pointer:
		return typeSchema(t.Elem()) // a nil one is left out
	case reflect.Slice:
		return map[string]any{"type": []any{"array", "null"}, "items": typeSchema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": typeSchema(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "-" || name == "" {
				continue
			}
			props[name] = typeSchema(t.Field(i).Type)
		}
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	}
	return map[string]any{"x-no-json-type": t.String()} // TestEventsSchemaIsThePayloads fails on it
}

// eventsSchema is schemas/events.schema.json: the line, and each known
// kind's fields as its payload type has them.
func eventsSchema() []byte {
	defs := map[string]any{}
	var cases []any
	for _, k := range Kinds() {
		typ, _ := TypeOf(k)
		s := typeSchema(typ)
		props := s["properties"].(map[string]any)
		for name, u := range unions[k] {
			props[name] = u
		}
		if len(props) == 0 {
			delete(s, "properties") // no fields: none is allowed
		}
		defs["fields."+string(k)] = s
		cases = append(cases, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"kind": map[string]any{"const": string(k)}}},
			"then": map[string]any{"properties": map[string]any{"fields": map[string]any{"$ref": "#/$defs/fields." + string(k)}}},
		})
	}
	doc := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id":     "https://spate.invalid/schemas/events.schema.json",
		"title":   "spate events.jsonl line",
		"description": "One line of a run's events.jsonl: one event of the run, in the order the coordinator stamped them. " +
			"v is the line format's version (events.SchemaVersion): adding a field or a kind keeps it, changing or removing one bumps it. " +
			"fields is the kind's payload, as $defs/fields.KIND has it (generated from the payload types of package events, " +
			"events/payloads.go, where each field is described); a field some events of a kind leave out is left out when it has " +
			"nothing to say. A kind this version does not know may have any fields.",
		"type":                 "object",
		"required":             []any{"v", "seq", "time", "kind", "text"},
		"additionalProperties": false,
		"properties": map[string]any{
			"v":        map[string]any{"const": SchemaVersion, "description": "the schema version of this line"},
			"seq":      map[string]any{"type": "integer", "minimum": 1, "description": "the event's number in the run, from 1, without gaps"},
			"time":     map[string]any{"type": "string", "format": "date-time", "description": "when the coordinator stamped it, RFC 3339 with nanoseconds"},
			"kind":     map[string]any{"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "description": "what happened: run_started, node_lost, checkpoint, recovery_done, ..."},
			"node":     map[string]any{"type": "string", "description": "the node it concerns (n1, n2, ...), if any"},
			"instance": map[string]any{"type": "string", "description": "the operator instance it concerns (count#1), if any"},
			"text":     map[string]any{"type": "string", "description": "the event as one human-readable sentence"},
			"fields":   map[string]any{"type": "object", "description": "the event's values, by kind: see allOf and $defs"},
		},
		"allOf": cases,
		"$defs": defs,
	}
	var b bytes.Buffer
	pretty(&b, doc, "")
	b.WriteByte('\n')
	return b.Bytes()
}

// pretty writes v as JSON, keys sorted: on one line where that is short,
// else a member a line.
func pretty(b *bytes.Buffer, v any, indent string) {
	var one bytes.Buffer
	enc := json.NewEncoder(&one)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	line := bytes.TrimSpace(one.Bytes())
	m, isMap := v.(map[string]any)
	list, isList := v.([]any)
	if len(indent)+len(line) <= 100 || (!isMap && !isList) {
		b.Write(line)
		return
	}
	inner := indent + "  "
	if isList {
		b.WriteString("[\n")
		for i, x := range list {
			b.WriteString(inner)
			pretty(b, x, inner)
			if i < len(list)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("{\n")
	for i, k := range keys {
		name, _ := json.Marshal(k)
		b.WriteString(inner)
		b.Write(name)
		b.WriteString(": ")
		pretty(b, m[k], inner)
		if i < len(keys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(indent + "}")
}

// TestEventsSchemaIsThePayloads: schemas/events.schema.json says of each
// kind's fields what its payload type says (go test ./events -run Schema
// -update rewrites it).
func TestEventsSchemaIsThePayloads(t *testing.T) {
	got := eventsSchema()
	if bytes.Contains(got, []byte(`"x-no-json-type"`)) {
		t.Fatalf("a payload field has no JSON type:\n%s", got)
	}
	if *update {
		if err := os.WriteFile(schemaPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the payload types say: go test ./events -run Schema -update", schemaPath)
	}
}
