package backup

import (
	"testing"

	"spate/job"
)

func TestJumpContinuesAndRestores(t *testing.T) {
	b, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, kg := job.MakeProducer(1, 5), job.KeyGroup(3)
	rec := job.Record{Key: []byte("k"), Time: 1, Value: 1}
	for s := uint64(1); s <= 3; s++ {
		if err := b.Append(p, kg, s, rec); err != nil {
			t.Fatal(err)
		}
	}
	m1, err := b.MarkFull()
	if err != nil {
		t.Fatal(err)
	}
	b.Jump(p, kg, 10)
	if err := b.Append(p, kg, 11, rec); err != nil {
		t.Fatalf("append after jump: %v", err)
	}
	if b.Low(p, kg) != 10 || b.High(p, kg) != 11 {
		t.Fatalf("low %d high %d, want 10 11", b.Low(p, kg), b.High(p, kg))
	}
	m2 := b.Mark()
	r, err := Restore(DefaultConfig(), [][]byte{m1, m2})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	var got []uint64
	if err := r.Replay(kg, map[job.Producer]uint64{p: 10}, func(_ job.Producer, _ job.KeyGroup, seq uint64, _ job.Record) error {
		got = append(got, seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 11 {
		t.Fatalf("replayed %v, want [11]", got)
	}
	if err := r.Append(p, kg, 12, rec); err != nil {
		t.Fatalf("append after restore: %v", err)
	}
}

// TestReplayAfterAJumpLacksNothing: records 4..10 were numbered by another
// instance; a receiver asking from 6 (it applied 5 from that one) gets 11
// on from here, and one asking from 2 (records 3 was held here, released by
// the jump) is refused.
func TestReplayAfterAJumpLacksNothing(t *testing.T) {
	b, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, q, kg := job.MakeProducer(1, 5), job.MakeProducer(1, 6), job.KeyGroup(3)
	rec := job.Record{Key: []byte("k"), Time: 1, Value: 1}
	for s := uint64(1); s <= 3; s++ {
		if err := b.Append(p, kg, s, rec); err != nil {
			t.Fatal(err)
		}
		if err := b.Append(q, kg, s, rec); err != nil {
			t.Fatal(err)
		}
	}
	b.Jump(p, kg, 10)
	if err := b.Append(p, kg, 11, rec); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	err = b.Replay(kg, map[job.Producer]uint64{p: 5, q: 1}, func(x job.Producer, _ job.KeyGroup, seq uint64, _ job.Record) error {
		got = append(got, seq)
		return nil
	})
	if err != nil || len(got) != 3 || got[0] != 2 || got[2] != 11 {
		t.Fatalf("replay after 5 (p) and 1 (q): %v %v, want [2 3 11]", got, err)
	}
	if err := b.Replay(kg, map[job.Producer]uint64{p: 2}, func(job.Producer, job.KeyGroup, uint64, job.Record) error { return nil }); err == nil {
		t.Fatal("replay after 2: records 3 was released by the jump, want ErrTrimmed")
	}
}

// A restored buffer given the jumps of its checkpoint answers a replay
// across one as the jumped buffer did; without them it refuses it (the
// soak: a new owner restored after a move refused a sink restored from
// before the move, whose records in between the old owner replays).
func TestRestoredJumpsAnswerAsBefore(t *testing.T) {
	b, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, kg := job.MakeProducer(1, 5), job.KeyGroup(3)
	rec := job.Record{Key: []byte("k"), Time: 1, Value: 1}
	b.Jump(p, kg, 10)
	for s := uint64(11); s <= 12; s++ {
		if err := b.Append(p, kg, s, rec); err != nil {
			t.Fatal(err)
		}
	}
	m, err := b.MarkFull()
	if err != nil {
		t.Fatal(err)
	}
	js := b.Jumps()
	if len(js) != 1 || js[0] != (JumpRec{P: p, KG: kg, From: 0, To: 10}) {
		t.Fatalf("jumps %v, want one from 0 to 10", js)
	}
	none := func(job.Producer, job.KeyGroup, uint64, job.Record) error { return nil }
	for _, give := range []bool{false, true} {
		r, err := Restore(DefaultConfig(), [][]byte{m})
		if err != nil {
			t.Fatal(err)
		}
		if give {
			r.RestoreJumps(js)
		}
		err = r.Replay(kg, map[job.Producer]uint64{p: 4}, none)
		if give && err != nil {
			t.Fatalf("with its jumps: %v", err)
		}
		if !give && err == nil {
			t.Fatal("without its jumps, a replay across one is not refused (the weaker answer)")
		}
	}
}
