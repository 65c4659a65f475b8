package udp

import (
	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

var _ fabric.Pender = (*Port)(nil)

// Pending reports whether a datagram waits in the socket's receive queue
// (an Interrupt's too). Any goroutine may call it: it peeks at
// the queue without taking anything. Datagrams already received, waiting
// in the port's buffers to be returned, are not counted.
func (p *Port) Pending() bool {
	if !p.use() {
		return false
	}
	defer p.fdMu.RUnlock()
	var b [1]byte
	for try := 0; ; try++ {
		_, _, err := unix.Recvfrom(p.fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		if err != unix.EINTR || try == 2 {
			return err == nil
		}
	}
}
