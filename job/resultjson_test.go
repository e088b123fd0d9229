package job

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// weirdKeys exercise JSON escaping: quotes, controls, HTML characters,
// line separators, multi-byte runes and bytes that are not UTF-8.
var weirdKeys = []string{
	"", "a", `q"uote`, `back\slash`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"<&>", "é日本", "\u2028\u2029", "\xff", "a\xffb\xfe", "\xe6\x97", "\xed\xa0\x80",
}

func randomResult(rng *rand.Rand) Result {
	key := func() string {
		if rng.IntN(3) == 0 {
			b := make([]byte, rng.IntN(8))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			return string(b)
		}
		return weirdKeys[rng.IntN(len(weirdKeys))]
	}
	r := Result{Op: KindCount, Key: key(), Window: rng.Int64() - rng.Int64(), Count: rng.Int64N(1000), Sum: rng.Int64() - rng.Int64()}
	if rng.IntN(2) == 0 {
		r.Total = rng.Int64N(3)
	} else {
		r.Op = KindRollup
		for range rng.IntN(4) {
			r.Top = append(r.Top, TopKey{Key: key(), Count: rng.Int64N(5)})
		}
	}
	return r
}

func TestAppendJSONIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		r := randomResult(rng)
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.AppendJSON([]byte("prefix"))
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("case %d: AppendJSON\n got %s\nwant %s", i, got[len("prefix"):], want)
		}
	}
}

func TestResultKeyIsWhatReadsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := append([]string(nil), weirdKeys...)
	for range 2000 {
		b := make([]byte, rng.IntN(10))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		keys = append(keys, string(b))
	}
	for _, k := range keys {
		r := Result{Op: KindCount, Key: k}
		var back Result
		if err := json.Unmarshal(r.AppendJSON(nil), &back); err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
		if got := ResultKey([]byte(k)); got != back.Key {
			t.Fatalf("ResultKey(%q) = %q, but it reads back as %q", k, got, back.Key)
		}
	}
}

func TestAppendJSONDoesNotAllocate(t *testing.T) {
	r := Result{Op: KindRollup, Key: "g07", Window: 1000, Count: 3, Sum: 9, Top: []TopKey{{"a<b", 2}, {"c", 1}}}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = r.AppendJSON(buf[:0]) }); n != 0 {
		t.Fatalf("AppendJSON: %v allocations, want 0", n)
	}
}

func TestResultIDString(t *testing.T) {
	id := ResultID{Op: "count", Key: "k\n", Window: -10}
	if got, want := id.String(), `count/"k\n"@-10`; got != want {
		t.Fatalf("String() = %s, want %s", got, want)
	}
}
