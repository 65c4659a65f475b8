package shm

import (
	"bytes"
	"os"
	"strconv"
	"sync"
)

// startTime returns the start time of process pid (field 22 of
// /proc/pid/stat, in clock ticks since boot), or 0 if the process does not
// exist. A pid and its start time together name one process for the life
// of the boot, even when pids are reused.
func startTime(pid int) uint64 {
	st, _ := procStat(pid)
	return st
}

// procStat returns the start time of process pid (0 if /proc does not
// show it) and whether it has exited but not been reaped yet (a zombie,
// whose memory is gone).
func procStat(pid int) (start uint64, zombie bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, false
	}
	return v, fields[0][0] == 'Z' || fields[0][0] == 'X'
}

// alive reports whether the process pid with the given start time still
// runs. A process this one cannot see (another pid namespace) counts as
// alive: only a process known to be gone frees its resources. One that
// exited and waits to be reaped is gone.
func alive(pid uint32, start uint64) bool {
	if pid == 0 {
		return false
	}
	st, zombie := procStat(int(pid))
	if st == 0 {
		_, err := os.Stat("/proc/" + strconv.FormatUint(uint64(pid), 10))
		return err == nil
	}
	return !zombie && (start == 0 || st == start)
}

var self struct {
	once  sync.Once
	pid   uint32
	start uint64
}

// selfID returns this process's pid and start time.
func selfID() (uint32, uint64) {
	self.once.Do(func() {
		self.pid = uint32(os.Getpid())
		self.start = startTime(os.Getpid())
	})
	return self.pid, self.start
}
