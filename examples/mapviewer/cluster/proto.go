// Package cluster runs the map viewer on a cluster through pcor: a daemon
// per node (the paper's imgDaemon) owns node directories of a tile set
// and answers (tile, scale) requests with the scaled bitmap as raw RGBA
// bytes; the cluster loader (imgCLoader) asks for every tile of a view
// from its own pcor thread, all threads waiting at once. The viewer and
// the daemons are the processes of one pcor application, started by
// pcorrun and joined through the directory (Process): rank 0 is the
// viewer, ranks 1..n the daemons, and a daemon that leaves is marked down.
package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/pcor"
)

// Tags of the protocol. A cancel is a request message (only its id
// counts) telling the daemon that the sender no longer waits for the
// reply to that request.
const (
	TagRequest pcor.Tag = 0x4d56_0001
	TagReply   pcor.Tag = 0x4d56_0002
	TagCancel  pcor.Tag = 0x4d56_0003
)

// The daemon threads requests and cancels are sent to: cancels apart,
// so that a daemon whose queue is full still hears them.
const (
	RequestThread pcor.ThreadID = 0
	CancelThread  pcor.ThreadID = 1
)

const (
	magic0, magic1 = 'M', 'V'
	version        = 1
	headerLen      = 16
	maxErrText     = 4096
)

// Reply status codes.
const (
	statusOK      = 0
	statusMissing = 1
	statusCorrupt = 2
	statusFailed  = 3
)

// ErrProtocol reports a malformed request or reply.
var ErrProtocol = errors.New("mapviewer protocol error")

type request struct {
	ID       uint32
	Col, Row int
	Scale    int
}

func (r request) encode() []byte {
	b := make([]byte, headerLen)
	b[0], b[1], b[2] = magic0, magic1, version
	binary.LittleEndian.PutUint32(b[4:], r.ID)
	binary.LittleEndian.PutUint16(b[8:], uint16(r.Col))
	binary.LittleEndian.PutUint16(b[10:], uint16(r.Row))
	binary.LittleEndian.PutUint16(b[12:], uint16(r.Scale))
	return b
}

func decodeRequest(b []byte) (request, error) {
	if len(b) != headerLen || b[0] != magic0 || b[1] != magic1 || b[2] != version {
		return request{}, fmt.Errorf("%w: request of %d bytes", ErrProtocol, len(b))
	}
	return request{
		ID:    binary.LittleEndian.Uint32(b[4:]),
		Col:   int(binary.LittleEndian.Uint16(b[8:])),
		Row:   int(binary.LittleEndian.Uint16(b[10:])),
		Scale: int(binary.LittleEndian.Uint16(b[12:])),
	}, nil
}

type reply struct {
	ID     uint32
	Status byte
	W, H   int
	Node   int
	Text   string // error text when Status != statusOK
	Pix    []byte // W*H*4 RGBA bytes when Status == statusOK
}

func (r reply) encode() []byte { return r.encodeTo(nil) }

// encodeTo encodes r into buf when r's pixels are already in place there
// (buf[headerLen:] is r.Pix), writing only the header; else into new
// memory.
func (r reply) encodeTo(buf []byte) []byte {
	text := r.Text
	if len(text) > maxErrText {
		text = text[:maxErrText]
	}
	if text == "" && len(r.Pix) > 0 && len(buf) == headerLen+len(r.Pix) && &buf[headerLen] == &r.Pix[0] {
		r.header(buf, 0)
		return buf
	}
	b := make([]byte, headerLen+len(text)+len(r.Pix))
	r.header(b, len(text))
	copy(b[headerLen:], text)
	copy(b[headerLen+len(text):], r.Pix)
	return b
}

// header writes r's header, for an error text of tl bytes, into b.
func (r reply) header(b []byte, tl int) {
	b[0], b[1], b[2], b[3] = magic0, magic1, version, r.Status
	binary.LittleEndian.PutUint32(b[4:], r.ID)
	binary.LittleEndian.PutUint16(b[8:], uint16(r.W))
	binary.LittleEndian.PutUint16(b[10:], uint16(r.H))
	binary.LittleEndian.PutUint16(b[12:], uint16(r.Node))
	binary.LittleEndian.PutUint16(b[14:], uint16(tl))
}

func decodeReply(b []byte) (reply, error) {
	if len(b) < headerLen || b[0] != magic0 || b[1] != magic1 || b[2] != version {
		return reply{}, fmt.Errorf("%w: reply of %d bytes", ErrProtocol, len(b))
	}
	r := reply{
		ID:     binary.LittleEndian.Uint32(b[4:]),
		Status: b[3],
		W:      int(binary.LittleEndian.Uint16(b[8:])),
		H:      int(binary.LittleEndian.Uint16(b[10:])),
		Node:   int(binary.LittleEndian.Uint16(b[12:])),
	}
	tl := int(binary.LittleEndian.Uint16(b[14:]))
	if tl > len(b)-headerLen {
		return reply{}, fmt.Errorf("%w: error text of %d bytes in a %d-byte reply", ErrProtocol, tl, len(b))
	}
	r.Text = string(b[headerLen : headerLen+tl])
	r.Pix = b[headerLen+tl:]
	if r.Status == statusOK && len(r.Pix) != r.W*r.H*4 {
		return reply{}, fmt.Errorf("%w: %d pixel bytes for %dx%d", ErrProtocol, len(r.Pix), r.W, r.H)
	}
	if r.Status > statusFailed {
		return reply{}, fmt.Errorf("%w: status %d", ErrProtocol, r.Status)
	}
	return r, nil
}

func statusOf(err error) byte {
	switch {
	case err == nil:
		return statusOK
	case errors.Is(err, tiles.ErrMissing):
		return statusMissing
	case errors.Is(err, tiles.ErrCorrupt):
		return statusCorrupt
	}
	return statusFailed
}

func errOf(status byte) error {
	switch status {
	case statusMissing:
		return tiles.ErrMissing
	case statusCorrupt:
		return tiles.ErrCorrupt
	}
	return errFailed
}

var errFailed = errors.New("daemon could not load the tile")
