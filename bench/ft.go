package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"spate/coord"
	"spate/events"
)

// run is one cluster run of a benchmark and what it observed.
type run struct {
	info      *coord.RunInfo
	rps       float64
	verified  bool
	mu        sync.Mutex
	evs       []events.Event
	killAtMs  int64         // ms after the job started that the killed node died; 0: no kill
	killTook  time.Duration // from the signal to the death
	killSent  int64         // ms after the job started that the signal was sent
	killErr   error
	cpuPerRec float64               // CPU µs the node processes spent per record read
	lastFull  map[string][2]float64 // per instance: bytes and keys of its latest full checkpoint
	deltaFull []float64             // a delta's bytes / its instance's latest full's bytes
	keyFrac   []float64             // a delta's keys / its instance's latest full's keys
	output    *outputLog            // the sinks' output as it arrived, if watched (runOpts.tail)
}

// observe collects what the benchmark needs from the events.
func (r *run) observe(e events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case events.Checkpoint:
		f, _ := e.Fields.(events.CheckpointFields)
		b, k := float64(f.Bytes), float64(f.Keys)
		if b == 0 || !strings.HasPrefix(e.Instance, "count#") {
			break
		}
		if r.lastFull == nil {
			r.lastFull = map[string][2]float64{}
		}
		if f.Full {
			r.lastFull[e.Instance] = [2]float64{b, k}
		} else if f, ok := r.lastFull[e.Instance]; ok && f[1] > 0 {
			r.deltaFull = append(r.deltaFull, b/f[0])
			r.keyFrac = append(r.keyFrac, k/f[1])
		}
	}
	r.evs = append(r.evs, e)
}

// setKill records the moments the kill signal was sent and the killed
// node was seen dead.
func (r *run) setKill(sentMs int64, took time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killSent, r.killAtMs, r.killTook, r.killErr = sentMs, sentMs+took.Milliseconds(), took, err
}

// settleKill bounds the death of the killed node, once the run is over, by
// the first loss the coordinator detected after the signal: the poller
// that watched the process die runs in this process, which the cluster
// starves of CPU now and then, and sees a death late; the node was dead
// by the time its loss was detected at the latest.
func (r *run) settleKill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.info == nil || r.info.JobStart == nil || r.killAtMs <= 0 {
		return
	}
	for _, e := range r.evs {
		if e.Kind != events.NodeLost {
			continue
		}
		ms := e.Time.Sub(*r.info.JobStart).Milliseconds()
		if ms >= r.killSent && ms < r.killAtMs {
			r.killAtMs, r.killTook = ms, time.Duration(ms-r.killSent)*time.Millisecond
			return
		}
	}
}

// alignedKill is when an aligned kill (runOpts.age) is due, if e is the
// checkpoint that times it: the first of victim (or a global one)
// complete from "from" on, taken at T; the kill is due at T + after.
func alignedKill(e events.Event, victim string, from time.Time, after time.Duration) (time.Time, bool) {
	f, _ := e.Fields.(events.CheckpointFields)
	if e.Kind != events.Checkpoint || e.Time.Before(from) || !(f.Global || e.Instance == victim) {
		return time.Time{}, false
	}
	taken := e.Time.Add(-time.Duration(f.TotalUs) * time.Microsecond) // an instance's: its capture
	if f.Global {
		taken = e.Time.Add(-time.Duration(f.TookMs) * time.Millisecond) // the barrier's trigger
	}
	return taken.Add(after), true
}

// killPlan decides, from a run's events as they come, whom a
// benchmark's kill strikes and when: the pid of the node that hosts the
// victim (instance_placed's node, node_spawned's pid), and the moments
// the kill is due: runOpts.kill after job_started; with an aligned kill,
// as alignedKill says from the victim's first checkpoint complete from
// then on, and at kill + 3 intervals in case none comes. It has no clock
// and no goroutine: an in-process run feeds it the events of the bus, a
// run of another binary the lines of its events.jsonl
// (binaryRecoveryRun), and a killer carries out what it decides. A
// killPlan is not safe for concurrent use.
type killPlan struct {
	o       runOpts
	pids    map[string]int    // node -> the pid of its latest process
	hosts   map[string]string // instance -> node
	started time.Time         // job_started; zero until then
	armed   bool              // the aligned kill is set
}

