package job

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestWindowStart(t *testing.T) {
	tests := []struct {
		name string
		t, w int64
		want int64
	}{
		{name: "zero", t: 0, w: 10, want: 0},
		{name: "inside first", t: 9, w: 10, want: 0},
		{name: "boundary", t: 10, w: 10, want: 10},
		{name: "large", t: 1_234_567, w: 1000, want: 1_234_000},
		{name: "minus one", t: -1, w: 10, want: -10},
		{name: "negative boundary", t: -10, w: 10, want: -10},
		{name: "negative inside", t: -11, w: 10, want: -20},
		{name: "window one", t: -7, w: 1, want: -7},
		{name: "max", t: math.MaxInt64, w: 10, want: math.MaxInt64 - 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WindowStart(tt.t, tt.w)
			if got != tt.want {
				t.Fatalf("WindowStart(%d, %d) = %d, want %d", tt.t, tt.w, got, tt.want)
			}
			if got > tt.t || tt.t-got >= tt.w {
				t.Fatalf("WindowStart(%d, %d) = %d: %d not in [start, start+w)", tt.t, tt.w, got, tt.t)
			}
		})
	}
}

func TestHashAndGroupOf(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want uint64
	}{
		{name: "empty", key: "", want: 14695981039346656037}, // the FNV-1a offset basis
		{name: "a", key: "a", want: 0xaf63dc4c8601ec8c},      // published FNV-1a 64 test vector
		{name: "foobar", key: "foobar", want: 0x85944171f73967e8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Hash([]byte(tt.key)); got != tt.want {
				t.Fatalf("Hash(%q) = %#x, want %#x", tt.key, got, tt.want)
			}
			for _, g := range []int{1, 2, 7, 128, 1 << 15} {
				want := KeyGroup(tt.want % uint64(g))
				if got := GroupOf([]byte(tt.key), g); got != want {
					t.Fatalf("GroupOf(%q, %d) = %d, want %d", tt.key, g, got, want)
				}
			}
		})
	}
	if got := GroupOf([]byte("anything"), 1); got != 0 {
		t.Fatalf("one group: got %v", got)
	}
}

func TestGroupName(t *testing.T) {
	tests := []struct {
		name string
		key  string
		n    int
		want string
	}{
		{name: "one group", key: "x", n: 1, want: "g00"},
		{name: "n below one counts as one", key: "x", n: 0, want: "g00"},
		{name: "two digits", key: "a", n: 64, want: fmt.Sprintf("g%02d", uint64(0xaf63dc4c8601ec8c)%64)},
		{name: "three digits", key: "foobar", n: 1000, want: fmt.Sprintf("g%d", uint64(0x85944171f73967e8)%1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GroupName([]byte(tt.key), tt.n); got != tt.want {
				t.Fatalf("GroupName(%q, %d) = %q, want %q", tt.key, tt.n, got, tt.want)
			}
		})
	}
}

func TestSourceClock(t *testing.T) {
	tests := []struct {
		name     string
		lateness int64
		times    []int64
		late     []bool
		wm       []int64 // watermark after each observation
	}{
		{
			name:     "in order, no lateness",
			lateness: 0,
			times:    []int64{1, 2, 2, 5},
			late:     []bool{false, false, false, false},
			wm:       []int64{1, 2, 2, 5},
		},
		{
			name:     "behind without lateness is late",
			lateness: 0,
			times:    []int64{5, 4, 5},
			late:     []bool{false, true, false},
			wm:       []int64{5, 5, 5},
		},
		{
			name:     "within lateness is on time",
			lateness: 10,
			times:    []int64{100, 90, 95, 89, 120, 109, 110},
			late:     []bool{false, false, false, true, false, true, false},
			wm:       []int64{90, 90, 90, 90, 110, 110, 110},
		},
		{
			name:     "first record is never late",
			lateness: 3,
			times:    []int64{-50, -60, -53},
			late:     []bool{false, true, false},
			wm:       []int64{-53, -53, -53},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := SourceClock{Lateness: tt.lateness}
			if c.Watermark() != NoWatermark {
				t.Fatalf("fresh clock: watermark %d, want NoWatermark", c.Watermark())
			}
			for i, ts := range tt.times {
				if got := c.Observe(ts); got != tt.late[i] {
					t.Fatalf("record %d (t=%d): late = %v, want %v", i, ts, got, tt.late[i])
				}
				if got := c.Watermark(); got != tt.wm[i] {
					t.Fatalf("after record %d (t=%d): watermark %d, want %d", i, ts, got, tt.wm[i])
				}
			}
		})
	}
}

