package engine

import (
	"math/bits"

	"github.com/pcor-go/pcor/internal/wire"
)

// rxStream is the receive side of the stream from one peer process: which
// fragment sequence numbers have arrived, the messages being reassembled,
// and the completed messages waiting for an earlier one so that messages
// are accepted in the order they were sent.
type rxStream struct {
	cum     uint64   // every seq below has arrived
	maxSeen uint64   // highest seq seen + 1
	win     []uint64 // arrival bits for [cum, cum+len(win)*64), ring-indexed by seq
	inprog  map[uint64]*mcb
	nextMsg uint64
	held    map[uint64]*mcb // completed early; nil value: aborted

	// silent: the peer was given up for silence in the middle of a
	// message; its datagrams are dropped until it restarts.
	silent bool
	// heldBack: the last datagram from the peer on the reliable path was
	// left in the fabric for want of room. The peer is then waiting on
	// this side, not silent: the unreachable watch does not count it.
	heldBack bool

	ackPending bool
	unacked    int  // fragments arrived since the last acknowledgement
	ackNow     bool // acknowledge at the end of this batch
	echo       uint64

	// Acknowledgements that wait for a reply (ackout.go): ackAsked, a
	// sender waits for this acknowledgement (wire.FlagAckNow); ackDue,
	// when a deferred acknowledgement must leave on its own (0: none
	// deferred); ackListed, the peer is in its port's deferred list;
	// ackAt, when the last acknowledgement left on its own; replies,
	// how sure it is that data going back will carry the next one.
	ackAsked  bool
	ackListed bool
	replies   int8
	ackDue    int64
	ackAt     int64
}

// inOrder reports whether nothing above the cumulative point has arrived,
// so the cumulative point alone acknowledges everything.
func (rx *rxStream) inOrder() bool { return rx.maxSeen <= rx.cum }

func (rx *rxStream) init(window int) {
	rx.win = make([]uint64, window/64)
	rx.inprog = make(map[uint64]*mcb)
	rx.held = make(map[uint64]*mcb)
}

func (rx *rxStream) window() uint64 { return uint64(len(rx.win)) * 64 }

func (rx *rxStream) has(seq uint64) bool {
	if seq < rx.cum {
		return true
	}
	i := seq % rx.window()
	return rx.win[i/64]&(1<<(i%64)) != 0
}

// mark records seq as arrived and advances the cumulative point.
func (rx *rxStream) mark(seq uint64) {
	w := rx.window()
	i := seq % w
	rx.win[i/64] |= 1 << (i % 64)
	if seq+1 > rx.maxSeen {
		rx.maxSeen = seq + 1
	}
	for {
		j := rx.cum % w
		word := rx.win[j/64] >> (j % 64)
		if word&1 == 0 {
			break
		}
		// Advance over the run of ones within this word.
		n := uint64(bits.TrailingZeros64(^word))
		if n > 64-j%64 {
			n = 64 - j%64
		}
		mask := ^uint64(0)
		if n < 64 {
			mask = (uint64(1)<<n - 1) << (j % 64)
		}
		rx.win[j/64] &^= mask
		rx.cum += n
	}
}

// complete accepts message m (or an abort when m is nil) with id msgID and
// appends to out, in order, every message now deliverable.
func (rx *rxStream) complete(msgID uint64, m *mcb, out []*mcb) []*mcb {
	if msgID != rx.nextMsg {
		rx.held[msgID] = m
		return out
	}
	if m != nil {
		out = append(out, m)
	}
	rx.nextMsg++
	for {
		h, ok := rx.held[rx.nextMsg]
		if !ok {
			return out
		}
		delete(rx.held, rx.nextMsg)
		if h != nil {
			out = append(out, h)
		}
		rx.nextMsg++
	}
}

// partial reports whether a message is half received or held for an
// earlier one.
func (rx *rxStream) partial() bool {
	if len(rx.inprog) > 0 {
		return true
	}
	for _, m := range rx.held {
		if m != nil {
			return true
		}
	}
	return false
}

// firstFor reports whether receive r can take message msgID before it is
// accepted: every message before it from this peer was accepted already,
// or is known (in progress or held) and does not match r or is owned by
// a receive of its own (posted before r). A message not seen at all yet
// might match r, and would have to go first.
func (rx *rxStream) firstFor(r *Request, msgID uint64) bool {
	known := uint64(0)
	for id, o := range rx.inprog {
		if id < msgID {
			if o.owner == nil && o.key.dstThread == r.dstThread && matches(r, o.key) {
				return false
			}
			known++
		}
	}
	for id, o := range rx.held {
		if id < msgID {
			if o != nil && o.owner == nil && o.key.dstThread == r.dstThread && matches(r, o.key) {
				return false
			}
			known++
		}
	}
	return known == msgID-rx.nextMsg
}

// finished reports whether message msgID was already accepted or aborted.
func (rx *rxStream) finished(msgID uint64) bool {
	if msgID < rx.nextMsg {
		return true
	}
	_, ok := rx.held[msgID]
	return ok
}

// ack builds the acknowledgement of the stream.
func (rx *rxStream) ack(a *wire.AckBody) {
	a.Cum = rx.cum
	a.Window = uint32(rx.window())
	a.Echo = rx.echo
	a.NSack = 0
	w := rx.window()
	s := rx.cum
	for s < rx.maxSeen && a.NSack < wire.MaxSackBlocks {
		// find next set bit at or after s
		for s < rx.maxSeen && !rx.bit(s, w) {
			s = rx.skip(s, w, false)
		}
		if s >= rx.maxSeen {
			break
		}
		e := s
		for e < rx.maxSeen && rx.bit(e, w) {
			e = rx.skip(e, w, true)
		}
		if e > rx.maxSeen {
			e = rx.maxSeen
		}
		a.Sack[a.NSack] = wire.SackBlock{Start: s, End: e}
		a.NSack++
		s = e
	}
}

func (rx *rxStream) bit(s, w uint64) bool {
	i := s % w
	return rx.win[i/64]&(1<<(i%64)) != 0
}

// skip advances from s over bits equal to set, a word at a time where it
// can, stopping at the word boundary.
func (rx *rxStream) skip(s, w uint64, set bool) uint64 {
	i := s % w
	word := rx.win[i/64] >> (i % 64)
	if set {
		word = ^word
	}
	n := uint64(bits.TrailingZeros64(word))
	if rem := 64 - i%64; n > rem {
		n = rem
	}
	if n == 0 {
		n = 1
	}
	return s + n
}
