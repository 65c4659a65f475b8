package fabric

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

	// Handled tells the fabric that the datagrams of the last batch,
	// but those held, have been handled: their memory may be reused, and
	// their senders see them taken (Flusher).
	Handled()

	// Resume lets held datagrams be received again and wakes a receiver
	// that sleeps. It may be called from any goroutine, at any time.
	Resume()
}

// Flusher is implemented by reliable ports that can tell a sender when
// its destination has handled what was sent to it.
type Flusher interface {
	// Taken reports whether the destination to has received, and handled
	// (Holder.Handled), every datagram Send took for it so far. It fails
	// once the destination is gone without having taken them.
	Taken(to Endpoint) (bool, error)
}
