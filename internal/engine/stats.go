package engine

import (
	"sync/atomic"

	"github.com/pcor-go/pcor/internal/tally"
)

// Drop reasons counted per port.
const (
	DropShort = iota
	DropMagic
	DropVersion
	DropJobKey
	DropChecksum
	DropLength
	DropKind
	DropUnknownPeer
	DropWindow
	DropTooLarge
	DropInconsistent
	DropMisrouted
	DropNoRoute
	DropTooBig
	DropStale
	nDrops
)

// DropReasons names the drop counters, indexed by the Drop constants.
var DropReasons = [nDrops]string{
	"short", "magic", "version", "jobkey", "checksum", "length", "kind",
	"unknown-peer", "window", "too-large", "inconsistent", "misrouted", "no-route", "too-big", "stale",
}

// PortStats are the counters of one port.
type PortStats struct {
	Fabric      string
	Endpoint    string
	Mode        Mode
	FragsSent   uint64
	FragsRecv   uint64
	BytesSent   uint64
	BytesRecv   uint64
	AcksSent    uint64
	AcksRecv    uint64
	Retransmits uint64
	Timeouts    uint64
	FastRetrans uint64
	// Probes counts tail probes: a fragment sent again because no
	// acknowledgement came for two round trips, before the retransmission
	// timeout.
	Probes     uint64
	Duplicates uint64
	BusySent   uint64
	BusyRecv   uint64
	// Holds counts datagrams given back to a reliable fabric for want of
	// room, to be received again later.
	Holds         uint64
	Forwarded     uint64
	Drops         map[string]uint64
	DroppedTotal  uint64
	MessagesRecv  uint64
	MessagesSent  uint64
	SendErrors    uint64
	ReceiveErrors uint64
	// SpuriousTimeouts counts the retransmission timeouts undone: an
	// acknowledgement showed that a fragment taken as lost had arrived.
	SpuriousTimeouts uint64

	// MessagesInPlace counts the messages received straight into the
	// buffer of a receive posted before they arrived (no second copy).
	MessagesInPlace uint64
	// FragsInPlace counts the fragments the fabric received straight into
	// a receive's buffer, where they were expected (no copy at all);
	// PlacedLost, those dropped unread because their receive let the
	// buffer go meanwhile; Withdrawals, the times the fabric's
	// expectations were taken back before a receive let its buffer go.
	FragsInPlace, PlacedLost, Withdrawals uint64
	// PeekStarts counts the messages started from the head of their first
	// fragment, peeked before it was received, so that it could be
	// received in place too.
	PeekStarts uint64

	// AcksDeferred counts the acknowledgements held back for data going
	// the other way to carry them (a reply was likely); AcksLate, those of
	// them that had to leave on their own after all.
	AcksDeferred, AcksLate uint64

	// BundlesSent counts the datagrams that carried several small messages
	// (bundle.go), MessagesBundled the messages they carried (included in
	// FragsSent once per bundle).
	BundlesSent, MessagesBundled uint64

	// Caller-driven progress (progress.go): Leads counts the times a
	// waiting thread took the port's progress token, Steals those of them
	// taken from the dispatcher; Handbacks, a leaving driver handed the
	// token to the dispatcher for other waiting threads; GiveBacks, a
	// driver whose message was long in coming gave the token up; Reclaims,
	// the dispatcher took an unattended port back. ThreadBatches and
	// DispatcherBatches count the non-empty batches of datagrams handled
	// by a driving thread and by the dispatcher: a message handled by the
	// dispatcher for a waiting thread costs that thread a wake-up.
	Leads, Steals, Handbacks, GiveBacks, Reclaims uint64
	ThreadBatches, DispatcherBatches              uint64
	// DriverSleeps counts the times a driving thread's spin ran out
	// before its message came and it slept in the fabric (blocking mode).
	DriverSleeps uint64
}

type counters struct {
	fragsSent, bytesSent                 atomic.Uint64
	fragsRecv, bytesRecv                 tally.Counter // by the port's driver (handle)
	acksSent, acksRecv, retrans, dups    atomic.Uint64
	busySent, busyRecv, forwarded        atomic.Uint64
	holds                                atomic.Uint64
	timeouts, fastRetrans, probes, undos atomic.Uint64
	msgsRecv                             tally.Counter // by the port's driver (handle)
	msgsSent, sendErrs, recvErrs         atomic.Uint64
	drops                                [nDrops]atomic.Uint64

	inPlace                               atomic.Uint64
	fragsInPlace, placedLost, withdrawals atomic.Uint64
	peekStarts                            atomic.Uint64

	acksDeferred, acksLate atomic.Uint64

	bundlesSent, msgsBundled atomic.Uint64
}

func (c *counters) snapshot(s *PortStats) {
	s.FragsSent = c.fragsSent.Load()
	s.FragsRecv = c.fragsRecv.Load()
	s.BytesSent = c.bytesSent.Load()
	s.BytesRecv = c.bytesRecv.Load()
	s.AcksSent = c.acksSent.Load()
	s.AcksRecv = c.acksRecv.Load()
	s.Retransmits = c.retrans.Load()
	s.Timeouts = c.timeouts.Load()
	s.FastRetrans = c.fastRetrans.Load()
	s.SpuriousTimeouts = c.undos.Load()
	s.Probes = c.probes.Load()
	s.Duplicates = c.dups.Load()
	s.BusySent = c.busySent.Load()
	s.BusyRecv = c.busyRecv.Load()
	s.Holds = c.holds.Load()
	s.Forwarded = c.forwarded.Load()
	s.MessagesRecv = c.msgsRecv.Load()
	s.MessagesSent = c.msgsSent.Load()
	s.MessagesInPlace = c.inPlace.Load()
	s.FragsInPlace = c.fragsInPlace.Load()
	s.PlacedLost = c.placedLost.Load()
	s.Withdrawals = c.withdrawals.Load()
	s.PeekStarts = c.peekStarts.Load()
	s.AcksDeferred = c.acksDeferred.Load()
	s.AcksLate = c.acksLate.Load()
	s.BundlesSent = c.bundlesSent.Load()
	s.MessagesBundled = c.msgsBundled.Load()
	s.SendErrors = c.sendErrs.Load()
	s.ReceiveErrors = c.recvErrs.Load()
	s.Drops = make(map[string]uint64)
	for i := range c.drops {
		if v := c.drops[i].Load(); v > 0 {
			s.Drops[DropReasons[i]] = v
			s.DroppedTotal += v
		}
	}
}
