package athread

import (
	"sync"
	"time"
)

// DefaultTimeSlice is the time slice a runtime with a Node asks the kernel
// for on behalf of its process's threads (Config.TimeSlice).
//
// On a machine with fewer CPUs than runnable threads, a thread woken for
// work (the one a message carrying a stolen thread wakes, then the VP that
// runs it) waits for a CPU until the thread running there has used up its
// slice. Linux's EEVDF scheduler notices that only at the next tick (4 ms at
// 250 Hz) or at a wake-up; a waking thread whose slice is shorter than the
// running one's (sched_setattr's sched_runtime, Linux 6.12 and later)
// preempts it at once. The share of CPU each thread gets is unchanged: the
// slice is only how long a thread may keep its CPU before a waking one
// takes it. 100 µs is the shortest the kernel grants.
const DefaultTimeSlice = 100 * time.Microsecond

// slices is the process-wide state of the requested slice: threads of the
// process are one set, however many runtimes run in it. The first runtime
// to ask sets it; the last to close gives the threads their slice back.
var timeSlice struct {
	mu    sync.Mutex
	users int
	slice time.Duration
	undo  func()
}

// acquireSlice asks for slice d on every thread of the process (threads
// created later inherit it from their creator) while the runtime runs. It
// reports the number of threads given the slice (0 where the kernel does
// not grant slices, or another runtime of the process already did).
func acquireSlice(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	s := &timeSlice
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users++
	if s.users > 1 {
		// Already set by a runtime running in this process; threads
		// made since inherited it. Give it to any that did not.
		return setThreadSlices(s.slice, false)
	}
	s.slice = d
	return setThreadSlices(d, false)
}

// releaseSlice undoes acquireSlice.
func releaseSlice(d time.Duration) {
	if d <= 0 {
		return
	}
	s := &timeSlice
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users == 0 {
		setThreadSlices(s.slice, true)
	}
}
