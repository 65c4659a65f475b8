package engine

import "golang.org/x/sys/unix"

// osYield gives the CPU to another runnable thread of the machine, if
// any (sched_yield): a thread that spins waiting for a message must not
// keep the thread that is to send it from running on the same CPU.
func osYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
