package traces

import (
	"runtime"
	"strconv"
	"sync"

	"spate/job"
)

// mix is the splitmix64 finaliser: a bijection of uint64 with good
// avalanche, the only source of "randomness" in this package.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

const golden = 0x9e3779b97f4a7c15

// Salts keep the hash streams of different uses apart.
const (
	saltRecord = 0x5bd1e9955bd1e995
	saltValue  = 0x2545f4914f6cdd1d
	saltBurst  = 0x94d049bb133111eb
	saltRate   = 0x7fb5d329728ea185 // the "partition" of a rate trace's global index
	saltTail   = 0x3c6ef372fe94f82b // a draw from the tail table (see keyDist)
)

// streamBase is the hash base of one record stream (a generator partition,
// or a rate trace's global sequence).
func streamBase(seed int64, stream uint64) uint64 {
	return mix(uint64(seed)^saltRecord) ^ mix(stream*golden+saltRecord)
}

// keyDist draws generator keys and values: Zipf-distributed keys from a
// precomputed table, so that drawing allocates nothing. It is safe for
// concurrent use: immutable but for the key-group tables it builds on
// demand, under gmu.
type keyDist struct {
	n     int
	keys  []byte // n keys of width w, back to back
	w     int
	alias []aliasEntry
	// Past splitAt keys, alias is two tables: the headKeys most likely
	// keys' buckets, then the others'. A draw picks the head's table with
	// probability head/2^32; mulHead maps [0, head) onto its buckets.
	head, mulHead uint64

	gmu  sync.Mutex
	gtab map[int][]job.KeyGroup // by number of groups: each key's group
}

// groups returns the key group of every key among g groups, by key index:
// built once per g (a few tens of ms for a million keys), so that a reader
// filtering by key group need not hash each key, nor even touch it.
func (d *keyDist) groups(g int) []job.KeyGroup {
	d.gmu.Lock()
	defer d.gmu.Unlock()
	if t, ok := d.gtab[g]; ok {
		return t
	}
	t := make([]job.KeyGroup, d.n)
	for j := range t {
		t[j] = job.GroupOf(d.key(j), g)
	}
	if d.gtab == nil {
		d.gtab = map[int][]job.KeyGroup{}
	}
	d.gtab[g] = t
	return t
}

// aliasEntry is one bucket of Vose's alias method: pick the bucket's own
// key if u < th, else alias.
type aliasEntry struct {
	th    uint32
	alias uint32
}

// key returns the key of index j, capacity-limited so an append by the
// caller cannot touch the next key.
func (d *keyDist) key(j int) []byte {
	a := j * d.w
	return d.keys[a : a+d.w : a+d.w]
}

// draw returns the key index and the value (1..100) of the record hashed to z.
func (d *keyDist) draw(z uint64) (int, int64) {
	var j int
	u := uint32(z)
	switch top := z >> 32; {
	case d.head == 0:
		j = int(top * uint64(d.n) >> 32)
	case top < d.head:
		j = int(top * d.mulHead >> 32)
	default:
		z2 := mix(z ^ saltTail)
		j = headKeys + int((z2>>32)*uint64(d.n-headKeys)>>32)
		u = uint32(z2)
	}
	e := d.alias[j]
	if u >= e.th {
		j = int(e.alias)
	}
	v := mix(z^saltValue) >> 32
	return j, int64(v*100>>32) + 1
}

// KeyName returns the generator's name for key index j among n keys:
// "k" and j zero-padded to at least 6 digits (k000042).
func KeyName(j, n int) string {
	return string(appendKeyName(nil, j, keyWidth(n)))
}

// appendKeyName appends KeyName's bytes for key index j and key width w.
func appendKeyName(b []byte, j, w int) []byte {
	b = append(b, 'k')
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(j), 10)
	for range w - 1 - len(d) {
		b = append(b, '0')
	}
	return append(b, d...)
}

func keyWidth(n int) int {
	d := len(strconv.Itoa(max(n-1, 0)))
	return 1 + max(d, 6)
}

type distKey struct {
	n int
	s float64
}

var (
	distMu    sync.Mutex
	distCache = map[distKey]*keyDist{}
)

