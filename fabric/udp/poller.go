//go:build linux

package udp

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// poller lets a goroutine wait for the socket in Go's network poller
// without the socket being registered there: the socket sits in an epoll
// instance of the port's own, and that instance (readable whenever the
// socket is) is what the runtime's poller watches. While a thread drives
// the port from its own system calls (Wait, Poll) the socket is taken
// out of the private instance, so datagrams then wake that thread (or
// none, when it polls) and no poller thread besides; Receive and Park
// put it back. Each switch is one epoll_ctl, made only when the kind of
// waiting changes.
//
// Out means removed, not left in with no events: an entry stays on the
// socket's wait queue whatever its events, and then every datagram sent
// or received on the socket runs the epoll callback under the queue's
// lock (a tenth of a small datagram's send on loopback); with no entry
// and nobody sleeping on the socket, the kernel skips the wake-up.
type poller struct {
	epfd int
	file *os.File
	rc   syscall.RawConn
	on   bool // the socket is watched; guarded by the port's recvMu
	ev   [1]unix.EpollEvent
	rdFn func(uintptr) bool
}

func newPoller(sock int) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("udp: epoll_create1: %w", err)
	}
	pl := &poller{epfd: epfd, on: true}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(sock)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, sock, &ev); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("udp: epoll_ctl: %w", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("udp: %w", err)
	}
	// A non-blocking descriptor given to os.NewFile joins the runtime's
	// poller.
	pl.file = os.NewFile(uintptr(epfd), "udp-poller")
	if pl.rc, err = pl.file.SyscallConn(); err != nil {
		pl.file.Close()
		return nil, fmt.Errorf("udp: %w", err)
	}
	pl.rdFn = func(fd uintptr) bool {
		for {
			n, err := unix.EpollWait(int(fd), pl.ev[:], 0)
			if err == unix.EINTR {
				continue
			}
			return n > 0 || err != nil
		}
	}
	return pl, nil
}

// watch puts the socket into the private instance or takes it out.
func (pl *poller) watch(sock int, on bool) error {
	if pl.on == on {
		return nil
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(sock)}
	op := unix.EPOLL_CTL_DEL
	if on {
		op = unix.EPOLL_CTL_ADD
	}
	if err := unix.EpollCtl(pl.epfd, op, sock, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	pl.on = on
	return nil
}

// wait parks the goroutine until the socket is readable, the deadline set
// on the file passes, or the file is closed.
func (pl *poller) wait() error { return pl.rc.Read(pl.rdFn) }

func (pl *poller) close() error { return pl.file.Close() }
