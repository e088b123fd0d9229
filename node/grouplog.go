package node

import "spate/job"

// A source under --ft spate keeps, per partition, a log of the key group
// of every record it has read since the oldest marker a replay may start
// from: one byte a record (groupLate for a record its lateness clock
// dropped). A replay toward a downstream that owns a few key groups reads
// the log instead of the partition, and generates only the records the
// downstream needs, each at its position (traces.Skipper): at count
// parallelism 4 it used to generate four records for every one it sent,
// on the CPU a recovery's catch-up has to share.
//
// The log is written by the source's loop only. A replay's goroutine reads
// a view of it: the chunks that hold the positions from the view's start
// to its target, every one of them written before the loop handed the
// target over (openReplay, and the calls that move the target on). A
// chunk is never written again below what the loop has read, nor reused:
// one dropped from the log stays whole for a view that still holds it.

// groupLate is the log's byte for a record the lateness clock dropped: it
// has no sequence number and is never sent.
const groupLate = 0xff

// maxLoggedGroups is the most key groups a log can name in a byte.
const maxLoggedGroups = groupLate

const (
	groupLogShift = 16 // a chunk holds 64 Ki records
	groupLogChunk = 1 << groupLogShift
	// groupLogMax is at most how many chunks a partition's log keeps (64
	// Mi records, 64 MiB) when no trim comes (a downstream lost for
	// long): past it the oldest chunks no view holds go, and a replay
	// from before them reads the partition there as before.
	groupLogMax = 1024
)

// groupLog is one partition's log of key groups.
type groupLog struct {
	from   uint64   // the position of chunks[0][0]
	chunks [][]byte // full but the last
	n      int      // bytes written in the last chunk
}

func newGroupLog(pos uint64) *groupLog {
	return &groupLog{from: pos, chunks: [][]byte{make([]byte, groupLogChunk)}}
}

// add logs the record at the log's end: its key group, or that it was late.
func (g *groupLog) add(kg job.KeyGroup, late bool) {
	if g.n == groupLogChunk {
		g.chunks = append(g.chunks, make([]byte, groupLogChunk))
		g.n = 0
	}
	b := byte(kg)
	if late {
		b = groupLate
	}
	g.chunks[len(g.chunks)-1][g.n] = b
	g.n++
}

// end is the position after the last record logged.
func (g *groupLog) end() uint64 {
	return g.from + uint64(len(g.chunks)-1)<<groupLogShift + uint64(g.n)
}

// drop forgets the chunks wholly before pos, and keeps at most
// groupLogMax chunks, but never a chunk at or after pinned (where a
// running replay's view starts).
func (g *groupLog) drop(pos, pinned uint64) {
	k := 0
	for k < len(g.chunks)-1 {
		next := g.from + uint64(k+1)<<groupLogShift
		if next > pinned || next > pos && len(g.chunks)-k <= groupLogMax {
			break
		}
		k++
	}
	if k > 0 {
		g.chunks = append(g.chunks[:0:0], g.chunks[k:]...)
		g.from += uint64(k) << groupLogShift
	}
}

// view returns the chunks that hold positions [from, to): from must be
// in the log (at or after g.from), to at most its end. It shares the
// chunks, not the list.
func (g *groupLog) view(from, to uint64) groupView {
	if from < g.from || to > g.end() || from > to {
		return groupView{}
	}
	lo := int((from - g.from) >> groupLogShift)
	hi := int((to - g.from + groupLogChunk - 1) >> groupLogShift)
	return groupView{base: g.from + uint64(lo)<<groupLogShift, to: to,
		chunks: append([][]byte(nil), g.chunks[lo:hi]...)}
}

// groupView is a replay's view of a partition's log.
type groupView struct {
	base   uint64 // the position of chunks[0][0]
	to     uint64 // positions before it are in the view
	chunks [][]byte
}

// at is the log's byte for position pos; false if pos is not in the view.
func (v *groupView) at(pos uint64) (byte, bool) {
	if pos < v.base || pos >= v.to {
		return 0, false
	}
	i := pos - v.base
	return v.chunks[i>>groupLogShift][i&(groupLogChunk-1)], true
}
