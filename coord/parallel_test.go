package coord

import (
	"fmt"
	"testing"

	"spate/job"
)

func TestSplitRanges(t *testing.T) {
	for _, tc := range []struct {
		rs   []job.Range
		k    int
		want string
	}{
		{[]job.Range{{Lo: 0, Hi: 64}}, 3, "[[[0,21)] [[21,42)] [[42,64)]]"},
		{[]job.Range{{Lo: 0, Hi: 64}}, 4, "[[[0,16)] [[16,32)] [[32,48)] [[48,64)]]"},
		{[]job.Range{{Lo: 0, Hi: 2}, {Lo: 10, Hi: 14}}, 3, "[[[0,2)] [[10,12)] [[12,14)]]"},
		{[]job.Range{{Lo: 5, Hi: 7}}, 4, "[[[5,6)] [[6,7)]]"},
		{[]job.Range{{Lo: 0, Hi: 1}}, 2, "[[[0,1)]]"},
	} {
		if got := fmt.Sprint(splitRanges(tc.rs, tc.k)); got != tc.want {
			t.Errorf("splitRanges(%v, %d) = %s, want %s", tc.rs, tc.k, got, tc.want)
		}
	}
}

// TestHeaviestSplitsTheBusiestOperator: a loss of count#0 and rollup#0
// together splits count, whose instance took far more input, though
// rollup#0 held more key groups (seen in bench recovery at count 4,
// rollup 2: the split of rollup left count's catch-up whole on one
// instance); by key groups while no rate is known; "" with nothing.
func TestHeaviestSplitsTheBusiestOperator(t *testing.T) {
	for _, tc := range []struct {
		cands []splitCandidate
		want  string
	}{
		{[]splitCandidate{{"rollup", 96e3, 64}, {"count", 460e3, 32}}, "count"},
		{[]splitCandidate{{"count", 460e3, 32}, {"rollup", 96e3, 64}}, "count"},
		{[]splitCandidate{{"rollup", 0, 64}, {"count", 0, 32}}, "rollup"},
		{[]splitCandidate{{"count", 0, 32}, {"rollup", 0, 32}}, "count"},
		{nil, ""},
	} {
		if got := heaviest(tc.cands); got != tc.want {
			t.Errorf("heaviest(%v) = %q, want %q", tc.cands, got, tc.want)
		}
	}
}
