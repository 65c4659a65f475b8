// Package osyield gives the CPU away from a thread that spins waiting: a
// thread that spins for a message, a completion or a helper must not keep
// the thread or the kernel work it waits for from running on its CPU.
package osyield

import "golang.org/x/sys/unix"

// Yield gives the CPU to another runnable thread of the machine, if any
// (sched_yield).
func Yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
