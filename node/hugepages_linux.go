package node

import "syscall"

const madvHugepage = 14 // MADV_HUGEPAGE

// madviseHuge asks the kernel to back [addr, addr+n) with huge pages.
func madviseHuge(addr, n uint64) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(addr), uintptr(n), madvHugepage); e != 0 {
		return e
	}
	return nil
}
