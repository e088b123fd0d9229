package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzFastFields: the fast path gives, for any kind and any fields, the
// value json.Unmarshal gives into the kind's type, or gives up; and
// DecodeFields as a whole errs exactly where json.Unmarshal does.
func FuzzFastFields(f *testing.F) {
	for _, l := range recordedLines(f, false) {
		var env envelope
		if json.Unmarshal(l.line, &env) == nil && len(env.Fields) > 0 {
			f.Add(string(env.Kind), []byte(env.Fields))
		}
	}
	for _, s := range []struct{ kind, raw string }{
		{"trim", `{"slice":[{"hi":64,"lo":0}],"to":"a\u0062","up_to":18446744073709551615}`},
		{"trim", `{"slice":[{"hi":65536,"lo":0}]}`}, {"trim", `{"slice":[{"HI":6}]}`}, {"trim", `{"To":"x"}`},
		{"trim", `{"to":"x","to":"y"}`}, {"trim", `{"positions":1.0}`}, {"trim", `{"positions":-0}`},
		{"throughput", `{"lag_ms":null,"in_rps":1e400}`}, {"throughput", `{"lag_ms":7,"in_rps":-1.5e-3}`},
		{"fault_started", `{"args":{"a":"b","a":"c"},"nodes":["n1",null],"id":3}`}, {"fault_started", `{"args":null,"nodes":[]}`},
		{"interval", `{"inputs":{"mtbf_s":600,"x":[1,{"y":null}]},"prior_weight":0.5}`}, {"interval", `{"inputs":null}`},
		{"tuner_summary", `{"instances":[{"instance":"count#0","processed":3,"busy_s":1.5}],"interval":"auto"}`},
		{"node_lost", `{"instances":["a","b"],"reason":"\u00e9\n"}`}, {"node_lost", `{"instances":"a"}`},
		{"checkpoint", `{"full":1}`}, {"checkpoint", `{"id":-1}`}, {"checkpoint", `{"id":1} x`}, {"checkpoint", ` { } `},
		{"rescale_planned", `{"moves":3}`}, {"partition", `{"groups":[["n1"],["n2","n3"]]}`}, {"mystery", `{"a":1}`},
		{"window_fired", `{"watermark":9223372036854776000}`}, {"error", `{"partition":0}`},
		{"trim", `{"up_to":-0}`}, {"trim", `{"up_to":18446744073709551615}`}, {"trim", `{"up_to":18446744073709551616}`},
		{"throughput", `{"watermark":-9223372036854775808}`}, {"throughput", `{"watermark":9223372036854775808}`},
		{"throughput", `{"lag_ms":-0,"in_rps":-0}`}, {"throughput", `{"in_rps":9007199254740993}`}, {"throughput", `{"in_rps":12345678901234567890123}`},
	} {
		f.Add(s.kind, []byte(s.raw))
	}
	f.Fuzz(func(t *testing.T, kind string, raw []byte) {
		typ, ok := TypeOf(Kind(kind))
		if !ok {
			return
		}
		want := reflect.New(typ)
		wantErr := json.Unmarshal(raw, want.Interface())
		if got, ok := fastFields(typ, raw); ok {
			if wantErr != nil {
				t.Fatalf("%s %q: fast path %#v, json.Unmarshal errs: %v", kind, raw, got, wantErr)
			}
			if !reflect.DeepEqual(got, want.Elem().Interface()) {
				t.Fatalf("%s %q:\n fast %#v\n json %#v", kind, raw, got, want.Elem().Interface())
			}
		}
		p, err := DecodeFields(Kind(kind), raw)
		if trimmed := bytes.Trim(raw, jsonSpace); len(trimmed) == 0 || string(trimmed) == "null" {
			return // no payload: nil, where json.Unmarshal of nothing errs
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s %q: DecodeFields error %v, json.Unmarshal's %v", kind, raw, err, wantErr)
		}
		if err == nil && p != nil && !reflect.DeepEqual(p, want.Elem().Interface()) {
			t.Fatalf("%s %q: DecodeFields %#v, json %#v", kind, raw, p, want.Elem().Interface())
		}
	})
}

// TestFastPathTakesTheRecordedLines: the fast path decodes the lines of
// the recorded runs itself (but for the kinds with their own UnmarshalJSON).
func TestFastPathTakesTheRecordedLines(t *testing.T) {
	n := 0
	for _, l := range recordedLines(t, false) {
		var env envelope
		if json.Unmarshal(l.line, &env) != nil || len(env.Fields) == 0 {
			continue
		}
		typ, _ := TypeOf(env.Kind)
		if decoderOf(typ) == nil {
			continue
		}
		n++
		if _, ok := fastFields(typ, env.Fields); !ok {
			t.Errorf("%s: the fast path gave up on %s", l.at, env.Fields)
		}
	}
	if n < 500 {
		t.Errorf("only %d lines", n)
	}
	for _, p := range []Payload{RescalePlannedFields{}, RescaleCapturedFields{}} {
		if decoderOf(reflect.TypeOf(p)) != nil {
			t.Errorf("%T has its own UnmarshalJSON: the fast path must leave it to encoding/json", p)
		}
	}
}

func BenchmarkDecodeFields(b *testing.B) {
	raws := []struct {
		k   Kind
		raw []byte
	}{
		{Checkpoint, []byte(`{"bytes":1978,"capture_us":116,"encode_us":12,"full":false,"gen":1,"id":2,"keys":33,"persist_us":590,"raw_bytes":8015,"total_us":745}`)},
		{Metrics, []byte(`{"backlog":3,"backpressure":"OK","in_rate":25200.5,"out_rate":24000}`)},
		{Trim, []byte(`{"freed_bytes":4096,"held_bytes":65536,"positions":3,"slice":[{"hi":64,"lo":0}],"to":"count#0","up_to":120332}`)},
	}
	for _, r := range raws {
		b.Run(string(r.k)+"/fast", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := DecodeFields(r.k, r.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(r.k)+"/encoding-json", func(b *testing.B) {
			typ, _ := TypeOf(r.k)
			for i := 0; i < b.N; i++ {
				if err := json.Unmarshal(r.raw, reflect.New(typ).Interface()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
