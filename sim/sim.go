package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"spate/control"
	"spate/coord"
	"spate/events"
	"spate/internal/breaks"
	"spate/node"
	"spate/state"
	"spate/wire"
)

// Config is the job every seed runs: small, so that a seed is cheap, and
// with short intervals and timeouts, so that faults meet checkpoints,
// trims and detection often.
type Config struct {
	// Schedule, if set, is run instead of the seed's (the seed still
	// seeds the generator): a shape a test pins down by hand.
	Schedule  []Step
	Nodes     int
	Rate      float64 // records/s of the generator
	Keys      int
	Duration  time.Duration // until the drain
	Interval  time.Duration // checkpoint interval
	Window    time.Duration
	Timeout   time.Duration // failure detection
	Heartbeat time.Duration
	FT        string // spate or global
	Recover   string // single (the default) or parallel (coord's --recover)
	Rescale   string // live (the default) or restart (coord's --rescale)
	// Autoscale is coord's --autoscale, with a processing cost on count
	// (coord's --cost): on the virtual clock nothing else takes time, no
	// true rate is measured, and the auto-scaler would never decide.
	Autoscale bool
	// NoCrash keeps the coordinator alive: the nemesis's schedules as
	// they were before it crashed the coordinator (the regressions found
	// then run so).
	NoCrash bool
	// Store is where checkpoints go: "" or mem (one in-memory store the
	// coordinator and the nodes share), dir (the run directory on disk),
	// coord (the coordinator's store, in memory, served to the nodes over
	// their sessions: `spate up --store coord`).
	Store string
	// Source is the job's input: "" or gen (the generator), trace (a
	// record trace the harness writes into the run directory, which ends
	// before the drain, read through the trace: source).
	Source string
	// Wide draws the whole product: each configuration axis (axes.go)
	// from the seed, except those Only pins, into the fields above, and
	// the faults from the whole chaos DSL (nemesis.go). Without it the
	// fields are as set and the nemesis draws the regressions' narrower
	// table, so that their seeds keep their schedules.
	Wide bool
	Only map[string]string // axis → value, pinned under Wide (ParseOnly)
	// Break is the protocol's broken variants on (`spate sim --break`,
	// coord.Config.Break): none unless named. A seed run with one says so
	// in its verdict.
	Break breaks.Set
	// Settle is how long Run waits on the clock, after the nodes stopped,
	// for what their processes' end would have ended (a dial or handshake
	// held by a link fault ends at its deadline, 10 s): costless on the
	// virtual clock, where the bubble must end with no goroutine left;
	// `spate sim`, on the real clock, sets none.
	Settle time.Duration
	// ForkFile is read when a "fork" step comes: its first line, a
	// command as control.ParseCommand takes it, is the fault to add then
	// ("noop" or nothing: none). `spate sim --fork-at` gives both runs
	// the same schedule and a file of the same length, so that the two
	// are the same run up to the fork.
	ForkFile string
}

// DefaultConfig is the configuration of `spate sim` (which sets no
// Settle: it runs on the real clock).
func DefaultConfig() Config {
	return Config{Nodes: 4, Rate: 3000, Keys: 400, Duration: 8 * time.Second, Interval: 300 * time.Millisecond,
		Window: 200 * time.Millisecond, Timeout: time.Second, Heartbeat: 100 * time.Millisecond, FT: "spate",
		Settle: 15 * time.Second}
}

// Result is one seed's run and verdict.
type Result struct {
	Seed       uint64   `json:"seed"`
	Steps      []string `json:"steps"` // each action and what the cluster answered
	Windows    int      `json:"windows"`
	Lost       int      `json:"lost"`
	Duplicated int      `json:"duplicated"`
	Wrong      int      `json:"wrong"`
	Err        string   `json:"error,omitempty"` // the run did not finish or could not be verified
	Dir        string   `json:"dir"`
	JobTime    float64  `json:"job_s"` // simulated seconds from the start to the end of the drain
	// Hash is the sha256 of the run's event log (events.jsonl), in the
	// exact mode, where the same seed gives the same log.
	Hash string `json:"hash,omitempty"`
	Axes Axes   `json:"axes,omitempty"` // the configuration the seed drew (Config.Wide)
	// Unchecked: an --ft none seed whose schedule has a fault that loses
	// state (which none does not survive), checked only to finish.
	Unchecked bool `json:"not_checked,omitempty"`
	// Break is the broken variants the seed ran with (Config.Break).
	Break breaks.Set `json:"break,omitempty"`
}

