//go:build !wasip1

package coord

import "syscall"

// ownGroup puts a spawned node in a process group of its own.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
