package tuner

import (
	"os"
	"strings"
	"testing"
)

func TestScratchRun(t *testing.T) {
	a := os.Getenv("SIMARGS")
	if a == "" {
		t.Skip()
	}
	if c := SimMain(strings.Fields(a), os.Stdout, os.Stderr); c != 0 {
		t.Fatal("exit", c)
	}
}
