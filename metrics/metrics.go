package metrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"spate/events"
)

// Exporter folds events into Prometheus collectors.
type Exporter struct {
	reg *prometheus.Registry

	mu       sync.Mutex // guards the last totals and the open recoveries
	lastIn   float64
	lastOut  float64
	lastAt   map[string]time.Time // a task's last metrics event
	open     map[string]bool      // tasks (or "job") lost and not yet caught up
	faultsOn map[int]bool

	readTotal, writtenTotal    prometheus.Counter
	lag                        prometheus.Gauge
	taskIn, taskOut            *prometheus.CounterVec
	taskBacklog                *prometheus.GaugeVec
	ckpts                      *prometheus.CounterVec
	ckptDur, ckptBytes         *prometheus.HistogramVec
	ckptCapture                prometheus.Histogram
	backupHeld, backupSpilling *prometheus.GaugeVec
	backupPauses               *prometheus.CounterVec
	interval                   *prometheus.GaugeVec
	lost, recStarted, recDone  prometheus.Counter
	recOpen, faults            prometheus.Gauge
	recDur                     prometheus.Histogram
	rescales                   prometheus.Counter
}

// New returns an exporter with its own registry (nothing global), the
// Go runtime's and the process's collectors included.
func New() *Exporter {
	x := &Exporter{reg: prometheus.NewRegistry(), lastAt: map[string]time.Time{}, open: map[string]bool{}, faultsOn: map[int]bool{}}
	f := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "spate", Name: name, Help: help}
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts(f(name, help)))
		x.reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts(f(name, help)))
		x.reg.MustRegister(g)
		return g
	}
	gaugeVec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts(f(name, help)), labels)
		x.reg.MustRegister(g)
		return g
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts(f(name, help)), labels)
		x.reg.MustRegister(c)
		return c
	}
	histVec := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "spate", Name: name, Help: help, Buckets: buckets}, labels)
		x.reg.MustRegister(h)
		return h
	}
	seconds := prometheus.ExponentialBuckets(0.0001, 2.5, 14) // 100 µs .. ~15 s
	x.readTotal = counter("records_read_total", "Records read by the sources.")
	x.writtenTotal = counter("results_written_total", "Results written by the sinks.")
	x.lag = gauge("output_lag_seconds", "How far the output is behind the input, at the last sample.")
	x.taskIn = counterVec("task_input_records_total", "Records a task (an operator's instance) took in, summed from its sampled rates.", "task", "operator")
	x.taskOut = counterVec("task_output_records_total", "Records a task sent on, summed from its sampled rates.", "task", "operator")
	x.taskBacklog = gaugeVec("task_backlog", "A task's queued input batches.", "task", "operator")
	x.ckpts = counterVec("checkpoints_total", "Completed checkpoints, by kind: full, delta or global.", "kind")
	x.ckptDur = histVec("checkpoint_duration_seconds", "A checkpoint's time from capture to durable, by kind.", seconds, "kind")
	x.ckptBytes = histVec("checkpoint_stored_bytes", "A checkpoint's size as stored, by kind.", prometheus.ExponentialBuckets(1024, 4, 12), "kind")
	x.ckptCapture = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "spate", Name: "checkpoint_capture_seconds",
		Help: "The capture of a checkpoint: how long its instance stopped processing.", Buckets: seconds})
	x.reg.MustRegister(x.ckptCapture)
	x.backupHeld = gaugeVec("backup_held_bytes", "Bytes a task's upstream backup held (memory and spill) at its last trim or change.", "task", "operator")
	x.backupSpilling = gaugeVec("backup_spilling", "1 while a task's upstream backup spills to disk.", "task", "operator")
	x.backupPauses = counterVec("backup_full_pauses_total", "Times a task's input was paused for a full backup.", "task", "operator")
	x.interval = gaugeVec("checkpoint_interval_seconds", "A task's checkpoint interval, as the tuner last set it.", "task", "operator")
	x.lost = counter("nodes_lost_total", "Nodes lost.")
	x.recStarted = counter("recoveries_started_total", "Instances (or, with --ft global, job rollbacks) whose recovery began.")
	x.recDone = counter("recoveries_done_total", "Recoveries finished: the instance caught up with its upstreams.")
	x.recOpen = gauge("recoveries_in_progress", "Recoveries begun and not finished.")
	x.recDur = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "spate", Name: "recovery_duration_seconds",
		Help: "A recovery's time from the loss detected to caught up.", Buckets: seconds})
	x.reg.MustRegister(x.recDur)
	x.faults = gauge("faults_active", "Faults injected and not yet over.")
	x.rescales = counter("rescales_total", "Rescales finished.")
	x.reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return x
}

// Registry is the exporter's registry, for a caller that serves it
// itself.
func (x *Exporter) Registry() *prometheus.Registry { return x.reg }

// Handler serves the metrics in Prometheus's exposition formats.
func (x *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(x.reg, promhttp.HandlerOpts{Registry: x.reg})
}

