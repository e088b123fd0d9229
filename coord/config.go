package coord

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"spate/backup"
	"spate/internal/breaks"
	"spate/job"
	"spate/stores"
	"spate/traces"
	"spate/tuner"
)

// Config is everything `spate up` needs; run.json records it so that a run
// can be reproduced and verified.
type Config struct {
	Nodes       int            `json:"nodes"`
	Local       int            `json:"local"` // nodes spawned on this machine; the rest join
	Job         string         `json:"job"`
	Source      string         `json:"source"`
	Rate        float64        `json:"rate"`
	Speedup     float64        `json:"speedup"`
	Keys        int            `json:"keys"`
	Duration    time.Duration  `json:"duration"`
	FT          string         `json:"ft"`
	Interval    string         `json:"interval"`
	Failures    string         `json:"failures,omitempty"` // the interval tuner's failure prior (tuner.OpenFailures)
	Data        string         `json:"data"`
	Events      string         `json:"events,omitempty"`
	Seed        int64          `json:"seed"`
	Script      string         `json:"script,omitempty"`
	Metrics     string         `json:"metrics,omitempty"` // serve Prometheus metrics on this address (cli)
	Headless    bool           `json:"headless"`
	Parallelism map[string]int `json:"parallelism"`
	Window      time.Duration  `json:"window"`
	Lateness    time.Duration  `json:"lateness"`
	Timeout     time.Duration  `json:"timeout"` // failure-detection timeout
	Heartbeat   time.Duration  `json:"heartbeat"`
	Listen      string         `json:"listen"`
	FlushMs     int            `json:"flush_ms"`
	Respawn     bool           `json:"respawn"`              // replace a lost local node with a fresh process
	RecoverOn   string         `json:"recover_on,omitempty"` // where a lost node's keyed instances go: survivors (default) or respawned
	Recover     string         `json:"recover,omitempty"`    // single (one new instance per lost one, the default) or parallel (its key groups split over the survivors: parallel.go)
	Rescale     string         `json:"rescale,omitempty"`    // eds (live, elastic data slices) or restart (stop, global checkpoint, restart)
	Autoscale   bool           `json:"autoscale,omitempty"`  // the DS2-style auto-scaler acts through the same scale path
	// CheckInvariants checks the coordinator's invariants after every
	// step of its loop and ends the run on the first one broken
	// (invariants.go): a debug flag, and always on in the simulation.
	CheckInvariants bool `json:"check_invariants,omitempty"`
	// Cost is a simulated processing time per record of a keyed operator
	// (count, rollup), spent asleep: a heavier operator without burning
	// CPU, so that the auto-scaler has something to scale at a low rate.
	Cost map[string]time.Duration `json:"cost,omitempty"`
	// BackupMem bounds each upstream backup's memory, in bytes (0: the
	// backup package's default); BackupFull says what happens past it:
	// spill (to the run directory) or block (backpressure: the instance
	// stops taking input until trims free memory).
	BackupMem  int64  `json:"backup_mem,omitempty"`
	BackupFull string `json:"backup_full,omitempty"`
	// Store is where checkpoints and sink output go (stores.Parse): ""
	// (the run directory for nodes that see it, the coordinator for
	// the others), dir, coord or s3://BUCKET/PREFIX?endpoint=HOST:PORT.
	Store string `json:"store,omitempty"`
	// TLS makes every link TLS 1.3 with certificates of the run's CA,
	// even on loopback; a --listen address off loopback turns it on
	// by itself (tls.go).
	TLS bool `json:"tls,omitempty"`
	// CoordTimeout is how long a node waits for a coordinator that went
	// away, its instances kept, before it stops and exits (node.Config).
	CoordTimeout time.Duration `json:"coord_timeout,omitempty"`
	// Break is the protocol's broken variants on in this run (`--break`,
	// internal/breaks): none unless named. A run with one says so in its
	// verdicts, its report and the dashboard.
	Break breaks.Set `json:"break,omitempty"`
	// Resume is the run directory of a run whose coordinator died: a new
	// coordinator goes on with it (resume.go). Its configuration is the
	// run's own, from run.json.
	Resume string `json:"-"`
}

// resumeFlags are the flags `spate up --resume` takes beside it: how
// this coordinator shows the run, not what the run is.
var resumeFlags = map[string]bool{"resume": true, "headless": true, "events": true, "metrics": true, "script": true}

