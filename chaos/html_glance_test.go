package chaos

import (
	"bytes"
	"strings"
	"testing"
)

// TestReportReadsAtAGlance checks that the report gives in and out a panel
// each, so that a small out does not lie flat on in's axis, and that its
// durations and sizes read as a person writes them, not as raw µs.
func TestReportReadsAtAGlance(t *testing.T) {
	r := &Report{Run: "r1", Verdict: "pass"}
	r.Series.Throughput = []RatePoint{{Ms: 0, InRps: 12000, OutRps: 3}, {Ms: 1000, InRps: 11800, OutRps: 5}}
	r.Checkpoints = CheckpointStats{Count: 3, Full: 1, Delta: 2, RawBytes: 3 << 20, StoredBytes: 1536,
		CaptureUs: Quantiles{P50: 157, P99: 8962}, PersistUs: Quantiles{P50: 2100000, P99: 2500000}, TotalUs: Quantiles{P50: 157, P99: 9000}}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	out := b.String()
	for _, id := range []string{"throughput-in", "throughput-out"} {
		if !strings.Contains(out, `id="`+id+`"`) {
			t.Errorf("no %s panel", id)
		}
	}
	for _, s := range []string{"Capture p50 157 µs p99 9.0 ms", "persist p50 2.1 s", "3.0 MiB raw", "1.5 KiB stored"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q", s)
		}
	}
	if strings.Contains(out, "8962µs") || strings.Contains(out, "2100000") {
		t.Error("report still prints raw microseconds")
	}
}
