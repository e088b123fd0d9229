package sim

import (
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	ok := Result{Seed: 7, Windows: 120}
	if got, want := progress(4, ok, 0, 30*time.Second, 1), "[1/4] seed 7: ok: 120 windows, 0 lost, 0 duplicated, 0 wrong; 0 failed so far; about 1m30s left"; got != want {
		t.Errorf("first of 4:\n got %q\nwant %q", got, want)
	}
	bad := Result{Seed: 9, Err: "the drain did not end"}
	if got, want := progress(4, bad, 1, 40*time.Second, 4), "[4/4] seed 9: FAIL: the drain did not end; 1 failed so far"; got != want {
		t.Errorf("last of 4:\n got %q\nwant %q", got, want)
	}
}
