// Package wire encodes and decodes the fragment header that precedes every
// datagram the dispatcher sends.
//
// Layout (little-endian, HeaderSize bytes):
//
//	 0 magic     u16  0x7043 ("Cp")
//	 2 version   u8
//	 3 kind      u8   Data, Ack, Busy, Abort, Hello, Refuse
//	 4 flags     u8
//	 5 hops      u8   forwarding hops left
//	 6 reserved  u16  zero
//	 8 job key   u64  random per application run
//	16 src proc  u32
//	20 src thr   u32
//	24 dst proc  u32  final destination
//	28 dst thr   u32
//	32 tag       i32
//	36 frag size u32  payload bytes per fragment of this message
//	40 msg id    u64  per (source process, destination process)
//	48 seq       u64  fragment sequence number of the stream
//	56 total     u64  message length in bytes (in a bundle: of its
//	                  messages together)
//	64 frag idx  u32  (in a bundle: the count of its messages)
//	68 body len  u32  bytes after the header
//	72 checksum  u64  xxhash64 of the header (hops and this field zero) and
//	                  body (the header alone with FlagReliable or
//	                  FlagBodyUnsummed)
//	80 src inc   u32  incarnation of the sending engine (random per start)
//	84 dst inc   u32  incarnation of the destination as the sender knows it
//	                  (zero before it has heard from it)
//	88 ack cum   u64  with FlagAck: every fragment of the reverse stream
//	                  below this sequence number has arrived
//
// Decode validates everything it can without state: magic, version, job
// key, checksum, the body length against the datagram, and the message
// geometry (fragment index within the message, body length equal to the
// fragment's share of the total; for a bundle, see bundle.go). A packet that fails is reported with an
// error naming the reason, and callers drop and count it.
package wire

import (
	"encoding/binary"
	"errors"

	"github.com/cespare/xxhash/v2"

	"github.com/pcor-go/pcor/fabric"
)

// Magic identifies pcor datagrams.
const Magic = 0x7043

// Version is the header version this package speaks.
const Version = 1

// HeaderSize is the encoded size of a Header.
const HeaderSize = 96

// MaxFragment is the largest datagram (header included) the dispatcher
// ever sends: the largest datagram of any fabric, one UDP datagram on
// loopback.
const MaxFragment = fabric.MaxDatagramSize

// DefaultHops is the hop limit a datagram leaves its sender with: how many
// gateways may forward it before it is dropped as misrouted.
const DefaultHops = 8

// hopsOffset is the offset of the hop count in an encoded header.
const hopsOffset = 5

// SetHops rewrites the hop count of the encoded header at the start of
// pkt. The checksum does not cover the hop count, so a gateway forwarding
// a datagram changes nothing else.
func SetHops(pkt []byte, hops uint8) { pkt[hopsOffset] = hops }

// Kind is the type of a datagram.
type Kind uint8

// Datagram kinds.
const (
	// Data carries one fragment of a message.
	Data Kind = 1
	// Ack acknowledges the stream; the body is an AckBody.
	Ack Kind = 2
	// Busy refuses a fragment for lack of resources; Seq names it.
	Busy Kind = 3
	// Abort tells the receiver that message MsgID was cancelled by its
	// sender; it occupies one sequence number like a fragment.
	Abort Kind = 4
	// Hello probes a peer; it is answered with an Ack.
	Hello Kind = 5
	// Refuse tells the sender that the destination will never accept
	// message MsgID: Seq names the refused fragment, Total carries the
	// destination's largest message. The sender fails the message and
	// sends its fragments again as aborts.
	Refuse Kind = 6
	// Bye is the last datagram a closing process sends a peer; the body
	// is an AckBody, the acknowledgement of all it received.
	Bye     Kind = 7
	kindEnd Kind = 8
)

func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Ack:
		return "ack"
	case Busy:
		return "busy"
	case Abort:
		return "abort"
	case Hello:
		return "hello"
	case Refuse:
		return "refuse"
	case Bye:
		return "bye"
	}
	return "unknown"
}

