package slices

import (
	"cmp"
	"fmt"
	stdslices "slices"
	"strings"

	"spate/job"
)

// maxGroups bounds G as job.Spec.Validate does.
const maxGroups = 1 << 15

// Slice is a contiguous key-group range of one operator's state.
type Slice struct {
	Op    string    `json:"op"`
	Range job.Range `json:"range"`
}

func (s Slice) String() string { return s.Op + s.Range.String() }

// Assignment says which instance of one operator owns which key groups.
// Instances are identified by index (job.MakeInstanceID(Op, i)). A valid
// assignment partitions [0, Groups) exactly: every key group is owned by
// exactly one instance, and every instance owns at least one key group.
//
// Ranges[i] are instance i's ranges. NewAssignment and every plan keep
// them canonical: sorted by Lo, adjacent ranges coalesced. An Assignment is
// a value; the functions of this package never modify one they are given.
type Assignment struct {
	Op     string        `json:"op"`
	Groups int           `json:"groups"` // G
	Ranges [][]job.Range `json:"ranges"`
}

// NewAssignment returns the canonical form of the assignment (a copy, each
// instance's ranges sorted and coalesced) after validating it.
func NewAssignment(op string, groups int, ranges [][]job.Range) (Assignment, error) {
	a := Assignment{Op: op, Groups: groups, Ranges: make([][]job.Range, len(ranges))}
	for i, rs := range ranges {
		a.Ranges[i] = canonical(rs)
	}
	if err := a.Validate(); err != nil {
		return Assignment{}, err
	}
	return a, nil
}

// Initial returns today's static assignment of g key groups to n instances
// (job.SplitRanges): instance i owns the i-th of n contiguous, near-equal
// ranges.
func Initial(op string, g, n int) (Assignment, error) {
	if g < 1 || g > maxGroups {
		return Assignment{}, fmt.Errorf("%w: assignment %s: groups %d out of range 1..%d", ErrInvalid, op, g, maxGroups)
	}
	if n < 1 || n > g {
		return Assignment{}, fmt.Errorf("%w: assignment %s: parallelism %d out of range 1..%d", ErrInvalid, op, n, g)
	}
	ranges := make([][]job.Range, n)
	for i, r := range job.SplitRanges(g, n) {
		ranges[i] = []job.Range{r}
	}
	return NewAssignment(op, g, ranges)
}

// coalesce merges adjacent ranges of a sorted list, in place.
func coalesce(rs []job.Range) []job.Range {
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].Hi == r.Lo && r.Lo < r.Hi {
			out[n-1].Hi = r.Hi
			continue
		}
		out = append(out, r)
	}
	return out
}

// Validate checks that a partitions [0, Groups) exactly among its
// instances. The error names the first problem: a bad field, an empty or
// out-of-range range, a key group owned twice or by nobody, an instance
// that owns nothing.
func (a Assignment) Validate() error {
	_, err := a.owners()
	return err
}

// owners validates a and returns the owner of every key group.
func (a Assignment) owners() ([]int, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: assignment %s: %s", ErrInvalid, a.Op, fmt.Sprintf(format, args...))
	}
	switch {
	case a.Op == "":
		return nil, fmt.Errorf("%w: assignment: op is empty", ErrInvalid)
	case a.Groups < 1 || a.Groups > maxGroups:
		return nil, bad("groups %d out of range 1..%d", a.Groups, maxGroups)
	case len(a.Ranges) < 1 || len(a.Ranges) > a.Groups:
		return nil, bad("%d instances, want 1..%d", len(a.Ranges), a.Groups)
	}
	owner := make([]int, a.Groups)
	for g := range owner {
		owner[g] = -1
	}
	for i, rs := range a.Ranges {
		if len(rs) == 0 {
			return nil, bad("instance %d owns no key group", i)
		}
		for _, r := range rs {
			if r.Lo >= r.Hi || int(r.Hi) > a.Groups {
				return nil, bad("instance %d: range %v is empty or past %d", i, r, a.Groups)
			}
			for g := r.Lo; g < r.Hi; g++ {
				if o := owner[g]; o >= 0 {
					return nil, bad("%v owned by instances %d and %d", g, o, i)
				}
				owner[g] = i
			}
		}
	}
	for g, o := range owner {
		if o < 0 {
			return nil, bad("%v owned by no instance", job.KeyGroup(g))
		}
	}
	return owner, nil
}

