package bench

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"spate/events"
)

// Untouched is what a recovery did to the instances it did not have to
// recover.
type Untouched struct {
	Restarted float64 `json:"restarted"` // instances restarted by the recovery
	Instances float64 `json:"instances"` // of the job's
	// MinRate is the lowest input rate of an instance not restarted, in
	// the metrics covering the recovery (from the kill until a sample
	// after the output lag was normal again), as a fraction of its median
	// before the kill; -1 if every instance was restarted.
	MinRate float64 `json:"min_rate"`
}

// untouched finds, in a run's events, which instances the recovery from
// its kill restarted (one recovery_placed each; one for the whole job
// under global) and how the others' input rates held up until recoveryS
// after the kill. Metrics come about once a second, each covering the
// second before it.
func untouched(r *run, recoveryS float64) Untouched {
	u := Untouched{MinRate: -1}
	if r.info == nil || r.info.JobStart == nil || r.killAtMs <= 0 {
		return u
	}
	kill := r.info.JobStart.Add(time.Duration(r.killAtMs) * time.Millisecond)
	end := kill.Add(time.Duration((recoveryS + 1.1) * float64(time.Second)))
	warm := r.info.JobStart.Add(2 * time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	all, restarted := map[string]bool{}, map[string]bool{}
	before := map[string][]float64{}
	for _, e := range r.evs {
		switch {
		case e.Kind == events.InstancePlaced && e.Time.Before(kill):
			all[e.Instance] = true
		case e.Kind == events.RecoveryPlaced && !e.Time.Before(kill) && e.Time.Before(end):
			if e.Instance == "" {
				maps.Copy(restarted, all)
			} else {
				restarted[e.Instance] = true
			}
		case e.Kind == events.Metrics && e.Instance != "" && e.Time.After(warm) && e.Time.Before(kill):
			if f, ok := e.Fields.(events.MetricsFields); ok {
				before[e.Instance] = append(before[e.Instance], f.InRate)
			}
		}
	}
	u.Restarted, u.Instances = float64(len(restarted)), float64(len(all))
	for _, e := range r.evs {
		if e.Kind != events.Metrics || e.Instance == "" || restarted[e.Instance] || !e.Time.After(kill) || e.Time.After(end) {
			continue
		}
		m, ok := e.Fields.(events.MetricsFields)
		if b := before[e.Instance]; ok && len(b) > 0 && median(b) > 0 {
			if f := m.InRate / median(b); u.MinRate < 0 || f < u.MinRate {
				u.MinRate = f
			}
		}
	}
	return u
}

func (u Untouched) String() string {
	if u.MinRate < 0 {
		return fmt.Sprintf("restarted %.0f of %.0f instances", u.Restarted, u.Instances)
	}
	return fmt.Sprintf("restarted %.0f of %.0f instances; the others' input never below %.0f%% of before", u.Restarted, u.Instances, 100*u.MinRate)
}

// Phases are the moments of one recovery, in ms after the kill; -1 where
// a run has no such moment.
type Phases struct {
	Detected float64 `json:"detected"`
	Restored float64 `json:"restored"`
	Loaded   float64 `json:"loaded"` // an early restore's state whole (recovery_loaded); -1 under global
	CaughtUp float64 `json:"caught_up"`
}

// phases finds, in a run's events, the moments of the recovery from its
// kill: the first node_lost after it, the last recovery_restored, the
// last recovery_loaded (spate's early restores) and the last
// recovery_done of that recovery (before anything is lost again).
func phases(r *run) Phases {
	ph := Phases{Detected: -1, Restored: -1, Loaded: -1, CaughtUp: -1}
	if r.info == nil || r.info.JobStart == nil || r.killAtMs <= 0 {
		return ph
	}
	kill := r.info.JobStart.Add(time.Duration(r.killAtMs) * time.Millisecond)
	ms := func(t time.Time) float64 { return float64(t.Sub(kill).Microseconds()) / 1000 }
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evs {
		if e.Time.Before(kill) {
			continue
		}
		switch e.Kind {
		case events.NodeLost:
			if ph.Detected >= 0 {
				return ph // a later loss: another recovery
			}
			ph.Detected = ms(e.Time)
		case events.RecoveryRestored:
			if ph.Detected >= 0 {
				ph.Restored = ms(e.Time)
			}
		case events.RecoveryLoaded:
			if ph.Detected >= 0 {
				ph.Loaded = ms(e.Time)
			}
		case events.RecoveryDone:
			if ph.Detected >= 0 {
				ph.CaughtUp = ms(e.Time)
			}
		}
	}
	return ph
}

// medianPhases is the median of each phase over the runs that have it.
func medianPhases(ps []Phases) Phases {
	pick := func(f func(Phases) float64) float64 {
		var xs []float64
		for _, p := range ps {
			if v := f(p); v >= 0 {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return -1
		}
		return median(xs)
	}
	return Phases{
		Detected: pick(func(p Phases) float64 { return p.Detected }),
		Restored: pick(func(p Phases) float64 { return p.Restored }),
		Loaded:   pick(func(p Phases) float64 { return p.Loaded }),
		CaughtUp: pick(func(p Phases) float64 { return p.CaughtUp }),
	}
}

// medianUntouched is the median of each figure over the rounds (MinRate:
// over the rounds that have one).
func medianUntouched(us []Untouched) Untouched {
	var r, n, m []float64
	for _, u := range us {
		r, n = append(r, u.Restarted), append(n, u.Instances)
		if u.MinRate >= 0 {
			m = append(m, u.MinRate)
		}
	}
	out := Untouched{Restarted: median(r), Instances: median(n), MinRate: -1}
	if len(m) > 0 {
		out.MinRate = median(m)
	}
	return out
}

func (p Phases) String() string {
	at := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf("%.0fms", v)
	}
	whole := ""
	if p.Loaded >= 0 {
		whole = ", state whole " + at(p.Loaded)
	}
	return fmt.Sprintf("detected %s, restored %s%s, caught up %s", at(p.Detected), at(p.Restored), whole, at(p.CaughtUp))
}

// Restored is a checkpoint a recovery restored.
type Restored struct {
	Instance   string `json:"instance"`   // "": every instance (a global rollback)
	Node       string `json:"node"`       // where the instance was placed ("" for a global rollback)
	Checkpoint uint64 `json:"checkpoint"` // 0: none yet, from the start
	Files      int    `json:"files"`      // the chain it loaded: a full checkpoint and the deltas on it (global: one file an instance)
	// AgeS is how old the restored state was at the kill: from its
	// capture (spate: the checkpoint's completion less its capture to
	// durable time) or the checkpoint's trigger (global), or from the
	// job's start for a restore from nothing; -1 if not known.
	AgeS     float64 `json:"age_s"`
	Latest   bool    `json:"latest"` // the latest checkpoint complete at the kill, or one completed since
	Fellback bool    `json:"fellback"`
}

func (rs Restored) String() string {
	age := "age unknown"
	if rs.AgeS >= 0 {
		age = fmt.Sprintf("%.2fs old", rs.AgeS)
	}
	var b strings.Builder
	switch {
	case rs.Instance == "" && rs.Checkpoint == 0:
		fmt.Fprintf(&b, "the start (no global checkpoint; %s)", age)
	case rs.Instance == "":
		fmt.Fprintf(&b, "global checkpoint %d (%s)", rs.Checkpoint, age)
	case rs.Checkpoint == 0:
		fmt.Fprintf(&b, "%s from the start", rs.Instance)
	default:
		files := "a full checkpoint"
		switch {
		case rs.Files == 2:
			files = "a full and a delta"
		case rs.Files > 2:
			files = fmt.Sprintf("a full and %d deltas", rs.Files-1)
		}
		fmt.Fprintf(&b, "%s %d (%s, %s)", rs.Instance, rs.Checkpoint, age, files)
	}
	if !rs.Latest && rs.Checkpoint > 0 {
		b.WriteString(" NOT the latest")
	}
	if rs.Fellback {
		b.WriteString(" (a fallback: the latest was unusable)")
	}
	return b.String()
}

// killTime is the moment the run's killed node died, and whether there
// was a kill.
func (r *run) killTime() (time.Time, bool) {
	if r.info == nil || r.info.JobStart == nil || r.killAtMs <= 0 {
		return time.Time{}, false
	}
	return r.info.JobStart.Add(time.Duration(r.killAtMs) * time.Millisecond), true
}

// recoveryActs finds, in a run's events, what the recovery from its kill
// did: the instances the killed node hosted (the first node_lost after
// it), the instances restarted (one recovery_placed each; one for the
// whole job under global), the checkpoints they restored, how many
// nodes were lost from the kill on (1 unless another was taken for
// lost), and the job's instances.
func recoveryActs(r *run) (lost, restarted []string, restored []Restored, losses, instances int) {
	kill, ok := r.killTime()
	if !ok {
		return nil, nil, nil, 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	all := map[string]bool{}
	re := map[string]bool{}
	type done struct {
		at      time.Time
		totalUs int64
		tookMs  int64
	}
	ckpts := map[string]map[uint64]done{} // instance ("" global) -> id -> completion
	latest := map[string]uint64{}
	placed := map[string]*Restored{}
	var order []string
	for _, e := range r.evs {
		before := e.Time.Before(kill)
		switch e.Kind {
		case events.InstancePlaced:
			if before {
				all[e.Instance] = true
			}
		case events.Checkpoint:
			// Those completed after the kill too: a checkpoint the killed
			// node made durable as it died is restorable, and newer than
			// any completed before.
			f, _ := e.Fields.(events.CheckpointFields)
			if f.ID == 0 {
				break
			}
			inst := e.Instance
			if f.Global {
				inst = ""
			}
			if ckpts[inst] == nil {
				ckpts[inst] = map[uint64]done{}
			}
			if _, ok := ckpts[inst][f.ID]; !ok {
				ckpts[inst][f.ID] = done{at: e.Time, totalUs: f.TotalUs, tookMs: f.TookMs}
			}
			if before {
				latest[inst] = max(latest[inst], f.ID)
			}
		case events.NodeLost:
			if before {
				break
			}
			losses++
			if f, ok := e.Fields.(events.NodeLostFields); ok && losses == 1 {
				for _, id := range f.Instances {
					lost = append(lost, string(id))
				}
			}
		case events.RecoveryPlaced:
			if before {
				break
			}
			f, _ := e.Fields.(events.RecoveryPlacedFields)
			if e.Instance == "" {
				maps.Copy(re, all)
				if placed[""] == nil {
					order = append(order, "")
				}
				placed[""] = &Restored{Checkpoint: f.Checkpoint, Files: 1}
				break
			}
			re[e.Instance] = true
			if placed[e.Instance] == nil {
				order = append(order, e.Instance)
			}
			placed[e.Instance] = &Restored{Instance: e.Instance, Node: e.Node, Files: len(f.Chain)}
		case events.RecoveryRestored:
			if before {
				break
			}
			f, _ := e.Fields.(events.RecoveryRestoredFields)
			if p := placed[e.Instance]; p != nil {
				p.Checkpoint, p.Fellback = f.Checkpoint, f.Fellback
			}
		}
	}
	for _, id := range order {
		p := *placed[id]
		p.AgeS = -1
		p.Latest = p.Checkpoint >= latest[p.Instance]
		if p.Checkpoint == 0 {
			p.AgeS = float64(r.killAtMs) / 1000
		} else if d, ok := ckpts[p.Instance][p.Checkpoint]; ok {
			from := d.at.Add(-time.Duration(d.totalUs) * time.Microsecond)
			if p.Instance == "" {
				from = d.at.Add(-time.Duration(d.tookMs) * time.Millisecond)
			}
			p.AgeS = kill.Sub(from).Seconds()
		}
		restored = append(restored, p)
	}
	restarted = slices.Sorted(maps.Keys(re))
	sort.Strings(lost)
	return lost, restarted, restored, losses, len(all)
}

// touchedGroups marks count's key groups that the loss of the instances
// lost touched: those whose count instance or sink instance was among
// them (a count result goes from its key group's count instance to the
// sink instance of the same key group). The key groups are read from the
// instance_placed events before the kill.
func touchedGroups(r *run, lost []string, groups int) []bool {
	kill, ok := r.killTime()
	touched := make([]bool, groups)
	if !ok {
		return touched
	}
	gone := map[string]bool{}
	for _, id := range lost {
		gone[id] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evs {
		if e.Kind != events.InstancePlaced || !e.Time.Before(kill) || !gone[e.Instance] {
			continue
		}
		f, ok := e.Fields.(events.InstancePlacedFields)
		if !ok || (f.Op != "count" && f.Op != "sink") {
			continue
		}
		for _, rg := range f.Ranges {
			for g := rg.Lo; g < rg.Hi && int(g) < groups; g++ {
				touched[g] = true
			}
		}
	}
	return touched
}

// UntouchedOutput is what count's key groups that a failure did not
// touch wrote while the job recovered from it, measured at the sinks'
// files (outputLog): new results only, per key group.
type UntouchedOutput struct {
	KeyGroups int `json:"key_groups"` // count's key groups untouched: neither their count nor their sink instance was on the killed node
	Of        int `json:"of"`         // count's key groups
	// SpanS is the window the rate is measured over: from the kill, the
	// configuration's own time to normal output lag rounded up to whole
	// event-time windows (a key group writes its results once a window,
	// so a shorter span would count a firing or none by chance).
	SpanS float64 `json:"span_s"`
	// Rate is their results per second in the span against before the
	// kill (over the whole windows from the warm-up to the kill), all of
	// them together; MinRate the lowest of one key group's. -1: unknown.
	Rate    float64 `json:"rate"`
	MinRate float64 `json:"min_rate"`
	// LateMs is the most that a window of theirs, due from a window before
	// the kill to the end of the span, was written later than its key
	// group's usual (the median, before the kill, of the time from the
	// window's end to its last result written); NormalLateMs the same
	// over the windows before the kill: how much it moves with nothing
	// wrong. -1: unknown.
	LateMs       float64 `json:"late_ms"`
	NormalLateMs float64 `json:"normal_late_ms"`
}

func (u UntouchedOutput) String() string {
	if u.Rate < 0 {
		return fmt.Sprintf("untouched key groups %d of %d: output not measured", u.KeyGroups, u.Of)
	}
	return fmt.Sprintf("untouched key groups %d of %d: results written in the %.0fs from the kill %.0f%% of their rate before (lowest key group %.0f%%), windows written up to %.0fms later than usual (before the kill: up to %.0fms)",
		u.KeyGroups, u.Of, u.SpanS, 100*u.Rate, 100*u.MinRate, u.LateMs, u.NormalLateMs)
}

// untouchedOutput measures what the key groups not touched wrote: start
// is the job's start, and killMs, spanMs, windowMs and warmMs are in ms
// after it (spanMs a whole number of windows).
func untouchedOutput(l *outputLog, start time.Time, killMs, spanMs, windowMs, warmMs int64, touched []bool) UntouchedOutput {
	u := UntouchedOutput{Of: len(touched), SpanS: float64(spanMs) / 1000, Rate: -1, MinRate: -1, LateMs: -1, NormalLateMs: -1}
	for _, t := range touched {
		if !t {
			u.KeyGroups++
		}
	}
	n := (killMs - warmMs) / windowMs
	if l == nil || n < 1 || spanMs <= 0 || u.KeyGroups == 0 {
		return u
	}
	from := killMs - n*windowMs
	ms := func(t time.Time) int64 { return t.Sub(start).Milliseconds() }
	var sumBefore, sumDuring float64
	late, normal := -1.0, -1.0
	for g := range l.kgs {
		if g >= len(touched) || touched[g] {
			continue
		}
		k := &l.kgs[g]
		var before, during float64
		for _, a := range k.arrivals {
			switch t := ms(a.at); {
			case t >= from && t < killMs:
				before += float64(a.n)
			case t >= killMs && t < killMs+spanMs:
				during += float64(a.n)
			}
		}
		before /= float64(n*windowMs) / 1000
		during /= float64(spanMs) / 1000
		sumBefore, sumDuring = sumBefore+before, sumDuring+during
		if before > 0 {
			if f := during / before; u.MinRate < 0 || f < u.MinRate {
				u.MinRate = f
			}
		}
		// The key group's usual delay from a window's end (event time)
		// to its last result written (wall time since the start): the
		// two clocks differ by a constant, which the median takes with it.
		var delays []float64
		for _, w := range k.windows {
			if t := ms(w.last); t >= from && t < killMs {
				delays = append(delays, float64(t-(w.start+windowMs)))
			}
		}
		if len(delays) == 0 {
			continue
		}
		usual := median(delays)
		// Earlier than usual counts as on time: 0, not a negative that
		// would pass for the unknown -1.
		for _, d := range delays {
			normal = max(normal, d-usual, 0)
		}
		for _, w := range k.windows {
			due := float64(w.start+windowMs) + usual
			if due >= float64(killMs-windowMs) && due < float64(killMs+spanMs) {
				late = max(late, float64(ms(w.last))-due, 0)
			}
		}
	}
	if sumBefore > 0 {
		u.Rate = sumDuring / sumBefore
	}
	u.LateMs, u.NormalLateMs = late, normal
	return u
}

// medianOutput is the median of each figure over the rounds that have it.
func medianOutput(us []UntouchedOutput) UntouchedOutput {
	if len(us) == 0 {
		return UntouchedOutput{Rate: -1, MinRate: -1, LateMs: -1, NormalLateMs: -1}
	}
	pick := func(f func(UntouchedOutput) float64) float64 {
		var xs []float64
		for _, u := range us {
			if v := f(u); v >= 0 {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return -1
		}
		return median(xs)
	}
	return UntouchedOutput{
		KeyGroups:    int(pick(func(u UntouchedOutput) float64 { return float64(u.KeyGroups) })),
		Of:           us[0].Of,
		SpanS:        pick(func(u UntouchedOutput) float64 { return u.SpanS }),
		Rate:         pick(func(u UntouchedOutput) float64 { return u.Rate }),
		MinRate:      pick(func(u UntouchedOutput) float64 { return u.MinRate }),
		LateMs:       pick(func(u UntouchedOutput) float64 { return u.LateMs }),
		NormalLateMs: pick(func(u UntouchedOutput) float64 { return u.NormalLateMs }),
	}
}

// spanOf is the span an untouched rate is measured over: the recovery
// rounded up to whole windows, at least one, within the run (from the
// kill to its end).
func spanOf(recoveryS float64, killMs, runMs, windowMs int64) int64 {
	span := (int64(recoveryS*1000) + windowMs - 1) / windowMs * windowMs
	span = max(span, windowMs)
	if room := (runMs - killMs) / windowMs * windowMs; room >= windowMs {
		span = min(span, room)
	}
	return span
}

// busyWindow is how long before the kill busyBefore averages over.
const busyWindow = 3 * time.Second

// busyBefore is how many cores the nodes kept busy in the busyWindow
// before the kill: per node the mean of its CPU samples there (the
// coordinator's once-a-second metrics), summed over the nodes. What the
// machine has beyond it is the spare capacity a catch-up can use. -1 if
// no node reported there.
func busyBefore(r *run) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.info == nil || r.info.JobStart == nil || r.killAtMs <= 0 {
		return -1
	}
	kill := r.info.JobStart.Add(time.Duration(r.killAtMs) * time.Millisecond)
	from := kill.Add(-busyWindow)
	sum, n := map[string]float64{}, map[string]int{}
	for _, e := range r.evs {
		f, ok := e.Fields.(events.MetricsFields)
		if !ok || e.Kind != events.Metrics || e.Node == "" || e.Instance != "" || e.Time.Before(from) || !e.Time.Before(kill) {
			continue
		}
		sum[e.Node] += f.CPU
		n[e.Node]++
	}
	if len(n) == 0 {
		return -1
	}
	cores := 0.0
	for node, k := range n {
		cores += sum[node] / float64(k) / 100
	}
	return cores
}