// DefaultConfig returns the defaults of `spate up`.
func DefaultConfig() Config {
	return Config{
		Nodes: 4, Local: -1, Job: "windowcount", Source: "gen:diurnal", Rate: 100000, Speedup: 1,
		Keys: traces.DefaultKeys, FT: "spate", Interval: "auto", Seed: 1,
		Parallelism: map[string]int{"source": 2, "count": 2, "rollup": 2, "sink": 2},
		Window:      time.Second, Timeout: time.Second, Heartbeat: 100 * time.Millisecond,
		Listen: "127.0.0.1:0", FlushMs: 20, Respawn: true, RecoverOn: "survivors", Recover: "single", Rescale: "eds",
		CoordTimeout: 30 * time.Second,
	}
}

// ErrUsage marks an error in the command line (exit code 2).
var ErrUsage = errors.New("usage")

// ParseUp parses the flags of `spate up`.
func ParseUp(args []string, stderr io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "number of worker nodes")
	fs.IntVar(&c.Local, "local", c.Local, "nodes to spawn on this machine (default: all); the others join with `spate node --join`")
	fs.StringVar(&c.Job, "job", c.Job, "job to run (windowcount)")
	fs.StringVar(&c.Source, "source", c.Source, "input: gen:diurnal, gen:constant, trace:PATH?time=COL&key=COL[&value=COL], rate:PATH")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "records/s of the generator (0 = as fast as possible)")
	fs.Float64Var(&c.Speedup, "speedup", c.Speedup, "trace time compression (2 = twice as fast as recorded)")
	fs.IntVar(&c.Keys, "keys", c.Keys, "distinct keys of the generator")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "run time (0 = until a finite source ends, or Ctrl-C)")
	fs.StringVar(&c.FT, "ft", c.FT, "fault tolerance: spate, global or none")
	fs.StringVar(&c.Interval, "interval", c.Interval, "checkpoint interval: auto (the load-aware tuner, per instance) or a fixed duration")
	fs.StringVar(&c.Failures, "failures", c.Failures, "failure prior of --interval auto: poisson:MTBF, weibull:SHAPE,SCALE, lanl:PATH or fta:PATH (default: a 24h MTBF)")
	fs.StringVar(&c.Data, "data", c.Data, "run directory (default ./spate-data/RUN-ID)")
	fs.StringVar(&c.Events, "events", c.Events, "also write the events as JSON lines to this file")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed of the generator and of every random choice")
	fs.StringVar(&c.Script, "script", c.Script, "chaos scenario to run against the cluster")
	fs.StringVar(&c.Metrics, "metrics", c.Metrics, "serve Prometheus metrics (throughput, lag, checkpoints, backups, recoveries) at this address, e.g. 127.0.0.1:9464")
	fs.BoolVar(&c.Headless, "headless", c.Headless, "print events instead of the dashboard")
	par := fs.String("parallelism", "", "per-operator parallelism, e.g. source=2,count=4")
	cost := fs.String("cost", "", "simulated processing time per record of count or rollup, spent asleep, e.g. count=50us (for auto-scaler experiments)")
	fs.DurationVar(&c.Window, "window", c.Window, "tumbling window size (event time)")
	fs.DurationVar(&c.Lateness, "lateness", c.Lateness, "allowed out-of-orderness of a source partition")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "failure-detection timeout")
	fs.DurationVar(&c.Heartbeat, "heartbeat", c.Heartbeat, "heartbeat period")
	flush := fs.Duration("flush", time.Duration(c.FlushMs)*time.Millisecond, "how long an instance gathers records into a batch, and moves of its watermark, before it sends them: longer costs less CPU per record at a paced rate (fewer frames, wake-ups and cold starts), shorter adds less to the output's latency (up to this much per hop)")
	fs.StringVar(&c.Listen, "listen", c.Listen, "coordinator address for nodes")
	fs.BoolVar(&c.TLS, "tls", c.TLS, "TLS 1.3 on every link (coordinator, peers, the coordinator store) with certificates of a CA made for the run, even on loopback; always on when --listen is off loopback")
	fs.BoolVar(&c.Respawn, "respawn", c.Respawn, "replace a lost local node with a fresh process, which hosts later recoveries")
	fs.StringVar(&c.RecoverOn, "recover-on", c.RecoverOn, "where a lost node's keyed instances are restored: survivors (warm processes, at once) or respawned (the node that replaces it, once it joins)")
	fs.StringVar(&c.Recover, "recover", c.Recover, "how a lost keyed instance of count or rollup is restored: single (one new instance on one survivor) or parallel (its key groups split over up to 4 survivors, restored and replayed to at once, merged back by a live rescale once caught up; needs --ft spate --rescale eds)")
	fs.StringVar(&c.Rescale, "rescale", c.Rescale, "how `spate scale` rescales: eds (live, moving key-group slices) or restart (stop, global checkpoint, restart: Flink's way)")
	fs.BoolVar(&c.CheckInvariants, "check-invariants", c.CheckInvariants, "debug: check the coordinator's invariants after every step; the first one broken ends the run with an error")
	fs.BoolVar(&c.Autoscale, "autoscale", c.Autoscale, "let the auto-scaler (DS2-style: true processing rates and backlog) rescale count and rollup")
	backupMem := fs.String("backup-mem", "", "memory limit of each upstream backup, e.g. 64MiB (default 64MiB)")
	fs.StringVar(&c.Store, "store", c.Store, "where checkpoints and sink output go: dir (the run directory), coord (the coordinator, over each node's connection) or s3://BUCKET/PREFIX?endpoint=HOST:PORT (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); default: the run directory for nodes that see it, the coordinator for the others")
	fs.StringVar(&c.BackupFull, "backup-full", c.BackupFull, "what a backup past --backup-mem does: spill (to the run directory) or block (backpressure until trims free memory)")
	fs.DurationVar(&c.CoordTimeout, "coord-timeout", c.CoordTimeout, "how long the nodes wait for a coordinator that went away (a crash: spate up --resume DIR starts the next), their instances kept; then they stop and exit")
	fs.StringVar(&c.Resume, "resume", c.Resume, "go on with the run in this run directory, whose coordinator died: the nodes rejoin, every instance is restored from its checkpoints, the job goes on (the run's own configuration is used)")
	brk := fs.String("break", "", "run the protocol with one mechanism deliberately wrong, for teaching and to see the checks fail (list: the names and what each breaks)")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: up: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if c.Resume != "" {
		var other []string
		fs.Visit(func(f *flag.Flag) {
			if !resumeFlags[f.Name] {
				other = append(other, "--"+f.Name)
			}
		})
		if len(other) > 0 {
			return c, fmt.Errorf("%w: --resume: the run's configuration is its own (%s/run.json): %s cannot be given with it", ErrUsage, c.Resume, strings.Join(other, ", "))
		}
		return c, nil
	}
	var err error
	if c.Break, err = breaks.Parse(*brk); err != nil {
		return c, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if c.FlushMs, err = FlushMs(*flush); err != nil {
		return c, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if err := ParseParallelism(*par, c.Parallelism); err != nil {
		return c, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if *cost != "" {
		c.Cost = map[string]time.Duration{}
		for _, kv := range strings.Split(*cost, ",") {
			k, v, ok := strings.Cut(kv, "=")
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if !ok || err != nil {
				return c, fmt.Errorf("%w: --cost: %q: want OP=DURATION, e.g. count=50us", ErrUsage, kv)
			}
			c.Cost[strings.TrimSpace(k)] = d
		}
	}
	if *backupMem != "" {
		n, err := backup.ParseSize(*backupMem)
		if err != nil {
			return c, fmt.Errorf("%w: --backup-mem: %v", ErrUsage, err)
		}
		c.BackupMem = n
	}
	if c.Local < 0 {
		c.Local = c.Nodes
	}
	return c, c.Validate()
}

// maxFlushMs bounds --flush: a second.
const maxFlushMs = 1000

// FlushMs is a --flush period as the configuration holds it, in whole
// milliseconds from 1 to a second; an error names the flag.
func FlushMs(d time.Duration) (int, error) {
	if d%time.Millisecond != 0 || d < time.Millisecond || d > maxFlushMs*time.Millisecond {
		return 0, fmt.Errorf("--flush: %v: want whole milliseconds from 1ms to 1s", d)
	}
	return int(d / time.Millisecond), nil
}

// Validate checks the configuration; errors name the flag.
func (c *Config) Validate() error {
	bad := func(flag, format string, args ...any) error {
		return fmt.Errorf("%w: --%s: %s", ErrUsage, flag, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Rescale != "" && c.Rescale != "eds" && c.Rescale != "restart":
		return bad("rescale", "%q: want eds or restart", c.Rescale)
	case c.Nodes < 1 || c.Nodes > 64:
		return bad("nodes", "%d out of range 1..64", c.Nodes)
	case c.Local < 0 || c.Local > c.Nodes:
		return bad("local", "%d out of range 0..%d", c.Local, c.Nodes)
	case c.Job != "windowcount":
		return bad("job", "unknown job %q (have windowcount)", c.Job)
	case c.Rate < 0:
		return bad("rate", "must not be negative")
	case c.Speedup <= 0:
		return bad("speedup", "must be positive")
	case c.Keys < 1:
		return bad("keys", "must be at least 1")
	case c.Duration < 0:
		return bad("duration", "must not be negative")
	case c.FT != "spate" && c.FT != "global" && c.FT != "none":
		return bad("ft", "%q: want spate, global or none", c.FT)
	case c.Window < time.Millisecond:
		return bad("window", "must be at least 1ms")
	case c.Lateness < 0:
		return bad("lateness", "must not be negative")
	case c.Timeout < 10*time.Millisecond:
		return bad("timeout", "must be at least 10ms")
	case c.CoordTimeout < 0:
		return bad("coord-timeout", "must not be negative")
	case c.FlushMs < 1 || c.FlushMs > maxFlushMs:
		return bad("flush", "%dms: want 1ms to 1s", c.FlushMs)
	case c.Heartbeat <= 0 || c.Heartbeat >= c.Timeout:
		return bad("heartbeat", "must be positive and shorter than --timeout")
	case c.BackupMem < 0 || (c.BackupMem > 0 && c.BackupMem < 1<<20):
		return bad("backup-mem", "%d bytes: want at least 1MiB", c.BackupMem)
	case c.Recover != "" && c.Recover != "single" && c.Recover != "parallel":
		return bad("recover", "%q: want single or parallel", c.Recover)
	case c.RecoverOn != "" && c.RecoverOn != "survivors" && c.RecoverOn != "respawned":
		return bad("recover-on", "%q: want survivors or respawned", c.RecoverOn)
	case c.BackupFull != "" && c.BackupFull != "spill" && c.BackupFull != "block":
		return bad("backup-full", "%q: want spill or block", c.BackupFull)
	}
	if _, err := stores.Parse(c.Store); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if c.Interval != "auto" {
		if d, err := time.ParseDuration(c.Interval); err != nil || d <= 0 {
			return bad("interval", "%q: want auto or a positive duration", c.Interval)
		}
	}
	if c.Failures != "" {
		if _, err := tuner.OpenFailures(c.Failures); err != nil {
			return bad("failures", "%v", err)
		}
	}
	for op := range c.Parallelism {
		if op != "source" && op != "count" && op != "rollup" && op != "sink" {
			return bad("parallelism", "unknown operator %q (have source, count, rollup, sink)", op)
		}
	}
	for op, d := range c.Cost {
		switch {
		case op != "count" && op != "rollup":
			return bad("cost", "operator %q: only count and rollup have a simulated cost", op)
		case d <= 0 || d > 10*time.Millisecond:
			return bad("cost", "%s=%v: want a duration in (0, 10ms]", op, d)
		}
	}
	spec := c.Spec()
	if err := spec.Validate(); err != nil {
		return bad("parallelism", "%v", err)
	}
	return nil
}

// IntervalDuration is the checkpoint interval; auto starts at 1s (the
// live tuner's Initial) and the tuner moves it per instance from there.
func (c *Config) IntervalDuration() time.Duration {
	if d, err := time.ParseDuration(c.Interval); err == nil && d > 0 {
		return d
	}
	return time.Second
}

// Spec is the job the configuration runs.
func (c *Config) Spec() job.Spec {
	return job.WindowCount(c.Parallelism, c.Window.Milliseconds(), c.Lateness.Milliseconds())
}

// SourceOptions are the options the source is opened with.
func (c *Config) SourceOptions() traces.Options {
	return traces.Options{Seed: c.Seed, Rate: c.Rate, Keys: c.Keys, Partitions: c.Spec().Ops[0].Parallelism, Speedup: c.Speedup}
}

// Paced reports whether sources follow event time, at --speedup times the
// recorded pace (a generator's event time runs at --rate). --rate 0 runs
// every source as fast as possible.
func (c *Config) Paced() bool { return c.Rate > 0 }

// generated reports whether the source is a generator (gen:...), whose
// rate is --rate, rather than a trace, whose rate is its file's.
func (c *Config) generated() bool { return c.Source == "" || strings.HasPrefix(c.Source, "gen:") }

// costNs is the --cost of each operator in nanoseconds per record (the
// deploy plan's form); nil without one.
func costNs(cost map[string]time.Duration) map[string]int64 {
	if len(cost) == 0 {
		return nil
	}
	out := make(map[string]int64, len(cost))
	for op, d := range cost {
		out[op] = d.Nanoseconds()
	}
	return out
}

// ParseParallelism sets into[OP] from a list "OP=N,OP=N" (empty: nothing).
func ParseParallelism(list string, into map[string]int) error {
	if list == "" {
		return nil
	}
	for _, kv := range strings.Split(list, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 1 {
			return fmt.Errorf("--parallelism: %q: want OP=N with N >= 1", kv)
		}
		into[strings.TrimSpace(k)] = n
	}
	return nil
}
