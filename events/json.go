package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"
)

// Payload is the typed body of an event: each kind has one struct type
// (payloads.go), whose Kind method names it.
type Payload interface {
	Kind() Kind
}

// Other is the payload of an event whose kind this version does not know
// (a recording made by a newer spate), kept as it came: it is written
// back unchanged.
type Other struct {
	K   Kind
	Raw json.RawMessage // a JSON object
}

func (o Other) Kind() Kind { return o.K }

// MarshalJSON writes the fields as they came.
func (o Other) MarshalJSON() ([]byte, error) {
	if len(o.Raw) == 0 {
		return []byte("{}"), nil
	}
	return o.Raw, nil
}

// Values are the fields as a map, numbers as json.Number.
func (o Other) Values() map[string]any {
	m, _ := objectMap(o.Raw)
	return m
}

var types = func() map[Kind]reflect.Type {
	m := make(map[Kind]reflect.Type, len(payloads))
	for _, p := range payloads { // TestEveryKindHasAPayloadType: one each
		m[p.Kind()] = reflect.TypeOf(p)
	}
	return m
}()

// Kinds are every kind this version knows, in name order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(types))
	for k := range types {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TypeOf is the payload type of kind k; false for a kind this version
// does not know.
func TypeOf(k Kind) (reflect.Type, bool) {
	t, ok := types[k]
	return t, ok
}

// InternBytes is b as a Kind: the constant itself when b names a known
// kind, so that decoding a kind allocates nothing.
func InternBytes(b []byte) Kind {
	if k, ok := interned[string(b)]; ok {
		return k
	}
	return Kind(b)
}

var interned = func() map[string]Kind {
	m := make(map[string]Kind, len(payloads))
	for _, p := range payloads {
		m[string(p.Kind())] = p.Kind()
	}
	return m
}()

// Known says whether k is a kind this version knows.
func Known(k Kind) bool {
	_, ok := types[k]
	return ok
}

// DecodeFields decodes the "fields" of an event of kind k: raw empty or
// null is no payload (nil); a known kind's fields decode into its type,
// ignoring fields the type does not have (a newer recording may add
// some); an unknown kind's are kept as an Other. A field of the wrong
// type is an error naming the kind and the field.
func DecodeFields(k Kind, raw []byte) (Payload, error) {
	raw = bytes.Trim(raw, jsonSpace)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	t, ok := types[k]
	if !ok {
		if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
			return nil, fmt.Errorf("fields of %s: not a JSON object", k)
		}
		return Other{K: k, Raw: bytes.Clone(raw)}, nil
	}
	if p, ok := fastFields(t, raw); ok {
		return p, nil
	}
	p := reflect.New(t)
	if err := json.Unmarshal(raw, p.Interface()); err != nil {
		return nil, fieldError(k, err)
	}
	return p.Elem().Interface().(Payload), nil
}

// jsonSpace is what JSON takes for white space.
const jsonSpace = " \t\r\n"

// fieldError says which field of which kind is wrong, in one line.
func fieldError(k Kind, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("fields of %s: want an object, got %s", k, te.Value)
		}
		return fmt.Errorf("fields of %s: %s: want %s, got %s", k, te.Field, jsonType(te.Type), te.Value)
	}
	return fmt.Errorf("fields of %s: %v", k, err)
}

// jsonType names a Go type as JSON knows it.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Pointer:
		return jsonType(t.Elem())
	}
	return "an object"
}

// FieldsOf is DecodeFields for what a node sent: fields that do not
// decode as k's are kept as they came (an Other), so nothing is lost and
// the coordinator never fails on a node's event.
func FieldsOf(k Kind, raw json.RawMessage) Payload {
	p, err := DecodeFields(k, raw)
	if err != nil {
		return Other{K: k, Raw: bytes.Clone(raw)}
	}
	return p
}

// FieldMap is a payload as a map from field name to value, as its JSON
// has it (numbers as json.Number, nested objects as maps): for views that
// list every field whatever the kind (the dashboard's detail, the CSV
// export). A nil payload is an empty map.
func FieldMap(p Payload) map[string]any {
	if p == nil {
		return map[string]any{}
	}
	if o, ok := p.(Other); ok {
		return o.Values()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return map[string]any{}
	}
	m, _ := objectMap(b)
	return m
}

func objectMap(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	m := map[string]any{}
	if err := d.Decode(&m); err != nil {
		return map[string]any{}, err
	}
	return m, nil
}

// envelope is an event's JSON with its payload still encoded.
type envelope struct {
	Seq      uint64          `json:"seq"`
	Time     time.Time       `json:"time"`
	Kind     Kind            `json:"kind"`
	Node     string          `json:"node,omitempty"`
	Instance string          `json:"instance,omitempty"`
	Text     string          `json:"text"`
	Fields   json.RawMessage `json:"fields,omitempty"`
}

// MarshalJSON writes the event as one object; a payload with nothing to
// say ({}) is left out, as is a nil one.
func (e Event) MarshalJSON() ([]byte, error) {
	env := envelope{Seq: e.Seq, Time: e.Time, Kind: e.Kind, Node: e.Node, Instance: e.Instance, Text: e.Text}
	if e.Fields != nil {
		b, err := json.Marshal(e.Fields)
		if err != nil {
			return nil, fmt.Errorf("fields of %s: %w", e.Kind, err)
		}
		if s := string(b); s != "{}" && s != "null" {
			env.Fields = b
		}
	}
	return json.Marshal(env)
}

// UnmarshalJSON reads an event and decodes its fields by its kind
// (DecodeFields).
func (e *Event) UnmarshalJSON(b []byte) error {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return err
	}
	p, err := DecodeFields(env.Kind, env.Fields)
	if err != nil {
		return err
	}
	*e = Event{Seq: env.Seq, Time: env.Time, Kind: env.Kind, Node: env.Node, Instance: env.Instance, Text: env.Text, Fields: p}
	return nil
}
