//go:build linux

package udp

import "sync/atomic"

// Stats counts what a Port did. All fields only grow.
type Stats struct {
	SendCalls     uint64 // sendmmsg system calls
	SentDatagrams uint64 // datagrams the kernel took (GSO segments counted one by one)
	GSOSends      uint64 // messages sent as one UDP GSO super-datagram
	GSOSegments   uint64 // datagrams carried inside those messages
	GSOFallbacks  uint64 // times the kernel refused GSO and the port turned it off
	SendWaits     uint64 // times a Send met a full socket buffer and waited on the poller
	SendDropped   uint64 // datagrams dropped on a per-destination error (unreachable, refused, ...)
	// ConnectedSends counts the datagrams sent alone through a socket
	// connected to their destination (see Port.Connected).
	ConnectedSends uint64

	RecvCalls     uint64 // recvmmsg system calls that returned data
	RecvDatagrams uint64 // datagrams handed to the caller
	GROBuffers    uint64 // received buffers that held more than one datagram
	RecvTruncated uint64 // datagrams dropped because they did not fit a buffer
	// RecvOverflows is the kernel's count of datagrams dropped because the
	// socket's receive buffer was full (SO_RXQ_OVFL), as of the last
	// datagram received.
	RecvOverflows uint64
	Interrupts    uint64 // Interrupt calls that sent their datagram
	// Placed counts the datagrams received with their body straight in
	// the memory Expect named for them; Misplaced, those received so that
	// were not the datagram expected, whose body was copied back.
	Placed, Misplaced uint64
}

type stats struct {
	sendCalls, sentDatagrams, gsoSends, gsoSegments, gsoFallbacks atomic.Uint64
	sendWaits, sendDropped, connectedSends                        atomic.Uint64
	recvCalls, recvDatagrams, groBuffers, recvTruncated           atomic.Uint64
	recvOverflows, interrupts                                     atomic.Uint64
	placed, misplaced                                             atomic.Uint64
}

// noteOverflow records the kernel's drop count (it only grows).
func (s *stats) noteOverflow(n uint32) {
	for {
		old := s.recvOverflows.Load()
		if uint64(n) <= old || s.recvOverflows.CompareAndSwap(old, uint64(n)) {
			return
		}
	}
}

// Stats returns a snapshot of the port's counters.
func (p *Port) Stats() Stats {
	s := &p.st
	return Stats{
		SendCalls:      s.sendCalls.Load(),
		SentDatagrams:  s.sentDatagrams.Load(),
		GSOSends:       s.gsoSends.Load(),
		GSOSegments:    s.gsoSegments.Load(),
		GSOFallbacks:   s.gsoFallbacks.Load(),
		SendWaits:      s.sendWaits.Load(),
		SendDropped:    s.sendDropped.Load(),
		ConnectedSends: s.connectedSends.Load(),
		RecvCalls:      s.recvCalls.Load(),
		RecvDatagrams:  s.recvDatagrams.Load(),
		GROBuffers:     s.groBuffers.Load(),
		RecvTruncated:  s.recvTruncated.Load(),
		RecvOverflows:  s.recvOverflows.Load(),
		Interrupts:     s.interrupts.Load(),
		Placed:         s.placed.Load(),
		Misplaced:      s.misplaced.Load(),
	}
}
