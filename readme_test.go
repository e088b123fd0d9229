package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTheReadmeIsShortAndItsCommandsExist: README.md is under 300 lines,
// every command of its table answers `spate help CMD`, the trace it
// runs ships with the repository, and it points at no ../shared path for
// what a clone must run.
func TestTheReadmeIsShortAndItsCommandsExist(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n >= 300 {
		t.Errorf("README.md has %d lines, want under 300", n)
	}
	row := regexp.MustCompile("(?m)^\\| `spate ([a-z]+(?: [a-z]+)?)")
	rows := row.FindAllStringSubmatch(text, -1)
	if len(rows) < 15 {
		t.Fatalf("the command table has %d rows", len(rows))
	}
	for _, m := range rows {
		words := strings.Fields(m[1])
		if len(words) == 2 && words[0] != "chaos" && words[0] != "traces" && words[0] != "tuner" {
			words = words[:1] // an argument (completion bash), not a subcommand
		}
		code, out, errOut := spate(t, append([]string{"help"}, words...)...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("spate help %s: exit %d\n%s%s", m[1], code, out, errOut)
		}
	}
	for _, p := range regexp.MustCompile(`examples/traces/[a-z-]+\.tsv`).FindAllString(text, -1) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the README runs %s: %v", p, err)
		}
	}
	if strings.Contains(text, "../shared") {
		t.Error("the README names ../shared, which a clone does not have")
	}
}
