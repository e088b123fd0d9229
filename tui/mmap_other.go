//go:build !unix

package tui

import "os"

// readAll reads path whole; release does nothing.
func readAll(path string) ([]byte, func(), error) {
	b, err := os.ReadFile(path)
	return b, func() {}, err
}
