package state

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// eachStore runs the same test body over a DirStore and a MemStore.
func eachStore(t *testing.T, body func(t *testing.T, s Store)) {
	t.Run("dir", func(t *testing.T) {
		s, err := NewDirStore(filepath.Join(t.TempDir(), "ckpt"))
		if err != nil {
			t.Fatal(err)
		}
		body(t, s)
	})
	t.Run("mem", func(t *testing.T) { body(t, NewMemStore()) })
}

// The Store contract (TestStoreContract, contract_test.go) is one table
// of tests in package storetest, run on every implementation.

func TestDirStoreLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put("op#0/f", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// a crashed Put's leftover
	tmp := filepath.Join(dir, "op#0", ".g.tmp123")
	if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List(""); !slices.Equal(got, []string{"op#0/f"}) {
		t.Fatalf("List shows %q", got)
	}
	if err := s.CleanTemp(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "op#0"))
	if len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("directory holds %v", ents)
	}
}

func TestMemStoreFaults(t *testing.T) {
	m := NewMemStore()
	boom := errors.New("disk on fire")
	m.FailPuts(boom)
	if err := m.Put("a", []byte("x")); !errors.Is(err, boom) {
		t.Fatalf("Put with FailPuts: %v", err)
	}
	if _, err := m.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Fatal("a failed Put stored something")
	}
	m.FailPuts(nil)
	good, _ := Encode(sampleSnapshot())
	if err := m.Put("a", good); err != nil {
		t.Fatal(err)
	}
	if m.Puts() != 1 {
		t.Fatalf("Puts() = %d", m.Puts())
	}
	if err := m.Corrupt("a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Corrupt("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Corrupt of a missing name: %v", err)
	}
	b, _ := m.Get("a")
	if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode of a corrupted file: %v", err)
	}

	synctest.Test(t, func(t *testing.T) {
		m.SlowPuts(5 * time.Second)
		start := time.Now()
		if err := m.Put("b", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("a slow Put took %v", d)
		}
	})
}
