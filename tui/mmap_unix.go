//go:build unix

package tui

import (
	"os"
	"syscall"
)

// readAll maps path into memory read-only (the index faults its pages in
// on two goroutines at once, with no copy); release unmaps it. An empty
// file is read as nothing.
func readAll(path string) (data []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 || !st.Mode().IsRegular() {
		b, err := os.ReadFile(path)
		return b, func() {}, err
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		b, err := os.ReadFile(path)
		return b, func() {}, err
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