// Owners returns the owning instance of every key group (length Groups).
// a must be valid.
func (a Assignment) Owners() []int {
	owner, err := a.owners()
	if err != nil {
		panic(err) // a documented precondition, like an index out of range
	}
	return owner
}

// Owner returns the instance that owns kg, or -1.
func (a Assignment) Owner(kg job.KeyGroup) int {
	for i, rs := range a.Ranges {
		for _, r := range rs {
			if r.Contains(kg) {
				return i
			}
		}
	}
	return -1
}

// N is the number of instances (the operator's parallelism).
func (a Assignment) N() int { return len(a.Ranges) }

// Slices returns instance i's slices.
func (a Assignment) Slices(i int) []Slice {
	out := make([]Slice, len(a.Ranges[i]))
	for k, r := range a.Ranges[i] {
		out[k] = Slice{Op: a.Op, Range: r}
	}
	return out
}

// Cuts returns every instance's ranges, sorted by Lo: the ranges an
// upstream's backup toward the operator is cut into (see Recut).
func (a Assignment) Cuts() []job.Range {
	var out []job.Range
	for _, rs := range a.Ranges {
		out = append(out, rs...)
	}
	stdslices.SortFunc(out, func(x, y job.Range) int { return cmp.Compare(x.Lo, y.Lo) })
	return out
}

// Loads returns every instance's load: the sum of load over the key groups
// it owns. load has one entry per key group.
func (a Assignment) Loads(load []float64) []float64 {
	out := make([]float64, len(a.Ranges))
	for i, rs := range a.Ranges {
		for _, r := range rs {
			for g := r.Lo; g < r.Hi; g++ {
				out[i] += load[g]
			}
		}
	}
	return out
}

// Equal reports whether a and b are of the same operator and give every
// key group the same owner (whether or not their ranges are canonical).
func (a Assignment) Equal(b Assignment) bool {
	if a.Op != b.Op || a.Groups != b.Groups || len(a.Ranges) != len(b.Ranges) {
		return false
	}
	for i := range a.Ranges {
		if !stdslices.Equal(canonical(a.Ranges[i]), canonical(b.Ranges[i])) {
			return false
		}
	}
	return true
}

// canonical returns a sorted, coalesced copy of rs.
func canonical(rs []job.Range) []job.Range {
	rs = stdslices.Clone(rs)
	stdslices.SortFunc(rs, func(x, y job.Range) int { return cmp.Compare(x.Lo, y.Lo) })
	return coalesce(rs)
}

// String is "count 0:[0,32) 1:[64,96) 2:[32,64),[96,128)".
func (a Assignment) String() string {
	var b strings.Builder
	b.WriteString(a.Op)
	for i, rs := range a.Ranges {
		fmt.Fprintf(&b, " %d:", i)
		for k, r := range rs {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(r.String())
		}
	}
	return b.String()
}

// fromOwners builds the canonical assignment of n instances from the owner
// of every key group.
func fromOwners(op string, owner []int, n int) Assignment {
	a := Assignment{Op: op, Groups: len(owner), Ranges: make([][]job.Range, n)}
	for g, o := range owner {
		rs := a.Ranges[o]
		if k := len(rs); k > 0 && int(rs[k-1].Hi) == g {
			rs[k-1].Hi++
		} else {
			a.Ranges[o] = append(rs, job.Range{Lo: job.KeyGroup(g), Hi: job.KeyGroup(g + 1)})
		}
	}
	return a
}
