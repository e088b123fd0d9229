package bench

import (
	"context"
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
	kill, victim, verify := o.kill, o.victim, o.verify
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
	var mu sync.Mutex
	pids := map[string]int{}
	hosts := map[string]string{}
	var started time.Time
	aligned, armed := kill > 0 && o.age >= 0 && o.interval > 0, false
	var once sync.Once
	over := make(chan struct{})
	defer close(over)
	// killAt SIGKILLs victim's node at t; the first call of a run that
	// fires is the kill, the others do nothing.
	killAt := func(t time.Time) {
		go func() {
			select {
			case <-time.After(time.Until(t)): // the benchmark's schedule, not a synchronisation
			case <-over:
				return // the run ended first: its pids may be another's now
			}
			once.Do(func() {
				mu.Lock()
				pid := pids[hosts[victim]]
				mu.Unlock()
				if pid <= 0 {
					r.setKill(0, 0, fmt.Errorf("no node process is known to host %s", victim))
					return
				}
				sent := time.Since(started)
				took, err := killNode(pid)
				r.setKill(sent.Milliseconds(), took, err)
			})
		}()
	}
	obs := func(e events.Event) {
		r.observe(e)
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case events.NodeSpawned:
			if f, ok := e.Fields.(events.NodeSpawnedFields); ok {
				pids[e.Node] = f.PID
			}
		case events.InstancePlaced:
			hosts[e.Instance] = e.Node
		case events.RunStarted:
			if f, ok := e.Fields.(events.RunStartedFields); ok && o.tail > 0 && tail == nil && f.Dir != "" {
				spec := cfg.Spec()
				tail = newSinkTail(f.Dir, spec.Groups)
				r.output = tail.log
				go tail.run(o.tail, tailStop, tailDone)
			}
		case events.JobStarted:
			started = e.Time
			switch {
			case kill > 0 && aligned:
				killAt(started.Add(kill + 3*o.interval))
			case kill > 0:
				killAt(started.Add(kill))
			}
		case events.Checkpoint:
			if !aligned || armed || started.IsZero() {
				break
			}
			if t, ok := alignedKill(e, victim, started.Add(kill), o.interval+o.age); ok {
				armed = true
				killAt(t)
			}
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
