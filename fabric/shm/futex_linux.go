package shm

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futexes here live in memory shared between processes, so the private
// flag is never used.
const (
	futexWait = 0
	futexWake = 1
)

// futexWaitTimeout sleeps while *addr == val, at most d.
func futexWaitTimeout(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWakeAll wakes every sleeper on addr.
func futexWakeAll(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(^uint32(0)>>1), 0, 0, 0)
}