func newKillPlan(o runOpts) *killPlan {
	return &killPlan{o: o, pids: map[string]int{}, hosts: map[string]string{}}
}

func (p *killPlan) aligned() bool { return p.o.kill > 0 && p.o.age >= 0 && p.o.interval > 0 }

// step takes the run's next event; due is a moment the kill comes at if
// e sets one (ok). Of the moments a run's events set, the first to come
// is the kill.
func (p *killPlan) step(e events.Event) (due time.Time, ok bool) {
	switch e.Kind {
	case events.NodeSpawned:
		if f, ok := e.Fields.(events.NodeSpawnedFields); ok {
			p.pids[e.Node] = f.PID
		}
	case events.InstancePlaced:
		p.hosts[e.Instance] = e.Node
	case events.JobStarted:
		p.started = e.Time
		switch {
		case p.aligned():
			return p.started.Add(p.o.kill + 3*p.o.interval), true
		case p.o.kill > 0:
			return p.started.Add(p.o.kill), true
		}
	case events.Checkpoint:
		if !p.aligned() || p.armed || p.started.IsZero() {
			break
		}
		if t, ok := alignedKill(e, p.o.victim, p.started.Add(p.o.kill), p.o.interval+p.o.age); ok {
			p.armed = true
			return t, true
		}
	}
	return time.Time{}, false
}

// target is the pid of the node that hosts the victim now; an error
// names the event that is missing.
func (p *killPlan) target() (int, error) {
	node, ok := p.hosts[p.o.victim]
	if !ok {
		return 0, fmt.Errorf("no instance_placed event places %s on a node", p.o.victim)
	}
	pid := p.pids[node]
	if pid <= 0 {
		return 0, fmt.Errorf("no node_spawned event with a pid for node %s, which hosts %s", node, p.o.victim)
	}
	return pid, nil
}

// killer carries out a killPlan: it SIGKILLs the victim's node at the
// first moment due, once, and records the kill in the run. observe may
// be called from one goroutine at a time, concurrently with the kills it
// schedules.
type killer struct {
	r     *run
	mu    sync.Mutex // plan, fired
	plan  *killPlan
	fired bool
	once  sync.Once
	over  chan struct{}
}

func newKiller(r *run, o runOpts) *killer {
	return &killer{r: r, plan: newKillPlan(o), over: make(chan struct{})}
}

// observe feeds e to the plan and schedules the kill it makes due.
func (k *killer) observe(e events.Event) {
	k.mu.Lock()
	t, due := k.plan.step(e)
	k.mu.Unlock()
	if due {
		k.at(t)
	}
}

// at SIGKILLs the victim's node at t, unless the run ended first or
// another moment came first.
func (k *killer) at(t time.Time) {
	go func() {
		select {
		case <-time.After(time.Until(t)): // the benchmark's schedule, not a synchronisation
		case <-k.over:
			return // the run ended first: its pids may be another's now
		}
		k.once.Do(func() {
			select {
			case <-k.over:
				return // both were ready, and select took the timer
			default:
			}
			k.mu.Lock()
			k.fired = true
			pid, err := k.plan.target()
			started := k.plan.started
			k.mu.Unlock()
			if err != nil {
				k.r.setKill(0, 0, err)
				return
			}
			sent := time.Since(started)
			took, err := killNode(pid)
			k.r.setKill(sent.Milliseconds(), took, err)
		})
	}()
}

// stop ends the run's kills: one not yet fired never will.
func (k *killer) stop() { close(k.over) }

