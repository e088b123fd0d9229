package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// TestSkimIsTheFold: a seek ahead of the background fold (skimmed from
// its latest snapshot, or from the start), behind it (a snapshot and the
// rest folded) and at it gives the state a fold of every event from the
// start gives, field for field. The recording is long enough for every
// bounded history to overflow (the log, the checkpoints, the throughput
// chart, a backup's recent trims), and has lines the index does not read
// (always decoded) and times out of order (which the throughput chart
// must not trust).
func TestSkimIsTheFold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := writeSyntheticOdd(t, path, 70*time.Second, 1500, true); err != nil {
		t.Fatal(err)
	}
	rec, err := openRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.close)
	n := rec.len()
	rec.every = 8192
	rec.buildSnapshots()
	// The fold part of the way: to 32768.
	const fold = 4 * 8192
	rec.mu.Lock()
	rec.snaps, rec.foldDone = rec.snaps[:fold/8192+1], false
	rec.mu.Unlock()
	if got, _, _ := rec.progress(); got != fold {
		t.Fatalf("the fold at %d, want %d", got, fold)
	}

	must, odd := 0, 0
	for i := 0; i < n; i++ {
		if rec.codes[i]&foldCode == foldMust {
			must++
		}
		if rec.codes[i]&foldClamped != 0 {
			odd++
		}
	}
	if must == 0 || odd == 0 || must > n/20 {
		t.Fatalf("%d of %d events always folded, %d out of order: not the recording this test needs", must, n, odd)
	}

	targets := []int{0, 1, fold / 2, fold - 1, fold, fold + 1, fold + 5000, n / 2, n/2 + 777, n - 1, n}
	sort.Ints(targets)
	straight := newState()
	at := 0
	overflowed := map[string]bool{}
	for _, target := range targets {
		if err := rec.fold(straight, at, target); err != nil {
			t.Fatal(err)
		}
		at = target
		got, err := rec.seekState(target)
		if err != nil {
			t.Fatalf("seek to %d: %v", target, err)
		}
		if diff := stateDiff(straight, got); diff != "" {
			t.Errorf("seek to %d (the fold at %d): %s", target, fold, diff)
		}
		base := rec.snaps[0]
		got, err = rec.skim(base, 0, target)
		if err != nil {
			t.Fatalf("skim to %d: %v", target, err)
		}
		if diff := stateDiff(straight, got); diff != "" {
			t.Errorf("skim from the start to %d: %s", target, diff)
		}
		overflowed["log"] = overflowed["log"] || len(straight.log) >= maxLog*3/4
		overflowed["ckpts"] = overflowed["ckpts"] || len(straight.ckpts) == maxCkpts
		overflowed["tput"] = overflowed["tput"] || len(straight.tput) == maxTput
		for _, b := range straight.backups {
			overflowed["trims"] = overflowed["trims"] || b.Trims > 32
		}
	}
	for _, what := range []string{"log", "ckpts", "tput", "trims"} {
		if !overflowed[what] {
			t.Errorf("the %s never overflowed: the test does not test the skim's bounds", what)
		}
	}

	// The model: seeks ahead, behind and at the fold, in any order.
	m, _ := newViewModel(rec, ViewOptions{Plain: true})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	for _, target := range []int{n, fold + 1, 3, fold, n / 2, n/2 + 10, fold - 1} {
		m.seek(target)
		want := newState()
		if err := rec.fold(want, 0, target); err != nil {
			t.Fatal(err)
		}
		if m.rp.pos != target {
			t.Errorf("seek(%d): at %d", target, m.rp.pos)
		}
		if diff := stateDiff(want, m.s); diff != "" {
			t.Errorf("seek(%d) in the model: %s", target, diff)
		}
	}
}

// stateDiff names the first fields of two states that differ; "" if
// they are deeply equal.
func stateDiff(want, got *state) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	w, g := reflect.ValueOf(want).Elem(), reflect.ValueOf(got).Elem()
	var out string
	for i := 0; i < w.NumField(); i++ {
		name := w.Type().Field(i).Name
		wf, gf := w.Field(i), g.Field(i)
		if !reflect.DeepEqual(valueOf(wf), valueOf(gf)) {
			out += fmt.Sprintf("%s differs; ", name)
			if name == "log" && wf.Len() != gf.Len() {
				out += fmt.Sprintf("(%d entries, want %d) ", gf.Len(), wf.Len())
			}
		}
	}
	if out == "" {
		return "differ"
	}
	return out
}

