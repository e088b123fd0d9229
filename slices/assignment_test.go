package slices

import (
	"errors"
	"strings"
	"testing"

	"spate/job"
)

func r(lo, hi int) job.Range { return job.Range{Lo: job.KeyGroup(lo), Hi: job.KeyGroup(hi)} }

func TestNewAssignment(t *testing.T) {
	cases := []struct {
		name   string
		op     string
		groups int
		ranges [][]job.Range
		err    string // substring; "" for valid
		want   string // String() of a valid one
	}{
		{name: "two halves", op: "count", groups: 8, ranges: [][]job.Range{{r(0, 4)}, {r(4, 8)}}, want: "count 0:[0,4) 1:[4,8)"},
		{name: "sorted and coalesced", op: "count", groups: 8, ranges: [][]job.Range{{r(6, 8), r(0, 2), r(2, 3)}, {r(3, 6)}}, want: "count 0:[0,3),[6,8) 1:[3,6)"},
		{name: "empty op", op: "", groups: 8, ranges: [][]job.Range{{r(0, 8)}}, err: "op is empty"},
		{name: "no groups", op: "count", groups: 0, ranges: [][]job.Range{{r(0, 8)}}, err: "groups 0 out of range"},
		{name: "no instances", op: "count", groups: 8, err: "0 instances"},
		{name: "more instances than groups", op: "count", groups: 1, ranges: [][]job.Range{{r(0, 1)}, {}}, err: "2 instances"},
		{name: "key group owned twice", op: "count", groups: 8, ranges: [][]job.Range{{r(0, 5)}, {r(4, 8)}}, err: "kg4 owned by instances 0 and 1"},
		{name: "key group owned by nobody", op: "count", groups: 8, ranges: [][]job.Range{{r(0, 3)}, {r(4, 8)}}, err: "kg3 owned by no instance"},
		{name: "instance owns nothing", op: "count", groups: 8, ranges: [][]job.Range{{r(0, 8)}, {}}, err: "instance 1 owns no key group"},
		{name: "range past G", op: "count", groups: 8, ranges: [][]job.Range{{r(0, 4)}, {r(4, 9)}}, err: "range [4,9) is empty or past 8"},
		{name: "empty range", op: "count", groups: 8, ranges: [][]job.Range{{r(0, 8), r(3, 3)}}, err: "range [3,3) is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAssignment(c.op, c.groups, c.ranges)
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want ErrInvalid with %q", err, c.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is more than one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
		})
	}
}

func TestInitialIsSplitRanges(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 16, 128} {
		a, err := Initial("count", 128, n)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range job.SplitRanges(128, n) {
			if len(a.Ranges[i]) != 1 || a.Ranges[i][0] != want {
				t.Errorf("n=%d: instance %d owns %v, want %v", n, i, a.Ranges[i], want)
			}
		}
	}
	if _, err := Initial("count", 128, 129); err == nil {
		t.Error("Initial with n > G: no error")
	}
}

func TestAssignmentHelpers(t *testing.T) {
	a, err := NewAssignment("count", 8, [][]job.Range{{r(0, 2), r(6, 8)}, {r(2, 6)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Owners(); !equalInts(got, []int{0, 0, 1, 1, 1, 1, 0, 0}) {
		t.Errorf("Owners() = %v", got)
	}
	if a.Owner(7) != 0 || a.Owner(3) != 1 || a.Owner(8) != -1 {
		t.Errorf("Owner: %d %d %d", a.Owner(7), a.Owner(3), a.Owner(8))
	}
	if got := a.Cuts(); len(got) != 3 || got[0] != r(0, 2) || got[1] != r(2, 6) || got[2] != r(6, 8) {
		t.Errorf("Cuts() = %v", got)
	}
	if got := a.Slices(0); len(got) != 2 || got[1].String() != "count[6,8)" {
		t.Errorf("Slices(0) = %v", got)
	}
	if got := a.Loads([]float64{1, 2, 3, 4, 5, 6, 7, 8}); got[0] != 18 || got[1] != 18 {
		t.Errorf("Loads = %v", got)
	}
	raw := Assignment{Op: "count", Groups: 8, Ranges: [][]job.Range{{r(6, 8), r(0, 1), r(1, 2)}, {r(2, 6)}}}
	if !a.Equal(raw) || !raw.Equal(a) {
		t.Error("Equal is not by ownership")
	}
	other, _ := Initial("count", 8, 2)
	if a.Equal(other) {
		t.Error("Equal of different assignments")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