// result is, once the run is over and stop called, what kept a kill that
// was asked for from being done: an event missing from the run's events
// (no job_started: no moment; a victim with no node or no pid), the
// kill's own error, or a run that ended before the kill was due.
func (k *killer) result() error {
	k.mu.Lock()
	fired, started, asked := k.fired, k.plan.started, k.plan.o.kill > 0
	k.mu.Unlock()
	k.r.mu.Lock()
	err := k.r.killErr
	k.r.mu.Unlock()
	switch {
	case !asked:
		return nil
	case err != nil:
		return err
	case started.IsZero():
		return errors.New("no job_started event: the kill has no moment to be timed from")
	case !fired:
		k.mu.Lock()
		_, err := k.plan.target()
		k.mu.Unlock()
		if err != nil {
			return err // what the kill would have lacked says more
		}
		return errors.New("the run ended before its kill was due")
	}
	return nil
}

// clusterRun runs cfg; with kill > 0 it SIGKILLs the node hosting victim
// kill after the job started.
func clusterRun(ctx context.Context, cfg coord.Config, kill time.Duration, victim string, verify bool) (*run, error) {
	return clusterRunOpts(ctx, cfg, runOpts{kill: kill, victim: victim, verify: verify, age: -1})
}

// runOpts are what a cluster run does beside running: a kill, the
// verification, and a watch of the sinks' output.
type runOpts struct {
	kill   time.Duration // > 0: SIGKILL the node hosting victim this long after the job started
	victim string
	verify bool
	// age >= 0 with interval > 0 times the kill by the victim's
	// checkpoints instead: the first checkpoint of victim (under --ft
	// global, the first global one) that completes kill after the job
	// started was taken at T (its capture, or the barrier's trigger); the
	// node dies at T + interval + age, when the state a recovery can
	// restore is the same age in every configuration, unless one's
	// checkpoint taken at T + interval is not complete yet (it then
	// restores the one before: a cost of that configuration). With no
	// such checkpoint the kill comes at kill + 3 intervals, the latest an
	// aligned kill can come (the bound bench recovery's --duration is
	// checked against).
	age      time.Duration
	interval time.Duration
	// tail > 0 reads the sinks' files every tail while the run goes on
	// (run.output).
	tail time.Duration
}

func clusterRunOpts(ctx context.Context, cfg coord.Config, o runOpts) (*run, error) {
	verify := o.verify
	r := &run{}
	var tail *sinkTail
	tailStop, tailDone := make(chan struct{}), make(chan struct{})
	stopTail := func() {
		if tail != nil {
			close(tailStop)
			<-tailDone
			tail = nil
		}
	}
	defer stopTail()
	var mu sync.Mutex // tail
	k := newKiller(r, o)
	defer k.stop()
	obs := func(e events.Event) {
		r.observe(e)
		k.observe(e)
		if e.Kind != events.RunStarted {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if f, ok := e.Fields.(events.RunStartedFields); ok && o.tail > 0 && tail == nil && f.Dir != "" {
			spec := cfg.Spec()
			tail = newSinkTail(f.Dir, spec.Groups)
			r.output = tail.log
			go tail.run(o.tail, tailStop, tailDone)
		}
	}
	dir, err := coord.Up(ctx, cfg, coord.Options{Observe: obs})
	mu.Lock()
	stopTail()
	mu.Unlock()
	if err != nil {
		return nil, err
	}
	ri, n, rps, err := finishedRun(dir)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.info, r.rps = ri, rps
	err = r.killErr
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: kill: %w", dir, err)
	}
	r.settleKill()
	if n > 0 {
		r.cpuPerRec = ri.NodeCPU * 1e6 / float64(n)
	}
	r.verified = true
	if verify {
		rep, err := coord.VerifyRun(dir)
		r.verified = err == nil && rep.OK()
		if !r.verified {
			fmt.Fprintf(os.Stderr, "spate bench: %s did not verify: %v %v\n", dir, rep.String(), err)
		}
	}
	return r, nil
}

