package traces

import (
	"bytes"
	"spate/internal/race"
	"strings"
	"testing"
	"unicode/utf8"
)

func show(t *testing.T, spec string) string {
	t.Helper()
	var b bytes.Buffer
	if err := Show(&b, spec); err != nil {
		t.Fatalf("Show(%q): %v", spec, err)
	}
	return b.String()
}

func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("output does not contain %q:\n%s", w, out)
		}
	}
}

func sparkOf(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "  shape    "); ok {
			return s
		}
	}
	t.Fatalf("no sparkline in:\n%s", out)
	return ""
}

func TestShowRate(t *testing.T) {
	p := write(t, "workload.txt.gz", gzipped(t, []byte("0 2 4 0 6 0 8\n")))
	out := show(t, p)
	wantLines(t, out, "rate:"+p, "rate trace", "records  20\n", "7 s", "mean 2.86/s, max 8/s (second 6)", "(gzip)")
	if s := sparkOf(t, out); s != " ▂▄ ▆ █" {
		t.Fatalf("sparkline %q", s)
	}
}

func TestShowTrace(t *testing.T) {
	data := "user,ts,bytes\nann,2023-11-16 18:17:03.5,10\nbob,2023-11-16 18:17:03.9,20\nann,2023-11-16 18:17:05,5\n"
	p := write(t, "log.csv", []byte(data))
	out := show(t, p)
	wantLines(t, out, "trace:"+p+"?time=ts&key=user", "record trace (CSV, 3 columns; time=ts key=user)",
		"records  3\n", "2023-11-16 18:17:03.500Z to 2023-11-16 18:17:05.000Z (1.5s)", "max 2/s (second 0)")
	// A full spec is shown as given.
	out = show(t, "trace:"+p+"?time=ts&key=bytes&value=bytes")
	wantLines(t, out, "key=bytes value=bytes")
}

func TestShowGuessNumericKey(t *testing.T) {
	p := write(t, "azure.csv", []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n"))
	wantLines(t, show(t, p), "?time=TIMESTAMP&key=ContextTokens")
	p = write(t, "notime.csv", []byte("a,b\nx,y\n"))
	if err := Show(&bytes.Buffer{}, p); err == nil || !strings.Contains(err.Error(), "cannot guess the time column") {
		t.Fatalf("no time column: %v", err)
	}
}

func TestShowGen(t *testing.T) {
	out := show(t, "gen:constant")
	wantLines(t, out, "generator constant", "records  60,000,000", "max 1,000,000/s")
	out = show(t, "gen:diurnal?day=60s&burst=0")
	wantLines(t, out, "generator diurnal", "day 1m0s", "records  60,000,000")
	if s := sparkOf(t, out); utf8.RuneCountInString(s) != 60 {
		t.Fatalf("sparkline of %d characters: %q", utf8.RuneCountInString(s), s)
	}
	if err := Show(&bytes.Buffer{}, "gen:nope"); err == nil {
		t.Fatal("Show of an unknown generator: no error")
	}
}

func TestShowReal(t *testing.T) {
	dir := sharedTraces(t)
	wantLines(t, show(t, dir+"/nasa_19950801.tsv.gz"), "?time=time&key=host", "records  30,969", "TSV")
	wantLines(t, show(t, dir+"/AzureLLMInferenceTrace_conv.csv"), "records  19,366")
	if race.Enabled { // bzip2 alone takes 5-10 s under -race
		return
	}
	out := show(t, dir+"/nasa_http_1995_per_second.tbz2")
	wantLines(t, out, "rate trace", "records  3,461,610", "5,059,950 s", "max 20/s", "(workload.txt)")
	if s := sparkOf(t, out); utf8.RuneCountInString(s) != SparkWidth {
		t.Fatalf("sparkline %q", s)
	}
}
