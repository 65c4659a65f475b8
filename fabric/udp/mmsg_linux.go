package udp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sendmmsg and recvmmsg system calls, which x/sys/unix does not wrap.
// The socket is blocking: sendmmsg never waits (MSG_DONTWAIT), recvmmsg
// waits or not as flags say.

// sendmmsg never waits (MSG_DONTWAIT), so it is a raw system call, made
// without telling the scheduler (which cost about a tenth of a small
// datagram's send).
func sendmmsg(fd uintptr, hs []unix.Mmsghdr) (int, unix.Errno) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// sendto sends the n bytes at b to the address name (namelen bytes),
// never waiting (MSG_DONTWAIT), as a raw system call as sendmmsg is.
func sendto(fd uintptr, b *byte, n int, name *byte, namelen uint32) unix.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(b)), uintptr(n), unix.MSG_DONTWAIT,
		uintptr(unsafe.Pointer(name)), uintptr(namelen))
	return e
}

// peekWait blocks until a datagram waits in the socket's queue (or
// SO_RCVTIMEO runs out), without taking it.
func peekWait(fd uintptr) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, 0, 0, unix.MSG_PEEK, 0, 0)
	return e
}

// peekHead copies the head of the first datagram in the socket's queue
// into b without taking the datagram, and returns the datagram's length
// (MSG_TRUNC); it waits as peekWait does unless dontwait.
func peekHead(fd uintptr, b []byte, dontwait bool) (int, unix.Errno) {
	flags := uintptr(unix.MSG_PEEK | unix.MSG_TRUNC)
	if dontwait {
		flags |= unix.MSG_DONTWAIT
		r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), flags, 0, 0)
		return int(r), e
	}
	r, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), flags, 0, 0)
	return int(r), e
}

// recvmmsg with MSG_DONTWAIT never blocks, so it is then a raw system
// call, made without telling the scheduler (the step of a polling
// thread's spin, where that cost as much as the call itself).
func recvmmsg(fd uintptr, hs []unix.Mmsghdr, flags int) (int, unix.Errno) {
	var r uintptr
	var e unix.Errno
	if flags&unix.MSG_DONTWAIT != 0 {
		r, _, e = unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), uintptr(flags), 0, 0)
	} else {
		r, _, e = unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), uintptr(flags), 0, 0)
	}
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// recvmsg is recvmmsg of one message (h), by the system call for one: it
// imports no array of headers and runs no loop for more (on loopback a
// datagram's recvmsg takes about 60 ns of 1,050 less than a recvmmsg of
// one, and an empty look 10 ns of 520). It returns 1 and sets h.Len as
// recvmmsg would. MSG_WAITFORONE, recvmmsg's own, means wait.
func recvmsg(fd uintptr, h *unix.Mmsghdr, flags int) (int, unix.Errno) {
	var r uintptr
	var e unix.Errno
	if flags&unix.MSG_DONTWAIT != 0 {
		r, _, e = unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&h.Hdr)), uintptr(flags))
	} else {
		r, _, e = unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&h.Hdr)), uintptr(flags&^unix.MSG_WAITFORONE))
	}
	if e != 0 {
		return 0, e
	}
	h.Len = uint32(r)
	return 1, 0
}