// zipfDist returns the (cached) distribution of n keys with exponent s:
// key j has probability proportional to (j+1)^-s.
func zipfDist(n int, s float64) *keyDist {
	distMu.Lock()
	defer distMu.Unlock()
	if d, ok := distCache[distKey{n, s}]; ok {
		return d
	}
	d := &keyDist{n: n, w: keyWidth(n)}
	d.keys = make([]byte, 0, n*d.w)
	for j := range n {
		d.keys = appendKeyName(d.keys, j, d.w)
	}
	d.alias, d.head = buildAlias(n, s)
	if d.head > 0 {
		d.mulHead = headKeys << 32 / d.head
	}
	distCache[distKey{n, s}] = d
	return d
}

// Past splitAt keys, one table of a bucket per key no longer fits in the
// cache, and every draw missed it (a fifth of a whole job's CPU at 1 M
// keys). So the table is split: the headKeys most likely keys (90 % of the
// draws at the default exponent, 1.1), whose half a MiB of buckets stays
// cached, and the rest. Each is an exact alias table of its part, and the
// part is chosen by its share: the mixture is the same distribution, to
// the rounding of the share (2^-32) and of the choice of a bucket (2^-15,
// finer than one table's 2^-12 at 1 M keys). Up to splitAt keys the draws are those of one table, as
// before the split.
const (
	splitAt  = 1 << 18
	headKeys = 1 << 16
)

// buildAlias builds the alias table(s) for weights (j+1)^-s with
// deterministic arithmetic (see detmath.go), and the head's share of the
// draws in 2^-32 (0: one table).
func buildAlias(n int, s float64) ([]aliasEntry, uint64) {
	p := make([]float64, n)
	// The weights are independent: computed on every core (a restored
	// source builds this table before it reads, so its time is recovery
	// time), then summed in order, so the table is the same bit for bit.
	var wg sync.WaitGroup
	parts := min(runtime.GOMAXPROCS(0), max(n/(1<<16), 1))
	for i := range parts {
		wg.Go(func() {
			for j := i * n / parts; j < (i+1)*n/parts; j++ {
				p[j] = detPow(j+1, s)
			}
		})
	}
	wg.Wait()
	out := make([]aliasEntry, n)
	if n <= splitAt {
		vose(p, 0, out)
		return out, 0
	}
	head, all := sum(p[:headKeys]), sum(p)
	share := min(max(uint64(float64(head/all)*4294967296.0), 1), 1<<32-1)
	vose(p[:headKeys], 0, out[:headKeys])
	vose(p[headKeys:], headKeys, out[headKeys:])
	return out, share
}

func sum(p []float64) float64 {
	s := 0.0
	for _, x := range p {
		s += x
	}
	return s
}

// vose writes to out Vose's alias table for weights p (changing p) of
// the keys off, off+1, ... Its two work lists, the keys below their
// share and those at or above it, are stacks kept in one array, one
// growing from each end: a key is in at most one of them, so they never
// meet, and the table is what two growing lists gave, bit for bit
// (TestGenGolden), without the copies of their growth (a restored
// source builds the table before it reads). Keys fit an int32 (MaxKeys).
func vose(p []float64, off int, out []aliasEntry) {
	n := len(p)
	total := sum(p)
	for j := range p {
		p[j] = float64(p[j]*float64(n)) / total
	}
	st := make([]int32, n)
	small, large := 0, 0 // small: st[:small]; large: st[n-large:], its top at n-large
	push := func(j int) {
		if p[j] < 1 {
			st[small] = int32(j)
			small++
		} else {
			large++
			st[n-large] = int32(j)
		}
	}
	for j := n - 1; j >= 0; j-- {
		push(j)
	}
	for small > 0 && large > 0 {
		small--
		sj := int(st[small])
		lj := int(st[n-large])
		large--
		out[sj] = aliasEntry{th: threshold(p[sj]), alias: uint32(off + lj)}
		p[lj] = (p[lj] + p[sj]) - 1
		push(lj)
	}
	for _, j := range st[:small] {
		out[j] = aliasEntry{th: ^uint32(0), alias: uint32(off + int(j))}
	}
	for _, j := range st[n-large:] {
		out[j] = aliasEntry{th: ^uint32(0), alias: uint32(off + int(j))}
	}
}

func threshold(p float64) uint32 {
	if p <= 0 {
		return 0
	}
	if p >= 1 {
		return ^uint32(0)
	}
	return uint32(float64(p * 4294967296.0))
}
