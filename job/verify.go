package job

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// ErrTornLine is the error ReadResults wraps when only the final line is
// bad and has no newline: a sink writes each result as a whole line, so
// that is a write cut short by a kill, not bad input. The results before
// it are returned with the error.
var ErrTornLine = errors.New("torn final line")

// ReadResults parses sink output: one JSON Result per line. name is used in
// errors, which read "NAME:LINE: reason". A final line without a newline is
// accepted if it is complete, and wraps ErrTornLine if not; an empty line
// is an error.
func ReadResults(r io.Reader, name string) ([]Result, error) { return AppendResults(nil, r, name) }

// AppendResults is ReadResults appending to out, which may hold room for
// what r holds already.
func AppendResults(out []Result, r io.Reader, name string) ([]Result, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// a long line: gather the rest of it
			long := append([]byte(nil), b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if err != nil && err != io.EOF {
			return out, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if len(b) == 0 && err == io.EOF {
			return out, nil
		}
		res, perr := parseResult(bytes.TrimSuffix(b, []byte{'\n'}))
		if perr != nil && err == io.EOF {
			return out, fmt.Errorf("%s:%d: %w (%w)", name, line, ErrTornLine, perr)
		}
		if perr != nil {
			return out, fmt.Errorf("%s:%d: %w", name, line, perr)
		}
		out = append(out, res)
		if err == io.EOF {
			return out, nil
		}
	}
}

// parseResult decodes one result line: one JSON object with a known
// operator. Fields it does not know are ignored.
func parseResult(b []byte) (Result, error) {
	if r, ok := parseResultFast(b); ok && (r.Op == KindCount || r.Op == KindRollup) {
		return r, nil
	}
	var r Result
	if len(bytes.TrimSpace(b)) == 0 {
		return r, errors.New("empty line")
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("bad result: %w", err)
	}
	switch r.Op {
	case KindCount, KindRollup:
	case "":
		return r, errors.New(`bad result: no "op"`)
	default:
		return r, fmt.Errorf("bad result: unknown op %q", r.Op)
	}
	return r, nil
}

// Report is the outcome of comparing a run's output with the oracle.
type Report struct {
	Windows    int    `json:"windows"`              // expected results
	Missing    int    `json:"missing"`              // expected, never written
	Duplicated int    `json:"duplicated"`           // written more than once: one per extra copy
	Wrong      int    `json:"wrong"`                // written with other fields, or not expected at all
	Diffs      []Diff `json:"diffs"`                // the first differences (MaxDiffs unless asked otherwise)
	Torn       int    `json:"torn_lines,omitempty"` // output files whose last line a kill cut short: not counted as written
}

// MaxDiffs is the number of differences a Report details.
const MaxDiffs = 10

// Diff is one difference between the expected and the actual output.
type Diff struct {
	Kind string   `json:"kind"` // missing, duplicated, wrong or unexpected
	ID   ResultID `json:"id"`
	Want *Result  `json:"want,omitempty"`
	Got  *Result  `json:"got,omitempty"`
}

// Kinds of Diff.
const (
	DiffMissing    = "missing"
	DiffDuplicated = "duplicated"
	DiffWrong      = "wrong"
	DiffUnexpected = "unexpected"
)

// OK reports whether nothing is missing, duplicated or wrong.
func (r Report) OK() bool { return r.Missing == 0 && r.Duplicated == 0 && r.Wrong == 0 }

func (r Report) String() string {
	return fmt.Sprintf("verify: %d windows checked, %d missing, %d duplicated, %d wrong",
		r.Windows, r.Missing, r.Duplicated, r.Wrong)
}

// Compare checks actual (a run's output, in any order) against expected
// (the oracle's). The first copy of each actual ID is judged against the
// expected result with that ID: equal, wrong, or unexpected (no such ID
// expected; counted as Wrong). Every further copy counts as Duplicated. An
// expected ID absent from actual is Missing. Diffs lists the first MaxDiffs
// differences: those of actual in its order, then the missing ones in
// expected's order.
func Compare(expected, actual []Result) Report { return CompareN(expected, actual, MaxDiffs) }

// CompareN is Compare detailing the first max differences (all of them if
// max is negative).
func CompareN(expected, actual []Result, max int) Report {
	rep := Report{Windows: len(expected), Diffs: []Diff{}}
	// Each expected ID's first place; an ID listed twice is seen as one.
	want := make(map[ResultID]int32, len(expected))
	first := make([]int32, len(expected))
	for i := range expected {
		id := expected[i].ID()
		f, ok := want[id]
		if !ok {
			f = int32(i)
			want[id] = f
		}
		first[i] = f
	}
	seen := make([]bool, len(expected))
	var seenOther map[ResultID]bool // the unexpected IDs seen
	note := func(kind string, id ResultID, w, g *Result) {
		if max < 0 || len(rep.Diffs) < max {
			rep.Diffs = append(rep.Diffs, Diff{Kind: kind, ID: id, Want: w, Got: g})
		}
	}
	for i := range actual {
		got := &actual[i]
		id := got.ID()
		f, ok := want[id]
		switch {
		case !ok && seenOther[id]:
			rep.Duplicated++
			note(DiffDuplicated, id, nil, got)
		case !ok:
			rep.Wrong++
			note(DiffUnexpected, id, nil, got)
			if seenOther == nil {
				seenOther = map[ResultID]bool{}
			}
			seenOther[id] = true
		case seen[f]:
			rep.Duplicated++
			note(DiffDuplicated, id, &expected[f], got)
		default:
			seen[f] = true
			if !sameResult(&expected[f], got) {
				rep.Wrong++
				note(DiffWrong, id, &expected[f], got)
			}
		}
	}
	for i := range expected {
		if !seen[first[i]] {
			rep.Missing++
			note(DiffMissing, expected[i].ID(), &expected[i], nil)
		}
	}
	return rep
}

// sameResult reports whether a and b are equal in every field (a nil and an
// empty top list are equal).
func sameResult(a, b *Result) bool {
	return a.Op == b.Op && a.Key == b.Key && a.Window == b.Window &&
		a.Count == b.Count && a.Sum == b.Sum && a.Total == b.Total &&
		slices.Equal(a.Top, b.Top)
}
