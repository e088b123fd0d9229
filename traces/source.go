package traces

import (
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"spate/job"
)

// DefaultNominalRate is a generator's mean rate, records per second of
// event time, when Options.Rate is 0.
const DefaultNominalRate = 1_000_000

// DefaultKeys is the number of distinct generator keys when Options.Keys is 0.
const DefaultKeys = 10000

// DefaultSpec is the source of a job that names none.
const DefaultSpec = "gen:diurnal"

// MaxPartitions bounds Options.Partitions: a partition is a 16-bit
// job.Producer unit.
const MaxPartitions = 1 << 16

// MaxKeys bounds the number of generator keys.
const MaxKeys = 1 << 24

// Options are the parameters of a source that are not part of its spec.
type Options struct {
	Seed       int64   // generator seed
	Rate       float64 // mean records/s of event time for generators; 0 means DefaultNominalRate
	Keys       int     // number of distinct generator keys (0 → DefaultKeys = 10000)
	Partitions int     // number of partitions (source parallelism), >= 1 (0 is taken as 1)
	Speedup    float64 // informational here; pacing is done by the caller
}

// Source is a replayable, partitioned log of records: record i of partition
// p is a pure function of (spec, options, p, i). A Source is immutable once
// open and safe for concurrent use; each Reader is not.
type Source interface {
	Partitions() int
	// Open returns a reader of partition p positioned at record pos
	// (0-based) of that partition. A pos past the end of a finite
	// partition gives a reader that is at its end.
	Open(p int, pos uint64) (Reader, error)
	Finite() bool   // true for file traces
	String() string // the spec
}

// Reader reads one partition of a Source in order. Next returns ok=false at
// the end of a finite partition; the record's Key is valid until the next
// call and must not be modified. A Reader is not safe for concurrent use.
type Reader interface {
	job.Reader
	Close() error
}

// BatchReader is implemented by every Reader of this package. NextBatch
// fills buf with the next records of the partition and returns how many it
// wrote: fewer than len(buf) only at the end of a finite partition (0 and a
// nil error once it is over) or with an error. The Keys are valid until the
// next call to Next or NextBatch. It is much cheaper per record than Next,
// whose 64-byte result costs more than generating a record.
type BatchReader interface {
	NextBatch(buf []job.Record) (int, error)
}

// GroupReader is implemented by the Readers whose keys come from the
// generator's key table (gen: and rate:). NextGroups is NextBatch that
// also sets kgs[i] to job.GroupOf(buf[i].Key, groups), looked up in a table
// computed once per number of groups instead of hashing each key; kgs is
// at least as long as buf. A source reads through it a batch at a time,
// neither copying nor hashing a key; a replay that wants a few key groups
// reads every record but touches the keys of those groups only.
type GroupReader interface {
	NextGroups(buf []job.Record, kgs []job.KeyGroup, groups int) (int, error)
}

// Skipper is implemented by the Readers that can pass over records
// without generating them (gen:): Skip(n) moves the reader n records on,
// so that the next record read is the one n places later. A source's
// replay that knows, from its log of key groups, which records its
// downstream needs generates those only.
type Skipper interface {
	Skip(n uint64)
}

// Stats describes a finite source as a whole.
type Stats struct {
	Records uint64 // records in all partitions
	First   int64  // smallest event time, ms (0 if there are no records)
	Last    int64  // largest event time, ms
}

// Sized is implemented by finite sources (trace: and rate:).
type Sized interface {
	Stats() Stats
	// PartitionLen is the number of records of partition p.
	PartitionLen(p int) uint64
}

// Open opens the source named by spec (see the package documentation for
// the forms). The empty spec is DefaultSpec. File traces are read and
// checked in full here, so a malformed line is reported by Open.
func Open(spec string, opt Options) (Source, error) {
	if spec == "" {
		spec = DefaultSpec
	}
	opt, err := opt.normalize(spec)
	if err != nil {
		return nil, err
	}
	scheme, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return nil, specErr(spec, "no scheme (want gen:NAME, trace:PATH?time=COL&key=COL or rate:PATH)")
	}
	switch scheme {
	case "gen":
		return openGen(spec, rest, opt)
	case "trace":
		return openTrace(spec, rest, opt)
	case "rate":
		return openRate(spec, rest, opt)
	}
	return nil, specErr(spec, "unknown scheme %q (want gen, trace or rate)", scheme)
}