// Flags.
const (
	// FlagAckNow asks the receiver to acknowledge without delay.
	FlagAckNow = 1 << 0
	// FlagRetransmit marks a datagram sent again.
	FlagRetransmit = 1 << 1
	// FlagAck says AckCum acknowledges the reverse stream (an
	// acknowledgement carried by data).
	FlagAck = 1 << 2
	// FlagReliable marks a datagram sent directly over a reliable,
	// protected fabric: it takes no sequence number, is never
	// acknowledged, and its checksum covers the header only (the fabric
	// already protects the body).
	FlagReliable = 1 << 3
	// FlagBodyUnsummed says the checksum covers the header alone: the
	// datagram's body crosses only fabrics that protect it
	// (fabric.Protected, such as UDP's checksum), so hashing it again
	// would only cost time. A receiver accepts it only from such a
	// fabric, and a gateway passing it on to another kind reseals it.
	FlagBodyUnsummed = 1 << 5
	// FlagRendezvous marks a message of the rendezvous protocol: the
	// announcement of a message to be read from its sender's memory, the
	// receiver's word that it was, the sender's request to withdraw it,
	// and the receiver's answer (withdrawn, or already taken); the first
	// byte of the body says which (internal/engine, rndv.go).
	FlagRendezvous = 1 << 4
)

// Header is the decoded fragment header.
type Header struct {
	Kind      Kind
	Flags     uint8
	Hops      uint8
	JobKey    uint64
	SrcProc   uint32
	SrcThread uint32
	DstProc   uint32
	DstThread uint32
	Tag       int32
	FragSize  uint32
	MsgID     uint64
	Seq       uint64
	Total     uint64
	FragIndex uint32
	BodyLen   uint32
	SrcInc    uint32
	DstInc    uint32
	AckCum    uint64
}

// Errors returned by Decode; each is one drop reason.
var (
	ErrShort    = errors.New("wire: datagram shorter than a header")
	ErrMagic    = errors.New("wire: bad magic")
	ErrVersion  = errors.New("wire: unsupported version")
	ErrJobKey   = errors.New("wire: foreign job key")
	ErrChecksum = errors.New("wire: checksum mismatch")
	ErrLength   = errors.New("wire: impossible lengths")
	ErrKind     = errors.New("wire: unknown kind")
)

// FragCount is the number of fragments of a message of total bytes cut into
// fragSize-byte pieces. A zero-length message has one (empty) fragment.
func FragCount(total uint64, fragSize uint32) uint64 {
	if total == 0 || fragSize == 0 {
		return 1
	}
	return (total + uint64(fragSize) - 1) / uint64(fragSize)
}

// FragLen is the number of payload bytes of fragment idx.
func FragLen(total uint64, fragSize uint32, idx uint32) uint64 {
	off := uint64(idx) * uint64(fragSize)
	if off >= total {
		return 0
	}
	n := total - off
	if n > uint64(fragSize) {
		n = uint64(fragSize)
	}
	return n
}

// Put encodes h into b[:HeaderSize] with a zero checksum. Seal completes it.
func (h *Header) Put(b []byte) {
	_ = b[HeaderSize-1]
	le := binary.LittleEndian
	le.PutUint16(b[0:], Magic)
	b[2] = Version
	b[3] = byte(h.Kind)
	b[4] = h.Flags
	b[hopsOffset] = h.Hops
	le.PutUint16(b[6:], 0)
	le.PutUint64(b[8:], h.JobKey)
	le.PutUint32(b[16:], h.SrcProc)
	le.PutUint32(b[20:], h.SrcThread)
	le.PutUint32(b[24:], h.DstProc)
	le.PutUint32(b[28:], h.DstThread)
	le.PutUint32(b[32:], uint32(h.Tag))
	le.PutUint32(b[36:], h.FragSize)
	le.PutUint64(b[40:], h.MsgID)
	le.PutUint64(b[48:], h.Seq)
	le.PutUint64(b[56:], h.Total)
	le.PutUint32(b[64:], h.FragIndex)
	le.PutUint32(b[68:], h.BodyLen)
	le.PutUint64(b[72:], 0)
	le.PutUint32(b[80:], h.SrcInc)
	le.PutUint32(b[84:], h.DstInc)
	le.PutUint64(b[88:], h.AckCum)
}

