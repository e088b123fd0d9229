package tuner

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// eventLog builds an events.jsonl stream line by line.
type eventLog struct {
	b   strings.Builder
	seq int
	t   time.Time
}

func (w *eventLog) add(dt time.Duration, kind, node, inst string, fields map[string]any) {
	w.seq++
	w.t = w.t.Add(dt)
	e := map[string]any{"v": 1, "seq": w.seq, "time": w.t.Format(time.RFC3339Nano), "kind": kind, "text": kind}
	if node != "" {
		e["node"] = node
	}
	if inst != "" {
		e["instance"] = inst
	}
	if fields != nil {
		e["fields"] = fields
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	w.b.Write(b)
	w.b.WriteByte('\n')
}

// knownRun is a synthetic run whose checkpoints cost exactly
// base + perKey·keys, times a noise factor in [1-noise, 1+noise], split
// between capture and encode; with two kills, four keyed recoveries, and a
// tuner summary.
func knownRun(base time.Duration, perKey, noise float64, withEncode bool) string {
	w := &eventLog{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	rng := rand.New(rand.NewPCG(1, 2))
	w.add(0, "run_started", "", "", map[string]any{"dir": "/x"})
	for i := range 60 {
		inst := []string{"count#0", "count#1"}[i%2]
		keys := rng.IntN(200_000)
		full := i%5 == 0
		cost := (base.Seconds() + perKey*float64(keys)) * (1 + noise*(2*rng.Float64()-1))
		us := cost * 1e6
		f := map[string]any{"id": i/2 + 1, "full": full, "keys": keys, "raw_bytes": 70 * keys, "bytes": 60 * keys,
			"persist_us": 40_000, "total_us": 50_000 + 10*i, "gen": 1}
		if withEncode {
			f["capture_us"], f["encode_us"] = int64(us*0.1), int64(us)-int64(us*0.1)
		} else {
			f["capture_us"] = int64(us)
		}
		w.add(100*time.Millisecond, "checkpoint", "n1", inst, f)
		// A source's checkpoint holds no keys and costs something else:
		// it must not pull the line.
		w.add(time.Millisecond, "checkpoint", "n2", "source#0", map[string]any{"id": i + 1, "full": true, "keys": 0,
			"capture_us": 5_000_000, "persist_us": 1, "total_us": 9_000_000, "gen": 1})
	}
	for i, d := range []time.Duration{300 * time.Millisecond, 500 * time.Millisecond} {
		node := fmt.Sprintf("n%d", i+1)
		w.add(time.Second, "fault_started", "", "", map[string]any{"id": i + 1, "verb": "kill", "nodes": []string{node}, "target": "count/0"})
		w.add(d, "node_lost", node, "", map[string]any{"reason": "control stream ended: EOF"})
		w.add(10*time.Millisecond, "recovery_done", node, "count#0", map[string]any{"detect_to_placed_ms": 10 * (i + 1), "restore_ms": 100 * (i + 1), "catch_up_ms": 5, "total_ms": 200})
		w.add(10*time.Millisecond, "recovery_done", node, "count#1", map[string]any{"detect_to_placed_ms": 30, "restore_ms": 300, "catch_up_ms": 5, "total_ms": 400})
		w.add(10*time.Millisecond, "recovery_done", node, "source#0", map[string]any{"detect_to_placed_ms": 9999, "restore_ms": 9999, "catch_up_ms": 5, "total_ms": 9999})
	}
	// A loss with no fault before it is no detection sample.
	w.add(time.Second, "node_lost", "n3", "", map[string]any{"reason": "no heartbeat for 1.2s"})
	w.add(0, "tuner_summary", "", "", map[string]any{"instances": []map[string]any{
		{"instance": "source#0", "processed": 1e9, "busy_s": 1},
		{"instance": "count#0", "processed": 3e6, "busy_s": 10},
		{"instance": "count#1", "processed": 1e6, "busy_s": 10},
	}})
	return w.b.String()
}

func TestCalibrateRecoversAKnownCostLine(t *testing.T) {
	const base, perKey = 20 * time.Millisecond, 0.5e-6
	cal, err := Calibrate("events.jsonl", strings.NewReader(knownRun(base, perKey, 0.05, true)))
	if err != nil {
		t.Fatal(err)
	}
	if rel := math.Abs(cal.Base.Seconds()-base.Seconds()) / base.Seconds(); rel > 0.1 {
		t.Errorf("base %v, want %v within 10%%", cal.Base, base)
	}
	if rel := math.Abs(cal.PerKey-perKey) / perKey; rel > 0.05 {
		t.Errorf("per key %v, want %v within 5%%", cal.PerKey, perKey)
	}
	if cal.CostSamples != 60 || cal.Full != 12 || cal.CostCaptureOnly {
		t.Errorf("cost samples %d, full %d, capture only %v; want 60, 12, false", cal.CostSamples, cal.Full, cal.CostCaptureOnly)
	}
	// total_us is 50,000 + 10i µs for i in 0..59: median 50,295 µs.
	if cal.Persist != 50295*time.Microsecond || cal.PersistSamples != 60 {
		t.Errorf("persist %v (%d samples), want 50.295ms (60)", cal.Persist, cal.PersistSamples)
	}
	if cal.Detect != 400*time.Millisecond || cal.DetectSamples != 2 {
		t.Errorf("detect %v (%d samples), want 400ms (2)", cal.Detect, cal.DetectSamples)
	}
	// Keyed recoveries: restore 100, 300, 200, 300 ms; placed 10, 30, 20, 30 ms.
	if cal.Restore != 250*time.Millisecond || cal.Restart != 25*time.Millisecond || cal.RecoverySamples != 4 {
		t.Errorf("restore %v restart %v (%d samples), want 250ms 25ms (4)", cal.Restore, cal.Restart, cal.RecoverySamples)
	}
	if cal.Capacity != 200_000 || cal.CapacitySamples != 2 || cal.CapacityLowerBound {
		t.Errorf("capacity %v (%d samples, lower bound %v), want 200000 (2, false)", cal.Capacity, cal.CapacitySamples, cal.CapacityLowerBound)
	}
}

func TestCalibrateExactLine(t *testing.T) {
	const base, perKey = 7 * time.Millisecond, 2e-6
	cal, err := Calibrate("e", strings.NewReader(knownRun(base, perKey, 0, true)))
	if err != nil {
		t.Fatal(err)
	}
	// Without noise only the microsecond rounding of the events remains.
	if d := cal.Base - base; d < -5*time.Microsecond || d > 5*time.Microsecond {
		t.Errorf("base %v, want %v", cal.Base, base)
	}
	if math.Abs(cal.PerKey-perKey)/perKey > 1e-4 {
		t.Errorf("per key %v, want %v", cal.PerKey, perKey)
	}
}

func TestCalibrateWithoutEncodeUsTakesTheCaptureAndSaysSo(t *testing.T) {
	cal, err := Calibrate("e", strings.NewReader(knownRun(3*time.Millisecond, 0.5e-6, 0, false)))
	if err != nil {
		t.Fatal(err)
	}
	if !cal.CostCaptureOnly || cal.CostSamples != 60 {
		t.Errorf("capture only %v, samples %d", cal.CostCaptureOnly, cal.CostSamples)
	}
}

func TestCalibrateARunWithoutRecoveriesOrSummary(t *testing.T) {
	w := &eventLog{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	w.add(0, "checkpoint", "n1", "count#0", map[string]any{"full": true, "keys": 10, "capture_us": 100, "encode_us": 100, "total_us": 1000})
	w.add(0, "metrics", "n1", "count#0", map[string]any{"in_rate": 500.0})
	w.add(0, "metrics", "n1", "count#0", map[string]any{"in_rate": 900.0})
	w.add(0, "metrics", "n1", "source#0", map[string]any{"in_rate": 1e9})
	cal, err := Calibrate("e", strings.NewReader(w.b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if cal.DetectSamples != 0 || cal.RecoverySamples != 0 || cal.Detect != 0 || cal.Restore != 0 {
		t.Errorf("recoveries measured in a run without any: %+v", cal)
	}
	if cal.Capacity != 900 || !cal.CapacityLowerBound || cal.CapacitySamples != 2 {
		t.Errorf("capacity %v (lower bound %v, %d samples), want 900 from the metrics, a lower bound", cal.Capacity, cal.CapacityLowerBound, cal.CapacitySamples)
	}
	// One checkpoint: no slope to fit, the base is its cost.
	if cal.Base != 200*time.Microsecond || cal.PerKey != 0 {
		t.Errorf("base %v per key %v", cal.Base, cal.PerKey)
	}
}

func TestCalibrateBadLines(t *testing.T) {
	good := `{"v":1,"seq":1,"time":"2026-12-01T00:00:00Z","kind":"run_started","text":"x"}`
	for _, tc := range []struct {
		name, line, want string
	}{
		{"not JSON", `{"seq":2,`, "events.jsonl:3: not a JSON event"},
		{"no kind", `{"seq":2,"time":"2026-12-01T00:00:00Z"}`, "events.jsonl:3: event has no kind"},
		{"keys not a number", `{"kind":"checkpoint","instance":"count#0","fields":{"keys":"many","capture_us":1}}`, "events.jsonl:3: checkpoint event: bad fields"},
		{"checkpoint without keys", `{"kind":"checkpoint","instance":"count#0","fields":{"capture_us":1}}`, "events.jsonl:3: checkpoint event without keys"},
		{"negative time", `{"kind":"checkpoint","instance":"count#0","fields":{"keys":1,"capture_us":-1}}`, "events.jsonl:3: checkpoint event with a negative"},
		{"bad time", `{"kind":"node_lost","time":"yesterday"}`, "events.jsonl:3: not a JSON event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Calibrate("events.jsonl", strings.NewReader(good+"\n\n"+tc.line+"\n"+good+"\n"))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line starting %q", err, tc.want)
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 {
				t.Errorf("error %v is not a LineError at line 3", err)
			}
		})
	}
}

func TestFitLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		a, b   float64
	}{
		{"exact", []float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 1, 2},
		{"falling is a constant", []float64{0, 1, 2}, []float64{3, 2, 1}, 2, 0},
		{"negative intercept goes through the origin", []float64{1, 2, 3}, []float64{0, 2, 4}, 0, 8.0 / 7},
		{"one x", []float64{5, 5}, []float64{1, 3}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := fitLine(tc.xs, tc.ys)
			if !near(a, tc.a, 1e-12) || !near(b, tc.b, 1e-12) {
				t.Errorf("fit %v + %v x, want %v + %v x", a, b, tc.a, tc.b)
			}
		})
	}
}

