package stores

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"spate/state"
)

func TestSegmentNames(t *testing.T) {
	n := SegmentName("sink-0-g3.jsonl", 1234)
	if n != "sink-0-g3.jsonl.seg/0000000000001234" {
		t.Fatalf("SegmentName = %q", n)
	}
	if f, off, ok := ParseSegmentName(n); !ok || f != "sink-0-g3.jsonl" || off != 1234 {
		t.Fatalf("ParseSegmentName(%q) = %q, %d, %v", n, f, off, ok)
	}
	for _, bad := range []string{"sink-0-g3.jsonl", "MANIFEST.json", ".seg/0000000000000000", "a.seg/12", "a.seg/000000000000000x", "a.seg/-000000000000001"} {
		if _, _, ok := ParseSegmentName(bad); ok {
			t.Errorf("ParseSegmentName(%q) took it for a segment", bad)
		}
	}
	if err := state.CheckName(n); err != nil {
		t.Fatalf("a segment name is not a store name: %v", err)
	}
}

// testLog runs the segmented log's checks on st.
func testLog(t *testing.T, st state.Store, failPuts func(error)) {
	l := NewLog(st, "sink-1-g2.jsonl")
	var want []byte
	write := func(s string) {
		if _, err := l.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		want = append(want, s...)
	}
	write(`{"a":1}` + "\n")
	write(`{"a":2}`)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil { // nothing new: no empty segment
		t.Fatal(err)
	}
	write("\n" + `{"a":3}` + "\n")
	if failPuts != nil {
		boom := errors.New("store down")
		failPuts(boom)
		if err := l.Sync(); !errors.Is(err, boom) {
			t.Fatalf("Sync on a failing store: %v", err)
		}
		write(`{"a":4}` + "\n")
		if err := l.Sync(); !errors.Is(err, boom) {
			t.Fatalf("Sync on a failing store: %v", err)
		}
		failPuts(nil)
	}
	write(`{"a":5}` + "\n")
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	write(`{"a":6}` + "\n")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLog(st, "sink-1-g2.jsonl", nil)
	if err != nil || string(got) != string(want) {
		t.Fatalf("ReadLog = %q, %v; want %q", got, err, want)
	}
	logs, plain, err := Logs(st)
	if err != nil {
		t.Fatal(err)
	}
	segs := logs["sink-1-g2.jsonl"]
	wantSegs := 3
	if failPuts != nil {
		wantSegs = 5 // the failed Syncs' segments stay apart, stored later in order
	}
	if len(logs) != 1 || len(segs) != wantSegs || len(plain) != 0 {
		t.Fatalf("Logs = %q, plain %q; want one file of %d segments", logs, plain, wantSegs)
	}
	if again, err := ReadLog(st, "sink-1-g2.jsonl", segs); err != nil || string(again) != string(want) {
		t.Fatalf("ReadLog with the listed segments = %q, %v", again, err)
	}
	// A segment lost in the middle: the file is refused, not read short.
	// (A lost last segment leaves a shorter file: verify finds the
	// results missing.)
	if err := st.Delete(segs[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLog(st, "sink-1-g2.jsonl", nil); err == nil || !strings.Contains(err.Error(), "starts at byte") {
		t.Fatalf("ReadLog with a segment missing: %v", err)
	}
}

func TestLog(t *testing.T) {
	m := state.NewMemStore()
	testLog(t, m, m.FailPuts)
	// nothing but segments was written
	names, _ := m.List("")
	if !slices.ContainsFunc(names, func(n string) bool { _, _, ok := ParseSegmentName(n); return ok }) {
		t.Fatalf("no segments in %q", names)
	}
}

func TestLogOnS3(t *testing.T) {
	ep := startWeed(t)
	s, err := OpenS3(Spec{Kind: S3, Bucket: "spate-test", Endpoint: ep}, fmt.Sprintf("run%d/output", runSeq.Add(1)), S3Options{Getenv: weedEnv})
	if err != nil {
		t.Fatal(err)
	}
	testLog(t, s, nil)
}
