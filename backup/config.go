package backup

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// DefaultMemLimit is Config.MemLimit by default: 64 MiB.
const DefaultMemLimit = 64 << 20

// Chunk sizes. A key group's records go into chunks whose capacity doubles
// from minChunk up to the buffer's largest chunk, MemLimit/16 within
// [minChunk, maxChunk]; a record larger than that gets a chunk of its own.
const (
	minChunk = 4 << 10
	maxChunk = 256 << 10
)

// Config configures a Buffer.
type Config struct {
	// MemLimit is how many bytes of records the buffer holds in memory
	// before it spills (SpillDir set) or reports Full (no SpillDir).
	// Memory is counted as the capacity of the chunks holding records.
	MemLimit int64

	// SpillDir is the directory where segments over MemLimit are written.
	// "" means no spilling: Full reports backpressure instead. Several
	// buffers may share a directory: file names are unique. A buffer
	// removes its files as they are trimmed and on Close; files left by a
	// process that died are garbage (spill is not persistence: Mark is).
	SpillDir string
}

// DefaultConfig returns a Config with a 64 MiB memory limit and no
// spilling.
func DefaultConfig() Config { return Config{MemLimit: DefaultMemLimit} }

// Validate checks c without touching the file system (New checks that
// SpillDir is a directory).
func (c Config) Validate() error {
	if c.MemLimit <= 0 {
		return fmt.Errorf("%w: MemLimit %d: must be positive", ErrConfig, c.MemLimit)
	}
	return nil
}

// chunkLimit is the largest regular chunk of a buffer configured with c:
// the largest power of two times minChunk up to MemLimit/16, within
// [minChunk, maxChunk].
func (c Config) chunkLimit() int {
	n := minChunk
	for int64(2*n) <= c.MemLimit/16 && 2*n <= maxChunk {
		n *= 2
	}
	return n
}

// checkDir checks that SpillDir, if set, is a directory.
func (c Config) checkDir() error {
	if c.SpillDir == "" {
		return nil
	}
	fi, err := os.Stat(c.SpillDir)
	if err != nil {
		return fmt.Errorf("%w: SpillDir: %v", ErrConfig, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: SpillDir %s: not a directory", ErrConfig, c.SpillDir)
	}
	return nil
}

// ParseSize reads a byte count: a whole number with an optional unit, B,
// KiB, MiB or GiB (KB, MB and GB, and K, M and G, mean the same powers of
// two), e.g. 64MiB.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: want a size such as 64MiB", s)
	}
	shift, unit := 0, strings.TrimSpace(t[i:])
	switch strings.ToLower(unit) {
	case "", "b":
	case "k", "kb", "kib":
		shift = 10
	case "m", "mb", "mib":
		shift = 20
	case "g", "gb", "gib":
		shift = 30
	default:
		return 0, fmt.Errorf("%q: unknown unit %q (have B, KiB, MiB, GiB)", s, unit)
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return n << shift, nil
}
