//go:build linux

package shm

import (
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// A Port is driven by the thread that waits for its own message
// (fabric.Waiter): Wait and Park sleep on the doorbell in the calling
// goroutine, so the datagram that ends the wait is read by the thread
// that wanted it, with no hand-over to another thread.
var _ fabric.Waiter = (*Port)(nil)

// Wait is Receive that also returns 0 when Interrupt is called and
// os.ErrDeadlineExceeded once a non-zero deadline has passed.
func (p *Port) Wait(msgs [][]byte, deadline time.Time) (int, error) {
	return p.receive(msgs, waitIntr, deadline)
}

// Park is Receive that also returns 0 when Interrupt is called.
func (p *Port) Park(msgs [][]byte) (int, error) { return p.receive(msgs, waitIntr, time.Time{}) }

// Interrupt makes the Wait or Park in progress, or else the next one,
// return.
func (p *Port) Interrupt() error {
	p.interrupted.Store(true)
	p.wake(p.seg)
	return nil
}
