package tui

import "time"

// RecoveryNumbers are a run's latest recovery as numbers, for a
// comparison that writes its own sentences from them (the tour's): the
// figures recoveryFigures prints, before they are printed.
type RecoveryNumbers struct {
	Global    bool // a rollback of the whole job to a global checkpoint
	Restarted int  // instances restarted: every one in a global rollback
	Instances int  // instances of the job
	// Replayed: records sent again to the lost instances from their
	// upstreams' backups, or, in a global rollback, read again by every
	// source since the global checkpoint.
	Replayed int64
	// LossAge is how old the victim's restored state was at the loss:
	// from the capture of the checkpoint it restored (the global one, in
	// a global rollback) to the loss; 0 and !AgeKnown if not known.
	LossAge  time.Duration
	AgeKnown bool
	Restored time.Duration // from the loss to the last instance restored; 0: not yet
	LagPeak  time.Duration // the highest output lag from the loss to 5 s after the recovery's end
	Done     bool          // the recovery is over
}

// Recovery is the latest recovery's numbers, victim the instance whose
// state age LossAge is (the one a kill aimed at); false before any
// recovery.
func (f *Figures) Recovery(victim string) (RecoveryNumbers, bool) {
	s := f.s
	r := s.latestRecovery()
	if r == nil {
		return RecoveryNumbers{}, false
	}
	n := RecoveryNumbers{Global: r.Global, Instances: len(s.instOrder), Done: r.Completed}
	if r.Global {
		n.Restarted, n.Replayed = len(s.instOrder), r.Records
	} else {
		n.Restarted = len(r.Insts)
		for _, ir := range r.Insts {
			n.Replayed += ir.Replayed
		}
	}
	if restored := r.restoredAt(); !restored.IsZero() {
		n.Restored = restored.Sub(r.start())
	}
	if !r.Lost.IsZero() {
		for _, c := range s.ckpts {
			if c.Status != "completed" || c.End.After(r.Lost) || c.ID <= 0 {
				continue
			}
			var mine bool
			if r.Global {
				mine = c.Global && c.ID == r.Ckpt
			} else if ir := findInst(r, victim); ir != nil {
				mine = c.Instance == victim && c.ID == ir.Ckpt
			}
			if mine {
				n.LossAge, n.AgeKnown = r.Lost.Sub(c.Trigger), true
			}
		}
	}
	if r.Completed {
		peak := 0.0
		for _, p := range s.tput {
			if !p.At.Before(r.start()) && !p.At.After(r.Done.Add(5*time.Second)) {
				peak = max(peak, p.Lag)
			}
		}
		n.LagPeak = time.Duration(peak * float64(time.Millisecond))
	}
	return n, true
}

func findInst(r *recovery, id string) *instRecovery {
	for _, ir := range r.Insts {
		if ir.Instance == id {
			return ir
		}
	}
	return nil
}
