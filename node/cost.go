package node

import "time"

// A simulated processing cost (`up --cost count=50us`): every record an
// instance of the operator applies costs that much time, spent asleep, so
// that an operator is "heavy" (a low true processing rate, counted as busy
// time in the heartbeats) without taking CPU from the other processes of
// a shared machine. The auto-scaler's tests use it to need more instances
// at a low input rate. The debt is slept off a millisecond at a time,
// inside the batch being handled.

// simCost is an instance's cost per record and the time it owes.
type simCost struct {
	init bool
	per  time.Duration
	debt time.Duration
}

// spend adds one record's cost and sleeps once a millisecond is owed.
func (in *instance) spend() {
	c := &in.cost
	if !c.init {
		c.init = true
		if in.plan != nil {
			c.per = time.Duration(in.plan.Cost[in.spec.Ops[in.opIdx].Name])
		}
	}
	if c.per <= 0 {
		return
	}
	c.debt += c.per
	if c.debt >= time.Millisecond {
		t0 := time.Now()
		time.Sleep(c.debt)                     // the simulated work, by design
		c.debt = max(c.debt-time.Since(t0), 0) // an oversleep is no credit: at most 1/per records a second
	}
}
