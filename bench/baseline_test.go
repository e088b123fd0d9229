package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"spate/coord"
	"spate/events"
	"spate/job"
)

// fakeUpHelp writes an executable that prints an `up --help` listing of
// the flags given, in cobra's form, and returns its path.
func fakeUpHelp(t *testing.T, flags []string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/sh\ncat <<'EOF'\nUsage:\n  spate up [flags]\n\nFlags:\n")
	for _, f := range flags {
		fmt.Fprintf(&b, "      --%s string   what it does\n", f)
	}
	b.WriteString("  -h, --help   help for up\nEOF\n")
	path := filepath.Join(t.TempDir(), "spate-old")
	if err := os.WriteFile(path, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// baseFlags are the flags of up a base run passes.
func baseFlags() []string {
	cfg := coord.DefaultConfig()
	return upFlagNames(append(upArgs(cfg), baseArgs(cfg)...))
}

// A --baseline that cannot run the base configuration is refused before
// any run: exit 2, one line naming the flag (and what is wrong).
func TestRecoveryBaselineIsCheckedBeforeAnyRun(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for the stand-in binaries")
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var noFlush []string
	for _, f := range baseFlags() {
		if f != "flush" {
			noFlush = append(noFlush, f)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"a directory", []string{"--baseline", dir}, []string{"--baseline", "not an executable file"}},
		{"a file that is not executable", []string{"--baseline", plain}, []string{"--baseline", "not an executable file"}},
		{"no such file", []string{"--baseline", filepath.Join(dir, "nothing")}, []string{"--baseline", "not an executable file"}},
		{"with --store", []string{"--baseline", fakeUpHelp(t, baseFlags()), "--store", "dir"}, []string{"--baseline", "--store"}},
		{"a build without --flush", []string{"--baseline", fakeUpHelp(t, noFlush)}, []string{"--baseline", "no --flush"}},
		{"not a spate binary", []string{"--baseline", empty}, []string{"--baseline", "lists no flags"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			rc := recoveryMain(tc.args, &stdout, &stderr)
			msg := strings.TrimSpace(stderr.String())
			if rc != 2 || strings.Count(msg, "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line", rc, msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not say %q", msg, w)
				}
			}
		})
	}
	t.Run("a build that takes every flag", func(t *testing.T) {
		bin := fakeUpHelp(t, baseFlags())
		got, err := recoveryBaseline(bin, "")
		if err != nil || got != bin {
			t.Fatalf("recoveryBaseline = %q, %v; want %q", got, err, bin)
		}
		if got, err := recoveryBaseline("", ""); got != "" || err != nil {
			t.Fatalf("no --baseline: %q, %v", got, err)
		}
	})
}

// The flag package's listing (builds before the command line moved onto
// cobra) is read as well as cobra's.
func TestBaselineHelpOfTheFlagPackage(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	path := filepath.Join(t.TempDir(), "spate-older")
	script := "#!/bin/sh\ncat >&2 <<'EOF'\nUsage of up:\n  -flush duration\n    \tbatching (default 20ms)\n  -nodes int\n    \tworkers (default 4)\nEOF\nexit 2\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	missing, err := missingUpFlags(context.Background(), path, []string{"flush", "nodes", "window"})
	if err != nil || !reflect.DeepEqual(missing, []string{"window"}) {
		t.Fatalf("missing %v, %v; want [window]", missing, err)
	}
}

// base is one more configuration, last in the list, so that it runs
// last in the even rounds and first in the odd ones, as the others
// alternate.
func TestBaselineConfigurationsAlternateWithTheOthers(t *testing.T) {
	keys := func(cs []recConf) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.key())
		}
		return strings.Join(s, ",")
	}
	st := []benchStore{{}}
	for _, c := range []struct {
		recov, bin, want string
	}{
		{"single", "", "spate,global"},
		{"single", "/bin/spate-main", "spate,global,base"},
		{"parallel", "/bin/spate-main", "spate,global,parallel,base"},
	} {
		if got := keys(recConfs(recoveryFTs(c.recov, c.bin), st)); got != c.want {
			t.Errorf("--recover %s --baseline %q: %s, want %s", c.recov, c.bin, got, c.want)
		}
	}
	confs := recConfs(recoveryFTs("single", "/bin/spate-main"), st)
	for i, want := range []string{"spate,global,base", "base,global,spate", "spate,global,base"} {
		if got := keys(roundOrder(confs, i)); got != want {
			t.Errorf("round %d: %s, want %s", i+1, got, want)
		}
	}
}

