package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"spate/events"
)

// stream is a synthetic run: the lifecycle, two seconds of checkpoints,
// fired windows, metrics and throughput, a kill and its recovery.
func stream() []events.Event {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ck := func(ms int, inst string, full bool, keys, bytes int, totalUs int64) events.Event {
		return events.Event{Time: at(ms), Kind: events.Checkpoint, Instance: inst, Text: "checkpoint of " + inst,
			Fields: events.CheckpointFields{Full: full, Keys: keys, Bytes: bytes, RawBytes: 2 * bytes, TotalUs: totalUs}}
	}
	tp := func(ms int, in, out uint64) events.Event {
		return events.Event{Time: at(ms), Kind: events.Throughput, Text: "throughput line", Fields: events.ThroughputFields{In: in, Out: out}}
	}
	wf := func(ms int, inst string, wm float64, results uint64) events.Event {
		return events.Event{Time: at(ms), Kind: events.WindowFired, Instance: inst, Text: "fired", Fields: events.WindowFiredFields{Watermark: wm, Results: results}}
	}
	metrics := events.Event{Time: at(500), Kind: events.Metrics, Text: "metrics"}
	return []events.Event{
		{Time: at(0), Kind: events.RunStarted, Text: "run r1"},
		{Time: at(1), Kind: events.NodeJoined, Node: "n1", Text: "n1 joined"},
		{Time: at(2), Kind: events.JobStarted, Text: "job started"},
		ck(300, "count#0", true, 1000, 4096, 2000), ck(310, "count#1", true, 1100, 4096, 5000), metrics,
		wf(400, "rollup#0", 1000, 30), wf(410, "rollup#1", 1004, 31),
		{Time: at(450), Kind: events.Interval, Text: "interval"},
		tp(1000, 100000, 61),
		ck(1300, "count#0", false, 10, 1024, 1000), metrics,
		{Time: at(1500), Kind: events.FaultStarted, Text: "fault 1: kill n2"},
		{Time: at(1600), Kind: events.RecoveryDone, Instance: "count#1", Text: "count#1 recovered"},
		ck(1700, "count#1", false, 20, 1024, 3000),
		tp(2000, 200000, 130),
		{Time: at(2100), Kind: events.DrainStarted, Text: "draining"},
		{Time: at(2200), Kind: events.RunFinished, Text: "run finished", Fields: events.RunFinishedFields{Records: 210000}},
	}
}

func printed(mode outputMode) []string {
	var b bytes.Buffer
	p := newPrinter(&b, mode)
	for _, e := range stream() {
		p.Add(e)
	}
	p.Close()
	p.Summary("/tmp/r1")
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

func kinds(lines []string) []string {
	var out []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 1 {
			if f[0] == "summary:" {
				out = append(out, "summary")
				continue
			}
			out = append(out, f[1])
		}
	}
	return out
}

func TestDefaultHeadlessOutputSumsEachSecond(t *testing.T) {
	lines := printed(outputMode{})
	want := []string{"run_started", "node_joined", "job_started", "window_fired", "checkpoint", "throughput",
		"checkpoint", "fault_started", "recovery_done", "checkpoint", "throughput", "drain_started", "run_finished", "summary"}
	if got := kinds(lines); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("lines\n %q\nwant kinds\n %q\n%s", got, want, strings.Join(lines, "\n"))
	}
	// The first second: two full checkpoints summed, the slowest named,
	// the interval decision counted; two instances' windows on one line.
	if !strings.Contains(lines[4], "2 complete in 150 ms (2 full, 0 delta): 8.0 KiB stored of 16.0 KiB, 2.1k keys, slowest 5.0 ms (count#1); 1 interval decision") {
		t.Errorf("checkpoint line %q", lines[4])
	}
	if !strings.Contains(lines[3], "2 instances fired windows up to 1.0 s: 61 results") {
		t.Errorf("window line %q", lines[3])
	}
	if strings.Contains(strings.Join(lines, "\n"), "metrics") {
		t.Error("metrics printed")
	}
	if !strings.HasPrefix(lines[4], "12:00:00.450 checkpoint ") {
		t.Errorf("the sum is not stamped with its last event: %q", lines[4])
	}
	sum := lines[len(lines)-1]
	if !strings.Contains(sum, "210k records in 2.2 s (95.5k records/s)") || !strings.Contains(sum, "4 checkpoints, 1 fault, 1 recovery") ||
		!strings.Contains(sum, "spate verify --data /tmp/r1") {
		t.Errorf("summary %q", sum)
	}
}

func TestQuietPrintsLifecycleEventsAndTheSummary(t *testing.T) {
	lines := printed(outputMode{quiet: true})
	want := "run_started node_joined job_started fault_started recovery_done drain_started run_finished summary"
	if got := strings.Join(kinds(lines), " "); got != want {
		t.Errorf("quiet: %q, want %q\n%s", got, want, strings.Join(lines, "\n"))
	}
}

func TestShowPrintsExactlyTheChosenKinds(t *testing.T) {
	m, err := parseOutputMode(false, "checkpoint, recovery_*")
	if err != nil {
		t.Fatal(err)
	}
	lines := printed(m)
	want := "checkpoint checkpoint checkpoint recovery_done checkpoint"
	if got := strings.Join(kinds(lines), " "); got != want {
		t.Errorf("show: %q, want %q", got, want)
	}
	if !strings.Contains(lines[0], "[count#0] checkpoint of count#0") {
		t.Errorf("--show prints the events as they are: %q", lines[0])
	}
	// A name far from every known kind may be a kind this binary does
	// not know yet; one close to a known kind is a typo.
	if _, err := parseOutputMode(false, "future_kind"); err != nil {
		t.Errorf("future_kind: %v", err)
	}
	if _, err := parseOutputMode(false, "recovery_don"); err == nil || !strings.Contains(err.Error(), "did you mean recovery_done?") {
		t.Errorf("recovery_don: %v", err)
	}
}

// TestEventsIsKindsOrAFile: --events names kinds when all its words are
// kinds (or prefix*), a file otherwise; a word close to a kind, or a list
// with a word that is none, is a mistake.
func TestEventsIsKindsOrAFile(t *testing.T) {
	for _, c := range []struct {
		v     string
		kinds bool
		err   string
	}{
		{"", false, ""},
		{"checkpoint", true, ""},
		{"checkpoint, recovery_done,rescale_*", true, ""},
		{"rescale_*", true, ""},
		{"/tmp/run/copy.jsonl", false, ""},
		{"copy.jsonl", false, ""},
		{"./checkpoint", false, ""},
		{"mylog", false, ""},
		{"zz*", false, ""},
		{"errors", false, "did you mean error?"},
		{"checkpoint,mylog", false, `"mylog" is not an event kind`},
	} {
		kinds, err := eventsFlag(c.v)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error with %q", c.v, err, c.err)
			}
		case err != nil || kinds != c.kinds:
			t.Errorf("%q: kinds %v, %v; want %v", c.v, kinds, err, c.kinds)
		}
	}
}

func TestWithoutFlagsDropsTheCommandLinesOwnFlags(t *testing.T) {
	got := withoutFlags([]string{"--nodes", "3", "--quiet", "--show", "checkpoint", "--show=x", "--quiet=false", "--", "--quiet"},
		map[string]bool{"quiet": false, "show": true})
	if want := "--nodes 3 -- --quiet"; strings.Join(got, " ") != want {
		t.Errorf("%q, want %q", got, want)
	}
}
