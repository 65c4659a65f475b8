package athread

import "golang.org/x/sys/unix"

// osYield gives the CPU to another runnable thread of the machine, if any
// (sched_yield).
func osYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
