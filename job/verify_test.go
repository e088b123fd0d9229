package job

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestReadResults(t *testing.T) {
	good := `{"op":"count","key":"a","window":0,"count":2,"sum":3,"total":2}` + "\n" +
		`{"op":"rollup","key":"g01","window":0,"count":2,"sum":3,"top":[{"key":"a","count":2}]}` + "\n"
	got, err := ReadResults(strings.NewReader(good), "out.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Op: "count", Key: "a", Window: 0, Count: 2, Sum: 3, Total: 2},
		{Op: "rollup", Key: "g01", Window: 0, Count: 2, Sum: 3, Top: []TopKey{{"a", 2}}},
	}
	if rep := Compare(want, got); !rep.OK() || len(got) != 2 {
		t.Fatalf("read %+v: %v", got, rep)
	}

	long := `{"op":"count","key":"` + strings.Repeat("k", 200_000) + `","window":5,"count":1,"sum":1,"total":1}`
	tests := []struct {
		name  string
		input string
		n     int    // results read
		err   string // "" for none
	}{
		{name: "empty input", input: "", n: 0},
		{name: "no final newline", input: strings.TrimSuffix(good, "\n"), n: 2},
		{name: "a line longer than the buffer", input: good + long + "\n", n: 3},
		{name: "truncated last line", input: good + `{"op":"count","ke`, err: "out.jsonl:3: torn final line (bad result", n: 2},
		{name: "bad line before the last", input: good + `{"op":"count","ke` + "\n" + good, err: "out.jsonl:3: bad result"},
		{name: "not json", input: "hello\n", err: "out.jsonl:1: bad result"},
		{name: "empty line", input: good + "\n" + good, err: "out.jsonl:3: empty line"},
		{name: "wrong type", input: `{"op":"count","key":"a","window":"x"}` + "\n", err: "out.jsonl:1: bad result"},
		{name: "trailing data", input: `{"op":"count","key":"a"} {}` + "\n", err: "out.jsonl:1: bad result"},
		{name: "no op", input: good + `{"key":"a"}` + "\n", err: `out.jsonl:3: bad result: no "op"`},
		{name: "unknown op", input: `{"op":"sum","key":"a"}` + "\n", err: `out.jsonl:1: bad result: unknown op "sum"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadResults(strings.NewReader(tt.input), "out.jsonl")
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.err == "" && len(got) != tt.n:
				t.Fatalf("read %d results, want %d", len(got), tt.n)
			case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
				t.Fatalf("error %v, want one starting with %q", err, tt.err)
			case tt.err != "" && errors.Is(err, ErrTornLine) != strings.Contains(tt.err, "torn"):
				t.Fatalf("error %v: errors.Is(ErrTornLine) is %v", err, errors.Is(err, ErrTornLine))
			case errors.Is(err, ErrTornLine) && len(got) != tt.n:
				t.Fatalf("read %d results before the error, want %d", len(got), tt.n)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	r := func(op, key string, window, count int64) Result {
		return Result{Op: op, Key: key, Window: window, Count: count, Sum: count, Total: count}
	}
	expected := []Result{r("count", "a", 0, 1), r("count", "b", 0, 2), r("count", "c", 0, 3), r("rollup", "g00", 0, 6)}
	tests := []struct {
		name                       string
		actual                     []Result
		missing, duplicated, wrong int
		kinds                      []string
	}{
		{name: "exact", actual: expected},
		{
			name:   "any order",
			actual: []Result{expected[3], expected[1], expected[0], expected[2]},
		},
		{
			name:    "missing",
			actual:  expected[1:3],
			missing: 2,
			kinds:   []string{DiffMissing, DiffMissing},
		},
		{
			name:       "duplicated twice",
			actual:     append(append([]Result(nil), expected...), expected[1], expected[1]),
			duplicated: 2,
			kinds:      []string{DiffDuplicated, DiffDuplicated},
		},
		{
			name:   "wrong count",
			actual: []Result{expected[0], r("count", "b", 0, 5), expected[2], expected[3]},
			wrong:  1,
			kinds:  []string{DiffWrong},
		},
		{
			name: "wrong top",
			actual: []Result{expected[0], expected[1], expected[2],
				{Op: "rollup", Key: "g00", Window: 0, Count: 6, Sum: 6, Total: 6, Top: []TopKey{{"c", 3}}}},
			wrong: 1,
			kinds: []string{DiffWrong},
		},
		{
			name:   "unexpected",
			actual: append(append([]Result(nil), expected...), r("count", "a", 10, 1)),
			wrong:  1,
			kinds:  []string{DiffUnexpected},
		},
		{
			name:       "an unexpected result twice",
			actual:     append(append([]Result(nil), expected...), r("count", "a", 10, 1), r("count", "a", 10, 2)),
			duplicated: 1,
			wrong:      1,
			kinds:      []string{DiffUnexpected, DiffDuplicated},
		},
		{
			name:       "a wrong copy after a right one is a duplicate",
			actual:     append(append([]Result(nil), expected...), r("count", "a", 0, 9)),
			duplicated: 1,
			kinds:      []string{DiffDuplicated},
		},
		{
			name:       "everything",
			actual:     []Result{r("count", "b", 0, 7), r("count", "b", 0, 2), expected[3], r("count", "z", 0, 1)},
			missing:    2,
			duplicated: 1,
			wrong:      2,
			kinds:      []string{DiffWrong, DiffDuplicated, DiffUnexpected, DiffMissing, DiffMissing},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Compare(expected, tt.actual)
			if rep.Windows != len(expected) || rep.Missing != tt.missing || rep.Duplicated != tt.duplicated || rep.Wrong != tt.wrong {
				t.Fatalf("%v, want %d missing, %d duplicated, %d wrong", rep, tt.missing, tt.duplicated, tt.wrong)
			}
			if rep.OK() != (tt.missing+tt.duplicated+tt.wrong == 0) {
				t.Fatalf("OK() = %v for %v", rep.OK(), rep)
			}
			var kinds []string
			for _, d := range rep.Diffs {
				kinds = append(kinds, d.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.kinds, ",") {
				t.Fatalf("diff kinds %v, want %v", kinds, tt.kinds)
			}
		})
	}
}

func TestCompareKeepsTenDiffs(t *testing.T) {
	var expected []Result
	for i := range 25 {
		expected = append(expected, Result{Op: "count", Key: "k", Window: int64(i), Count: 1})
	}
	rep := Compare(expected, nil)
	if rep.Missing != 25 || len(rep.Diffs) != MaxDiffs || rep.Diffs[0].ID.Window != 0 || rep.Diffs[0].Want != &expected[0] {
		t.Fatalf("%v with %d diffs", rep, len(rep.Diffs))
	}
}

func TestReportFormats(t *testing.T) {
	rep := Report{Windows: 7, Missing: 1, Duplicated: 2, Wrong: 3}
	if got, want := rep.String(), "verify: 7 windows checked, 1 missing, 2 duplicated, 3 wrong"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	rep = Compare([]Result{{Op: "count", Key: "a", Window: 10, Count: 1}}, nil)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"windows":1,"missing":1,"duplicated":0,"wrong":0,"diffs":[{"kind":"missing","id":{"op":"count","key":"a","window":10},"want":{"op":"count","key":"a","window":10,"count":1,"sum":0}}]}`
	if string(b) != want {
		t.Fatalf("JSON\n got %s\nwant %s", b, want)
	}
}
