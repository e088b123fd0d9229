//go:build !linux

package node

import "errors"

func madviseHuge(addr, n uint64) error { return errors.ErrUnsupported }
