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