// valueOf reads an unexported field's value for DeepEqual.
func valueOf(v reflect.Value) any {
	return reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().Interface()
}

// TestSkimEveryPosition: on the recorded runs, skimming to every position
// from the start, and from the snapshot before, gives the full fold's
// state: small ranges, where every bound is far from full.
func TestSkimEveryPosition(t *testing.T) {
	for _, name := range []string{"run-kill.jsonl", "run-global.jsonl"} {
		t.Run(name, func(t *testing.T) {
			rec := recorded(t, name)
			rec.every = 16
			rec.buildSnapshots()
			straight := newState()
			for pos := 0; pos <= rec.len(); pos++ {
				if pos > 0 {
					if err := rec.fold(straight, pos-1, pos); err != nil {
						t.Fatal(err)
					}
				}
				for _, from := range []int{0, (pos / 16) * 16, max(pos-1, 0) / 16 * 16} {
					got, err := rec.skim(rec.snaps[from/16], from, pos)
					if err != nil {
						t.Fatal(err)
					}
					if diff := stateDiff(straight, got); diff != "" {
						t.Fatalf("skim from %d to %d: %s", from, pos, diff)
					}
				}
			}
		})
	}
}

// TestSkimRareShapes: what the synthetic run does not have. An instance
// first named by metrics before another operator's first checkpoint (the
// operators' order is the order they were first named in); one that
// stopped checkpointing long before the others (its own last 16 are not
// among the last rows); a log of more kept events than it holds (then
// kept ones are dropped too).
func TestSkimRareShapes(t *testing.T) {
	var b strings.Builder
	seq := 0
	at := clock
	line := func(kind, env, fields string) {
		seq++
		at = at.Add(time.Millisecond)
		fmt.Fprintf(&b, `{"v":1,"seq":%d,"time":"%s","kind":"%s"%s,"text":"x","fields":%s}`+"\n",
			seq, at.Format(time.RFC3339Nano), kind, env, fields)
	}
	ckpt := func(inst string, id int) {
		line("checkpoint", `,"node":"n1","instance":"`+inst+`"`, fmt.Sprintf(`{"bytes":1,"full":true,"id":%d,"total_us":5}`, id))
	}
	metrics := func(inst string, v int) {
		line("metrics", `,"node":"n1","instance":"`+inst+`"`, fmt.Sprintf(`{"in_rate":%d,"backlog":1}`, v))
	}
	line("window_fired", `,"node":"n1","instance":"rollup#0"`, `{"results":1}`) // the first event is applied anyway
	metrics("zeta#0", 1)
	for i := 0; i < 20; i++ {
		ckpt("early#0", i+1)
	}
	ckpt("alpha#0", 1)
	for i := 0; i < 3000; i++ {
		line("node_joined", `,"node":"n`+strconv.Itoa(i%7)+`"`, `{"listen":"127.0.0.1:1"}`)
		if i%5 == 0 {
			ckpt("alpha#0", i+2)
			metrics("zeta#0", i)
		}
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := openRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.close)
	straight := newState()
	for _, to := range []int{100, 1000, 2500, rec.len()} {
		if err := rec.fold(straight, int(straight.total), to); err != nil {
			t.Fatal(err)
		}
		got, err := rec.skim(newState(), 0, to)
		if err != nil {
			t.Fatal(err)
		}
		if diff := stateDiff(straight, got); diff != "" {
			t.Errorf("skim to %d: %s", to, diff)
		}
	}
	if len(straight.ckptByInst["early#0"]) != 16 || straight.opOrder[0] != "zeta" || len(straight.log) < maxLog/2 {
		t.Errorf("not the shapes this test is for: early#0's %d checkpoints, operators %v, %d log lines",
			len(straight.ckptByInst["early#0"]), straight.opOrder, len(straight.log))
	}
}