// Seal writes the checksum of head (an encoded header) and body into head;
// with FlagReliable or FlagBodyUnsummed in head, of head alone.
func Seal(head, body []byte) {
	binary.LittleEndian.PutUint64(head[72:], checksum(head, summed(head, body)))
}

// summed is the part of body the checksum covers: none with FlagReliable
// or FlagBodyUnsummed.
func summed(head, body []byte) []byte {
	if head[4]&(FlagReliable|FlagBodyUnsummed) != 0 {
		return nil
	}
	return body
}

// Reseal makes the checksum of the encoded datagram pkt (header and body,
// already decoded) cover its body too, clearing FlagBodyUnsummed: for a
// gateway passing the datagram on to a fabric that does not protect it.
func Reseal(pkt []byte) {
	pkt[4] &^= FlagBodyUnsummed
	Seal(pkt[:HeaderSize], pkt[HeaderSize:])
}

// Encode is Put followed by Seal.
func (h *Header) Encode(head, body []byte) {
	h.BodyLen = uint32(len(body))
	h.Put(head)
	Seal(head, body)
}

// EncodeUnsealed is Encode that leaves the checksum zero: for a datagram
// whose checksum would cover its header alone (FlagBodyUnsummed), sent
// over a fabric that protects the bytes it carries, when nothing is to
// read its header before it is received whole. No receiver would verify
// the checksum: DecodeProtected does not verify one that covers the header
// alone, a port that does not protect its bytes drops a datagram whose
// body was not summed whatever its checksum, and a gateway passing it on
// to such a port reseals it (Reseal). Decode, DecodeSplit and DecodeHead
// (a port's look at a datagram's header before it is received, to place
// its body) refuse it.
func (h *Header) EncodeUnsealed(head, body []byte) {
	h.BodyLen = uint32(len(body))
	h.Put(head)
}

// checksum hashes the header with its hop count and checksum fields taken
// as zero (a forwarding gateway changes the hop count only), then the body.
// A header and a body of up to smallSummed bytes are hashed in one call,
// from a copy on the stack: a digest written in pieces costs about 120
// instructions more, a third of the encoding and decoding of a datagram
// of the reliable path (whose body is not summed).
func checksum(head, body []byte) uint64 {
	var h [HeaderSize + smallSummed]byte
	copy(h[:], head[:HeaderSize])
	h[hopsOffset] = 0
	clear(h[72:80])
	if len(body) <= smallSummed {
		n := copy(h[HeaderSize:], body)
		return xxhash.Sum64(h[:HeaderSize+n])
	}
	d := xxhash.NewWithSeed(0)
	d.Write(h[:HeaderSize])
	d.Write(body)
	return d.Sum64()
}

// smallSummed is the largest body checksum hashes in one call.
const smallSummed = 160

// Decode parses and validates the datagram pkt for job key. It returns the
// header and the body (aliasing pkt).
func Decode(pkt []byte, jobKey uint64) (Header, []byte, error) {
	if len(pkt) < HeaderSize {
		return Header{}, nil, ErrShort
	}
	return DecodeSplit(pkt[:HeaderSize], pkt[HeaderSize:], jobKey)
}

// DecodeProtected is Decode of a datagram received from a fabric that
// protects the bytes it carries (fabric.Protected): a checksum that covers
// the header alone (FlagReliable, FlagBodyUnsummed) is not verified, since
// the fabric already vouches for those bytes; one that covers the body too
// (the sender chose to sum it) is. Everything else is validated as Decode
// does.
func DecodeProtected(pkt []byte, jobKey uint64) (Header, []byte, error) {
	if len(pkt) < HeaderSize {
		return Header{}, nil, ErrShort
	}
	return decodeVerify(pkt[:HeaderSize], pkt[HeaderSize:], len(pkt)-HeaderSize, jobKey, false)
}

// DecodeProtectedTo is DecodeProtected into *h, which must be zero: the
// header is not copied out of a returned value. On an error *h is
// undefined.
func DecodeProtectedTo(h *Header, pkt []byte, jobKey uint64) ([]byte, error) {
	if len(pkt) < HeaderSize {
		return nil, ErrShort
	}
	return decodeTo(h, pkt[:HeaderSize], pkt[HeaderSize:], len(pkt)-HeaderSize, jobKey, false)
}

