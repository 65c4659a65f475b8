package faulty

import "sync/atomic"

// Stats counts what a Port did. Each datagram given to Send is counted once
// in Offered and at most once in each fault counter; Sent counts datagrams
// the wrapped port took, duplicates included.
type Stats struct {
	Offered    uint64 // datagrams given to Send
	Sent       uint64 // datagrams handed to the wrapped port
	Dropped    uint64 // lost on purpose (Loss)
	Duplicated uint64 // sent twice
	Reordered  uint64 // held back behind later datagrams
	Corrupted  uint64 // one bit flipped
	Delayed    uint64 // held for Delay plus jitter
	CutOut     uint64 // outgoing datagrams dropped by a partition
	CutIn      uint64 // incoming datagrams discarded by a partition
	Discarded  uint64 // held datagrams still pending at Close
	SendErrors uint64 // failed sends of held datagrams by the timer goroutine
}

type counters struct {
	offered, sent, dropped, duplicated, reordered, corrupted, delayed,
	cutOut, cutIn, discarded, sendErrors atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Offered:    c.offered.Load(),
		Sent:       c.sent.Load(),
		Dropped:    c.dropped.Load(),
		Duplicated: c.duplicated.Load(),
		Reordered:  c.reordered.Load(),
		Corrupted:  c.corrupted.Load(),
		Delayed:    c.delayed.Load(),
		CutOut:     c.cutOut.Load(),
		CutIn:      c.cutIn.Load(),
		Discarded:  c.discarded.Load(),
		SendErrors: c.sendErrors.Load(),
	}
}
