package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unreadable are the ways a number reaches a person raw: an exponent, a
// noun in the plural after a count of one, and microseconds past a
// millisecond.
var unreadable = []struct {
	what string
	re   *regexp.Regexp
}{
	{"an exponent", regexp.MustCompile(`\de[+-]\d`)},
	{"a plural after one", regexp.MustCompile(`(?:^|[^\w.#])1 (?:key groups|(?:instance|checkpoint|fault|recover|record|node|result|move|failure|stream|key|rescale|decision|file|partition|second)(?:s|ies|es))\b`)},
	{"µs above a millisecond", regexp.MustCompile(`\d{4,}(?:\.\d+)? ?µs`)},
	{"a trace's time as epoch seconds", regexp.MustCompile(`\b\d{9,}\.\d+ ?s\b`)},
}

// checkReadable reports the lines of text that show a number raw.
func checkReadable(t *testing.T, where string, lines []string) {
	t.Helper()
	bad := 0
	for _, l := range lines {
		for _, u := range unreadable {
			if m := u.re.FindString(l); m != "" {
				bad++
				if bad <= 20 {
					t.Errorf("%s: %s (%q): %s", where, u.what, m, l)
				}
			}
		}
	}
}

func TestTheCheckOfNumbersCatchesRawOnes(t *testing.T) {
	for _, l := range []string{"rate 1.183e+04/s", "1 instances fired", "1 checkpoints", "1 faults", "Capture p50 157µs p99 8962µs",
		"sink watermark 807257366.0s", "in 1 moves", "1 key groups built", "3 streams; 1 recoveries"} {
		found := false
		for _, u := range unreadable {
			found = found || u.re.MatchString(l)
		}
		if !found {
			t.Errorf("%q passes the check", l)
		}
	}
	for _, l := range []string{"1 instance fired", "11 instances", "count#1 checkpoints", "157 µs", "9.0 ms", "fault 1 over: kill",
		"up to 1995-08-01 06:11:08", "rescale 1 of count", "2.1 s"} {
		for _, u := range unreadable {
			if u.re.MatchString(l) {
				t.Errorf("%q fails the check for %s", l, u.what)
			}
		}
	}
}

// A real run over a trace of wall-clock times, with a kill and a rescale:
// its headless lines and the texts of its events read as a person writes
// numbers.
func TestARealRunsTextsReadAsNumbersForPeople(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster run of some seconds")
	}
	tmp := t.TempDir()
	var b strings.Builder
	b.WriteString("t,k\n")
	for i := 0; i < 60000; i++ { // 600 s of event time from 1995-08-01, ten a second per key
		fmt.Fprintf(&b, "%.2f,k%d\n", 807257366+float64(i)*0.01, i%100)
	}
	trace := filepath.Join(tmp, "trace.csv")
	script := filepath.Join(tmp, "s.yaml")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("name: numbers\nschedule:\n  - {at: 2s, fault: kill, target: one}\n  - {at: 3500ms, fault: scale, op: count, n: 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	code, out, errOut := spate(t, "up", "--headless", "--timeout", "10s", "--nodes", "3", "--speedup", "100",
		"--source", "trace:"+trace+"?time=t&key=k", "--script", script, "--data", dir)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s%s", code, out, errOut)
	}
	evs := runEvents(t, dir)
	kinds := map[string]bool{}
	var texts []string
	for _, e := range evs {
		kinds[string(e.Kind)] = true
		texts = append(texts, string(e.Kind)+": "+e.Text)
	}
	for _, k := range []string{"throughput", "checkpoint", "window_fired", "node_lost", "recovery_done", "rescale_planned", "rescale_done", "tuner_summary"} {
		if !kinds[k] {
			t.Errorf("the run has no %s event", k)
		}
	}
	checkReadable(t, "events.jsonl", texts)
	checkReadable(t, "headless", strings.Split(out, "\n"))
	if !strings.Contains(out, "sink watermark 1995-08-01 ") {
		t.Errorf("the watermark is not the trace's date:\n%s", out)
	}
	if n := strings.Count(out, "frame_error"); n > 2 {
		t.Errorf("%d frame_error lines for one kill:\n%s", n, out)
	}
}
