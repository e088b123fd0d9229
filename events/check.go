package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// CheckLine checks one line of events.jsonl against this version's
// payloads, more strictly than reading does: the kind is known, every
// field is one of its payload type's, and the event written again is the
// very line. The tests run it on real runs and on the recordings in
// testdata; it says, in one line, the first thing that does not fit.
func CheckLine(line []byte) error {
	line = bytes.TrimSpace(line)
	var env struct {
		V *int `json:"v"`
		envelope
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return err
	}
	if !Known(env.Kind) {
		return fmt.Errorf("unknown kind %q", env.Kind)
	}
	if f := bytes.TrimSpace(env.Fields); len(f) > 0 && string(f) != "null" {
		m, err := objectMap(f)
		if err != nil {
			return fmt.Errorf("fields of %s: %v", env.Kind, err)
		}
		t, _ := TypeOf(env.Kind)
		names := map[string]bool{}
		for _, n := range fieldNames(t) {
			names[n] = true
		}
		var extra []string
		for k := range m {
			if !names[k] {
				extra = append(extra, k)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return fmt.Errorf("fields of %s: %s not in %v", env.Kind, strings.Join(extra, ", "), t)
		}
	}
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return err
	}
	var again []byte
	var err error
	if env.V != nil {
		again, err = AppendLine(nil, e)
		again = bytes.TrimSuffix(again, []byte("\n"))
	} else { // a line from before the schema version
		again, err = e.MarshalJSON()
	}
	if err != nil {
		return err
	}
	if !bytes.Equal(again, line) {
		return fmt.Errorf("written back as %s", again)
	}
	return nil
}

// fieldNames are the JSON names of a payload type's fields (a name held
// by two fields of a kind with two shapes counts once).
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "-" && name != "" {
			out = append(out, name)
		}
	}
	return out
}

// FieldNames are the JSON names of kind k's fields, in order; nil for a
// kind this version does not know.
func FieldNames(k Kind) []string {
	t, ok := TypeOf(k)
	if !ok {
		return nil
	}
	return fieldNames(t)
}
