package wire

import "encoding/binary"

// Bundles.
//
// A Data datagram with FlagBundle carries several whole small messages of
// one stream, each after a compact sub-header, instead of one fragment.
// The datagram's header holds what they share: source and destination
// processes and incarnations, the acknowledgement, FragSize (the fragment
// size of each message, which fits in one fragment), and the first
// message's MsgID and Seq; message i of the bundle has MsgID+i and Seq+i.
// Total is the messages' bytes together and FragIndex their count.
//
// Sub-header (little-endian, SubSize bytes):
//
//	 0 src thr   u32
//	 4 dst thr   u32
//	 8 tag       i32
//	12 length    u16  message bytes following the sub-header
//	14 flags     u8   FlagAckNow only
//	15 reserved  u8   zero
//
// A bundle is never a retransmission or a rendezvous message: a message of
// a bundle is sent again alone. On the reliable path (FlagReliable) the
// bundle carries no sequence numbers (Seq is zero) and its messages none
// either; their ids follow each other as on the datagram path.

// FlagBundle marks a Data datagram carrying a bundle of whole messages.
const FlagBundle = 1 << 6

// SubSize is the encoded size of a Sub.
const SubSize = 16

// MaxBundled is the most messages one bundle carries.
const MaxBundled = 256

// MaxSubLen is the largest message a bundle carries.
const MaxSubLen = 1<<16 - 1

// Sub is the sub-header of one message of a bundle.
type Sub struct {
	SrcThread uint32
	DstThread uint32
	Tag       int32
	Len       uint16
	Flags     uint8
}

// Put encodes s into b[:SubSize].
func (s *Sub) Put(b []byte) {
	_ = b[SubSize-1]
	le := binary.LittleEndian
	le.PutUint32(b[0:], s.SrcThread)
	le.PutUint32(b[4:], s.DstThread)
	le.PutUint32(b[8:], uint32(s.Tag))
	le.PutUint16(b[12:], s.Len)
	b[14] = s.Flags
	b[15] = 0
}

// NextSub decodes the message at the start of a bundle's body b: its
// sub-header, its bytes (aliasing b) and the rest of the body. The length
// and flags are checked.
func NextSub(b []byte) (s Sub, data, rest []byte, err error) {
	if len(b) < SubSize {
		return s, nil, nil, ErrLength
	}
	le := binary.LittleEndian
	s.SrcThread = le.Uint32(b[0:])
	s.DstThread = le.Uint32(b[4:])
	s.Tag = int32(le.Uint32(b[8:]))
	s.Len = le.Uint16(b[12:])
	s.Flags = b[14]
	if s.Flags&^FlagAckNow != 0 || int(s.Len) > len(b)-SubSize {
		return s, nil, nil, ErrLength
	}
	end := SubSize + int(s.Len)
	return s, b[SubSize:end:end], b[end:], nil
}

// Message is the header message i of the bundle h would have as a
// datagram of its own, given its sub-header.
func (h *Header) Message(i int, s *Sub) Header {
	m := *h
	m.Flags = h.Flags&^FlagBundle | s.Flags
	m.SrcThread = s.SrcThread
	m.DstThread = s.DstThread
	m.Tag = s.Tag
	m.MsgID = h.MsgID + uint64(i)
	m.Seq = h.Seq + uint64(i)
	m.Total = uint64(s.Len)
	m.FragIndex = 0
	m.BodyLen = uint32(s.Len)
	return m
}

// Unbundle makes m the header message i of bundle h would have as a
// datagram of its own (as Message does), given body, the bundle's body
// from message i's sub-header on, and returns the message's bytes
// (aliasing body) and the rest of the body; ok is false if body does not
// start with a valid message. m must be a copy of h (h itself or a header
// Unbundle made of h): only what differs from message to message is set,
// so that a receiver taking a bundle apart copies the header once, not
// once a message.
func (m *Header) Unbundle(h *Header, i int, body []byte) (data, rest []byte, ok bool) {
	if len(body) < SubSize {
		return nil, nil, false
	}
	le := binary.LittleEndian
	n, f := int(le.Uint16(body[12:])), body[14]
	if f&^FlagAckNow != 0 || n > len(body)-SubSize {
		return nil, nil, false
	}
	m.Flags = h.Flags&^FlagBundle | f
	m.SrcThread = le.Uint32(body[0:])
	m.DstThread = le.Uint32(body[4:])
	m.Tag = int32(le.Uint32(body[8:]))
	m.MsgID = h.MsgID + uint64(i)
	m.Seq = h.Seq + uint64(i)
	m.Total = uint64(n)
	m.FragIndex = 0
	m.BodyLen = uint32(n)
	end := SubSize + n
	return body[SubSize:end:end], body[end:], true
}

// checkBundle validates the bundle h with body: flags, count, and that the
// messages fill the body exactly, each fitting one fragment.
func checkBundle(h *Header, body []byte) error {
	if h.Kind != Data || h.Flags&(FlagRetransmit|FlagRendezvous|FlagAckNow) != 0 {
		return ErrLength
	}
	if h.FragSize == 0 || h.FragSize > MaxFragment-HeaderSize || h.FragIndex == 0 || h.FragIndex > MaxBundled {
		return ErrLength
	}
	// NextSub's checks on each sub-header, without taking the fields.
	var total uint64
	off := 0
	for i := uint32(0); i < h.FragIndex; i++ {
		if len(body)-off < SubSize {
			return ErrLength
		}
		n := uint32(binary.LittleEndian.Uint16(body[off+12:]))
		if body[off+14]&^FlagAckNow != 0 || n > h.FragSize || int(n) > len(body)-off-SubSize {
			return ErrLength
		}
		total += uint64(n)
		off += SubSize + int(n)
	}
	if off != len(body) || total != h.Total {
		return ErrLength
	}
	return nil
}