func TestSplitRanges(t *testing.T) {
	tests := []struct {
		name string
		g, n int
		want []Range
	}{
		{name: "one", g: 128, n: 1, want: []Range{{0, 128}}},
		{name: "even", g: 128, n: 2, want: []Range{{0, 64}, {64, 128}}},
		{name: "uneven", g: 10, n: 3, want: []Range{{0, 3}, {3, 6}, {6, 10}}},
		{name: "one each", g: 3, n: 3, want: []Range{{0, 1}, {1, 2}, {2, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitRanges(tt.g, tt.n)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("SplitRanges(%d, %d) = %v, want %v", tt.g, tt.n, got, tt.want)
			}
		})
	}
	// Every key group is in exactly one range, whatever g and n.
	for g := 1; g <= 40; g++ {
		for n := 1; n <= g; n++ {
			rs := SplitRanges(g, n)
			for kg := range g {
				hits := 0
				for _, r := range rs {
					if r.Contains(KeyGroup(kg)) {
						hits++
					}
				}
				if hits != 1 {
					t.Fatalf("SplitRanges(%d, %d) = %v: kg %d in %d ranges", g, n, rs, kg, hits)
				}
			}
		}
	}
}

func TestSpecValidate(t *testing.T) {
	good := func() Spec { return WindowCount(nil, 1000, 200) }
	tests := []struct {
		name   string
		change func(*Spec)
		err    string // "" for valid
	}{
		{name: "default job", change: func(*Spec) {}},
		{name: "no groups", change: func(s *Spec) { s.Groups = 0 }, err: "groups 0 out of range"},
		{name: "too many groups", change: func(s *Spec) { s.Groups = 1<<15 + 1 }, err: "out of range"},
		{name: "zero window", change: func(s *Spec) { s.Window = 0 }, err: "window must be positive"},
		{name: "negative lateness", change: func(s *Spec) { s.Lateness = -1 }, err: "lateness"},
		{name: "no rollup groups", change: func(s *Spec) { s.Rollups = 0 }, err: "rollup_groups"},
		{name: "duplicate operator", change: func(s *Spec) { s.Ops[2].Name = "count" }, err: `operator "count" twice`},
		{name: "zero parallelism", change: func(s *Spec) { s.Ops[1].Parallelism = 0 }, err: "parallelism 0"},
		{name: "parallelism above groups", change: func(s *Spec) { s.Ops[1].Parallelism = 129 }, err: "parallelism 129"},
		{name: "source may exceed groups", change: func(s *Spec) { s.Ops[0].Parallelism = 300 }},
		{name: "unknown output", change: func(s *Spec) { s.Ops[2].Outputs[0].To = "nowhere" }, err: `unknown operator "nowhere"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good()
			tt.change(&s)
			err := s.Validate()
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tt.err != "" && err == nil:
				t.Fatalf("Validate: nil, want an error with %q", tt.err)
			case tt.err != "" && !strings.Contains(err.Error(), tt.err):
				t.Fatalf("Validate: %v, want an error with %q", err, tt.err)
			}
		})
	}
}

func TestWindowCountGraph(t *testing.T) {
	s := WindowCount(map[string]int{"count": 3}, 1000, 0)
	if got := s.Ops[s.Op("count")].Parallelism; got != 3 {
		t.Fatalf("count parallelism %d, want 3", got)
	}
	if got := s.Inputs(s.Op("sink")); !slices.Equal(got, []int{s.Op("count"), s.Op("rollup")}) {
		t.Fatalf("sink inputs %v", got)
	}
	c := s.Ops[s.Op("count")]
	if c.Outputs[0].To != "rollup" || c.Outputs[1].To != "sink" {
		t.Fatalf("count ports %v: want rollup, sink", c.Outputs)
	}
}
