package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
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

func TestStore(t *testing.T) {
	eachStore(t, func(t *testing.T, s Store) {
		if _, err := s.Get("a/b"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get of a missing name: %v", err)
		}
		if err := s.Delete("a/b"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Delete of a missing name: %v", err)
		}
		if got, err := s.List(""); err != nil || len(got) != 0 {
			t.Fatalf("List of an empty store: %v %v", got, err)
		}
		data := []byte("hello")
		for _, n := range []string{"count#0/b", "count#0/a", "count#1/a", "top", "count#0/sub/c"} {
			if err := s.Put(n, data); err != nil {
				t.Fatal(err)
			}
		}
		data[0] = 'X' // the store keeps its own copy
		if err := s.Put("top", []byte("replaced")); err != nil {
			t.Fatal(err)
		}
		if b, err := s.Get("count#0/a"); err != nil || string(b) != "hello" {
			t.Fatalf("Get = %q, %v", b, err)
		}
		if b, err := s.Get("top"); err != nil || string(b) != "replaced" {
			t.Fatalf("Get after a replacing Put = %q, %v", b, err)
		}
		parts := [][]byte{[]byte("he"), nil, []byte("ad"), []byte("-body")}
		if err := s.Put("count#1/parts", parts...); err != nil {
			t.Fatal(err)
		}
		parts[0][0] = 'X' // nor does it keep the parts
		if b, err := s.Get("count#1/parts"); err != nil || string(b) != "head-body" {
			t.Fatalf("Get of a Put in parts = %q, %v", b, err)
		}
		if f, err := s.Open("count#1/parts"); err != nil {
			t.Fatal(err)
		} else if b, err := io.ReadAll(f); err != nil || string(b) != "head-body" || f.Close() != nil {
			t.Fatalf("Open, read = %q, %v", b, err)
		}
		// Many small parts, gathered into larger writes, around parts
		// larger than what is gathered, written as they are.
		var many [][]byte
		for i := range 900 {
			n := 1 + i%3000
			if i%300 == 299 {
				n = 3 << 20
			}
			many = append(many, bytes.Repeat([]byte{byte(i)}, n))
		}
		if err := s.Put("count#1/many", many...); err != nil {
			t.Fatal(err)
		}
		if b, err := s.Get("count#1/many"); err != nil || !bytes.Equal(b, bytes.Join(many, nil)) {
			t.Fatalf("Get of a Put in %d parts: %d bytes, %v; want %d", len(many), len(b), err, len(bytes.Join(many, nil)))
		}
		if err := s.Delete("count#1/many"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open("count#1/nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Open of a missing name: %v", err)
		}
		if err := s.Delete("count#1/parts"); err != nil {
			t.Fatal(err)
		}
		for prefix, want := range map[string][]string{
			"":          {"count#0/a", "count#0/b", "count#0/sub/c", "count#1/a", "top"},
			"count#0/":  {"count#0/a", "count#0/b", "count#0/sub/c"},
			"count#":    {"count#0/a", "count#0/b", "count#0/sub/c", "count#1/a"},
			"count#0/s": {"count#0/sub/c"},
			"nope":      nil,
		} {
			if got, err := s.List(prefix); err != nil || !slices.Equal(got, want) {
				t.Errorf("List(%q) = %q, %v; want %q", prefix, got, err, want)
			}
		}
		if err := s.Delete("count#0/a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get("count#0/a"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get after Delete: %v", err)
		}
		for _, bad := range []string{"", "/abs", "../up", "a/../../b", "a//b", "a/./b", ".hidden", "a/.tmp", "a\\b", "a/"} {
			if err := s.Put(bad, data); !errors.Is(err, ErrBadName) {
				t.Errorf("Put(%q) = %v, want ErrBadName", bad, err)
			}
			if _, err := s.Get(bad); !errors.Is(err, ErrBadName) {
				t.Errorf("Get(%q) = %v, want ErrBadName", bad, err)
			}
		}
	})
}

func TestStoreConcurrentPuts(t *testing.T) {
	eachStore(t, func(t *testing.T, s Store) {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 20 {
					name := fmt.Sprintf("i#%d/f%02d", w, i%5)
					if err := s.Put(name, bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
						t.Error(err)
					}
					if b, err := s.Get(name); err != nil || len(b) != 1000 {
						t.Errorf("Get %s: %d bytes, %v", name, len(b), err)
					}
				}
			})
		}
		wg.Wait()
		if got, _ := s.List(""); len(got) != 20 {
			t.Fatalf("List: %d names, want 20", len(got))
		}
	})
}

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
