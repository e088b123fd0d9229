package traces

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"spate/job"
)

// Rate traces (rate:PATH): per-second counts, records synthesised.
//
// Second s with count c gives c records at s·1000 + j·1000/c ms (j = 0..c-1).
// Records are numbered globally in order (k); record k goes to partition
// k mod P, so record i of partition p is global record i·P + p. Its key and
// value are drawn from the generator's distribution by hashing (seed, k).

// MaxCount is the largest count of one second in a rate trace.
const MaxCount = 1<<32 - 1

const rateBlock = 1024 // seconds per prefix-sum entry

// parseRates reads whitespace-separated counts from r; name is used in
// error messages ("NAME:LINE: token N: ...", N counting from 1 in the line).
func parseRates(r io.Reader, name string) ([]uint32, error) {
	var (
		counts  []uint32
		buf     = make([]byte, bufSize)
		line    = 1
		tok     = 0 // tokens finished on this line
		in      bool
		val     uint64
		bad     bool
		text    []byte // the token's first bytes, for messages
		tokLine int
	)
	finish := func() error {
		in = false
		tok++
		if bad || val > MaxCount {
			return &LineError{Path: name, Line: tokLine, Msg: fmt.Sprintf("token %d: %s", tok, countProblem(text, bad))}
		}
		counts = append(counts, uint32(val))
		return nil
	}
	for {
		n, rerr := r.Read(buf)
		for _, c := range buf[:n] {
			switch {
			case c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f':
				if in {
					if err := finish(); err != nil {
						return nil, err
					}
				}
				if c == '\n' {
					line++
					tok = 0
				}
			default:
				if !in {
					in, val, bad, text, tokLine = true, 0, false, text[:0], line
				}
				if len(text) < 40 {
					text = append(text, c)
				}
				if c >= '0' && c <= '9' {
					if val <= MaxCount {
						val = val*10 + uint64(c-'0')
					}
				} else {
					bad = true
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	if in {
		if err := finish(); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

func countProblem(text []byte, bad bool) string {
	q := strconv.Quote(string(text))
	if len(text) >= 40 {
		q = strconv.Quote(string(text)+"...") + " (cut)"
	}
	if !bad {
		return fmt.Sprintf("%s is too large for a count (max %d)", q, uint64(MaxCount))
	}
	if len(text) > 1 && text[0] == '-' {
		if _, err := strconv.ParseInt(string(text), 10, 64); err == nil {
			return fmt.Sprintf("%s is a negative count", q)
		}
	}
	return fmt.Sprintf("%s is not a count", q)
}

// rateSource is an open rate trace. It is immutable.
type rateSource struct {
	spec   string
	name   string // the file for messages
	format string
	parts  int
	seed   int64
	counts []uint32
	block  []uint64 // block[b]: records before second b·rateBlock
	total  uint64
	first  int // first second with records, or -1
	last   int // last second with records
	keys   int
	zipf   float64
	d      *keyDist
	base   uint64
}

func openRate(spec, rest string, opt Options) (Source, error) {
	path, q, err := splitSpec(spec, rest)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, specErr(spec, "no file (want rate:PATH)")
	}
	s := &rateSource{spec: spec, parts: opt.Partitions, seed: opt.Seed}
	if s.zipf, err = q.float("zipf", 1.1, 0, 10); err != nil {
		return nil, err
	}
	if s.keys, err = q.int("keys", opt.Keys, 1, MaxKeys); err != nil {
		return nil, err
	}
	if err := q.done(); err != nil {
		return nil, err
	}
	if err := s.load(path); err != nil {
		return nil, err
	}
	s.d = zipfDist(s.keys, s.zipf)
	s.base = streamBase(s.seed, saltRate)
	return s, nil
}

func (s *rateSource) load(path string) error {
	in, err := openInput(path, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", s.spec, err)
	}
	defer in.Close()
	s.name, s.format = in.name, in.format
	s.counts, err = parseRates(in.r, in.name)
	if err != nil {
		if _, ok := err.(*LineError); ok {
			return err
		}
		return in.readErr(err)
	}
	s.block = make([]uint64, 0, len(s.counts)/rateBlock+1)
	s.first, s.last = -1, -1
	for i, c := range s.counts {
		if i%rateBlock == 0 {
			s.block = append(s.block, s.total)
		}
		if c > 0 {
			if s.first < 0 {
				s.first = i
			}
			s.last = i
		}
		s.total += uint64(c)
	}
	return nil
}

func (s *rateSource) Partitions() int { return s.parts }
func (s *rateSource) Finite() bool    { return true }
func (s *rateSource) String() string  { return s.spec }

// Stats implements Sized.
func (s *rateSource) Stats() Stats {
	st := Stats{Records: s.total}
	if s.first >= 0 {
		st.First = int64(s.first) * 1000
		c := uint64(s.counts[s.last])
		st.Last = int64(s.last)*1000 + int64((c-1)*1000/c)
	}
	return st
}

// PartitionLen implements Sized.
func (s *rateSource) PartitionLen(p int) uint64 { return partLen(s.total, s.parts, p) }

// partLen is the number of k in [0, n) with k mod parts = p.
func partLen(n uint64, parts, p int) uint64 {
	if uint64(p) >= n {
		return 0
	}
	return (n-uint64(p)-1)/uint64(parts) + 1
}

func (s *rateSource) Open(p int, pos uint64) (Reader, error) {
	if err := checkPartition(s, p); err != nil {
		return nil, err
	}
	r := &rateReader{s: s, step: uint64(s.parts), k: s.total}
	if pos < partLen(s.total, s.parts, p) {
		r.k = pos*uint64(s.parts) + uint64(p)
		r.locate()
	}
	return r, nil
}

// rateReader reads one partition of a rate trace. Next does not allocate.
type rateReader struct {
	s          *rateSource
	k          uint64 // global index of the next record
	step       uint64
	sec        int            // second of record k
	start, end uint64         // records before sec, before sec+1
	gtab       []job.KeyGroup // NextGroups: the key groups of the keys, for gn groups
	gn         int
}

// locate finds the second of record k < total.
func (r *rateReader) locate() {
	s := r.s
	b := sort.Search(len(s.block), func(b int) bool { return s.block[b] > r.k }) - 1
	r.sec, r.start = b*rateBlock, s.block[b]
	r.end = r.start + uint64(s.counts[r.sec])
	for r.end <= r.k {
		r.sec++
		r.start = r.end
		r.end += uint64(s.counts[r.sec])
	}
}

func (r *rateReader) Next() (job.Record, bool, error) {
	rec, _, ok := r.next()
	return rec, ok, nil
}

// NextNumbered implements job.NumberedReader.
func (r *rateReader) NextNumbered() (job.Record, int, bool, error) {
	rec, j, ok := r.next()
	return rec, j, ok, nil
}

// Keys implements job.NumberedReader.
func (r *rateReader) Keys() int { return r.s.d.n }

// next returns the next record and the index of its key.
func (r *rateReader) next() (job.Record, int, bool) {
	s := r.s
	if r.k >= s.total {
		return job.Record{}, 0, false
	}
	for n := 0; r.end <= r.k; n++ {
		if n == 64 {
			r.locate()
			break
		}
		r.sec++
		r.start = r.end
		r.end += uint64(s.counts[r.sec])
	}
	c := r.end - r.start
	t := int64(r.sec)*1000 + int64((r.k-r.start)*1000/c)
	j, v := s.d.draw(mix(s.base + r.k*golden))
	r.k += r.step
	return job.Record{Key: s.d.key(j), Time: t, Value: v}, j, true
}

// NextBatch implements BatchReader.
func (r *rateReader) NextBatch(buf []job.Record) (int, error) {
	for n := range buf {
		rec, _, ok := r.next()
		if !ok {
			return n, nil
		}
		buf[n] = rec
	}
	return len(buf), nil
}

// NextGroups implements GroupReader.
func (r *rateReader) NextGroups(buf []job.Record, kgs []job.KeyGroup, groups int) (int, error) {
	if r.gn != groups {
		r.gtab, r.gn = r.s.d.groups(groups), groups
	}
	kgs = kgs[:len(buf)]
	for n := range buf {
		rec, j, ok := r.next()
		if !ok {
			return n, nil
		}
		buf[n], kgs[n] = rec, r.gtab[j]
	}
	return len(buf), nil
}

func (r *rateReader) Close() error { return nil }
