package shm

import (
	"sync/atomic"

	"github.com/pcor-go/pcor/internal/tally"
)

type stats struct {
	// sent counts what rings no longer in Port.out took (each ring of
	// the map counts its own, outRing.sent); received, what the receiving
	// goroutine took (one at a time).
	sent       atomic.Uint64
	received   tally.Counter
	dropped    atomic.Uint64 // to a receiver that closed, died or never was
	full       atomic.Uint64 // sends that found the ring full
	roomWaits  atomic.Uint64 // sleeps of senders waiting for room
	takenWaits atomic.Uint64 // sleeps of senders waiting for their records to be taken
	wakes      atomic.Uint64 // doorbell rings issued
	sleeps     atomic.Uint64 // times Receive slept
	corrupt    atomic.Uint64 // rings found broken
	reclaimed  atomic.Uint64 // slots freed after their sender left
	held       atomic.Uint64 // Hold calls
	cmaReads   atomic.Uint64 // messages read from a sender's memory
	cmaBytes   atomic.Uint64 // bytes read so
	cmaSplit   atomic.Uint64 // of those reads, the ones shared by two threads
	cmaHelped  atomic.Uint64 // chunks of those read by the helper
	cmaRefused atomic.Uint64 // senders whose memory the kernel would not let this port read
}

// Stats are a port's counters.
type Stats struct {
	Sent, Received uint64
	// Dropped counts datagrams to a receiver that closed, died or does
	// not exist.
	Dropped uint64
	// Full counts sends that waited for room in a ring; RoomWaits counts
	// their sleeps until the receiver made room.
	Full, RoomWaits uint64
	// TakenWaits counts sleeps of senders waiting for the receiver to
	// take what they wrote (WaitTaken).
	TakenWaits uint64
	// Wakes counts doorbell rings sent; Sleeps counts receiver sleeps.
	Wakes, Sleeps uint64
	// Corrupt counts rings whose records could not be delimited.
	Corrupt uint64
	// Reclaimed counts slots freed after their sender left or died.
	Reclaimed uint64
	// Held counts datagrams the receiver gave back to wait (Hold).
	Held uint64
	// CMAReads and CMABytes count the messages and bytes read straight
	// from a sender's memory; CMARefused counts the sending processes
	// whose memory the kernel would not let this port read (their
	// messages come in ring fragments).
	CMAReads, CMABytes, CMARefused uint64
	// CMAShared counts the reads of CMAReads shared by two threads, and
	// CMAHelped the chunks of those (256 KiB each) that the helper
	// thread read.
	CMAShared, CMAHelped uint64
}

// Stats returns the port's counters.
func (p *Port) Stats() Stats {
	s := &p.st
	p.outMu.Lock()
	sent := s.sent.Load()
	for _, o := range p.out {
		sent += o.sent.Load()
	}
	p.outMu.Unlock()
	return Stats{
		Sent: sent, Received: s.received.Load(), Dropped: s.dropped.Load(), Full: s.full.Load(), RoomWaits: s.roomWaits.Load(),
		TakenWaits: s.takenWaits.Load(),
		Wakes:      s.wakes.Load(), Sleeps: s.sleeps.Load(), Corrupt: s.corrupt.Load(), Reclaimed: s.reclaimed.Load(),
		Held: s.held.Load(), CMAReads: s.cmaReads.Load(), CMABytes: s.cmaBytes.Load(), CMARefused: s.cmaRefused.Load(),
		CMAShared: s.cmaSplit.Load(), CMAHelped: s.cmaHelped.Load(),
	}
}
