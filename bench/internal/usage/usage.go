// Package usage reads what a process spent: CPU time and context switches
// (getrusage) and, where the kernel's syscall tracepoint is reachable, the
// number of system calls made by all its threads. The benchmark divides the
// difference of two snapshots by the messages in between, so a reader sees
// why one series is slower than another.
package usage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Counts is a snapshot of a process's spending, or a difference of two.
type Counts struct {
	CPU         int64 `json:"cpu_ns"`      // user plus system CPU time
	Voluntary   int64 `json:"voluntary"`   // context switches while waiting
	Involuntary int64 `json:"involuntary"` // context switches by preemption
	Syscalls    int64 `json:"syscalls"`    // system calls; valid only if HasSyscalls
	HasSyscalls bool  `json:"has_syscalls"`
}

// Add returns c + d. The system-call count stays valid only if both have it.
func (c Counts) Add(d Counts) Counts {
	return Counts{c.CPU + d.CPU, c.Voluntary + d.Voluntary, c.Involuntary + d.Involuntary,
		c.Syscalls + d.Syscalls, c.HasSyscalls && d.HasSyscalls}
}

// Sub returns c - d.
func (c Counts) Sub(d Counts) Counts {
	return Counts{c.CPU - d.CPU, c.Voluntary - d.Voluntary, c.Involuntary - d.Involuntary,
		c.Syscalls - d.Syscalls, c.HasSyscalls && d.HasSyscalls}
}

// Switches is the number of context switches of both kinds.
func (c Counts) Switches() int64 { return c.Voluntary + c.Involuntary }

// Self snapshots this process. The first call opens the system-call
// counter; threads started afterwards are counted through inheritance.
func Self() Counts {
	var ru unix.Rusage
	var c Counts
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		c.CPU = ru.Utime.Nano() + ru.Stime.Nano()
		c.Voluntary = ru.Nvcsw
		c.Involuntary = ru.Nivcsw
	}
	c.Syscalls, c.HasSyscalls = syscalls()
	return c
}

// SyscallsUnavailable says why system calls are not counted, or "" when
// they are.
func SyscallsUnavailable() string {
	counter.once.Do(counter.open)
	if counter.err != nil {
		return counter.err.Error()
	}
	return ""
}

// The system-call counter: one perf event on the raw_syscalls:sys_enter
// tracepoint per thread that existed when it was opened, each inherited
// by the threads that thread starts later.
type syscallCounter struct {
	once sync.Once
	fds  []int
	err  error
}

var counter syscallCounter

func syscalls() (int64, bool) {
	counter.once.Do(counter.open)
	if counter.err != nil {
		return 0, false
	}
	var total int64
	var buf [8]byte
	for _, fd := range counter.fds {
		if n, err := unix.Read(fd, buf[:]); err != nil || n != 8 {
			return 0, false
		}
		total += int64(*(*uint64)(unsafe.Pointer(&buf[0])))
	}
	return total, true
}

// tracefsDirs are where the tracepoint ids are found; PCOR_TRACEFS names
// another mount point.
func tracefsDirs() []string {
	ds := []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}
	if d := os.Getenv("PCOR_TRACEFS"); d != "" {
		ds = append([]string{d}, ds...)
	}
	return ds
}

func tracepointID() (uint64, error) {
	for _, d := range tracefsDirs() {
		b, err := os.ReadFile(filepath.Join(d, "events", "raw_syscalls", "sys_enter", "id"))
		if err == nil {
			return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
	}
	return 0, fmt.Errorf("system calls not counted: no raw_syscalls tracepoint (mount tracefs on /sys/kernel/tracing, as root)")
}

func (c *syscallCounter) open() {
	id, err := tracepointID()
	if err != nil {
		c.err = err
		return
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		c.err = err
		return
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_TRACEPOINT,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Config: id,
			Bits:   unix.PerfBitInherit,
		}
		fd, err := unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err == unix.ESRCH {
			continue // the thread ended meanwhile
		}
		if err != nil {
			for _, fd := range c.fds {
				unix.Close(fd)
			}
			c.fds = nil
			c.err = fmt.Errorf("system calls not counted: perf_event_open: %w", err)
			return
		}
		c.fds = append(c.fds, fd)
	}
}