// Observe folds one event into the collectors. It never blocks on I/O.
func (x *Exporter) Observe(e events.Event) {
	switch e.Kind {
	case events.Throughput:
		f, _ := e.Fields.(events.ThroughputFields)
		if f.LagMs != nil {
			x.lag.Set(float64(*f.LagMs) / 1000)
		}
		x.mu.Lock()
		in, out := float64(f.In), float64(f.Out)
		if in > x.lastIn {
			x.readTotal.Add(in - x.lastIn)
			x.lastIn = in
		}
		if out > x.lastOut {
			x.writtenTotal.Add(out - x.lastOut)
			x.lastOut = out
		}
		x.mu.Unlock()
	case events.Metrics:
		f, _ := e.Fields.(events.MetricsFields)
		if e.Instance == "" {
			break // a node's sums: the tasks' own series add up to them
		}
		x.mu.Lock()
		prev, ok := x.lastAt[e.Instance]
		x.lastAt[e.Instance] = e.Time
		x.mu.Unlock()
		if dt := e.Time.Sub(prev).Seconds(); ok && dt > 0 {
			x.taskIn.WithLabelValues(task(e.Instance)...).Add(f.InRate * dt)
			x.taskOut.WithLabelValues(task(e.Instance)...).Add(f.OutRate * dt)
		}
		x.taskBacklog.WithLabelValues(task(e.Instance)...).Set(float64(f.Backlog))
	case events.Checkpoint:
		f, _ := e.Fields.(events.CheckpointFields)
		kind := "delta"
		switch {
		case f.Global:
			kind = "global"
			x.ckptDur.WithLabelValues(kind).Observe(float64(f.TookMs) / 1000)
		case f.Full:
			kind = "full"
		}
		x.ckpts.WithLabelValues(kind).Inc()
		if kind != "global" {
			x.ckptDur.WithLabelValues(kind).Observe(float64(f.TotalUs) / 1e6)
			x.ckptCapture.Observe(float64(f.CaptureUs) / 1e6)
			x.ckptBytes.WithLabelValues(kind).Observe(float64(f.Bytes))
		}
	case events.Trim:
		f, _ := e.Fields.(events.TrimFields)
		x.backupHeld.WithLabelValues(task(e.Instance)...).Set(float64(f.HeldBytes))
	case events.BackupSpill:
		f, _ := e.Fields.(events.BackupSpillFields)
		x.backupHeld.WithLabelValues(task(e.Instance)...).Set(float64(f.MemBytes + f.SpillBytes))
		v := 0.0
		if f.Spilling {
			v = 1
		}
		x.backupSpilling.WithLabelValues(task(e.Instance)...).Set(v)
	case events.BackupFull:
		f, _ := e.Fields.(events.BackupFullFields)
		if f.Full {
			x.backupPauses.WithLabelValues(task(e.Instance)...).Inc()
		}
	case events.Interval:
		f, _ := e.Fields.(events.IntervalFields)
		id := f.Instance
		if id == "" {
			id = e.Instance
		}
		x.interval.WithLabelValues(task(id)...).Set(float64(f.IntervalMs) / 1000)
	case events.NodeLost:
		x.lost.Inc()
	case events.RecoveryPlaced:
		id := e.Instance
		if id == "" {
			id = "job"
		}
		x.mu.Lock()
		if !x.open[id] {
			x.open[id] = true
			x.recStarted.Inc()
		}
		x.recOpen.Set(float64(len(x.open)))
		x.mu.Unlock()
	case events.RecoveryRestored:
		if e.Instance == "" { // a global rollback is over once every instance is restored
			x.finish("job", -1)
		}
	case events.RecoveryDone:
		f, _ := e.Fields.(events.RecoveryDoneFields)
		x.finish(e.Instance, float64(f.TotalMs))
	case events.FaultStarted:
		f, _ := e.Fields.(events.FaultStartedFields)
		x.mu.Lock()
		x.faultsOn[f.ID] = true
		x.faults.Set(float64(len(x.faultsOn)))
		x.mu.Unlock()
	case events.FaultEnded:
		f, _ := e.Fields.(events.FaultEndedFields)
		x.mu.Lock()
		delete(x.faultsOn, f.ID)
		x.faults.Set(float64(len(x.faultsOn)))
		x.mu.Unlock()
	case events.RescaleDone:
		x.rescales.Inc()
	}
}

// task is the label values of a task: its id (count#0) and its
// operator (count). An id without an index is its own operator.
func task(id string) []string {
	op, _, _ := strings.Cut(id, "#")
	return []string{id, op}
}

func (x *Exporter) finish(id string, totalMs float64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.open[id] {
		return
	}
	delete(x.open, id)
	x.recDone.Inc()
	if totalMs >= 0 {
		x.recDur.Observe(totalMs / 1000)
	}
	x.recOpen.Set(float64(len(x.open)))
}

// Server is a running /metrics endpoint.
type Server struct {
	addr net.Addr
	done chan struct{}
}

// Addr is the address it listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Done is closed once the server has shut down and closed its listener.
func (s *Server) Done() <-chan struct{} { return s.done }

// Serve listens on addr (host:port; port 0 picks one) and serves the
// exporter at /metrics until ctx is done. It returns once it listens.
func Serve(ctx context.Context, addr string, x *Exporter) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", x.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s := &Server{addr: ln.Addr(), done: make(chan struct{})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln) // ErrServerClosed after Shutdown; any other error ends the endpoint, not the run
	}()
	go func() {
		defer close(s.done)
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		case <-served:
		}
		<-served
	}()
	return s, nil
}
