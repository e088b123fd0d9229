package state

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store is where checkpoint files go. Names are slash-separated relative
// paths ("count#0/g00000002-c000000017-full.ckpt"). Implementations are
// safe for concurrent use.
type Store interface {
	// Put stores data (its parts one after the other) under name,
	// atomically and durably: when it returns nil, a crash leaves either
	// the old content or data, never a mix, and data survives the crash.
	// It replaces an existing file. It keeps none of data's storage.
	Put(name string, data ...[]byte) error
	// Get returns what is stored under name, or an error wrapping
	// ErrNotFound.
	Get(name string) ([]byte, error)
	// Open is Get as a stream, for a reader that needs the bytes only
	// once (a scrub): no buffer of the file's size.
	Open(name string) (io.ReadCloser, error)
	// List returns the stored names that start with prefix, sorted.
	List(prefix string) ([]string, error)
	// Delete removes name, or returns an error wrapping ErrNotFound.
	Delete(name string) error
}

// CheckName reports whether name is a valid store name: slash-separated,
// relative, with no empty, "." or ".." element, no backslash or NUL, and
// no element starting with "." (reserved for temporary files). Errors wrap
// ErrBadName.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrBadName)
	}
	if strings.ContainsAny(name, "\\\x00") {
		return fmt.Errorf("%w: %q: backslash or NUL", ErrBadName, name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || strings.HasPrefix(el, ".") {
			return fmt.Errorf("%w: %q: empty element or one starting with '.' (absolute, \"..\" or reserved)", ErrBadName, name)
		}
	}
	return nil
}

// DirStore is a Store in a directory of the local file system.
//
// Put writes a temporary file (".NAME.tmp…" in the same directory), syncs
// it, renames it over NAME and syncs the directory. A crash can leave
// temporary files behind: List ignores them and CleanTemp removes them.
type DirStore struct {
	dir string
}

// NewDirStore returns a store rooted at dir, creating dir if needed.
func NewDirStore(dir string) (*DirStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: checkpoint store: %w", err)
	}
	return &DirStore{dir: dir}, nil
}

// Dir returns the store's directory.
func (d *DirStore) Dir() string { return d.dir }

func (d *DirStore) path(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	return filepath.Join(d.dir, filepath.FromSlash(name)), nil
}

// Put implements Store.
func (d *DirStore) Put(name string, data ...[]byte) (err error) {
	p, err := d.path(name)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state: put %s: %w", name, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+".tmp*")
	if err != nil {
		return fmt.Errorf("state: put %s: %w", name, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// The parts of a checkpoint are hundreds (the backup's marks point
	// into their chunks): written one by one, the system calls cost more
	// than the bytes. Small ones are gathered into large writes, a large
	// one goes out as it is.
	w := putWriters.Get().(*bufio.Writer)
	w.Reset(f)
	defer func() {
		w.Reset(nil)
		putWriters.Put(w)
	}()
	for _, part := range data {
		if _, err := w.Write(part); err != nil {
			return fmt.Errorf("state: put %s: %w", name, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("state: put %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("state: put %s: sync: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("state: put %s: %w", name, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("state: put %s: %w", name, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("state: put %s: sync directory: %w", name, err)
	}
	return nil
}

// putWriters are the buffers of DirStore.Put.
var putWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<20) }}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// Get implements Store.
func (d *DirStore) Get(name string) ([]byte, error) {
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("state: get %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("state: get %s: %w", name, err)
	}
	return b, nil
}

// Open implements Store.
func (d *DirStore) Open(name string) (io.ReadCloser, error) {
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("state: open %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", name, err)
	}
	return f, nil
}

// List implements Store. It skips temporary files.
func (d *DirStore) List(prefix string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(d.dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if p == d.dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if p == d.dir {
			return nil
		}
		rel, err := filepath.Rel(d.dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if strings.HasPrefix(de.Name(), ".") {
			if de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			// prune directories that cannot hold a match
			if !strings.HasPrefix(name+"/", prefix) && !strings.HasPrefix(prefix, name+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if de.Type().IsRegular() && strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: list %q: %w", prefix, err)
	}
	slices.Sort(out)
	return out, nil
}

// Delete implements Store.
func (d *DirStore) Delete(name string) error {
	p, err := d.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("state: delete %s: %w", name, ErrNotFound)
		}
		return fmt.Errorf("state: delete %s: %w", name, err)
	}
	return nil
}

// CleanTemp removes the temporary files that crashed Puts left behind,
// those last modified before cutoff (a Put in progress elsewhere, e.g. by
// another process, keeps its file fresh).
func (d *DirStore) CleanTemp(cutoff time.Time) error {
	return filepath.WalkDir(d.dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasPrefix(de.Name(), ".") || !strings.Contains(de.Name(), ".tmp") {
			return err
		}
		if info, err := de.Info(); err == nil && info.ModTime().Before(cutoff) {
			os.Remove(p)
		}
		return nil
	})
}

// MemStore is the in-memory twin of DirStore, with fault hooks for tests.
// It is safe for concurrent use.
type MemStore struct {
	mu    sync.Mutex
	files map[string][]byte
	fail  error
	slow  time.Duration
	puts  int
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{files: make(map[string][]byte)} }

// FailPuts makes every later Put fail with err (nil: succeed again)
// without storing anything.
func (m *MemStore) FailPuts(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

// SlowPuts makes every later Put take d (time.Sleep, so a fake clock under
// testing/synctest applies) before it stores anything.
func (m *MemStore) SlowPuts(d time.Duration) {
	m.mu.Lock()
	m.slow = d
	m.mu.Unlock()
}

// Corrupt flips one bit in the middle of the stored file name, as a bad
// disk would. It returns ErrNotFound if name is not stored.
func (m *MemStore) Corrupt(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[name]
	if !ok {
		return fmt.Errorf("state: corrupt %s: %w", name, ErrNotFound)
	}
	if len(b) > 0 {
		b[len(b)/2] ^= 0x10
	}
	return nil
}

// Puts returns the number of successful Puts.
func (m *MemStore) Puts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.puts
}

// Put implements Store. It keeps a copy of data.
func (m *MemStore) Put(name string, data ...[]byte) error {
	if err := CheckName(name); err != nil {
		return err
	}
	m.mu.Lock()
	slow, fail := m.slow, m.fail
	m.mu.Unlock()
	if slow > 0 {
		time.Sleep(slow)
	}
	if fail != nil {
		return fmt.Errorf("state: put %s: %w", name, fail)
	}
	b := slices.Concat(data...)
	m.mu.Lock()
	m.files[name] = b
	m.puts++
	m.mu.Unlock()
	return nil
}

// Get implements Store. It returns a copy.
func (m *MemStore) Get(name string) ([]byte, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[name]
	if !ok {
		return nil, fmt.Errorf("state: get %s: %w", name, ErrNotFound)
	}
	return append([]byte(nil), b...), nil
}

// Open implements Store. It reads a copy.
func (m *MemStore) Open(name string) (io.ReadCloser, error) {
	b, err := m.Get(name)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// List implements Store.
func (m *MemStore) List(prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.files {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Delete implements Store.
func (m *MemStore) Delete(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; !ok {
		return fmt.Errorf("state: delete %s: %w", name, ErrNotFound)
	}
	delete(m.files, name)
	return nil
}