// Failed reports whether the seed broke exactly-once or did not finish.
func (r Result) Failed() bool {
	return r.Err != "" || !r.Unchecked && r.Lost+r.Duplicated+r.Wrong > 0
}

// Verdict is one line: the seed, its counts, or what went wrong.
func (r Result) Verdict() string {
	name := fmt.Sprint("seed ", r.Seed)
	if r.Axes != nil {
		name += " [" + r.Axes.String() + "]"
	}
	if !r.Break.Empty() {
		name += " " + r.Break.Banner()
	}
	if r.Err != "" {
		return fmt.Sprintf("%s: FAIL: %s", name, r.Err)
	}
	v := "ok"
	if r.Failed() {
		v = "FAIL"
	}
	if r.Unchecked {
		v = "ok: finished, not checked for exactly-once (--ft none, a fault that loses state)"
	}
	return fmt.Sprintf("%s: %s: %d windows, %d lost, %d duplicated, %d wrong", name, v, r.Windows, r.Lost, r.Duplicated, r.Wrong)
}

// Run runs seed's schedule on a whole cluster in this process (the
// coordinator, and every node as goroutines on the in-memory transport,
// checkpoints in dir) and verifies the output with the oracle. Time is
// the process's: under testing/synctest the whole run is on a virtual
// clock. A directory of Dir's naming that holds an earlier run of the
// seed is emptied first: a replay writes where the last run did (its sink
// files were read as this run's).
func Run(ctx context.Context, seed uint64, cfg Config, dir string) Result {
	cfg = Resolve(seed, cfg)
	res := Result{Seed: seed, Dir: dir, Axes: axesOf(cfg), Break: cfg.Break}
	if strings.HasPrefix(filepath.Base(dir), "seed-") {
		if err := emptyDir(dir); err != nil {
			res.Err = err.Error()
			return res
		}
	}
	ccfg := coord.DefaultConfig()
	ccfg.Nodes, ccfg.Local = cfg.Nodes, cfg.Nodes
	ccfg.Rate, ccfg.Keys, ccfg.Duration, ccfg.Window = cfg.Rate, cfg.Keys, cfg.Duration, cfg.Window
	ccfg.Interval, ccfg.Timeout, ccfg.Heartbeat = cfg.Interval.String(), cfg.Timeout, cfg.Heartbeat
	ccfg.FT, ccfg.Seed, ccfg.Data, ccfg.Listen = cfg.FT, int64(seed), dir, "coord:0"
	ccfg.Break = cfg.Break
	if cfg.Recover != "" {
		ccfg.Recover = cfg.Recover
	}
	switch cfg.Rescale {
	case "":
	case "live": // the sim's name of coord's eds
		ccfg.Rescale = "eds"
	default:
		ccfg.Rescale = cfg.Rescale
	}
	if ccfg.Autoscale = cfg.Autoscale; cfg.Autoscale {
		ccfg.Cost = map[string]time.Duration{"count": 600 * time.Microsecond}
	}
	mc := &cluster{mem: wire.NewMem(), procs: map[string]*proc{}}
	var coordStore state.Store
	switch cfg.Store {
	case "", "mem": // one store in memory, the coordinator's and every node's
		mc.store = state.NewMemStore()
		coordStore = mc.store
	case "dir": // the run directory's checkpoints/, on disk (the nodes' through a store of the harness: deadStore)
		ccfg.Store = "dir"
		st, err := state.NewDirStore(filepath.Join(dir, "checkpoints"))
		if err != nil {
			res.Err = fmt.Sprintf("sim: checkpoint store: %v", err)
			return res
		}
		mc.store = st
	case "coord": // the coordinator's, in memory, served over the nodes' sessions
		ccfg.Store, coordStore = "coord", state.NewMemStore()
	default:
		res.Err = fmt.Sprintf("sim: store %q is not mem, dir or coord", cfg.Store)
		return res
	}
	switch cfg.Source {
	case "", "gen":
	case "trace":
		spec, err := writeTrace(dir, seed, cfg)
		if err != nil {
			res.Err = fmt.Sprintf("sim: the trace: %v", err)
			return res
		}
		ccfg.Source = spec
	default:
		res.Err = fmt.Sprintf("sim: source %q is not gen or trace", cfg.Source)
		return res
	}
	ccfg.FlushMs = 20 // batches and watermarks every 20 ms of virtual time, whatever up's default: the seeds' schedules stay as they were
	ccfg.CheckInvariants = true
	if err := ccfg.Validate(); err != nil {
		res.Err = err.Error()
		return res
	}
	upCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := &harness{ctx: upCtx, cfg: ccfg, dir: dir, fork: cfg.ForkFile,
		opt: coord.Options{Transport: mc.mem, Spawn: mc.spawn, Adopt: mc.adopt, Out: io.Discard, Store: coordStore, FrameAligned: true}}
	start := time.Now()
	if err := h.start(false); err != nil {
		res.Err = fmt.Sprintf("the cluster did not start: %v", err)
		return res
	}
	steps := cfg.Schedule
	if steps == nil {
		steps = Plan(seed, cfg)
	}
	res.Unchecked = cfg.Wide && cfg.FT == "none" && LosesState(steps, cfg.Timeout)
	var err error
	res.Steps, err = drive(upCtx, h, steps)
	cancel()
	mc.wait()
	res.JobTime = time.Since(start).Seconds()
	// A stopped node does not wait for all its goroutines (its process's
	// end would end them): a slowed checkpoint write sleeps before it
	// writes (node/faults.go; deadStore refuses it), a peer's dial or
	// handshake held by a link fault waits for its deadline. Sleep them
	// out, so that no goroutine of the run outlives it (a bubble must end
	// with none).
	time.Sleep(max(cfg.Settle, longestSlow(steps)))
	if err != nil {
		res.Err = fmt.Sprintf("the run did not finish: %v", err)
		return res
	}
	rep, err := coord.VerifyRun(dir)
	if err != nil {
		res.Err = fmt.Sprintf("verify: %v", err)
		return res
	}
	res.Windows, res.Lost, res.Duplicated, res.Wrong = rep.Windows, rep.Missing, rep.Duplicated, rep.Wrong
	return res
}