// The recorded run in testdata/calib-run is a real 50 s run at 1,000,000
// keys (3 nodes, two kills), cut to the events calibration reads.
func TestSimMainCalibrate(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "calib-run", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cal, err := Calibrate("x", f)
	if err != nil {
		t.Fatal(err)
	}
	if cal.CostSamples < 10 || cal.DetectSamples < 1 || cal.RecoverySamples < 1 || cal.CapacitySamples < 1 {
		t.Fatalf("the recorded run calibrates too little: %+v", cal)
	}

	jsonRun := func(args ...string) SimReport {
		t.Helper()
		out, errs, code := runSim(t, append(append(slices.Clone(smallArgs), "--json"), args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var rep SimReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	plain := jsonRun()
	calib := jsonRun("--calibrate", filepath.Join("testdata", "calib-run"))
	c := calib.Calibration
	if c == nil {
		t.Fatal("no calibration in the report")
	}
	for name, want := range map[string]float64{
		"ckpt-base": cal.Base.Seconds(), "persist": cal.Persist.Seconds(), "detect": cal.Detect.Seconds(),
		"load-base": cal.Restore.Seconds(), "capacity": 4 * cal.Capacity, // smallArgs has 4 instances
	} {
		got, ok := c.Calibrated[name]
		if !ok || !near(got.Value, want, 1e-9*max(1, want)) || got.Samples == 0 {
			t.Errorf("calibrated %s = %+v (present %v), want %v", name, got, ok, want)
		}
	}
	if calib.Capacity != 4*cal.Capacity {
		t.Errorf("the simulation ran at capacity %v, not the calibrated %v", calib.Capacity, 4*cal.Capacity)
	}
	if calib.Efficiency["fixed-1s"] == plain.Efficiency["fixed-1s"] {
		t.Error("calibrating changed nothing in the simulation")
	}

	// An explicit flag wins, and the report says it was overridden.
	over := jsonRun("--calibrate", filepath.Join("testdata", "calib-run"), "--ckpt-base", "50ms", "--util", "0.5")
	if _, ok := over.Calibration.Calibrated["ckpt-base"]; ok || !slices.Contains(over.Calibration.Overridden, "ckpt-base") {
		t.Errorf("--ckpt-base given: calibrated %v, overridden %v", over.Calibration.Calibrated, over.Calibration.Overridden)
	}
	if !slices.Contains(over.Calibration.Overridden, "capacity") || !near(over.Utilisation, 0.5, 1e-9) {
		t.Errorf("--util given: overridden %v, utilisation %v", over.Calibration.Overridden, over.Utilisation)
	}

	// The table names what was calibrated and with how many samples.
	out, errs, code := runSim(t, append(slices.Clone(smallArgs), "--calibrate", filepath.Join("testdata", "calib-run"), "--detect", "2s")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"calibrated from", "--ckpt-base", fmt.Sprintf("%d samples", cal.CostSamples),
		"measured, but the flag given wins: --detect", "never calibrated", "detect 2s"} {
		if !strings.Contains(out, want) {
			t.Errorf("table has no %q:\n%s", want, out)
		}
	}
}

func TestSimMainCalibrateErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "events.jsonl"), []byte("{\"kind\":\"run_started\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "events.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"bad line", bad, filepath.Join(bad, "events.jsonl") + ":2: not a JSON event"},
		{"no events", empty, "no events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runSim(t, append(slices.Clone(smallArgs), "--calibrate", tc.dir)...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q", code, out)
			}
			if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) || !strings.HasPrefix(errs, "spate tuner sim: --calibrate") {
				t.Errorf("stderr %q, want one line with %q", errs, tc.want)
			}
		})
	}
}
