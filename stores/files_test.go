package stores

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"spate/state"
	"spate/wire"
)

// TestInputSpaceServesTheFileReadOnly: a node on another host gets the
// run's input file whole through the coordinator, and can change nothing.
func TestInputSpaceServesTheFileReadOnly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trace.csv")
	content := bytes.Repeat([]byte("t,k\n1,a\n"), 300_000) // several store-data chunks
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := NewServer(map[wire.StoreSpace]state.Store{wire.SpaceInput: NewFiles(map[string]string{wire.InputSource: file})}, 0)
	c := NewClient(coordPair(t, srv), wire.SpaceInput, 0)
	got, err := c.Get(wire.InputSource)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("Get(source): %d bytes of %d, %v", len(got), len(content), err)
	}
	if names, err := c.List(""); err != nil || len(names) != 1 || names[0] != wire.InputSource {
		t.Fatalf("List = %q, %v", names, err)
	}
	if _, err := c.Get("other"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Get(other): %v, want not found", err)
	}
	if err := c.Put(wire.InputSource, []byte("x")); err == nil {
		t.Fatal("a put into the input space was taken")
	}
	if err := c.Delete(wire.InputSource); err == nil {
		t.Fatal("a delete in the input space was taken")
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, content) {
		t.Fatal("the input file changed")
	}
}
