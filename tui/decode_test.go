package tui

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"spate/events"
)

// FuzzDecodeEvent: decodeEvent is json.Unmarshal into an events.Event,
// for any input: the same event, or an error where it errs.
func FuzzDecodeEvent(f *testing.F) {
	for _, name := range []string{"run-kill.jsonl", "future.jsonl", "run-global.jsonl"} {
		fh, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
		fh.Close()
	}
	for _, s := range []string{
		`{}`, `{"seq":1}`, `{"Seq":1}`, `{"seq":1,"seq":2}`, `{"seq":-1}`, `{"seq":1e3}`, `{"seq":1.5}`,
		`{"time":"2026-11-30T05:16:01+01:00"}`, `{"time":"2026-02-30T05:16:01Z"}`, `{"time":"2026-11-30T24:16:01Z"}`,
		`{"time":"2026-11-30t05:16:01z"}`, `{"time":"2026-11-30T05:16:01.Z"}`, `{"text":"a\u00e9\n\"b"}`,
		`{"text":"\xff"}`, `{"fields":null}`, `{"fields":[]}`, `{"fields":{"a":[1,{"b":null}],"c":-0.5e-3,"d":true}}`,
		`{"fields":{"a":01}}`, `{"fields":{"a":1.}}`, `{"fields":{"a":1e999}}`, `{"fields":{"a":1,"a":2}}`,
		`{"v":1,"seq":3,"time":"2026-11-30T05:16:01Z","kind":"x","text":"t"}`, `{"v":"x","kind":"y"}`, `{"v":1,"v":2}`,
		`{"v":01}`, `{"KIND":"x"}`, `{"other":{"a":[1,2]},"kind":"x"}`,
		`{"kind":null}`, ` {"kind":"x"} `, `{"kind":"x"}x`, `{"kind":"x",}`, `{"fields":{"\u0041":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want events.Event
		wantErr := json.Unmarshal(b, &want)
		got, err := decodeEvent(b)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", b, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
		}
	})
}

// TestDecodeEventTakesTheFastPath: the coordinator's own lines, with the
// schema version or without, do not fall back to encoding/json, and the
// index reads their time and kind without decoding them.
func TestDecodeEventTakesTheFastPath(t *testing.T) {
	for _, e := range loadEvents(t, "run-kill.jsonl", "future.jsonl", "run-global.jsonl") {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range [][]byte{b, append([]byte(`{"v":1,`), b[1:]...)} {
			got, ok := fastEvent(line, names{})
			if !ok {
				t.Errorf("the fast path gave up on %s", line)
				continue
			}
			if !reflect.DeepEqual(got.Time, e.Time) || got.Seq != e.Seq || got.Kind != e.Kind {
				t.Errorf("%s: decoded %v %d %s", line, got.Time, got.Seq, got.Kind)
			}
			ns, class, err := peek(line)
			if err != nil || ns != e.Time.UnixNano() || class != classOf([]byte(e.Kind)) {
				t.Errorf("%s: peek %d %d %v", line, ns, class, err)
			}
		}
	}
}

// BenchmarkDecodeEvent: one line of the recorded mix, by decodeEvent and
// by json.Unmarshal.
func BenchmarkDecodeEvent(b *testing.B) {
	var lines [][]byte
	for _, e := range loadEvents(b, "run-kill.jsonl", "future.jsonl") {
		l, _ := json.Marshal(e)
		lines = append(lines, l)
	}
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := decodeEvent(lines[i%len(lines)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var e events.Event
			if err := json.Unmarshal(lines[i%len(lines)], &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
