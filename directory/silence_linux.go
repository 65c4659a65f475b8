package directory

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unread tells whether bytes wait unread in c's socket.
func unread(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	if rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }) != nil {
		return false
	}
	return n > 0
}
