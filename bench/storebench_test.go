package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"spate/coord"
	"spate/events"
	"spate/stores"
)

func TestParseStores(t *testing.T) {
	for _, tc := range []struct {
		name, list string
		labels     []string
		bad        string // in the error
	}{
		{name: "none is the default store alone", list: "", labels: []string{""}},
		{name: "dir and coord", list: "dir,coord", labels: []string{"dir", "coord"}},
		{name: "spaces around", list: " coord , dir ", labels: []string{"coord", "dir"}},
		{name: "an s3 URL", list: "dir,s3://runs/bench?endpoint=127.0.0.1:8333", labels: []string{"dir", "s3"}},
		{name: "an unknown store", list: "dir,disk", bad: `--store "dir,disk": "disk": want dir, coord or s3://`},
		{name: "an empty element", list: "dir,,coord", bad: `--store "dir,,coord": an empty element`},
		{name: "a store twice", list: "coord,dir,coord", bad: `--store "coord,dir,coord": coord is given twice`},
		{name: "auto is not a store", list: "auto", bad: `--store "auto": "auto": name the store`},
		{name: "a malformed s3 URL", list: "s3://?endpoint=x:1", bad: `--store "s3://?endpoint=x:1": "s3://?endpoint=x:1": want`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStores(tc.list)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("parseStores(%q) = %v; want one line with %q", tc.list, err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var labels []string
			for _, b := range got {
				labels = append(labels, b.label)
			}
			if strings.Join(labels, ",") != strings.Join(tc.labels, ",") {
				t.Fatalf("labels %q, want %q", labels, tc.labels)
			}
		})
	}
}

// TestBadStoreIsOneLineNamingTheFlag: bench recovery refuses a bad
// --store before it runs anything: exit 2, one line naming the flag and
// the value.
func TestBadStoreIsOneLineNamingTheFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	rc := recoveryMain([]string{"--store", "dir,tape"}, &stdout, &stderr)
	msg := strings.TrimSpace(stderr.String())
	if rc != 2 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, `--store "dir,tape": "tape"`) {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming --store and the value", rc, msg)
	}
}

// TestUnreachableS3StoreIsOneLine: an s3:// store where nothing answers
// is refused before any run, in one line naming --store.
func TestUnreachableS3StoreIsOneLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "bench")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "bench-secret")
	var stdout, stderr bytes.Buffer
	rc := recoveryMain([]string{"--store", "dir,s3://runs?endpoint=" + dead}, &stdout, &stderr)
	msg := strings.TrimSpace(stderr.String())
	if rc != 2 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "--store s3://runs") || !strings.Contains(msg, "does not answer") {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming --store", rc, msg)
	}
}

func TestS3StoreWithoutCredentialsIsOneLine(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"} {
		t.Setenv(k, "")
	}
	var stdout, stderr bytes.Buffer
	rc := recoveryMain([]string{"--store", "s3://runs?endpoint=127.0.0.1:1"}, &stdout, &stderr)
	msg := strings.TrimSpace(stderr.String())
	if rc != 2 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "--store s3://runs") || !strings.Contains(msg, "no credentials") {
		t.Fatalf("exit %d, stderr %q; want 2 and one line naming --store", rc, msg)
	}
}

// TestStoreRunReadsTheEvents: a run's store figures come from its
// checkpoint events of the steady stretch, its restore phase, and its
// traffic: run.json's for coord, the node processes' last reports for
// s3 (a node respawned under the same name is a new process).
func TestStoreRunReadsTheEvents(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ck := func(ms int, persistUs int64) events.Event {
		return events.Event{Kind: events.Checkpoint, Time: at(ms), Instance: "count#0", Fields: events.CheckpointFields{PersistUs: persistUs}}
	}
	tr := func(ms int, node string, to, from int64) events.Event {
		return events.Event{Kind: events.StoreTraffic, Time: at(ms), Node: node, Fields: events.StoreTrafficFields{Store: "s3", ToStore: to, FromStore: from}}
	}
	joined := func(ms int, node string) events.Event {
		return events.Event{Kind: events.NodeJoined, Time: at(ms), Node: node}
	}
	fin := at(12000)
	r := &run{info: &coord.RunInfo{JobStart: &t0, Finished: &fin, StoreTraffic: &stores.Traffic{ToStore: 900, FromStore: 100}}, killAtMs: 8000}
	for _, e := range []events.Event{
		joined(-100, "n1"), joined(-100, "n2"),
		ck(1500, 99_000), // warm-up: not counted
		ck(2500, 1000), ck(3500, 2000), ck(4500, 3000), ck(5500, 4000),
		tr(3000, "n1", 100, 0), tr(3600, "n1", 300, 10), tr(3400, "n2", 50, 0), // n1's reports out of order below
		tr(3500, "n1", 200, 5),
		{Kind: events.NodeLost, Time: at(8030), Node: "n2"},
		joined(8100, "n2"), tr(8600, "n2", 20, 40), // n2 again: a new process
		{Kind: events.RecoveryRestored, Time: at(8230), Instance: "count#0"},
		ck(8500, 50_000), // after the kill: not counted
	} {
		r.observe(e)
	}
	sr, persist, _ := storeRun(r, "s3")
	if sr.RestoreMs != 200 {
		t.Errorf("restore %v ms, want 200 (detected at 30 ms, restored at 230 ms)", sr.RestoreMs)
	}
	if sr.PersistMs.N != 4 || sr.PersistMs.P50 != 2.5 || sr.PersistMs.P90 != 4 || len(persist) != 4 {
		t.Errorf("persist %+v (%v), want the 4 checkpoints of 2 s to 8 s", sr.PersistMs, persist)
	}
	if math.Abs(sr.CheckpointsPerS-4.0/6) > 1e-9 {
		t.Errorf("%v checkpoints/s, want 4 in 6 s", sr.CheckpointsPerS)
	}
	if want := (stores.Traffic{ToStore: 300 + 50 + 20, FromStore: 10 + 0 + 40}); sr.Traffic != want || sr.TrafficFrom != "node events" {
		t.Errorf("s3 traffic %+v from %q, want %+v from the node events", sr.Traffic, sr.TrafficFrom, want)
	}
	if sr, _, _ := storeRun(r, "coord"); sr.Traffic != *r.info.StoreTraffic || sr.TrafficFrom != "run.json" {
		t.Errorf("coord traffic %+v from %q, want run.json's", sr.Traffic, sr.TrafficFrom)
	}
	if sr, _, _ := storeRun(r, "dir"); sr.Traffic != (stores.Traffic{}) || sr.TrafficFrom != "" {
		t.Errorf("dir traffic %+v from %q, want none", sr.Traffic, sr.TrafficFrom)
	}
}

