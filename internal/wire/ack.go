package wire

import "encoding/binary"

// MaxSackBlocks is the most selective-acknowledgement blocks an Ack carries.
const MaxSackBlocks = 16

// SackBlock acknowledges fragments with sequence numbers in [Start, End).
type SackBlock struct {
	Start, End uint64
}

// AckBody is the body of an Ack datagram: everything below Cum has arrived,
// plus the listed blocks above it. Window is how many more fragments past
// Cum the receiver will take; Echo returns the Seq of the datagram that
// prompted this ack, for round-trip measurement.
type AckBody struct {
	Cum    uint64
	Window uint32
	NSack  uint32
	Echo   uint64
	Sack   [MaxSackBlocks]SackBlock
}

// AckBodyLen is the encoded size of an AckBody with n blocks.
func AckBodyLen(n int) int { return 24 + 16*n }

// Put encodes a into b, which must hold AckBodyLen(a.NSack) bytes, and
// returns the encoded slice.
func (a *AckBody) Put(b []byte) []byte {
	n := int(a.NSack)
	b = b[:AckBodyLen(n)]
	le := binary.LittleEndian
	le.PutUint64(b[0:], a.Cum)
	le.PutUint32(b[8:], a.Window)
	le.PutUint32(b[12:], a.NSack)
	le.PutUint64(b[16:], a.Echo)
	for i := 0; i < n; i++ {
		le.PutUint64(b[24+16*i:], a.Sack[i].Start)
		le.PutUint64(b[32+16*i:], a.Sack[i].End)
	}
	return b
}

// DecodeAck parses an Ack body, checking its length and block order.
func DecodeAck(b []byte) (AckBody, error) {
	var a AckBody
	if len(b) < 24 {
		return a, ErrLength
	}
	le := binary.LittleEndian
	a.Cum = le.Uint64(b[0:])
	a.Window = le.Uint32(b[8:])
	a.NSack = le.Uint32(b[12:])
	a.Echo = le.Uint64(b[16:])
	if a.NSack > MaxSackBlocks || len(b) != AckBodyLen(int(a.NSack)) {
		return a, ErrLength
	}
	prev := a.Cum
	for i := 0; i < int(a.NSack); i++ {
		s := le.Uint64(b[24+16*i:])
		e := le.Uint64(b[32+16*i:])
		if s <= prev || e <= s || e-s > 1<<32 {
			return a, ErrLength
		}
		a.Sack[i] = SackBlock{s, e}
		prev = e
	}
	return a, nil
}
