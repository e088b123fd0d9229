package coord

import (
	"fmt"
	"strings"
	"time"

	"spate/events"
	"spate/job"
	eds "spate/slices"
)

// The auto-scaler (--autoscale): once a second, per keyed operator, it
// feeds slices.Decide (DS2's rule, see slices/doc.go) with the measured
// true processing rate (records processed per second of busy time, from
// the heartbeats' BusyUs), the input rate and the backlog, emits every
// changing decision (and an unchanged one every 10 s) as an `autoscale`
// event with its inputs and reason, and carries a change out through the
// same path as `spate scale`, under the same rules (scaleRefused): a
// change those rules refuse (a rescale or recovery in flight, the drain,
// --ft global or none) is said in the event with the reason, once when
// the reason is new and then once every 10 s while it stays the same. The
// backlog is counted in queued batches; it is converted to records at
// the operator's records per batch of the last second (an estimate).

// autoscaleState is the auto-scaler's memory; the event loop owns it.
type autoscaleState struct {
	last       time.Time
	in, busy   map[job.InstanceID]uint64
	backlog    map[string]float64
	lastChange map[string]time.Time
	lastEvent  map[string]time.Time
	lastWhy    map[string]string // why the last change was refused ("": it was not)
}

// autoscalePolicy is the policy of every operator: 1..8 instances (at most
// the key groups), 70% ± 10% target utilisation, 10 s cool-down.
func (c *core) autoscalePolicy() eds.Policy {
	p := eds.DefaultPolicy()
	p.Max = min(8, c.spec.Groups)
	p.CoolDown = 10 * time.Second
	p.DrainTime = 10 * time.Second
	return p
}

// autoscaleTick runs on the event loop's ticker.
func (c *core) autoscaleTick() {
	a := &c.eds.auto
	now := c.now
	if !c.cfg.Autoscale || !c.started || c.draining || c.plan == nil || now.Sub(a.last) < time.Second {
		return
	}
	if a.in == nil {
		a.in, a.busy = map[job.InstanceID]uint64{}, map[job.InstanceID]uint64{}
		a.backlog, a.lastChange, a.lastEvent = map[string]float64{}, map[string]time.Time{}, map[string]time.Time{}
		a.lastWhy = map[string]string{}
	}
	dt := now.Sub(a.last).Seconds()
	first := a.last.IsZero()
	a.last = now
	for _, op := range c.spec.Ops {
		if op.Kind != job.KindCount && op.Kind != job.KindRollup {
			continue
		}
		var n int
		var dIn, dBusy, batches float64
		for _, p := range c.plan.Instances {
			if p.Op != op.Name || len(p.Ranges) == 0 {
				continue
			}
			n++
			ns := c.nodes[p.Node]
			if ns == nil {
				continue
			}
			s, ok := ns.stats[p.ID]
			if !ok {
				continue
			}
			if in, ok := a.in[p.ID]; ok && s.In >= in && uint64(s.BusyUs) >= a.busy[p.ID] {
				dIn += float64(s.In - in)
				dBusy += float64(uint64(s.BusyUs)-a.busy[p.ID]) / 1e6
			}
			a.in[p.ID], a.busy[p.ID] = s.In, uint64(s.BusyUs)
			batches += float64(s.Backlog)
		}
		if first || n == 0 {
			continue
		}
		obs := eds.Observation{Op: op.Name, Parallelism: n, InputRate: dIn / dt}
		if dBusy > 0 {
			obs.TrueRate = dIn / dBusy // records per busy second of one instance, averaged over them
		}
		perBatch := 100.0
		if dIn > 0 {
			perBatch = max(dIn/dt/100, 1) // about one batch per flush (5-10 ms) at this rate
		}
		obs.Backlog = batches * perBatch
		obs.BacklogRate = (obs.Backlog - a.backlog[op.Name]) / dt
		a.backlog[op.Name] = obs.Backlog
		d, err := eds.Decide(obs, c.autoscalePolicy(), a.lastChange[op.Name], now)
		if err != nil {
			continue
		}
		var refused error
		if d.Changed() {
			refused = c.scaleRefused(op.Name, d.To) // the rules of `spate scale`, in every mode
		}
		why := ""
		if refused != nil {
			why = refused.Error()
		}
		// A change carried out is always said; a refused one when the
		// reason is new, then once every 10 s however its target moves,
		// as is a decision to hold.
		say := now.Sub(a.lastEvent[op.Name]) >= 10*time.Second
		switch {
		case refused != nil:
			say = say || why != a.lastWhy[op.Name]
		case d.Changed():
			say = true
		}
		if d.Changed() {
			a.lastWhy[op.Name] = why
		}
		if say {
			a.lastEvent[op.Name] = now
			text := fmt.Sprintf("autoscale %s", d)
			if why != "" {
				text += "; refused: " + strings.TrimPrefix(why, "scale: ")
			}
			c.emit(events.Autoscale, "", "", events.AutoscaleFields{Op: op.Name, From: d.From, To: d.To, Reason: d.Reason,
				TrueRate: obs.TrueRate, InputRate: obs.InputRate, Backlog: obs.Backlog, BacklogRate: obs.BacklogRate,
				Target: d.Target, Need: d.Need, Util: d.Util, Deferred: refused != nil, Refused: strings.TrimPrefix(why, "scale: ")},
				"%s", text)
		}
		if !d.Changed() || refused != nil {
			continue
		}
		if _, err := c.rescaleTo(op.Name, d.To, "autoscale: "+d.Reason); err != nil {
			c.emit(events.Error, "", "", events.ErrorFields{Op: op.Name}, "autoscale %s: %v", op.Name, err)
			continue
		}
		a.lastChange[op.Name] = now
		return // one rescale at a time
	}
}
