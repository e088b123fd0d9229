package node

import (
	"testing"

	"spate/job"
)

// TestGroupLog: a log gives back what was added at each position, through
// views that stay whole when their chunks are dropped from the log; a
// drop forgets only whole chunks before its position, never one a view's
// start pins, and past groupLogMax chunks the oldest unpinned ones.
func TestGroupLog(t *testing.T) {
	const start = 1000
	g := newGroupLog(start)
	byteAt := func(pos uint64) byte {
		if pos%97 == 0 {
			return groupLate
		}
		return byte(pos % 128)
	}
	add := func(n int) {
		for range n {
			pos := g.end()
			g.add(job.KeyGroup(pos%128), pos%97 == 0)
		}
	}
	add(3*groupLogChunk + 5)
	if got := g.end(); got != start+3*groupLogChunk+5 {
		t.Fatalf("end %d, want %d", got, start+3*groupLogChunk+5)
	}
	v := g.view(start+10, g.end())
	check := func(v groupView, from, to uint64) {
		t.Helper()
		for pos := from; pos < to; pos++ {
			if b, ok := v.at(pos); !ok || b != byteAt(pos) {
				t.Fatalf("at %d: %d %v, want %d", pos, b, ok, byteAt(pos))
			}
		}
		if _, ok := v.at(to); ok {
			t.Fatalf("at %d, the view's end: in the view", to)
		}
		if from > 0 {
			if _, ok := v.at(v.base - 1); ok {
				t.Fatalf("before the view's first chunk: in the view")
			}
		}
	}
	check(v, start+10, g.end())

	// Pinned at the view's start: the first chunk stays, whatever the position.
	g.drop(start+2*groupLogChunk+7, start+10)
	if g.from != start {
		t.Fatalf("a pinned chunk was dropped: the log starts at %d", g.from)
	}
	// Unpinned: the chunks wholly before the position go, not the one it is in.
	g.drop(start+2*groupLogChunk+7, ^uint64(0))
	if g.from != start+2*groupLogChunk {
		t.Fatalf("the log starts at %d, want %d", g.from, start+2*groupLogChunk)
	}
	check(v, start+10, v.to) // the view holds its chunks still
	if w := g.view(start+10, g.end()); w.chunks != nil {
		t.Fatal("a view of positions no longer in the log")
	}
	add(groupLogChunk)
	check(g.view(g.from, g.end()), g.from, g.end())

	// No trim comes: past groupLogMax chunks the oldest go, down to a
	// pinned one. (The chunks share one array: only their number counts.)
	full := make([]byte, groupLogChunk)
	for len(g.chunks) < groupLogMax+3 {
		g.chunks = append(g.chunks[:len(g.chunks)-1], full, g.chunks[len(g.chunks)-1])
	}
	from := g.from
	g.drop(from, from+groupLogChunk)
	if g.from != from+groupLogChunk || len(g.chunks) != groupLogMax+2 {
		t.Fatalf("pinned after the first chunk: the log starts at %d with %d chunks, want %d with %d", g.from, len(g.chunks), from+groupLogChunk, groupLogMax+2)
	}
	g.drop(from, ^uint64(0))
	if len(g.chunks) != groupLogMax || g.from != from+3*groupLogChunk {
		t.Fatalf("%d chunks kept from %d, want %d from %d", len(g.chunks), g.from, groupLogMax, from+3*groupLogChunk)
	}
}
