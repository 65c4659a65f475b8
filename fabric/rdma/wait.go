package rdma

import (
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// A Port is driven by the thread that waits for its own message
// (fabric.Waiter): Wait and Park poll the receive completion queue, then
// wait for its completion channel in the calling goroutine, so the
// datagram that ends a wait is read by the thread that wanted it, with no
// hand-over from another goroutine.
var _ fabric.Waiter = (*Port)(nil)

// Wait is Receive that also returns 0 datagrams and a nil error when
// Interrupt is called (before or during the wait), and an error
// satisfying errors.Is(err, os.ErrDeadlineExceeded) once a non-zero
// deadline has passed.
func (p *Port) Wait(msgs [][]byte, deadline time.Time) (int, error) {
	start := time.Now()
	n, err := p.receive(msgs, recvIntr, deadline)
	// However it ended (a datagram, Interrupt, the deadline): a Wait
	// longer than its spin makes the next one spin briefly (waitSpin).
	p.waitSlept.Store(time.Since(start) > waitSpin)
	return n, err
}

// Park is Wait without a deadline.
func (p *Port) Park(msgs [][]byte) (int, error) { return p.receive(msgs, recvIntr, time.Time{}) }

// Interrupt makes the Wait or Park in progress return, or else the next
// one.
func (p *Port) Interrupt() error {
	if p.closed.Load() {
		return fabric.ErrClosed
	}
	p.interrupted.Store(true)
	p.recvCQ.Wake()
	return nil
}