// DecodeSplit is Decode of a datagram received in two places: its header
// pkt (HeaderSize bytes at least, the rest ignored) and its body. It
// returns body as the datagram's body.
func DecodeSplit(pkt, body []byte, jobKey uint64) (Header, []byte, error) {
	return decode(pkt, body, len(body), jobKey)
}

// DecodeHead is Decode of the header alone of a datagram of n bytes in
// all whose body is not yet at hand: it refuses (ErrChecksum) a header
// whose checksum covers the body.
func DecodeHead(pkt []byte, n int, jobKey uint64) (Header, error) {
	if len(pkt) < HeaderSize || n < HeaderSize {
		return Header{}, ErrShort
	}
	if summed(pkt, pkt) != nil {
		return Header{}, ErrChecksum
	}
	h, _, err := decode(pkt[:HeaderSize], nil, n-HeaderSize, jobKey)
	return h, err
}

func decode(pkt, body []byte, bodyLen int, jobKey uint64) (Header, []byte, error) {
	return decodeVerify(pkt, body, bodyLen, jobKey, true)
}

// decodeVerify is decode that verifies a checksum covering the header
// alone only with headerSum.
func decodeVerify(pkt, body []byte, bodyLen int, jobKey uint64, headerSum bool) (Header, []byte, error) {
	var h Header
	body, err := decodeTo(&h, pkt, body, bodyLen, jobKey, headerSum)
	return h, body, err
}

// decodeTo is decodeVerify into *h (zero).
func decodeTo(h *Header, pkt, body []byte, bodyLen int, jobKey uint64, headerSum bool) ([]byte, error) {
	if len(pkt) < HeaderSize {
		return nil, ErrShort
	}
	le := binary.LittleEndian
	if le.Uint16(pkt[0:]) != Magic {
		return nil, ErrMagic
	}
	if pkt[2] != Version {
		return nil, ErrVersion
	}
	h.JobKey = le.Uint64(pkt[8:])
	if h.JobKey != jobKey {
		return nil, ErrJobKey
	}
	h.Kind = Kind(pkt[3])
	h.Flags = pkt[4]
	h.Hops = pkt[hopsOffset]
	h.SrcProc = le.Uint32(pkt[16:])
	h.SrcThread = le.Uint32(pkt[20:])
	h.DstProc = le.Uint32(pkt[24:])
	h.DstThread = le.Uint32(pkt[28:])
	h.Tag = int32(le.Uint32(pkt[32:]))
	h.FragSize = le.Uint32(pkt[36:])
	h.MsgID = le.Uint64(pkt[40:])
	h.Seq = le.Uint64(pkt[48:])
	h.Total = le.Uint64(pkt[56:])
	h.FragIndex = le.Uint32(pkt[64:])
	h.BodyLen = le.Uint32(pkt[68:])
	h.SrcInc = le.Uint32(pkt[80:])
	h.DstInc = le.Uint32(pkt[84:])
	h.AckCum = le.Uint64(pkt[88:])
	if uint64(h.BodyLen) != uint64(bodyLen) {
		return nil, ErrLength
	}
	if sb := summed(pkt, body); (headerSum || sb != nil) && le.Uint64(pkt[72:]) != checksum(pkt, sb) {
		return nil, ErrChecksum
	}
	if h.Kind == 0 || h.Kind >= kindEnd {
		return nil, ErrKind
	}
	if h.Flags&FlagBundle != 0 {
		if err := checkBundle(h, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	if h.Kind == Data {
		if h.FragSize == 0 || h.FragSize > MaxFragment-HeaderSize {
			return nil, ErrLength
		}
		if uint64(h.FragIndex) >= FragCount(h.Total, h.FragSize) {
			return nil, ErrLength
		}
		if uint64(h.BodyLen) != FragLen(h.Total, h.FragSize, h.FragIndex) {
			return nil, ErrLength
		}
	}
	return body, nil
}
