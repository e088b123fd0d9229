package events

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
)

// recordedLine is one line of a recording in testdata.
type recordedLine struct {
	at   string // PATH:LINE
	line []byte
}

// recordedLines are the lines of the recordings in testdata (and, with
// future, of the dashboard's hand-written future events).
func recordedLines(tb testing.TB, future bool) []recordedLine {
	tb.Helper()
	paths := recordings
	if future {
		paths = append(append([]string(nil), recordings...), "../tui/testdata/future.jsonl")
	}
	var out []recordedLine
	for _, path := range paths {
		fh, err := os.Open(path)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		n, before := 0, len(out)
		for sc.Scan() {
			n++
			out = append(out, recordedLine{fmt.Sprintf("%s:%d", path, n), append([]byte(nil), sc.Bytes()...)})
		}
		fh.Close()
		if len(out) == before {
			tb.Fatalf("%s: no events", path)
		}
	}
	return out
}

// FuzzDecodeLine: DecodeLine is json.Unmarshal into an Event, for any
// input: the same event, or an error where it errs.
func FuzzDecodeLine(f *testing.F) {
	for _, l := range recordedLines(f, true) {
		f.Add(l.line)
	}
	for _, s := range []string{
		`{}`, `{"seq":1}`, `{"Seq":1}`, `{"seq":1,"seq":2}`, `{"seq":-1}`, `{"seq":1e3}`, `{"seq":1.5}`,
		`{"time":"2026-11-30T05:16:01+01:00"}`, `{"time":"2026-02-30T05:16:01Z"}`, `{"time":"2026-11-30T24:16:01Z"}`,
		`{"time":"2026-11-30t05:16:01z"}`, `{"time":"2026-11-30T05:16:01.Z"}`, `{"text":"a\u00e9\n\"b"}`,
		`{"text":"\xff"}`, `{"fields":null}`, `{"fields":[]}`, `{"kind":"mystery","fields":{"a":[1,{"b":null}],"c":-0.5e-3,"d":true}}`,
		`{"kind":"trim","fields":{"to":01}}`, `{"kind":"trim","fields":{"up_to":1.}}`, `{"kind":"trim","fields":{"up_to":1e999}}`,
		`{"kind":"trim","fields":{"to":"a","to":"b"}}`, `{"fields":{"to":"x"},"kind":"trim"}`, `{"kind":"checkpoint","fields":{"id":"x"}}`,
		`{"v":1,"seq":3,"time":"2026-11-30T05:16:01Z","kind":"x","text":"t"}`, `{"v":"x","kind":"y"}`, `{"v":1,"v":2}`,
		`{"v":01}`, `{"KIND":"x"}`, `{"other":{"a":[1,2]},"kind":"x"}`, `{"kind":"n\u006fde_lost"}`,
		`{"kind":null}`, ` {"kind":"x"} `, `{"kind":"x"}x`, `{"kind":"x",}`, `{"fields":{"\u0041":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want Event
		wantErr := json.Unmarshal(b, &want)
		got, err := DecodeLine(b, Names{})
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", b, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
		}
	})
}

// TestDecodeLineTakesTheFastPath: the coordinator's own lines, with the
// schema version or without, do not fall back to encoding/json.
func TestDecodeLineTakesTheFastPath(t *testing.T) {
	n := 0
	for _, rl := range recordedLines(t, true) {
		l := rl.line
		var e Event
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range [][]byte{b, append([]byte(`{"v":1,`), b[1:]...)} {
			got, ok := fastLine(line, Names{})
			if !ok {
				t.Errorf("the fast path gave up on %s", line)
				continue
			}
			if !reflect.DeepEqual(got, e) {
				t.Errorf("%s: decoded %#v", line, got)
			}
			n++
		}
	}
	if n < 1000 {
		t.Errorf("only %d lines", n)
	}
}

// BenchmarkDecodeLine: the lines of the recordings, by DecodeLine and by
// json.Unmarshal.
func BenchmarkDecodeLine(b *testing.B) {
	lines := recordedLines(b, true)
	b.Run("fast", func(b *testing.B) {
		names := Names{}
		for i := 0; i < b.N; i++ {
			if _, err := DecodeLine(lines[i%len(lines)].line, names); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var e Event
			if err := json.Unmarshal(lines[i%len(lines)].line, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
