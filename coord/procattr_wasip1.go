package coord

import "syscall"

// ownGroup is nil: a wasip1 guest (the simulation's exact mode) spawns
// no process.
func ownGroup() *syscall.SysProcAttr { return nil }
