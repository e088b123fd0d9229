package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"spate/events"
	"spate/job"
)

// resumeLog is a hand-written events.jsonl of a resumed run: the killed
// coordinator's events, then the new one's, each at t0 plus its ms.
type resumeLog struct {
	t0    time.Time
	lines [][]byte
}

func newResumeLog() *resumeLog {
	return &resumeLog{t0: time.Date(2026, 12, 1, 12, 0, 10, 0, time.UTC)}
}

// at appends an event at ms from t0 (negative: before the resume).
func (l *resumeLog) at(t *testing.T, ms int, kind events.Kind, node, inst string, f events.Payload) *resumeLog {
	t.Helper()
	e := events.Event{Seq: uint64(len(l.lines) + 1), Time: l.t0.Add(time.Duration(ms) * time.Millisecond), Kind: kind,
		Node: node, Instance: inst, Text: string(kind), Fields: f}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	l.lines = append(l.lines, b)
	return l
}

// raw appends a line as it is.
func (l *resumeLog) raw(line string) *resumeLog {
	l.lines = append(l.lines, []byte(line))
	return l
}

// write writes the log to a file of a temporary directory, each line
// ended (the last too if ended), and returns its path.
func (l *resumeLog) write(t *testing.T, ended bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	b := bytes.Join(l.lines, []byte{'\n'})
	if ended {
		b = append(b, '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var resumeInstances = []job.InstanceID{"source#0", "count#0", "count#1", "sink#0"}

// killedRun is the killed coordinator's part: three nodes, four
// instances, the job started 9 s before the resume.
func killedRun(t *testing.T) *resumeLog {
	l := newResumeLog()
	for i, n := range []string{"n1", "n2", "n3"} {
		l.at(t, -10_000, events.NodeSpawned, n, "", events.NodeSpawnedFields{PID: 100 + i})
	}
	for i, id := range resumeInstances {
		l.at(t, -9_500, events.InstancePlaced, []string{"n1", "n2", "n3", "n1"}[i], string(id), events.InstancePlacedFields{Op: strings.Split(string(id), "#")[0]})
	}
	l.at(t, -9_000, events.JobStarted, "", "", nil)
	l.at(t, -8_000, events.Throughput, "", "", events.ThroughputFields{In: 1000})
	return l
}

// resumed adds the new coordinator's start and its rejoin: every node
// back with its pid at 250 ms, the restore under way at 300 ms.
func resumed(t *testing.T, l *resumeLog) *resumeLog {
	l.at(t, 50, events.CoordResumed, "", "", events.CoordResumedFields{Phase: "started"})
	for i, n := range []string{"n1", "n2", "n3"} {
		l.at(t, 200+10*i, events.NodeJoined, n, "", events.NodeJoinedFields{PID: 100 + i, Rejoined: true})
	}
	l.at(t, 250, events.CoordResumed, "", "", events.CoordResumedFields{Phase: "rejoined", Rejoined: []string{"n1", "n2", "n3"}, Ms: 200})
	l.at(t, 300, events.CoordResumed, "", "", events.CoordResumedFields{Phase: "restoring", Instances: len(resumeInstances), Ms: 250})
	return l
}

func TestResumeEventsTimeEachPhaseFromTheResumesStart(t *testing.T) {
	l := resumed(t, killedRun(t))
	for i, id := range resumeInstances {
		l.at(t, 320+10*i, events.RecoveryRestored, "n1", string(id), events.RecoveryRestoredFields{Gen: 2, Checkpoint: 7})
	}
	l.at(t, 340, events.RecoveryRestored, "n1", "count#0", events.RecoveryRestoredFields{Gen: 2, Checkpoint: 7}) // twice: counted once
	for i, id := range resumeInstances {
		l.at(t, 400+100*i, events.RecoveryDone, "n1", string(id), events.RecoveryDoneFields{TotalMs: 100})
	}
	ev, err := readResumeEvents(l.write(t, true), l.t0)
	if err != nil {
		t.Fatal(err)
	}
	want := ResumePhases{Started: 50, Control: -1, Rejoined: 250, Restored: 350, CaughtUp: 700}
	if ev.Phases != want {
		t.Errorf("phases %+v, want %+v", ev.Phases, want)
	}
	if !ev.JobStarted || ev.Instances != 4 || ev.Restoring != 4 || ev.Restored != 4 || ev.CaughtUp != 4 || !ev.allRestored() {
		t.Errorf("job started %v, %d instances, %d restoring, %d restored, %d caught up; want true and 4 each", ev.JobStarted, ev.Instances, ev.Restoring, ev.Restored, ev.CaughtUp)
	}
	if !ev.allRejoined() || strings.Join(ev.SamePID, ",") != "n1,n2,n3" || ev.CutLine {
		t.Errorf("rejoined %+v; want n1, n2, n3 with their pids and no cut line", ev)
	}
}

func TestResumeEventsUnderGlobalAreOneRestoreAndNoCatchUp(t *testing.T) {
	l := resumed(t, killedRun(t))
	l.at(t, 310, events.RecoveryPlaced, "", "", events.RecoveryPlacedFields{Checkpoint: 5})
	l.at(t, 420, events.RecoveryRestored, "", "", events.RecoveryRestoredFields{Checkpoint: 5})
	ev, err := readResumeEvents(l.write(t, true), l.t0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Phases.Restored != 420 || ev.Restored != 4 || ev.Phases.CaughtUp != -1 || ev.CaughtUp != 0 {
		t.Errorf("restored at %v (%d), caught up at %v (%d); want 420 (4) and none", ev.Phases.Restored, ev.Restored, ev.Phases.CaughtUp, ev.CaughtUp)
	}
}

// A resume whose instances never all restore has no restored phase, and
// says how far it got; a node back as another process, a respawn and a
// later loss are each named.
func TestResumeEventsOfAResumeThatNeverRestoresEveryInstance(t *testing.T) {
	l := killedRun(t)
	l.at(t, 50, events.CoordResumed, "", "", events.CoordResumedFields{Phase: "started"})
	l.at(t, 200, events.NodeJoined, "n1", "", events.NodeJoinedFields{PID: 100, Rejoined: true})
	l.at(t, 210, events.NodeJoined, "n2", "", events.NodeJoinedFields{PID: 999, Rejoined: true})
	l.at(t, 3050, events.NodeLost, "n3", "", events.NodeLostFields{Reason: "did not rejoin the resumed coordinator"})
	l.at(t, 3050, events.NodeSpawned, "n3", "", events.NodeSpawnedFields{PID: 300})
	l.at(t, 3060, events.CoordResumed, "", "", events.CoordResumedFields{Phase: "rejoined", Rejoined: []string{"n1", "n2"}, Missing: []string{"n3"}})
	l.at(t, 3070, events.CoordResumed, "", "", events.CoordResumedFields{Phase: "restoring", Instances: 4})
	for _, id := range resumeInstances[:3] {
		l.at(t, 3100, events.RecoveryRestored, "n1", string(id), events.RecoveryRestoredFields{Gen: 2})
		l.at(t, 3200, events.RecoveryDone, "n1", string(id), events.RecoveryDoneFields{})
	}
	ev, err := readResumeEvents(l.write(t, true), l.t0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Phases.Restored != -1 || ev.Phases.CaughtUp != -1 || ev.Restored != 3 || ev.CaughtUp != 3 || ev.allRestored() {
		t.Errorf("restored at %v (%d of %d), caught up at %v (%d); want none, 3 of 4", ev.Phases.Restored, ev.Restored, ev.Instances, ev.Phases.CaughtUp, ev.CaughtUp)
	}
	if ev.Phases.Rejoined != 3060 || ev.allRejoined() {
		t.Errorf("rejoined at %v, all %v; want 3060 and not all", ev.Phases.Rejoined, ev.allRejoined())
	}
	rr := ResumeRun{ResumeEvents: ev}
	got := rr.rejoinText()
	for _, want := range []string{"1 of 3 nodes rejoined with their own pid", "n2: pid 999, spawned as 101", "missing: n3", "respawned: n3", "lost after the resume: n3"} {
		if !strings.Contains(got, want) {
			t.Errorf("rejoin text %q lacks %q", got, want)
		}
	}
}

func TestResumeEventsNameAMalformedLine(t *testing.T) {
	l := killedRun(t) // 9 lines
	l.raw(`{"seq":10,"time":"2026-12-01T12:00:02Z","kind":"throughput","fields":{"in":"many"}}`)
	l.at(t, -7_000, events.Throughput, "", "", events.ThroughputFields{In: 2000})
	resumed(t, l)
	path := l.write(t, true)
	_, err := readResumeEvents(path, l.t0)
	if err == nil || !strings.Contains(err.Error(), path+":10:") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err %v; want one line naming %s:10", err, path)
	}
}

// The killed coordinator's last line, cut short by the kill, is ended by
// the new one before its first event, or is the file's last line: either
// is noted, not an error.
func TestResumeEventsTakeTheKilledCoordinatorsCutLine(t *testing.T) {
	t.Run("before the new coordinator's first event", func(t *testing.T) {
		l := killedRun(t).raw(`{"seq":10,"time":"2026-12-01T12:00:02Z","kind":"throu`)
		resumed(t, l)
		ev, err := readResumeEvents(l.write(t, true), l.t0)
		if err != nil || !ev.CutLine || ev.Phases.Rejoined != 250 {
			t.Fatalf("cut line %v, rejoined at %v, err %v; want noted, 250, no error", ev.CutLine, ev.Phases.Rejoined, err)
		}
	})
	t.Run("the last line", func(t *testing.T) {
		l := killedRun(t).raw(`{"seq":10,"time":"2026-12-01T12:00:02Z","kind":"throu`)
		ev, err := readResumeEvents(l.write(t, false), l.t0)
		if err != nil || !ev.CutLine || ev.Phases.Started != -1 {
			t.Fatalf("cut line %v, started at %v, err %v; want noted, none, no error", ev.CutLine, ev.Phases.Started, err)
		}
	})
	t.Run("anywhere else it is an error", func(t *testing.T) {
		l := killedRun(t).raw(`{"seq":10,"time":"2026-12-01T12:00:02Z","kind":"throu`)
		l.at(t, -5_000, events.Throughput, "", "", events.ThroughputFields{In: 3000})
		resumed(t, l)
		path := l.write(t, true)
		if _, err := readResumeEvents(path, l.t0); err == nil || !strings.Contains(err.Error(), path+":10:") {
			t.Fatalf("err %v; want one naming %s:10", err, path)
		}
	})
}

// A run that is not counted (its job had not started, or its resume
// failed) is in no median and no ratio, and the target counts only the
// runs measured; a ratio with a side missing in every round is null.
func TestResumeSummaryCountsOnlyTheRunsMeasured(t *testing.T) {
	run := func(round int, ft string, restored float64, counted bool) ResumeRun {
		rr := ResumeRun{Round: round, Config: ft, FT: ft, Counted: counted, Verified: counted,
			ResumeEvents: ResumeEvents{JobStarted: true, Instances: 8, Restoring: 8, Restored: 8,
				Nodes: []string{"n1"}, SamePID: []string{"n1"},
				Phases: ResumePhases{Started: 50, Control: 60, Rejoined: 300, Restored: restored, CaughtUp: -1}}}
		if restored < 0 {
			rr.Restored = 5
		}
		return rr
	}
	runs := []ResumeRun{
		run(1, "spate", 400, true), run(1, "global", 900, true),
		run(2, "global", 2500, true), run(2, "spate", 600, true),
		run(3, "spate", 100, false), run(3, "global", -1, true),
	}
	confs := recConfs([]string{"spate", "global"}, []benchStore{{}})
	sp, gl := summariseResume(confs[0], runs), summariseResume(confs[1], runs)
	if sp.Runs != 3 || sp.Counted != 2 || sp.Medians.Restored != 500 || sp.Met != 2 || sp.AllRestored != 2 || sp.Verified != 2 {
		t.Errorf("spate %+v; want 3 runs, 2 counted, restored 500 ms, the target met in 2, all restored in 2, 2 verified", sp)
	}
	if gl.Counted != 3 || gl.Medians.Restored != 1700 || gl.Met != 1 || gl.AllRestored != 2 || gl.Medians.CaughtUp != -1 {
		t.Errorf("global %+v; want 3 counted, restored 1700 ms (of the two that were), the target met in 1, all restored in 2, no catch-up", gl)
	}
	rs := resumeRatios(confs, runs, 3)
	if len(rs) != 1 || rs[0].Of != "global/spate" || rs[0].Median == nil || *rs[0].Median != 1700.0/500 || rs[0].CI.Rounds != 2 {
		t.Fatalf("ratios %+v; want global/spate 3.4 of the medians over 2 rounds", rs)
	}
	if got := rs[0].String(); !strings.Contains(got, "by round 2.25 4.17 -") {
		t.Errorf("ratio %q: want the rounds 2.25 4.17 -", got)
	}
	none := resumeRatios(confs, runs[:1], 1)
	b, err := json.Marshal(none)
	if err != nil || !strings.Contains(string(b), `"of_medians":null`) {
		t.Errorf("a ratio without global: %s, %v; want of_medians null", b, err)
	}
}

func TestResumeFlagMistakesAreOneLineNamingTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gap", "30s"}, "--gap 30s: at or above the nodes' --coord-timeout (30s)"},
		{[]string{"--ft", "none"}, "--ft none: none cannot resume"},
		{[]string{"--ft", "spate,spate"}, "--ft spate,spate: spate is given twice"},
		{[]string{"--store", "s3://bucket/p?endpoint=127.0.0.1:9"}, "--store s3://bucket/p?endpoint=127.0.0.1:9: s3 is not measured"},
		{[]string{"--duration", "11s"}, "--duration 11s: want more than 11s"},
		{[]string{"--rounds", "0"}, "--rounds 0"},
		{[]string{"--rate", "0"}, "--rate 0"},
		{[]string{"--source", "nosuch:thing"}, "--source nosuch:thing"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			rc := resumeBench("/nonexistent/spate", c.args, &out, &errOut)
			msg := errOut.String()
			if rc != 2 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 || out.Len() > 0 {
				t.Fatalf("exit %d, stderr %q, stdout %q; want 2 and one line saying %q", rc, msg, out.String(), c.want)
			}
		})
	}
}

// The benchmark itself at a tiny size: one round of spate and global,
// each coordinator killed and resumed; every phase is in the JSON, every
// instance restored, every node back with its pid, both runs verified.
func TestResumeBenchmarkEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test: builds spate, runs two clusters")
	}
	if runtime.GOOS != "linux" {
		t.Skip("SIGKILL and /proc")
	}
	bin := filepath.Join(t.TempDir(), "spate")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a safety net, not a measure
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "spate")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := t.TempDir()
	var out, errOut bytes.Buffer
	rc := resumeBench(bin, []string{"--rounds", "1", "--nodes", "3", "--keys", "2000", "--rate", "20000",
		"--interval", "300ms", "--kill", "2s", "--duration", "7s", "--json", "--data", data}, &out, &errOut)
	if rc != 0 {
		t.Fatalf("exit %d\n%s", rc, errOut.String())
	}
	var res Resume
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("the JSON: %v\n%s", err, out.String())
	}
	if !res.Verified || len(res.Runs) != 2 || len(res.Configs) != 2 || len(res.Ratios) != 1 {
		t.Fatalf("verified %v, %d runs, %d configurations, %d ratios; want true, 2, 2, 1\n%s", res.Verified, len(res.Runs), len(res.Configs), len(res.Ratios), errOut.String())
	}
	for _, rr := range res.Runs {
		p := rr.Phases
		if !rr.Counted || !rr.Verified || rr.Verdict != "pass" || rr.ResumeExit != 0 || len(rr.Problems) > 0 {
			t.Errorf("%s: counted %v, verified %v (%s), resume exit %d, problems %q", rr.Config, rr.Counted, rr.Verified, rr.Verdict, rr.ResumeExit, rr.Problems)
		}
		if p.Started < 0 || p.Control < 0 || p.Rejoined < 0 || p.Restored < 0 || (rr.FT == "spate" && p.CaughtUp < 0) {
			t.Errorf("%s: phases %+v; want every one (caught up: under spate)", rr.Config, p)
		}
		if rr.Instances != 8 || rr.Restored != rr.Instances || !rr.allRejoined() || len(rr.Nodes) != 3 {
			t.Errorf("%s: %d of %d instances restored; %s; want 8 of 8 and 3 nodes back", rr.Config, rr.Restored, rr.Instances, rr.rejoinText())
		}
	}
	for _, c := range res.Configs {
		if c.Counted != 1 || c.Medians.Restored < 0 || c.AllRestored != 1 || c.Verified != 1 {
			t.Errorf("%s: %+v; want one run counted with every instance restored and verified", c.Name, c)
		}
	}
}
