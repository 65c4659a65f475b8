package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/pcor-go/pcor/internal/verbs"
)

// The handshake is one message each way over TCP: the dialer sends its
// hello, the listener creates a QP, brings it to RTS and answers with its
// own. It names two queue pairs: the one for datagrams and the one for
// one-sided reads. Layout (big-endian):
//
//	magic[8] "PCRDMA02" | gid[16] | qpn u32 | psn u32 | rma qpn u32 | rma psn u32 | eplen u16 | endpoint
const handshakeMagic = "PCRDMA02"

// maxEndpointLen bounds the endpoint string in a hello.
const maxEndpointLen = 255

type hello struct {
	verbs.Remote
	RMA      verbs.Remote // the queue pair for one-sided reads (same GID)
	Endpoint string       // the sender's listener address
}

// ErrHandshake is returned for a malformed or foreign handshake.
var ErrHandshake = errors.New("rdma: bad handshake")

func (h *hello) marshal() ([]byte, error) {
	if len(h.Endpoint) > maxEndpointLen {
		return nil, fmt.Errorf("%w: endpoint of %d bytes", ErrHandshake, len(h.Endpoint))
	}
	b := make([]byte, 0, 42+len(h.Endpoint))
	b = append(b, handshakeMagic...)
	b = append(b, h.GID[:]...)
	b = binary.BigEndian.AppendUint32(b, h.QPN)
	b = binary.BigEndian.AppendUint32(b, h.PSN)
	b = binary.BigEndian.AppendUint32(b, h.RMA.QPN)
	b = binary.BigEndian.AppendUint32(b, h.RMA.PSN)
	b = binary.BigEndian.AppendUint16(b, uint16(len(h.Endpoint)))
	return append(b, h.Endpoint...), nil
}

func readHello(r io.Reader) (hello, error) {
	var fixed [8 + 16 + 4 + 4 + 4 + 4 + 2]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return hello{}, fmt.Errorf("%w: %v", ErrHandshake, err)
	}
	if string(fixed[:8]) != handshakeMagic {
		return hello{}, fmt.Errorf("%w: magic %q", ErrHandshake, fixed[:8])
	}
	var h hello
	copy(h.GID[:], fixed[8:24])
	h.QPN = binary.BigEndian.Uint32(fixed[24:])
	h.PSN = binary.BigEndian.Uint32(fixed[28:])
	h.RMA = verbs.Remote{GID: h.GID, QPN: binary.BigEndian.Uint32(fixed[32:]), PSN: binary.BigEndian.Uint32(fixed[36:])}
	n := binary.BigEndian.Uint16(fixed[40:])
	if n > maxEndpointLen {
		return hello{}, fmt.Errorf("%w: endpoint of %d bytes", ErrHandshake, n)
	}
	ep := make([]byte, n)
	if _, err := io.ReadFull(r, ep); err != nil {
		return hello{}, fmt.Errorf("%w: %v", ErrHandshake, err)
	}
	h.Endpoint = string(ep)
	for _, q := range []uint32{h.QPN, h.RMA.QPN} {
		if q == 0 || q > 0xffffff {
			return hello{}, fmt.Errorf("%w: QPN %d", ErrHandshake, q)
		}
	}
	return h, nil
}
