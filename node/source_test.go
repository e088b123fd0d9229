package node

import (
	"testing"

	"spate/job"
)

func TestMarkerForPicksTheNewestMarkerNotPastWhatWasApplied(t *testing.T) {
	ps := &partState{markers: []marker{
		{Pos: 0, Counters: []uint64{0, 0, 0}},
		{Pos: 10, Counters: []uint64{3, 4, 3}},
		{Pos: 20, Counters: []uint64{7, 6, 7}},
	}}
	all := func(job.KeyGroup) bool { return true }
	only := func(g job.KeyGroup) func(job.KeyGroup) bool {
		return func(kg job.KeyGroup) bool { return kg == g }
	}
	cases := []struct {
		name string
		have []uint64
		owns func(job.KeyGroup) bool
		want int
	}{
		{"nothing applied", []uint64{0, 0, 0}, all, 0},
		{"exactly the middle marker", []uint64{3, 4, 3}, all, 1},
		{"one group behind the newest", []uint64{7, 5, 7}, all, 1},
		{"past the newest", []uint64{9, 9, 9}, all, 2},
		{"only the lagging group counts", []uint64{9, 0, 9}, only(0), 2},
		{"a lagging group we own", []uint64{9, 0, 9}, only(1), 0},
	}
	var s sourceState
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.markerFor(ps, tc.have, tc.owns); got != tc.want {
				t.Fatalf("markerFor(%v) = %d, want %d", tc.have, got, tc.want)
			}
		})
	}
}
