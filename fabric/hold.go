package fabric

import "context"

// Holder is implemented by reliable ports whose receiver can leave
// datagrams in the fabric for later. A receiver that has no room for a
// datagram yet (no memory budget for the message it starts) holds it
// instead of dropping it: the fabric keeps it, and what follows it from
// the same sender, and that sender is slowed down (its queue fills and
// its Send waits) while other senders go on. This is how a reliable
// fabric, which never drops, pushes back on one sender.
type Holder interface {
	// Hold gives msgs[i] of the last Receive, Poll or Wait back to the
	// fabric, with the datagrams received after it from the same sender.
	// Those are msgs[i+1 : i+1+n], where n is the result: the caller
	// skips them. The held datagrams are received again, in their order,
	// after Resume.
	Hold(i int) (n int)

	// Resume lets held datagrams be received again and wakes a receiver
	// that sleeps. It may be called from any goroutine, at any time.
	Resume()
}

// Flusher is implemented by reliable ports that can tell when their
// destinations have taken every datagram sent to them.
type Flusher interface {
	// Flush waits until every datagram Send took has been received by
	// its destination, or the destination is lost, or ctx ends (then it
	// returns ctx's error).
	Flush(ctx context.Context) error
}
