package metrics

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"spate/events"
)

// fed is an exporter that has seen every kind of event it folds: the
// hand-made run of feed and the recorded run with a rescale and a kill.
func fed(t *testing.T) *Exporter {
	t.Helper()
	x := New()
	feed(x)
	f, err := os.Open("../chaos/testdata/run-rescale/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		x.Observe(e)
	}
	return x
}

// The exported names follow Prometheus's own rules, as promlint (the
// linter behind `promtool check metrics`) reads them: counters end in
// _total, units are base units named as a suffix, every metric has help.
func TestMetricNamesPassPromlint(t *testing.T) {
	mfs, err := fed(t).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "spate_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

// Rules promlint does not check: no label that Prometheus puts on every
// target itself (instance, job), no rate precomputed as a gauge where a
// counter would let rate() make it, and no counter that repeats a
// histogram's _sum.
func TestMetricsLeavePrometheusItsOwnLabelsAndRates(t *testing.T) {
	mfs, err := fed(t).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	hists := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			hists[mf.GetName()] = true
		}
	}
	seen := 0
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "spate_") {
			continue
		}
		seen++
		if strings.Contains(name, "per_second") || strings.HasSuffix(name, "_rate") {
			t.Errorf("%s: a rate as a gauge; export the count as a counter for rate()", name)
		}
		if base, ok := strings.CutSuffix(name, "_total"); ok && hists[base] {
			t.Errorf("%s repeats the histogram %s's _sum", name, base)
		}
		if len(mf.GetMetric()) > 0 {
			for _, l := range mf.GetMetric()[0].GetLabel() {
				if l.GetName() == "instance" || l.GetName() == "job" {
					t.Errorf("%s has a label %q, which Prometheus sets on every target itself", name, l.GetName())
				}
			}
		}
	}
	if seen < 15 {
		t.Errorf("only %d spate_ metrics gathered", seen)
	}
}

// promtool, where it is installed, agrees with the scrape.
func TestPromtoolChecksTheScrape(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("no promtool on PATH")
	}
	rec := httptest.NewRecorder()
	fed(t).Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = rec.Body
	out, err := cmd.CombinedOutput()
	spate := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "spate_") {
			spate++
			t.Errorf("promtool: %s", line)
		}
	}
	if err != nil && spate == 0 && !strings.Contains(string(out), "go_") && !strings.Contains(string(out), "process_") {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