// TestSummariseComparesEachStoreWithDirLikeWithLike: with --store the
// configurations are ft/store, each store is compared with dir under the
// same ft mode, and global/spate is at dir.
func TestSummariseComparesEachStoreWithDirLikeWithLike(t *testing.T) {
	mk := func(round int, ft, store string, rec, restore, rate float64, persist []float64, to int64) RecoveryRun {
		return RecoveryRun{Round: round, FT: ft, Store: store, RecoveryS: rec, Recovered: true, Verified: true, Losses: 1,
			Figures: StoreRun{RestoreMs: restore, CheckpointsPerS: rate, Traffic: stores.Traffic{ToStore: to}}, persist: persist}
	}
	shr := RecoveryShape{Runs: []RecoveryRun{
		mk(1, "spate", "dir", 0.5, 100, 8, []float64{1, 2}, 0),
		mk(1, "spate", "coord", 1.0, 300, 4, []float64{4, 8}, 1000),
		mk(1, "global", "dir", 1.0, 50, 1, nil, 0),
		mk(1, "global", "coord", 1.5, 100, 0.5, nil, 3000),
	}}
	shr.Runs[2].took, shr.Runs[3].took = []float64{10}, []float64{30}
	keys := []string{"spate/dir", "spate/coord", "global/dir", "global/coord"}
	summarise(&shr, keys, 1)
	if shr.RefStore != "dir" || shr.Ratio != 2 {
		t.Fatalf("ref %q, global/spate %v; want dir and 2", shr.RefStore, shr.Ratio)
	}
	if shr.RatioByStore["coord"] != 1.5 || shr.RatioByStore["dir"] != 2 {
		t.Errorf("by store %v", shr.RatioByStore)
	}
	sr := shr.StoreRatios["spate/coord"]
	if sr.Against != "spate/dir" || sr.RecoveryS != 2 || sr.RestoreMs != 3 || sr.CheckpointP90 != 4 || sr.CheckpointsPerS != 0.5 {
		t.Errorf("spate/coord over dir: %+v", sr)
	}
	if g := shr.StoreRatios["global/coord"]; g.Against != "global/dir" || g.CheckpointP50 != 3 || g.RestoreMs != 2 {
		t.Errorf("global/coord over dir: %+v (its checkpoint: the global took times)", g)
	}
	if _, ok := shr.StoreRatios["spate/dir"]; ok {
		t.Error("dir is compared with itself")
	}
	if f := shr.Stores["global/coord"]; f.ToStore != 3000 || f.TookMs.P50 != 30 {
		t.Errorf("global/coord figures %+v", f)
	}
	b, err := json.Marshal(shr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"store_ratios":{"global/coord":{"against":"global/dir"`) {
		t.Errorf("JSON: %s", b)
	}
	var out bytes.Buffer
	printShape(&out, shr, keys, 0.5)
	for _, want := range []string{"spate/coord  1.00s to normal output lag", "network per run 1.0 kB to the store", "spate/coord over spate/dir: recovery 2.00, restore 3.00", "global/spate at --store dir 2.00", "global/spate by store (of the medians): dir 2.00, coord 1.50"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary has no %q:\n%s", want, out.String())
		}
	}
}

func TestStoreRatioWithoutAValueIsNull(t *testing.T) {
	b, err := json.Marshal(StoreRatio{Against: "spate/dir", RecoveryS: 1.5, RestoreMs: math.NaN(), CheckpointP50: math.Inf(1)})
	if err != nil || !strings.Contains(string(b), `"restore_ms":null`) || !strings.Contains(string(b), `"checkpoint_p50":null`) {
		t.Fatalf("%s %v", b, err)
	}
}

// A --flush bench recovery cannot pass to up is refused before any run:
// exit 2, one line naming the flag.
func TestBadFlushIsOneLineNamingTheFlag(t *testing.T) {
	for _, v := range []string{"0s", "1500us", "2s"} {
		var stdout, stderr bytes.Buffer
		rc := recoveryMain([]string{"--flush", v}, &stdout, &stderr)
		msg := strings.TrimSpace(stderr.String())
		if rc != 2 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "--flush") {
			t.Fatalf("--flush %s: exit %d, stderr %q; want 2 and one line naming --flush", v, rc, msg)
		}
	}
}
