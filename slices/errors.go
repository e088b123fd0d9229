package slices

import "errors"

// Errors of the package. They are returned wrapped (test with errors.Is);
// the one-line message names the field or the key group at fault.
var (
	// ErrInvalid is wrapped for an argument that is out of range or
	// inconsistent: an assignment that does not partition [0,G), a load
	// vector of the wrong length or with a negative value, a bad policy or
	// observation.
	ErrInvalid = errors.New("slices: invalid")

	// ErrNotOwned is wrapped by Apply for a move whose range is not wholly
	// owned by its From instance (or that overlaps an earlier move).
	ErrNotOwned = errors.New("slices: range not owned by the move's source")

	// ErrMerge is wrapped by Merge and Recut for backup slices that are not
	// adjacent, overlap, or belong to different upstreams, and by Split for
	// a split point outside the slice.
	ErrMerge = errors.New("slices: cannot split or merge")
)
