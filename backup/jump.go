package backup

import "spate/job"

// Jump makes (p, kg) continue at seq to+1: every record up to to is
// released (as by Trim) and the next Append of (p, kg) must be to+1. It is
// for a producer that comes back to this buffer after another instance
// went on numbering it (a key group moved away and back by rescales): the
// numbers in between are in that instance's backup, not in this one. A
// to at or below High does nothing (the stream already continues there).
// It returns the bytes released.
func (b *Buffer) Jump(p job.Producer, kg job.KeyGroup, to uint64) (freedBytes int64) {
	if to <= b.High(p, kg) {
		return 0
	}
	freed := b.Trim(p, kg, to)
	if st := b.stream(p, kg); st != nil && st.high < to {
		st.high = to
		if lg := b.log(kg); lg != nil {
			lg.dirty = true
		}
	}
	return freed
}
