package pcor

import "github.com/pcor-go/pcor/internal/engine"

// PortStats are the counters of one port.
type PortStats struct {
	// Fabric is the port's fabric kind ("udp", "shm", "rdma", ...).
	Fabric string
	// Endpoint is the port's own address on its fabric, as peers reach it.
	Endpoint string
	// Mode is how the port's dispatcher waits for datagrams.
	Mode Mode
	// FragsSent counts the datagrams the fabric took to send: data
	// fragments (first sends and retransmissions), acknowledgements,
	// control datagrams and forwarded ones; a bundle counts once.
	FragsSent uint64
	// FragsRecv counts the datagrams received, of every kind, dropped
	// ones included.
	FragsRecv uint64
	// BytesSent counts the bytes of the datagrams in FragsSent, headers
	// included.
	BytesSent uint64
	// BytesRecv counts the bytes of the datagrams in FragsRecv, headers
	// included.
	BytesRecv uint64
	// AcksSent counts the acknowledgement datagrams sent.
	AcksSent uint64
	// AcksRecv counts the acknowledgement datagrams received and decoded.
	AcksRecv uint64
	// Retransmits counts the data fragments sent again (after a timeout,
	// a fast retransmission or a tail probe).
	Retransmits uint64
	// Timeouts counts the retransmission timeouts that expired: all in
	// flight and not acknowledged was taken as lost.
	Timeouts uint64
	// FastRetrans counts the times holes shown by acknowledgements were
	// taken as lost and sent again before the retransmission timeout.
	FastRetrans uint64
	// Probes counts the tail probes: a fragment sent again because no
	// acknowledgement came for two round trips, before the retransmission
	// timeout.
	Probes uint64
	// Duplicates counts the data fragments received that had arrived
	// before (their acknowledgement was lost or late).
	Duplicates uint64
	// BusySent counts the BUSY replies sent: fragments refused for want
	// of receive memory (Config.RecvBudget, Config.MCBs), to be sent again.
	BusySent uint64
	// BusyRecv counts the BUSY replies received from destinations.
	BusyRecv uint64
	// Forwarded counts the datagrams this process passed on towards
	// another process, as a gateway.
	Forwarded uint64
	// Drops counts the datagrams dropped, by reason ("checksum",
	// "jobkey", "window", "stale", ...); reasons never seen are absent.
	Drops map[string]uint64
	// DroppedTotal is the sum of Drops.
	DroppedTotal uint64
	// MessagesRecv counts the messages received whole from other
	// processes through the port.
	MessagesRecv uint64
	// MessagesSent counts the messages to other processes whose delivery
	// the destination acknowledged (sends completed without error,
	// copied ones included).
	MessagesSent uint64
	// SendErrors counts the fabric sends that returned an error.
	SendErrors uint64
	// ReceiveErrors counts the fabric receives that returned an error
	// other than the port's closing.
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
	// (Reclaims).
	Leads, Steals, Handbacks, GiveBacks, Reclaims uint64
	// ThreadBatches and DispatcherBatches count the batches of datagrams
	// received by a driving thread and by the dispatcher; in a ping-pong
	// the second should stay near zero, since each message the dispatcher
	// receives for a waiting thread costs a thread wake-up.
	ThreadBatches, DispatcherBatches uint64
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
