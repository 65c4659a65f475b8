package directory

import (
	"encoding/binary"
	"fmt"
	"io"
)

// DefaultMaxFrame is the default limit on one frame's payload.
const DefaultMaxFrame = 1 << 20

// frameHeader is the size of the length prefix.
const frameHeader = 4

// writeFrame writes payload with its 4-byte big-endian length prefix in one
// Write call.
func writeFrame(w io.Writer, payload []byte) error {
	buf := make([]byte, frameHeader+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[frameHeader:], payload)
	_, err := w.Write(buf)
	return err
}

// readFrame reads one frame. A length above max is rejected before
// anything is allocated for the payload; a zero length is a protocol error.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, fmt.Errorf("%w: empty frame", ErrProtocol)
	}
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
