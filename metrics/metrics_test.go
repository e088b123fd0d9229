package metrics

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"spate/events"
	"spate/job"
)

// scrape fetches /metrics from addr and returns each sample line's value
// by its name and labels as written ("spate_x{instance=\"a\"}").
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s: %s", resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func ms(v int64) *int64 { return &v }

// The events of a short run with a checkpoint of each kind, a kill and
// its recovery, backups trimmed and spilling, and a tuner decision, as the
// coordinator publishes them.
func feed(x *Exporter) {
	t0 := time.Unix(1000, 0)
	evs := []events.Event{
		{Kind: events.Throughput, Fields: events.ThroughputFields{InRps: 50000, OutRps: 1200, In: 50000, Out: 1200, LagMs: ms(80)}},
		{Kind: events.Throughput, Fields: events.ThroughputFields{InRps: 40000, OutRps: 900, In: 90000, Out: 2100, LagMs: ms(120)}},
		{Kind: events.Metrics, Node: "n1", Instance: "count#0", Fields: events.MetricsFields{InRate: 30000, OutRate: 8000, Backlog: 1, Backpressure: "OK"}},
		{Kind: events.Metrics, Node: "n1", Instance: "count#0", Fields: events.MetricsFields{InRate: 25000, OutRate: 10000, Backlog: 3, Backpressure: "OK"}},
		{Kind: events.Metrics, Node: "n1", Fields: events.MetricsFields{InRate: 25000, CPU: 40}},
		{Kind: events.Checkpoint, Instance: "count#0", Fields: events.CheckpointFields{Full: true, Bytes: 4096, TotalUs: 5000, CaptureUs: 200}},
		{Kind: events.Checkpoint, Instance: "count#0", Fields: events.CheckpointFields{Full: false, Bytes: 1024, TotalUs: 2000, CaptureUs: 100}},
		{Kind: events.Checkpoint, Fields: events.CheckpointFields{Global: true, TookMs: 30}},
		{Kind: events.Trim, Instance: "source#0", Fields: events.TrimFields{HeldBytes: 65536}},
		{Kind: events.BackupSpill, Instance: "count#1", Fields: events.BackupSpillFields{Spilling: true, MemBytes: 1 << 20, SpillBytes: 4096}},
		{Kind: events.BackupFull, Instance: "count#1", Fields: events.BackupFullFields{Full: true}},
		{Kind: events.Interval, Instance: "count#0", Fields: events.IntervalFields{Instance: "count#0", IntervalMs: 2500}},
		{Kind: events.FaultStarted, Fields: events.FaultStartedFields{ID: 1, Verb: "kill"}},
		{Kind: events.NodeLost, Node: "n2", Fields: events.NodeLostFields{Instances: []job.InstanceID{"count#1", "sink#1"}}},
		{Kind: events.RecoveryPlaced, Node: "n1", Instance: "count#1"},
		{Kind: events.RecoveryPlaced, Node: "n1", Instance: "sink#1"},
		{Kind: events.RecoveryDone, Node: "n1", Instance: "count#1", Fields: events.RecoveryDoneFields{TotalMs: 300}},
		{Kind: events.FaultEnded, Fields: events.FaultEndedFields{ID: 1}},
		{Kind: events.RescaleDone, Fields: events.RescaleDoneFields{Op: "count"}},
	}
	for i, e := range evs {
		e.Seq, e.Time = uint64(i+1), t0.Add(time.Duration(i)*time.Second)
		x.Observe(e)
	}
}

func TestScrapeOverLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x := New()
	srv, err := Serve(ctx, "127.0.0.1:0", x)
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr()
	feed(x)
	got := scrape(t, addr.String())
	for name, want := range map[string]float64{
		"spate_records_read_total":                                           90000,
		"spate_results_written_total":                                        2100,
		"spate_output_lag_seconds":                                           0.12,
		`spate_task_input_records_total{operator="count",task="count#0"}`:    25000, // the second sample's rate over the second since the first
		`spate_task_output_records_total{operator="count",task="count#0"}`:   10000,
		`spate_task_backlog{operator="count",task="count#0"}`:                3,
		`spate_checkpoints_total{kind="full"}`:                               1,
		`spate_checkpoints_total{kind="delta"}`:                              1,
		`spate_checkpoints_total{kind="global"}`:                             1,
		`spate_checkpoint_duration_seconds_count{kind="full"}`:               1,
		`spate_checkpoint_duration_seconds_sum{kind="full"}`:                 0.005,
		`spate_checkpoint_duration_seconds_sum{kind="global"}`:               0.03,
		"spate_checkpoint_capture_seconds_count":                             2,
		`spate_checkpoint_stored_bytes_sum{kind="delta"}`:                    1024,
		`spate_backup_held_bytes{operator="source",task="source#0"}`:         65536,
		`spate_backup_held_bytes{operator="count",task="count#1"}`:           1<<20 + 4096,
		`spate_backup_spilling{operator="count",task="count#1"}`:             1,
		`spate_backup_full_pauses_total{operator="count",task="count#1"}`:    1,
		`spate_checkpoint_interval_seconds{operator="count",task="count#0"}`: 2.5,
		"spate_nodes_lost_total":                                             1,
		"spate_recoveries_started_total":                                     2,
		"spate_recoveries_done_total":                                        1,
		"spate_recoveries_in_progress":                                       1,
		"spate_recovery_duration_seconds_sum":                                0.3,
		"spate_faults_active":                                                0,
		"spate_rescales_total":                                               1,
	} {
		v, ok := got[name]
		if !ok {
			t.Errorf("no sample %s", name)
			continue
		}
		if diff := v - want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	// A throughput total that goes down (the coordinator's counter
	// restarted) does not make the counter go back.
	x.Observe(events.Event{Kind: events.Throughput, Fields: events.ThroughputFields{In: 10}})
	if got := scrape(t, addr.String()); got["spate_records_read_total"] != 90000 {
		t.Errorf("records_read_total went to %v", got["spate_records_read_total"])
	}
}

func TestServeRefusesABadAddress(t *testing.T) {
	if _, err := Serve(context.Background(), "127.0.0.1:notaport", New()); err == nil || !strings.HasPrefix(err.Error(), "--metrics 127.0.0.1:notaport: ") {
		t.Errorf("a bad address: %v", err)
	}
}

// After its context is done the server shuts down and its port is
// closed.
func TestServeStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Serve(ctx, "127.0.0.1:0", New())
	if err != nil {
		t.Fatal(err)
	}
	scrape(t, srv.Addr().String())
	cancel()
	<-srv.Done()
	c := http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Get(fmt.Sprintf("http://%s/metrics", srv.Addr())); err == nil {
		resp.Body.Close()
		t.Error("still serving after its context was cancelled")
	}
}

// The events of a recorded run (a live rescale, a kill, backup spills),
// read back from its events.jsonl, add up to what the run did.
func TestARecordedRunAddsUp(t *testing.T) {
	f, err := os.Open("../chaos/testdata/run-rescale/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x := New()
	kinds := map[events.Kind]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		kinds[e.Kind]++
		x.Observe(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Serve(ctx, "127.0.0.1:0", x)
	if err != nil {
		t.Fatal(err)
	}
	got := scrape(t, srv.Addr().String())
	ckpts := got[`spate_checkpoints_total{kind="full"}`] + got[`spate_checkpoints_total{kind="delta"}`]
	if int(ckpts) != kinds[events.Checkpoint] || kinds[events.Checkpoint] == 0 {
		t.Errorf("%v checkpoints counted of %d", ckpts, kinds[events.Checkpoint])
	}
	if int(got["spate_recoveries_done_total"]) != kinds[events.RecoveryDone] || got["spate_recoveries_in_progress"] != 0 {
		t.Errorf("recoveries done %v of %d, %v in progress", got["spate_recoveries_done_total"], kinds[events.RecoveryDone], got["spate_recoveries_in_progress"])
	}
	if got["spate_nodes_lost_total"] != 1 || got["spate_rescales_total"] != 1 || got["spate_faults_active"] != 0 {
		t.Errorf("lost %v, rescales %v, faults active %v", got["spate_nodes_lost_total"], got["spate_rescales_total"], got["spate_faults_active"])
	}
	if got["spate_records_read_total"] <= 0 || got[`spate_backup_full_pauses_total{operator="count",task="count#0"}`] != 1 {
		t.Errorf("records read %v, count#0's pauses %v", got["spate_records_read_total"], got[`spate_backup_full_pauses_total{operator="count",task="count#0"}`])
	}
}
