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

	// MessagesInPlace counts the messages of 4 KiB or more received
	// straight into the buffer of a receive posted before they arrived
	// (an Irecv ahead of the message), with no second copy.
	MessagesInPlace uint64
}

func portStats(s engine.PortStats) PortStats {
	return PortStats{
		Fabric: s.Fabric, Endpoint: s.Endpoint, Mode: Mode(s.Mode),
		FragsSent: s.FragsSent, FragsRecv: s.FragsRecv, BytesSent: s.BytesSent, BytesRecv: s.BytesRecv,
		AcksSent: s.AcksSent, AcksRecv: s.AcksRecv, Retransmits: s.Retransmits, Timeouts: s.Timeouts,
		FastRetrans: s.FastRetrans, Duplicates: s.Duplicates, BusySent: s.BusySent, BusyRecv: s.BusyRecv,
		Forwarded: s.Forwarded, Drops: s.Drops, DroppedTotal: s.DroppedTotal,
		MessagesRecv: s.MessagesRecv, MessagesSent: s.MessagesSent,
		SendErrors: s.SendErrors, ReceiveErrors: s.ReceiveErrors, MessagesInPlace: s.MessagesInPlace,
	}
}
