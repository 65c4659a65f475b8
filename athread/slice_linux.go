package athread

import (
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setThreadSlices gives every thread of the process the time slice d (or,
// with restore, gives the threads that have it the kernel's default slice
// again). Threads not under the fair scheduler are left alone. It reports
// how many threads it changed.
func setThreadSlices(d time.Duration, restore bool) int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil || (attr.Policy != unix.SCHED_NORMAL && attr.Policy != unix.SCHED_BATCH) {
			continue
		}
		want := uint64(d)
		if restore != (attr.Runtime == want) {
			continue // nothing to restore, or set already
		}
		if restore {
			want = 0 // the kernel's default
		}
		attr.Size = uint32(unsafe.Sizeof(*attr))
		attr.Runtime = want
		attr.Flags &= unix.SCHED_FLAG_RESET_ON_FORK
		if unix.SchedSetAttr(tid, attr, 0) != nil {
			continue
		}
		n++
	}
	return n
}