// emptyDir removes what dir holds, and not dir itself: in the exact mode
// it is the host's directory, mounted.
func emptyDir(dir string) error {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, de := range des {
		if err := os.RemoveAll(filepath.Join(dir, de.Name())); err != nil {
			return err
		}
	}
	return nil
}

// writeTrace writes seed's record trace into dir (input.csv: time, key,
// value) and returns its trace: spec. It holds Rate records a second of
// event time for three quarters of cfg.Duration, so the sources reach its
// end during the run, before the drain.
func writeTrace(dir string, seed uint64, cfg Config) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	rng := rand.New(rand.NewPCG(seed, traceSeq))
	n := int(cfg.Rate * (cfg.Duration * 3 / 4).Seconds())
	var b strings.Builder
	b.WriteString("time,key,value\n")
	const epochMs = 1_700_000_000_000
	for i := range n {
		ms := epochMs + int64(float64(i)*1000/cfg.Rate)
		// about Zipf-like: half the records on a tenth of the keys
		k := rng.IntN(cfg.Keys)
		if rng.IntN(2) == 0 {
			k = rng.IntN(max(1, cfg.Keys/10))
		}
		fmt.Fprintf(&b, "%d.%03d,k%04d,%d\n", ms/1000, ms%1000, k, 1+rng.IntN(100))
	}
	path := filepath.Join(dir, "input.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return "trace:" + path + "?time=time&key=key&value=value", nil
}

// traceSeq is the second word of the PCG state of a seed's trace.
const traceSeq = 0x7ace_7ace_0000_0001

// harness runs the run's coordinator, and after a crash of it (a step
// "crash coord") the next, started with --resume on the same run.
type harness struct {
	ctx   context.Context
	cfg   coord.Config
	opt   coord.Options
	dir   string
	b     control.Backend
	upErr chan error    // the running coordinator's end
	crash chan struct{} // closed: it dies as under SIGKILL
	fork  string        // Config.ForkFile
}