// Warm builds what every generator source of spec in this process shares
// (the key table), so that a source opened later, a recovered one, reads
// at once. It does nothing for other schemes, and leaves errors to Open.
func Warm(spec string, opt Options) {
	if spec == "" || strings.HasPrefix(spec, "gen:") {
		_, _ = Open(spec, opt)
	}
}

func (o Options) normalize(spec string) (Options, error) {
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	if o.Partitions < 1 || o.Partitions > MaxPartitions {
		return o, specErr(spec, "partitions %d out of range 1..%d", o.Partitions, MaxPartitions)
	}
	if math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate < 0 {
		return o, specErr(spec, "rate %v: want a finite number >= 0", o.Rate)
	}
	if o.Rate == 0 {
		o.Rate = DefaultNominalRate
	}
	if o.Keys == 0 {
		o.Keys = DefaultKeys
	}
	if o.Keys < 1 || o.Keys > MaxKeys {
		return o, specErr(spec, "keys %d out of range 1..%d", o.Keys, MaxKeys)
	}
	if math.IsNaN(o.Speedup) || o.Speedup < 0 {
		return o, specErr(spec, "speedup %v: want a number >= 0", o.Speedup)
	}
	return o, nil
}

// params is the query of a spec; it remembers which parameters were used
// so that an unknown one is an error, not silently ignored.
type params struct {
	spec string
	vals url.Values
	used map[string]bool
}

// splitSpec cuts "PATH?QUERY" at the first '?'.
func splitSpec(spec, rest string) (string, *params, error) {
	path, query, _ := strings.Cut(rest, "?")
	p := &params{spec: spec, used: map[string]bool{}}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return "", nil, specErr(spec, "bad query: %v", err)
	}
	for k, v := range vals {
		if len(v) > 1 {
			return "", nil, specErr(spec, "parameter %q given %d times", k, len(v))
		}
	}
	p.vals = vals
	return path, p, nil
}

func (p *params) str(name string) (string, bool) {
	p.used[name] = true
	v, ok := p.vals[name]
	if !ok {
		return "", false
	}
	return v[0], true
}

func (p *params) float(name string, def, lo, hi float64) (float64, error) {
	s, ok := p.str(name)
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		return 0, specErr(p.spec, "%s=%q: want a number in %g..%g", name, s, lo, hi)
	}
	return f, nil
}

func (p *params) int(name string, def, lo, hi int) (int, error) {
	s, ok := p.str(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, specErr(p.spec, "%s=%q: want an integer in %d..%d", name, s, lo, hi)
	}
	return n, nil
}

// duration parses a Go duration ("120s", "2m"); a bare number is seconds.
func (p *params) duration(name string, def, lo, hi time.Duration) (time.Duration, error) {
	s, ok := p.str(name)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f >= 0 && f < 1e9 {
			d, err = time.Duration(f*float64(time.Second)), nil
		}
	}
	if err != nil || d < lo || d > hi || d%time.Millisecond != 0 {
		return 0, specErr(p.spec, "%s=%q: want a duration in %v..%v, whole milliseconds", name, s, lo, hi)
	}
	return d, nil
}

// done reports the first parameter that was never asked for.
func (p *params) done() error {
	var unknown []string
	for k := range p.vals {
		if !p.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	var known []string
	for k := range p.used {
		known = append(known, k)
	}
	sort.Strings(known)
	return specErr(p.spec, "unknown parameter %q (known: %s)", unknown[0], strings.Join(known, ", "))
}

func checkPartition(src Source, p int) error {
	if p < 0 || p >= src.Partitions() {
		return fmt.Errorf("%s: partition %d of %d: %w", src, p, src.Partitions(), ErrPartition)
	}
	return nil
}

// InputFile returns the file a trace: or rate: spec reads, and false for
// a spec that reads none (gen:). A node on another host fetches that file
// from the coordinator (node/store.go) and reads its copy (WithInputFile).
func InputFile(spec string) (string, bool) {
	scheme, rest, ok := strings.Cut(spec, ":")
	if !ok || (scheme != "trace" && scheme != "rate") {
		return "", false
	}
	path, _, _ := strings.Cut(rest, "?")
	return path, path != ""
}

// WithInputFile returns spec reading path instead of its own file, with
// the same parameters; a spec that reads no file is returned as it is.
func WithInputFile(spec, path string) string {
	old, ok := InputFile(spec)
	if !ok {
		return spec
	}
	scheme, rest, _ := strings.Cut(spec, ":")
	return scheme + ":" + path + strings.TrimPrefix(rest, old)
}
