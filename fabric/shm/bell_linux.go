package shm

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A port's doorbell is a named pipe beside its segment file (the
// segment's path with bellSuffix). The receiving port holds it open for
// reading through the Go runtime's poller, so a port that sleeps parks its
// goroutine like a socket read would: no thread sits in a system call,
// and the runtime's monitor thread may sleep too. A sender that finds the
// receiver asleep writes one byte to the pipe.
const bellSuffix = ".bell"

// makeBell creates the doorbell of the segment at path and opens it: rd
// for the receiver's sleeps, and w, a non-blocking write end, for the
// port's own wake-ups (Interrupt, Resume, Close).
func makeBell(path string) (rd *os.File, w int, err error) {
	bp := path + bellSuffix
	os.Remove(bp) // left by a crashed process whose segment was reaped
	if err := unix.Mkfifo(bp, 0o600); err != nil {
		return nil, -1, fmt.Errorf("shm: doorbell %s: %w", bp, err)
	}
	// Opened for reading and writing, the pipe never reports end of file
	// and its write ends open without waiting. os.OpenFile registers it
	// with the runtime's poller (it is not a regular file).
	rd, err = os.OpenFile(bp, os.O_RDWR, 0)
	if err != nil {
		os.Remove(bp)
		return nil, -1, fmt.Errorf("shm: doorbell %s: %w", bp, err)
	}
	w, err = openBell(path)
	if err != nil {
		rd.Close()
		os.Remove(bp)
		return nil, -1, err
	}
	return rd, w, nil
}

// openBell opens the doorbell of the segment at path for writing, without
// blocking. It fails with ErrNoPort when the receiver no longer holds it.
func openBell(path string) (int, error) {
	fd, err := unix.Open(path+bellSuffix, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENOENT) {
			return -1, fmt.Errorf("%w: %s (no doorbell)", ErrNoPort, path)
		}
		return -1, fmt.Errorf("shm: doorbell %s: %w", path+bellSuffix, err)
	}
	return fd, nil
}

// pokeBell writes one byte to a doorbell's write end. A full pipe already
// holds a wake-up; a pipe whose reader is gone has no one to wake.
//
// The write never blocks (the end is non-blocking), so it is made as a raw
// system call: a system call through the runtime wakes its monitor thread
// when the process was idle, which then polls every 20 µs for a while.
func pokeBell(fd int) {
	if fd >= 0 {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&bellByte[0])), 1)
	}
}

var bellByte = [1]byte{1}

// waitBell sleeps until the doorbell rings or d has passed, and empties
// it.
//
// The pipe is read by raw system calls (it is non-blocking; the poller
// does the waiting), so that a wake-up does not also wake the runtime's
// monitor thread, as a system call through the runtime does when the
// process was idle.
func waitBell(rd *os.File, buf []byte, d time.Duration) {
	if err := rd.SetReadDeadline(time.Now().Add(d)); err != nil {
		return
	}
	rc, err := rd.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(fd uintptr) bool {
		_, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		return errno != unix.EAGAIN
	})
}
