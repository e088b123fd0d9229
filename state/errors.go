package state

import "errors"

// Errors of the package. They are returned wrapped (test with errors.Is);
// the wrapping message says what and where: the file, the field, the
// checkpoint id.
var (
	// ErrCorrupt is returned by Decode (and Load) for bytes that are not a
	// valid snapshot: bad magic, unknown version, bad length, truncated,
	// checksum mismatch, or a body that does not decode. The message says
	// which. A Store that checksums what it stores (package stores)
	// returns it too, for content that fails that checksum.
	ErrCorrupt = errors.New("state: corrupt snapshot")

	// ErrInvalid is returned by Encode for a snapshot that breaks the
	// format's rules (unsorted groups or keys, a deletion in a full
	// snapshot, inconsistent ids), and by Config.Validate.
	ErrInvalid = errors.New("state: invalid")

	// ErrBrokenChain is returned by Merge, Chain and Load when a full
	// snapshot and its deltas do not link up (a missing checkpoint, a
	// Base or Parent mismatch, a chain that does not start with a full
	// snapshot).
	ErrBrokenChain = errors.New("state: broken snapshot chain")

	// ErrNotFound is returned by Store.Get and Store.Delete for a name that
	// is not stored.
	ErrNotFound = errors.New("state: not found")

	// ErrBadName is returned for a store name that escapes the store (an
	// absolute path, "..", an empty element) or uses a reserved form, and
	// by ParseFileName for a name that is not a checkpoint file name.
	ErrBadName = errors.New("state: bad name")
)
