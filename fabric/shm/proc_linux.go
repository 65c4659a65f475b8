package shm

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// startTime returns the start time of process pid (field 22 of
// /proc/pid/stat, in clock ticks since boot), or 0 if the process does not
// exist. A pid and its start time together name one process for the life
// of the boot, even when pids are reused.
func startTime(pid int) uint64 {
	st, _ := procStat(pid)
	return st
}

// statSize bounds what procStat reads of /proc/pid/stat: field 22 comes
// after the command name (at most 64 bytes here) and twenty fields of at
// most 20 digits each.
const statSize = 1024

// procStat returns the start time of process pid (0 if /proc does not
// show it) and whether it has exited but not been reaped yet (a zombie,
// whose memory is gone).
//
// A sender that waits for its receiver to take what it sent asks every
// 10 ms whether the receiver lives (Port.Taken): the look allocates
// nothing (the path and the bytes read are on the stack, the file opened
// and read with the system calls themselves), so that a stream of copied
// sends allocates nothing in its steady state.
func procStat(pid int) (start uint64, zombie bool) {
	if pid <= 0 {
		return 0, false
	}
	var path [32]byte
	n := copy(path[:], "/proc/")
	n += len(strconv.AppendUint(path[n:n], uint64(pid), 10))
	n += copy(path[n:], "/stat")
	path[n] = 0 // a C string
	var buf [statSize]byte
	got := readProc(&path[0], buf[:])
	if got <= 0 {
		return 0, false
	}
	return parseStat(buf[:got])
}

// readProc reads up to len(buf) bytes of the file at path (a
// NUL-terminated string) and returns how many, or -1 if it cannot. One
// read suffices: a file of /proc produces its text in one go.
func readProc(path *byte, buf []byte) int {
	dirfd := unix.AT_FDCWD
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(path)),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return -1
	}
	n := -1
	for {
		r, _, errno := unix.Syscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if errno == unix.EINTR {
			continue
		}
		if errno == 0 {
			n = int(r)
		}
		break
	}
	unix.Syscall(unix.SYS_CLOSE, fd, 0, 0)
	return n
}

// parseStat reads the start time (field 22) and the state (field 3) from
// the text of /proc/pid/stat. The command name (field 2) is in
// parentheses and may hold spaces and parentheses: the fields that follow
// start after the last ')'.
func parseStat(b []byte) (start uint64, zombie bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	b = b[i+1:]
	var state byte
	field := 2 // the field b[j] is in, counting from 1
	inField := false
	for j := 0; j < len(b); j++ {
		c := b[j]
		if c == ' ' || c == '\n' || c == '\t' {
			inField = false
			continue
		}
		if !inField {
			inField = true
			field++
			if field == 3 {
				state = c
			}
		}
		if field == 22 {
			if c < '0' || c > '9' {
				return 0, false
			}
			d := uint64(c - '0')
			if start > (^uint64(0)-d)/10 {
				return 0, false // more than 64 bits: not a start time
			}
			start = start*10 + d
		} else if field > 22 {
			break
		}
	}
	if field < 22 {
		return 0, false
	}
	return start, state == 'Z' || state == 'X'
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
