package job

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRollupInput: any Data reaching rollup is either decoded (and then
// re-encodes to the same bytes) or counted as malformed, never a panic.
func FuzzRollupInput(f *testing.F) {
	f.Add(appendRollupInput(nil, "key", 3, -7))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		key, count, sum, err := decodeRollupInput(data)
		if err == nil {
			if again := appendRollupInput(nil, string(key), count, sum); !bytes.Equal(again, data) {
				// varints have one canonical form per value except for
				// padded encodings, which we accept but do not write
				if k2, c2, s2, err := decodeRollupInput(again); err != nil || !bytes.Equal(k2, key) || c2 != count || s2 != sum {
					t.Fatalf("%x decodes to (%q, %d, %d), which does not round-trip", data, key, count, sum)
				}
			}
		}
		r := NewRollup(testSpec(10, 0, 4, 2))
		r.Process(0, Record{Key: []byte("g00"), Time: 0, Data: data}, &recorder{})
		if (err != nil) != (r.Malformed() == 1) {
			t.Fatalf("%x: decode error %v, Malformed() = %d", data, err, r.Malformed())
		}
	})
}

// FuzzReadResults: any input is parsed or rejected with an error, never a
// panic, and what parses re-encodes to an equal result.
func FuzzReadResults(f *testing.F) {
	f.Add([]byte(`{"op":"count","key":"a","window":0,"count":2,"sum":3,"total":2}` + "\n"))
	f.Add([]byte(`{"op":"rollup","key":"g01","window":-5,"count":2,"sum":3,"top":[{"key":"a","count":2}]}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ReadResults(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for i := range rs {
			back, err := ReadResults(bytes.NewReader(rs[i].AppendJSON(nil)), "again")
			if err != nil || len(back) != 1 || !sameResult(&back[0], &rs[i]) {
				t.Fatalf("%+v does not round-trip: %+v, %v", rs[i], back, err)
			}
		}
	})
}

// FuzzResultOf: any Data reaching the sink is decoded or rejected with an
// error, never a panic, and what decodes re-encodes to an equal result.
func FuzzResultOf(f *testing.F) {
	c := Result{Op: KindCount, Key: "k", Window: 1000, Count: 3, Sum: -2, Total: 9}
	r := Result{Op: KindRollup, Key: "g01", Count: 5, Sum: 7, Top: []TopKey{{"a", 3}, {"b", 2}}}
	f.Add(c.AppendCompact(nil))
	f.Add(r.AppendCompact(nil))
	f.Add([]byte{})
	f.Add([]byte("r\x00\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got Result
		if err := ResultOf(Record{Key: []byte("k"), Time: 5, Value: 2, Data: data}, &got); err != nil {
			return
		}
		var back Result
		if err := ResultOf(Record{Key: []byte("k"), Time: 5, Value: 2, Data: got.AppendCompact(nil)}, &back); err != nil || !sameResult(&back, &got) {
			t.Fatalf("%x decodes to %+v, which does not round-trip: %+v, %v", data, got, back, err)
		}
	})
}

// FuzzParseResultFast: where the fast parser of result lines says ok,
// encoding/json decodes the line to the same result without error.
func FuzzParseResultFast(f *testing.F) {
	for _, r := range []Result{
		{Op: KindCount, Key: "k000001", Window: 1000, Count: 3, Sum: -2, Total: 9},
		{Op: KindRollup, Key: "g01", Window: -200, Count: 5, Sum: 7, Top: []TopKey{{"a", 3}, {"b", 2}}},
		{Op: KindCount, Key: "é<&>\"\x01\xff", Count: -9223372036854775808},
	} {
		f.Add(r.AppendJSON(nil))
	}
	f.Add([]byte(`{"op":"count","key":"a","window":01,"count":2,"sum":3}`))
	f.Add([]byte(`{"op":"count","key":"a","window":1.5,"count":2,"sum":3}`))
	f.Add([]byte(`{"op":"count","key":"a","window":1,"count":2,"sum":99999999999999999999}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := parseResultFast(data)
		if !ok {
			return
		}
		var want Result
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%q: the fast parser took what encoding/json refuses (%v)", data, err)
		}
		if !sameResult(&fast, &want) || fast.Op != want.Op || fast.Key != want.Key || fast.Total != want.Total {
			t.Fatalf("%q: fast %+v, encoding/json %+v", data, fast, want)
		}
	})
}