// finishedRun reads the run.json of a run that must have finished: its
// records read and their rate over the job's time.
func finishedRun(dir string) (ri *coord.RunInfo, records uint64, rps float64, err error) {
	if ri, err = coord.ReadRunInfo(dir); err != nil {
		return nil, 0, 0, err
	}
	if ri.JobStart == nil || ri.Finished == nil {
		return nil, 0, 0, fmt.Errorf("%s: run did not finish", dir)
	}
	for _, v := range ri.Positions {
		records += v
	}
	return ri, records, float64(records) / ri.Finished.Sub(*ri.JobStart).Seconds(), nil
}

// lagP99 is the 99th percentile of the output lag after warm-up.
func lagP99(ri *coord.RunInfo, warm time.Duration) float64 {
	var xs []float64
	for _, s := range ri.Lag {
		if s[0] >= warm.Milliseconds() {
			xs = append(xs, float64(s[1]))
		}
	}
	return percentile(xs, 0.99)
}

func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// lagGap is how long the output lag may go unsampled, with lag samples
// every heartbeat, before recoveryTime counts the stretch as not normal.
func lagGap(heartbeat time.Duration) time.Duration { return max(250*time.Millisecond, 10*heartbeat) }

// recoveryTime is how long after the kill the output lag took to be back
// to normal (at most the pre-kill p99 plus a quarter, and at least 50 ms
// more) and stay there for a second. A stretch of more than gap without a
// sample is not normal: nothing says the output moved. Nor is a sample
// whose output has not yet reached the moment of the kill (elapsed minus
// lag): while the output is stalled its lag grows from where it was, and
// where the pre-kill lag was high it stays under the bar for a while
// without anything having recovered.
func recoveryTime(ri *coord.RunInfo, killAt int64, warm, gap time.Duration) (float64, bool) {
	var before []float64
	for _, s := range ri.Lag {
		if s[0] >= warm.Milliseconds() && s[0] < killAt {
			before = append(before, float64(s[1]))
		}
	}
	p99 := percentile(before, 0.99)
	normal := p99 + max(50, p99/4)
	var since int64 = -1
	prev := killAt
	for _, s := range ri.Lag {
		if s[0] < killAt {
			continue
		}
		if s[0]-prev > gap.Milliseconds() {
			since = -1
		}
		prev = s[0]
		if float64(s[1]) <= normal && s[0]-s[1] >= killAt {
			if since < 0 {
				since = s[0]
			}
			if s[0]-since >= 1000 {
				return float64(since-killAt) / 1000, true
			}
		} else {
			since = -1
		}
	}
	return 0, false
}

func benchConfig(root, name string, round int, ft string) coord.Config {
	cfg := coord.DefaultConfig()
	cfg.Nodes, cfg.Local, cfg.FT, cfg.Headless = 4, 4, ft, true
	cfg.Data = filepath.Join(root, fmt.Sprintf("%s-%s-%d", name, ft, round))
	return cfg
}

// tempRoot is the directory a benchmark's runs go in: data, or a
// temporary one that cleanup removes, unless keep or the benchmark failed
// (rc 1 or 2; not an interruption): the failed run's logs and events are
// then what says why, and cleanup says where they are.
func tempRoot(data string, keep bool, stderr io.Writer) (string, func(rc int), error) {
	if data != "" {
		return data, func(int) {}, os.MkdirAll(data, 0o755)
	}
	tmp, err := os.MkdirTemp("", "spate-bench-")
	return tmp, func(rc int) {
		if keep || (rc != 0 && rc != exitInterrupted) {
			fmt.Fprintf(stderr, "spate bench: the run directories are kept in %s\n", tmp)
			return
		}
		os.RemoveAll(tmp)
	}, err
}

// ratios formats xs as "0.97 0.82 ...".
func ratios(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}
