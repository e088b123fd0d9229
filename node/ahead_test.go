package node

import (
	"testing"

	"spate/job"
	"spate/wire"
)

// A restored instance numbers again records its old generation sent: the
// downstream's resume positions say which, and those are not sent.
func TestRegeneratedRecordsTheDownstreamHasAreNotSent(t *testing.T) {
	in := &instance{spec: &job.Spec{Groups: 4}, ports: []*port{{seqs: map[job.Producer][]uint64{7: {5, 5, 0, 0}}}}}
	l := &link{}
	in.markAhead(0, l, []wire.Position{
		{P: 7, KG: 0, Seq: 8}, // ahead by 3
		{P: 7, KG: 1, Seq: 5}, // level: nothing known
		{P: 9, KG: 2, Seq: 2}, // a producer we have not numbered yet
		{P: 7, KG: 9, Seq: 4}, // a key group out of range: ignored
	})
	if l.aheadN != 2 {
		t.Fatalf("aheadN = %d, want 2", l.aheadN)
	}
	want := []struct {
		p     job.Producer
		kg    job.KeyGroup
		seq   uint64
		known bool
	}{
		{7, 1, 6, false}, {7, 0, 6, true}, {7, 0, 7, true}, {9, 2, 1, true}, {7, 0, 8, true},
		{7, 0, 9, false}, {9, 2, 2, true}, {9, 2, 3, false},
	}
	for _, w := range want {
		if got := l.ahead != nil && l.knownTo(w.p, w.kg, w.seq); got != w.known {
			t.Fatalf("record %d of (%d, %d): known %v, want %v", w.seq, w.p, w.kg, got, w.known)
		}
	}
	if l.ahead != nil || l.aheadN != 0 {
		t.Fatalf("the marks outlived the records they cover: %v (%d)", l.ahead, l.aheadN)
	}
	in.markAhead(0, l, nil)
	if l.ahead != nil {
		t.Fatal("a reconnect without positions kept old marks")
	}
}
