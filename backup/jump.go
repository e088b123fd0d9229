package backup

import "spate/job"

// Jump makes (p, kg) continue at seq to+1: every record up to to is
// released (as by Trim) and the next Append of (p, kg) must be to+1. It is
// for a producer that comes back to this buffer after another instance
// went on numbering it (a key group moved away and back by rescales): the
// numbers in between are in that instance's backup, not in this one. A
// to at or below High does nothing (the stream already continues there).
// It returns the bytes released. A Replay after a position from the
// old High on is not refused for lack of the records in between: they
// were never here (the other instance replays them).
func (b *Buffer) Jump(p job.Producer, kg job.KeyGroup, to uint64) (freedBytes int64) {
	if to <= b.High(p, kg) {
		return 0
	}
	from := b.High(p, kg)
	freed := b.Trim(p, kg, to)
	if st := b.stream(p, kg); st != nil && st.high < to {
		st.high = to
		st.jumpFrom, st.jumpTo = from, to
		if lg := b.log(kg); lg != nil {
			lg.dirty = true
		}
	}
	return freed
}

// elsewhere reports whether every record from a+1 up to the stream's low
// was numbered by another instance (its last Jump): a replay after a
// lacks nothing this buffer ever held. Not persisted: a restored buffer
// refuses such a replay (the weaker answer).
func (st *stream) elsewhere(a uint64) bool {
	return st.jumpTo != 0 && a >= st.jumpFrom && st.low <= st.jumpTo
}

// JumpRec is a stream's last Jump, for the instance's checkpoint: marks do
// not carry jumps, so a restored buffer would refuse a replay across one
// (the weaker answer). The instance writes Jumps beside its marks and
// gives them back with RestoreJumps.
type JumpRec struct {
	P    job.Producer `json:"p"`
	KG   job.KeyGroup `json:"kg"`
	From uint64       `json:"from"`
	To   uint64       `json:"to"`
}

// Jumps lists the last Jump of every stream that has one.
func (b *Buffer) Jumps() []JumpRec {
	var out []JumpRec
	for _, lg := range b.logs {
		if lg == nil {
			continue
		}
		for _, st := range lg.streams {
			if st.jumpTo != 0 {
				out = append(out, JumpRec{P: st.p, KG: lg.kg, From: st.jumpFrom, To: st.jumpTo})
			}
		}
	}
	return out
}

// RestoreJumps gives a restored buffer the jumps its checkpoint recorded:
// a Replay across one is answered as the jumped buffer answered it.
// Streams the buffer no longer holds are skipped.
func (b *Buffer) RestoreJumps(js []JumpRec) {
	for _, j := range js {
		if st := b.stream(j.P, j.KG); st != nil && st.jumpTo == 0 {
			st.jumpFrom, st.jumpTo = j.From, j.To
		}
	}
}
