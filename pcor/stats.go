package pcor

import "github.com/pcor-go/pcor/internal/engine"

// PortStats are the counters of one port.
type PortStats struct {
	Fabric        string
	Endpoint      string
	Mode          Mode
	FragsSent     uint64
	FragsRecv     uint64
	BytesSent     uint64
	BytesRecv     uint64
	AcksSent      uint64
	AcksRecv      uint64
	Retransmits   uint64
	Timeouts      uint64
	FastRetrans   uint64
	Probes        uint64 // tail probes sent before a retransmission timeout
	Duplicates    uint64
	BusySent      uint64
	BusyRecv      uint64
	Forwarded     uint64
	Drops         map[string]uint64 // by reason
	DroppedTotal  uint64
	MessagesRecv  uint64
	MessagesSent  uint64
	SendErrors    uint64
	ReceiveErrors uint64

	// SpuriousTimeouts counts the retransmission timeouts found spurious
	// (a fragment taken as lost was acknowledged without being sent
	// again) and undone: the congestion window went back to where it was.
	SpuriousTimeouts uint64

	// MessagesInPlace counts the messages of 4 KiB or more received
	// straight into the buffer of a receive posted before they arrived
	// (an Irecv ahead of the message), with no second copy.
	MessagesInPlace uint64
	// FragsInPlace counts the fragments whose bytes the fabric received
	// straight into such a receive's buffer, where they were expected (no
	// copy at all: the UDP fabric); PlacedLost, those dropped unread
	// because the receive let its buffer go meanwhile (sent again).
	FragsInPlace, PlacedLost uint64

	// AcksDeferred counts the acknowledgements held back for data going
	// the other way (a reply) to carry them; AcksLate, those of them sent
	// alone after all because no data came in time.
	AcksDeferred, AcksLate uint64

	// BundlesSent counts the datagrams that carried several small messages
	// queued together for one process, MessagesBundled the messages they
	// carried: FragsSent counts a bundle once.
	BundlesSent, MessagesBundled uint64

	// Caller-driven progress: a thread waiting in Send, Recv or Wait for
	// a message through the port takes the port's progress token and
	// receives itself (Leads; Steals, taken from the port's dispatcher
	// goroutine); the token goes back to the dispatcher when other threads
	// wait (Handbacks), when the driver's message is long in coming
	// (GiveBacks), or after the port is left unattended a while
	// (Reclaims). ThreadBatches and DispatcherBatches count the batches of
	// datagrams received by a driving thread and by the dispatcher; in a
	// ping-pong the second should stay near zero, since each message the
	// dispatcher receives for a waiting thread costs a thread wake-up.
	Leads, Steals, Handbacks, GiveBacks, Reclaims uint64
	ThreadBatches, DispatcherBatches              uint64
	// DriverSleeps counts the times a driving thread polled the fabric
	// for its whole spin without its message coming and slept in it
	// (blocking mode): each such wait ends with a thread wake-up.
	DriverSleeps uint64
}

func portStats(s engine.PortStats) PortStats {
	return PortStats{
		Fabric: s.Fabric, Endpoint: s.Endpoint, Mode: Mode(s.Mode),
		FragsSent: s.FragsSent, FragsRecv: s.FragsRecv, BytesSent: s.BytesSent, BytesRecv: s.BytesRecv,
		AcksSent: s.AcksSent, AcksRecv: s.AcksRecv, Retransmits: s.Retransmits, Timeouts: s.Timeouts,
		SpuriousTimeouts: s.SpuriousTimeouts, FastRetrans: s.FastRetrans, Probes: s.Probes, Duplicates: s.Duplicates, BusySent: s.BusySent, BusyRecv: s.BusyRecv,
		Forwarded: s.Forwarded, Drops: s.Drops, DroppedTotal: s.DroppedTotal,
		MessagesRecv: s.MessagesRecv, MessagesSent: s.MessagesSent,
		SendErrors: s.SendErrors, ReceiveErrors: s.ReceiveErrors, MessagesInPlace: s.MessagesInPlace,
		FragsInPlace: s.FragsInPlace, PlacedLost: s.PlacedLost,
		AcksDeferred: s.AcksDeferred, AcksLate: s.AcksLate,
		BundlesSent: s.BundlesSent, MessagesBundled: s.MessagesBundled,
		Leads: s.Leads, Steals: s.Steals, Handbacks: s.Handbacks, GiveBacks: s.GiveBacks, Reclaims: s.Reclaims,
		ThreadBatches: s.ThreadBatches, DispatcherBatches: s.DispatcherBatches, DriverSleeps: s.DriverSleeps,
	}
}