// forked reads the fault a fork step adds, or says why there is none.
func (h *harness) forked() (*control.Action, string) {
	if h.fork == "" {
		return nil, "no fork file: nothing added"
	}
	b, err := os.ReadFile(h.fork)
	if err != nil {
		return nil, fmt.Sprintf("the fork file: %v: nothing added", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if line == "" || line == "noop" {
		return nil, "nothing added (the run as it was)"
	}
	a, err := control.ParseCommand(line)
	if err != nil {
		return nil, fmt.Sprintf("the fork file: %v: nothing added", err)
	}
	return &a, ""
}

// start starts a coordinator (resume: on the run of the one that
// crashed) and waits for its control API.
func (h *harness) start(resume bool) error {
	backends := make(chan control.Backend, 1)
	h.crash, h.upErr = make(chan struct{}), make(chan error, 1)
	opt, cfg := h.opt, h.cfg
	opt.Crash, opt.Control = h.crash, func(b control.Backend) { backends <- b }
	if resume {
		cfg.Resume = h.dir
	}
	go func() {
		_, err := coord.Up(h.ctx, cfg, opt)
		h.upErr <- err
	}()
	select {
	case h.b = <-backends:
		return nil
	case err := <-h.upErr:
		h.upErr <- err
		return err
	}
}

// drive waits for the job to start and sends each step at its time; it
// returns each step with the cluster's answer, and how the run ended.
func drive(ctx context.Context, h *harness, steps []Step) ([]string, error) {
	past, live, stop := h.b.Events(0)
	started := false
	for _, e := range past {
		started = started || e.Kind == events.JobStarted
	}
	for !started {
		select {
		case e, ok := <-live:
			if !ok {
				stop()
				return []string{"the run ended before the job started"}, <-h.upErr
			}
			started = e.Kind == events.JobStarted
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		}
	}
	stop()
	t0 := time.Now()
	var out []string
	for _, s := range steps {
		t := time.NewTimer(time.Until(t0.Add(s.At)))
		select {
		case <-t.C:
		case err := <-h.upErr:
			t.Stop()
			return out, err // the run ended before the schedule did
		case <-ctx.Done():
			t.Stop()
			return out, ctx.Err()
		}
		if s.Action.Verb == "fork" {
			a, what := h.forked()
			if a == nil {
				out = append(out, fmt.Sprintf("%s: %s", s, what))
				continue
			}
			s.Action = *a
		}
		if s.Action.Verb == "crash" {
			answer, err := h.crashAndResume(s.Action)
			out = append(out, fmt.Sprintf("%s: %s", s, answer))
			if err != nil {
				return out, err
			}
			continue
		}
		r, err := h.b.Act(ctx, s.Action)
		answer := r.Text
		if err != nil {
			answer = "refused: " + err.Error()
		}
		out = append(out, fmt.Sprintf("%s: %s", s, answer))
	}
	return out, <-h.upErr
}

// crashAndResume kills the coordinator and, resume_after later, starts
// the next on its run. A run that had finished by then needs none.
func (h *harness) crashAndResume(a control.Action) (string, error) {
	after, err := time.ParseDuration(a.Args["resume_after"])
	if err != nil {
		return "", fmt.Errorf("crash: resume_after: %v", err)
	}
	close(h.crash)
	if err := <-h.upErr; !errors.Is(err, coord.ErrCrashed) {
		h.upErr <- err
		return fmt.Sprintf("the run had ended (%v)", err), nil
	}
	time.Sleep(after) // the coordinator is gone that long (virtual time)
	if err := h.start(true); err != nil {
		if strings.Contains(err.Error(), "the run finished") {
			<-h.upErr
			h.upErr <- nil
			return "crashed after the run finished: nothing to resume", nil
		}
		return "", fmt.Errorf("resume: %w", err)
	}
	return fmt.Sprintf("crashed; resumed %v later", after), nil
}

// proc is an in-process node: the in-memory twin of a node process. A
// kill closes every connection it has, as the kernel closes a dead
// process's sockets, and cancels it; so does its return (an exit). Left
// open after the return, a node that stopped on its own (refused, or
// its coordinator gone) kept its peers' streams from it open, which no
// real process does.
type proc struct {
	cancel context.CancelFunc
	net    *hostNet
	done   chan struct{}
	err    error
	dead   atomic.Bool // killed or returned: its store writes are refused
}

// deadStore is a node's view of the shared checkpoint store: once the
// node is dead (killed, or returned) it writes and deletes nothing, as a
// killed process writes nothing; without it a write the node had begun
// (a slowed one, sleeping before it writes) landed after its death.
type deadStore struct {
	state.Store
	dead *atomic.Bool
}

var errDead = errors.New("sim: the node is dead (its process would write nothing)")

func (s deadStore) Put(name string, data ...[]byte) error {
	if s.dead.Load() {
		return errDead
	}
	return s.Store.Put(name, data...)
}

func (s deadStore) Delete(name string) error {
	if s.dead.Load() {
		return errDead
	}
	return s.Store.Delete(name)
}

// longestSlow is the longest slow= of steps' store faults.
func longestSlow(steps []Step) time.Duration {
	var d time.Duration
	for _, s := range steps {
		if s.Action.Verb == "store" {
			if v, err := time.ParseDuration(s.Action.Args["slow"]); err == nil {
				d = max(d, v)
			}
		}
	}
	return d
}

func (p *proc) Pid() int    { return os.Getpid() }
func (p *proc) Wait() error { <-p.done; return p.err }
func (p *proc) Kill() error { p.dead.Store(true); p.net.close(); p.cancel(); return nil }
func (p *proc) Signal(s os.Signal) error {
	if s == syscall.SIGKILL {
		return p.Kill()
	}
	return errors.New("an in-process node cannot be paused (the simulation isolates it instead)")
}

// cluster runs nodes as goroutines on an in-memory network.
type cluster struct {
	mem   *wire.Mem
	store state.Store // the checkpoints of every node and of the coordinator
	mu    sync.Mutex
	procs map[string]*proc
	wg    sync.WaitGroup
}

func (c *cluster) spawn(name, addr, token, logPath string) (coord.Process, error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &proc{cancel: cancel, net: &hostNet{mem: c.mem}, done: make(chan struct{})}
	cfg := node.DefaultConfig()
	cfg.Name, cfg.Coord, cfg.Token, cfg.Transport, cfg.Listen, cfg.FrameAligned = name, addr, token, p.net, "", true
	if c.store != nil {
		cfg.Store = deadStore{c.store, &p.dead}
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer p.dead.Store(true)
		defer close(p.done)
		defer p.net.close() // an exiting process's sockets close with it
		p.err = node.Run(ctx, cfg)
	}()
	c.mu.Lock()
	c.procs[name] = p
	c.mu.Unlock()
	return p, nil
}

// adopt is the handle of an in-process node, for a resumed coordinator.
func (c *cluster) adopt(name string, _ int) coord.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[name]; p != nil {
		return p
	}
	return gone{}
}

// gone is a node that is no more: it has exited already.
type gone struct{}

func (gone) Pid() int               { return os.Getpid() }
func (gone) Wait() error            { return nil }
func (gone) Kill() error            { return nil }
func (gone) Signal(os.Signal) error { return nil }

// wait stops every node and waits for them.
func (c *cluster) wait() {
	c.mu.Lock()
	for _, p := range c.procs {
		_ = p.Kill()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// TempRoot makes a directory for the seeds' run directories: in memory
// (/dev/shm) where the machine has one, since a seed's time goes mostly
// to writing and syncing checkpoint files, else in the temporary
// directory. The caller removes it.
func TempRoot() (string, error) {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "spate-sim-"); err == nil {
			return d, nil
		}
	}
	return os.MkdirTemp("", "spate-sim-")
}

// Dir is a fresh directory for seed under root.
func Dir(root string, seed uint64) string { return filepath.Join(root, fmt.Sprintf("seed-%d", seed)) }

// hostNet is one node's side of the in-memory network: it keeps the
// node's listeners and connections, so that a kill closes them all.
type hostNet struct {
	mem    *wire.Mem
	mu     sync.Mutex
	closed bool
	lns    []net.Listener
	conns  []net.Conn
}

func (h *hostNet) keep(c net.Conn) (net.Conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	h.conns = append(h.conns, c)
	return c, nil
}

func (h *hostNet) Listen(addr string) (net.Listener, error) {
	ln, err := h.mem.Listen(addr)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.lns = append(h.lns, ln)
	h.mu.Unlock()
	return hostListener{ln, h}, nil
}

func (h *hostNet) Dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := h.mem.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return h.keep(c)
}

func (h *hostNet) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, ln := range h.lns {
		ln.Close()
	}
	for _, c := range h.conns {
		c.Close()
	}
	h.lns, h.conns = nil, nil
}

type hostListener struct {
	net.Listener
	h *hostNet
}

func (l hostListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.h.keep(c)
}
