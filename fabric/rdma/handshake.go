package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/pcor-go/pcor/internal/verbs"
)

// A Port's endpoint is the address of its connection-manager UD queue
// pair: the GID and the QPN, written host:port style as "IP:QPN", where IP
// is the GID in its IP form (a RoCEv2 IPv4 GID prints as the IPv4
// address). Peers learn it as they learn any endpoint (from the
// directory's membership, or told by the program); no other address or
// listening socket exists.
type udAddr struct {
	gid verbs.GID
	qpn uint32
}

func (a udAddr) endpoint() Endpoint {
	return Endpoint(net.JoinHostPort(net.IP(a.gid[:]).String(), strconv.FormatUint(uint64(a.qpn), 10)))
}

func parseUDAddr(s string) (udAddr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return udAddr{}, fmt.Errorf("rdma: endpoint %q: %w", s, err)
	}
	ip := net.ParseIP(host)
	qpn, err := strconv.ParseUint(port, 10, 32)
	if ip == nil || err != nil || !validQPN(uint32(qpn)) || qpn > 0xffffff {
		return udAddr{}, fmt.Errorf("rdma: endpoint %q: want GID:QPN (an IP address and a queue pair number 2..16777215)", s)
	}
	var a udAddr
	copy(a.gid[:], ip.To16())
	a.qpn = uint32(qpn)
	return a, nil
}

// validQPN: QPN 0 and 1 are the subnet-management and general-services
// QPs, never a port's; QPNs have 24 bits.
func validQPN(q uint32) bool { return q > 1 && q <= 0xffffff }

// Connection-manager messages travel as UD datagrams between the ports'
// UD queue pairs. A dialer sends REQ with its two RC queue pairs (the one
// for datagrams and the one for one-sided reads) until REP answers with
// the listener's, both sides having brought theirs to RTS. Afterwards each
// side PINGs the other's datagram QP every Config.KeepAlive and expects a
// PONG; GONE answers a message about a queue pair the receiver no longer
// has, and is sent to every peer by Close. Every message carries the job
// key of the port that sent it (Config.JobKey): a port handles only
// messages of its own job, and answers a REQ of another with REJ (which
// carries the REQ's key, so that its dialer gives up at once). A port
// that cannot take one more peer (its receive pool at
// Config.MaxRecvBuffers) answers REJ with reason rejFull and its own key.
// Layout (big-endian, 60 bytes):
//
//	magic[8] "PCRDMA04" | kind u8 | reason u8 | pad[2] | job key u64 | gid[16] |
//	ud qpn u32 | qpn u32 | psn u32 | rma qpn u32 | rma psn u32 | peer qpn u32
//
// gid and ud qpn are the sender's endpoint; qpn and psn (and rma qpn and
// psn) its queue pairs for this connection; peer qpn the receiver's
// datagram QP the message is about (zero in a REQ).
const cmMagic = "PCRDMA04"

// cmMsgLen is the length of a connection-manager message.
const cmMsgLen = 60

// Message kinds.
const (
	cmReq  = 1
	cmRep  = 2
	cmPing = 3
	cmPong = 4
	cmGone = 5
	cmRej  = 6 // a REQ refused: it came from another job, or (rejFull) the port has no room
)

// Reasons of a REJ.
const (
	rejForeign = 0 // the REQ came from another job
	rejFull    = 1 // the port's receive buffer pool is at its limit
)

type cmMsg struct {
	kind   uint8
	reason uint8  // of a REJ
	key    uint64 // the job key
	from   udAddr
	qp     verbs.Remote // GID is from.gid
	rma    verbs.Remote
	peer   uint32
}

// ErrHandshake is returned for a malformed or foreign connection-manager
// message.
var ErrHandshake = errors.New("rdma: bad handshake")

func (m *cmMsg) marshal(b []byte) []byte {
	b = append(b, cmMagic...)
	b = append(b, m.kind, m.reason, 0, 0)
	b = binary.BigEndian.AppendUint64(b, m.key)
	b = append(b, m.from.gid[:]...)
	b = binary.BigEndian.AppendUint32(b, m.from.qpn)
	b = binary.BigEndian.AppendUint32(b, m.qp.QPN)
	b = binary.BigEndian.AppendUint32(b, m.qp.PSN)
	b = binary.BigEndian.AppendUint32(b, m.rma.QPN)
	b = binary.BigEndian.AppendUint32(b, m.rma.PSN)
	return binary.BigEndian.AppendUint32(b, m.peer)
}

func parseCMMsg(b []byte) (cmMsg, error) {
	if len(b) < cmMsgLen {
		return cmMsg{}, fmt.Errorf("%w: %d bytes", ErrHandshake, len(b))
	}
	if string(b[:8]) != cmMagic {
		return cmMsg{}, fmt.Errorf("%w: magic %q", ErrHandshake, b[:8])
	}
	var m cmMsg
	m.kind = b[8]
	m.reason = b[9]
	m.key = binary.BigEndian.Uint64(b[12:])
	copy(m.from.gid[:], b[20:36])
	m.from.qpn = binary.BigEndian.Uint32(b[36:])
	m.qp = verbs.Remote{GID: m.from.gid, QPN: binary.BigEndian.Uint32(b[40:]), PSN: binary.BigEndian.Uint32(b[44:]) & 0xffffff}
	m.rma = verbs.Remote{GID: m.from.gid, QPN: binary.BigEndian.Uint32(b[48:]), PSN: binary.BigEndian.Uint32(b[52:]) & 0xffffff}
	m.peer = binary.BigEndian.Uint32(b[56:])
	if m.kind < cmReq || m.kind > cmRej {
		return cmMsg{}, fmt.Errorf("%w: kind %d", ErrHandshake, m.kind)
	}
	if !validQPN(m.from.qpn) || !validQPN(m.qp.QPN) {
		return cmMsg{}, fmt.Errorf("%w: QPN %d/%d", ErrHandshake, m.from.qpn, m.qp.QPN)
	}
	if (m.kind == cmReq || m.kind == cmRep) && !validQPN(m.rma.QPN) {
		return cmMsg{}, fmt.Errorf("%w: read QPN %d", ErrHandshake, m.rma.QPN)
	}
	if (m.kind == cmReq) != (m.peer == 0) || (m.peer != 0 && !validQPN(m.peer)) {
		return cmMsg{}, fmt.Errorf("%w: kind %d about QPN %d", ErrHandshake, m.kind, m.peer)
	}
	return m, nil
}
