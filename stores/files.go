package stores

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"spate/state"
)

// ErrReadOnly is returned by Files.Put and Files.Delete.
var ErrReadOnly = errors.New("stores: read-only")

// Files is a read-only state.Store over files named by the caller: the
// coordinator serves the run's input file through it (wire.SpaceInput),
// so that a node on another host reads the same bytes as the oracle.
// It is safe for concurrent use.
type Files struct {
	paths map[string]string // store name → file
}

// NewFiles returns a Files store serving paths (store name → file).
func NewFiles(paths map[string]string) *Files {
	return &Files{paths: paths}
}

func (f *Files) path(name string) (string, error) {
	if err := state.CheckName(name); err != nil {
		return "", err
	}
	p, ok := f.paths[name]
	if !ok {
		return "", fmt.Errorf("%s: %w", name, state.ErrNotFound)
	}
	return p, nil
}

// Open streams the file stored as name.
func (f *Files) Open(name string) (io.ReadCloser, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// Get returns the content of the file stored as name.
func (f *Files) Get(name string) ([]byte, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// List returns the names that start with prefix, sorted.
func (f *Files) List(prefix string) ([]string, error) {
	var out []string
	for name := range f.paths {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Put refuses: the input is the coordinator's.
func (f *Files) Put(name string, _ ...[]byte) error {
	return fmt.Errorf("put %s: %w", name, ErrReadOnly)
}

// Delete refuses: the input is the coordinator's.
func (f *Files) Delete(name string) error {
	return fmt.Errorf("delete %s: %w", name, ErrReadOnly)
}