// A base run's up gets the settings of the round's spate run: its
// arguments, parsed by up's own parser, give back the configuration.
func TestBaselineRunsAtTheSettingsOfSpate(t *testing.T) {
	cfg := benchConfig(t.TempDir(), "rec", 1, "spate")
	cfg.Nodes, cfg.Local = 6, 6
	cfg.Rate, cfg.Duration, cfg.Keys, cfg.Interval, cfg.Heartbeat = 300_000, 14*time.Second, 100_000, "750ms", 20*time.Millisecond
	cfg.Source, cfg.Window, cfg.FlushMs, cfg.Seed = "gen:constant", 2*time.Second, 7, 42
	cfg.Parallelism = map[string]int{"source": 2, "count": 4, "rollup": 3, "sink": 2}
	args := append(upArgs(cfg), baseArgs(cfg)...)
	var upOnly []string // --headless and the rest, without the command line's own --quiet
	for _, a := range args[1:] {
		if a != "--quiet" {
			upOnly = append(upOnly, a)
		}
	}
	got, err := coord.ParseUp(upOnly, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Nodes != cfg.Nodes || got.FT != cfg.FT || got.Interval != cfg.Interval || got.Rate != cfg.Rate || got.Duration != cfg.Duration ||
		got.Keys != cfg.Keys || got.Heartbeat != cfg.Heartbeat || got.Timeout != cfg.Timeout || got.Seed != cfg.Seed ||
		got.Source != cfg.Source || got.Data != cfg.Data || got.FlushMs != cfg.FlushMs || got.Window != cfg.Window ||
		!reflect.DeepEqual(got.Parallelism, cfg.Parallelism) || !got.Headless {
		t.Fatalf("up %s\nparsed as %+v\nwant %+v", strings.Join(args[1:], " "), got, cfg)
	}
	if got.Spec().Groups != cfg.Spec().Groups {
		t.Fatalf("key groups %d, want %d", got.Spec().Groups, cfg.Spec().Groups)
	}
}

// eventsFile is an events.jsonl a test appends lines to, as a
// coordinator does.
type eventsFile struct {
	t *testing.T
	f *os.File
}

func (ef eventsFile) write(b []byte) {
	ef.t.Helper()
	if _, err := ef.f.Write(b); err != nil {
		ef.t.Fatal(err)
	}
}

func eventLine(t *testing.T, e events.Event) []byte {
	t.Helper()
	b, err := events.AppendLine(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBaselineEventTailFindsTheVictimAndTimesTheAlignedKill: the lines
// of an events.jsonl being written, read a poll at a time (a line split
// over two polls taken once whole), give the pid of the victim's node
// and the moments of the kill: the bound at job_started, then the
// victim's first checkpoint complete after --kill, a phase more than an
// interval after its capture.
func TestBaselineEventTailFindsTheVictimAndTimesTheAlignedKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	tl := newEventTail(path)
	plan := newKillPlan(runOpts{kill: 8 * time.Second, victim: "count#0", age: 250 * time.Millisecond, interval: time.Second})
	var dues []time.Time
	var seen int
	feed := func(e events.Event) {
		seen++
		if t, ok := plan.step(e); ok {
			dues = append(dues, t)
		}
	}
	if err := tl.poll(feed); err != nil || seen != 0 {
		t.Fatalf("no file yet: %d events, %v", seen, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ef := eventsFile{t, f}
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ev := func(d time.Duration, kind events.Kind, node, inst string, fields events.Payload) []byte {
		return eventLine(t, events.Event{Time: at(d), Kind: kind, Node: node, Instance: inst, Fields: fields})
	}
	ef.write(ev(-2*time.Second, events.RunStarted, "", "", events.RunStartedFields{Dir: filepath.Dir(path)}))
	for i, pid := range []int{1001, 1002, 1003, 1004} {
		ef.write(ev(-time.Second, events.NodeSpawned, fmt.Sprintf("n%d", i+1), "", events.NodeSpawnedFields{PID: pid}))
	}
	ef.write(ev(-500*time.Millisecond, events.InstancePlaced, "n1", "count#1", events.InstancePlacedFields{Op: "count", Ranges: []job.Range{{Lo: 64, Hi: 128}}}))
	started := ev(0, events.JobStarted, "", "", events.JobStartedFields{})
	ef.write(started[:17]) // the coordinator is in the middle of the line
	if err := tl.poll(feed); err != nil {
		t.Fatal(err)
	}
	if seen != 6 || len(dues) != 0 {
		t.Fatalf("%d events, kills due %v; want 6 and none before job_started", seen, dues)
	}
	if _, err := plan.target(); err == nil || !strings.Contains(err.Error(), "no instance_placed event places count#0") {
		t.Fatalf("the victim not placed yet: %v", err)
	}
	// The rest of job_started, and the victim's placement.
	ef.write(started[17:])
	ef.write(ev(-400*time.Millisecond, events.InstancePlaced, "n3", "count#0", events.InstancePlacedFields{Op: "count", Ranges: []job.Range{{Lo: 0, Hi: 64}}}))
	if pid, err := plan.target(); err == nil || pid != 0 {
		t.Fatalf("count#0 placed on n3 but the line not read yet: pid %d, %v", pid, err)
	}
	if err := tl.poll(feed); err != nil {
		t.Fatal(err)
	}
	if pid, err := plan.target(); err != nil || pid != 1003 || seen != 8 {
		t.Fatalf("pid %d, %v after %d events; want n3's 1003 after 8", pid, err, seen)
	}
	if len(dues) != 1 || !dues[0].Equal(at(11*time.Second)) {
		t.Fatalf("kills due %v; want the bound at --kill + 3 intervals, 11s", dues)
	}
	ck := func(d time.Duration, inst string, totalMs int64) []byte {
		return ev(d, events.Checkpoint, "n3", inst, events.CheckpointFields{ID: 9, TotalUs: totalMs * 1000})
	}
	ef.write(ck(7900*time.Millisecond, "count#0", 40)) // before --kill
	ef.write(ck(8050*time.Millisecond, "count#1", 40)) // another instance's
	ef.write(ck(8300*time.Millisecond, "count#0", 60)) // captured at 8.24 s: the kill at 8.24 + 1 + 0.25
	ef.write(ck(9300*time.Millisecond, "count#0", 60)) // the next: the kill is set already
	if err := tl.finish(feed); err != nil {
		t.Fatal(err)
	}
	if len(dues) != 2 || !dues[1].Equal(at(9490*time.Millisecond)) {
		t.Fatalf("kills due %v; want a second at 9.49s", dues)
	}
	if seen != 12 {
		t.Fatalf("%d events read, want 12", seen)
	}
	ef.write([]byte("{\"v\":1,\"seq\":13,\"time\":\"not a time\",\"kind\":\"metrics\"}\n"))
	if err := tl.poll(feed); err == nil || !strings.Contains(err.Error(), "events.jsonl:13:") {
		t.Fatalf("a bad line: %v; want one naming it", err)
	}
}

// The kill's plan says which event it lacks: the victim's placement, or
// the pid of its node.
func TestBaselineKillPlanNamesTheMissingEvent(t *testing.T) {
	p := newKillPlan(runOpts{kill: time.Second, victim: "count#0", age: -1})
	if _, err := p.target(); err == nil || !strings.Contains(err.Error(), "instance_placed") {
		t.Fatalf("nothing placed: %v", err)
	}
	p.step(events.Event{Kind: events.InstancePlaced, Node: "n2", Instance: "count#0"})
	if _, err := p.target(); err == nil || !strings.Contains(err.Error(), "node_spawned") || !strings.Contains(err.Error(), "n2") {
		t.Fatalf("no pid: %v", err)
	}
	p.step(events.Event{Kind: events.NodeSpawned, Node: "n2", Fields: events.NodeSpawnedFields{}})
	if _, err := p.target(); err == nil || !strings.Contains(err.Error(), "node_spawned") {
		t.Fatalf("a node_spawned without its pid: %v", err)
	}
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	if due, ok := p.step(events.Event{Kind: events.JobStarted, Time: t0}); !ok || !due.Equal(t0.Add(time.Second)) {
		t.Fatalf("not aligned: due %v %v, want --kill after job_started", due, ok)
	}
	if _, ok := p.step(events.Event{Kind: events.Checkpoint, Time: t0.Add(2 * time.Second), Instance: "count#0", Fields: events.CheckpointFields{TotalUs: 1}}); ok {
		t.Fatal("a checkpoint timed a kill that is not aligned")
	}
}

// stubUp writes a stand-in for `BIN up`: it starts a "node" (sleep),
// writes the events given (the pid 424242 in them replaced by the
// node's), then, if wait, waits for the node's death, and leaves run.json
// and a passing report.json in --data.
func stubUp(t *testing.T, evs []events.Event, wait bool) string {
	t.Helper()
	for _, tool := range []string{"sh", "sleep", "sed", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("no", tool)
		}
	}
	dir := t.TempDir()
	var lines []byte
	for _, e := range evs {
		lines = append(lines, eventLine(t, e)...)
	}
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(10 * time.Second)
	cfg := coord.DefaultConfig()
	ri := coord.RunInfo{Run: "stub", Started: start, JobStart: &start, Finished: &end, Config: cfg, Job: cfg.Spec(), Positions: map[int]uint64{0: 1000}}
	b, err := json.Marshal(ri)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"events.jsonl": lines, "run.json": b, "report.json": []byte(`{"verdict":"pass"}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	end1 := `kill "$node"; wait "$node"`
	if wait {
		end1 = `wait "$node"`
	}
	script := fmt.Sprintf(`#!/bin/sh
data=
while [ $# -gt 0 ]; do
	if [ "$1" = --data ]; then data=$2; fi
	shift
done
mkdir -p "$data"
sleep 600 &
node=$!
sed "s/424242/$node/" %[1]s/events.jsonl > "$data/events.jsonl"
%[2]s
cp %[1]s/run.json %[1]s/report.json "$data/"
`, dir, end1)
	bin := filepath.Join(dir, "spate-stub")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestBaselineRunIsKilledFromItsEvents: a run of another binary has the
// node its events name as the victim's host killed by its pid, and is
// read back from its run directory; events that lack what the kill needs
// are an error naming BIN and the event.
func TestBaselineRunIsKilledFromItsEvents(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stand-in is a shell script")
	}
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // long past: the kill is due at once
	spawned := events.Event{Time: t0, Kind: events.NodeSpawned, Node: "n1", Fields: events.NodeSpawnedFields{PID: 424242}}
	placed := events.Event{Time: t0, Kind: events.InstancePlaced, Node: "n1", Instance: "count#0", Fields: events.InstancePlacedFields{Op: "count"}}
	jobStarted := events.Event{Time: t0, Kind: events.JobStarted, Fields: events.JobStartedFields{}}
	o := runOpts{kill: time.Millisecond, victim: "count#0", age: -1}
	run := func(t *testing.T, bin string) (*run, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a safety net, not a measure
		defer cancel()
		cfg := benchConfig(t.TempDir(), "rec", 0, "base")
		cfg.FT = "spate"
		return binaryRecoveryRun(ctx, bin, cfg, nil, o)
	}
	t.Run("killed", func(t *testing.T) {
		bin := stubUp(t, []events.Event{spawned, placed, jobStarted}, true)
		r, err := run(t, bin)
		if err != nil {
			t.Fatal(err)
		}
		if r.killErr != nil || r.killSent <= 0 || !r.verified || r.info == nil || len(r.evs) != 3 {
			t.Fatalf("kill sent at %d ms (%v), verified %v, info %v, %d events", r.killSent, r.killErr, r.verified, r.info != nil, len(r.evs))
		}
	})
	for _, c := range []struct {
		name string
		evs  []events.Event
		want string
	}{
		{"no node_spawned", []events.Event{placed, jobStarted}, "no node_spawned event with a pid for node n1"},
		{"no instance_placed", []events.Event{spawned, jobStarted}, "no instance_placed event places count#0"},
		{"no job_started", []events.Event{spawned, placed}, "no job_started event"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := stubUp(t, c.evs, false)
			_, err := run(t, bin)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), bin) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v; want one line naming %s and saying %q", err, bin, c.want)
			}
		})
	}
}

// TestRecoverySummaryHasBaseOverSpate: base is summarised as spate and
// global are, with base/spate of the medians and by round; without a
// base the JSON has none of its fields.
func TestRecoverySummaryHasBaseOverSpate(t *testing.T) {
	rr := func(round int, ft string, s float64) RecoveryRun {
		return RecoveryRun{Round: round, FT: ft, RecoveryS: s, Recovered: true, Verified: true, Losses: 1, BusyCores: -1,
			Output: UntouchedOutput{Rate: -1, MinRate: -1, LateMs: -1, NormalLateMs: -1}}
	}
	shr := RecoveryShape{Name: "4 nodes, count 2", Nodes: 4, Parallelism: map[string]int{"count": 2}, Runs: []RecoveryRun{
		rr(1, "spate", 0.5), rr(1, "global", 1.0), rr(1, "base", 0.6),
		rr(2, "base", 0.4), rr(2, "global", 1.5), rr(2, "spate", 0.5),
		rr(3, "spate", 0.4), rr(3, "global", 0.8), // base did not run
	}}
	keys := []string{"spate", "global", "base"}
	summarise(&shr, keys, 3)
	if shr.RecoveryS["base"] != 0.5 || shr.BaseRatio != 1 {
		t.Fatalf("base's median %v, base/spate %v; want 0.5 and 1", shr.RecoveryS["base"], shr.BaseRatio)
	}
	if len(shr.BaseRatioRounds) != 3 || math.Abs(shr.BaseRatioRounds[0]-1.2) > 1e-9 || math.Abs(shr.BaseRatioRounds[1]-0.8) > 1e-9 || !math.IsNaN(shr.BaseRatioRounds[2]) {
		t.Fatalf("base/spate by round %v", shr.BaseRatioRounds)
	}
	if ci := shr.BaseRatioCI; ci == nil || ci.Rounds != 2 || math.Abs(ci.Mean-1) > 1e-9 {
		t.Fatalf("base/spate interval %+v", shr.BaseRatioCI)
	}
	if shr.Ratio != 2 || shr.RatioCI.Rounds != 3 {
		t.Fatalf("global/spate %v %+v: base changed it", shr.Ratio, shr.RatioCI)
	}
	b, err := json.Marshal(shr)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"base_over_spate":1,`, `"base_over_spate_rounds":[1.2,0.8`, `null]`, `"base_over_spate_ci":{"mean":1,`, `"recovery_s":{"base":0.5,`} {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("JSON lacks %s:\n%s", w, b)
		}
	}
	var out strings.Builder
	printShape(&out, shr, keys, 0.5)
	for _, w := range []string{"    base   0.50s to normal output lag (rounds 0.60 0.40)", "base/spate 1.00 (of the medians", "by round 1.20 0.80 NaN: mean 1.000 [", "global/spate 2.00"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the summary does not say %q:\n%s", w, out.String())
		}
	}

	plain := RecoveryShape{Runs: shr.Runs[:2]}
	summarise(&plain, []string{"spate", "global"}, 1)
	b, err = json.Marshal(plain)
	if err != nil || bytes.Contains(b, []byte("base_over_spate")) {
		t.Fatalf("without --baseline the JSON has base's fields: %s %v", b, err)
	}
	out.Reset()
	printShape(&out, plain, []string{"spate", "global"}, 0.5)
	if strings.Contains(out.String(), "base/spate") {
		t.Fatalf("without --baseline the summary has base/spate:\n%s", out.String())
	}
}
