package engine

import (
	"unsafe"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// Receiving into place. A message that a posted receive owns is placed
// fragment by fragment into the receive's buffer. On a port that can
// receive a datagram's body straight into memory it is told of
// (fabric.Placer), the dispatcher tells it, after each batch, where the
// next fragments of the message it last placed so are to go: the
// regions of the buffer that the fragments after the last one placed
// would fill, those not yet received only. The port receives each
// datagram's header into its own buffer and its body into the region
// expected for it; a datagram that is not the fragment expected there
// has its body copied back into the port's buffer and is handled as any
// other (what it wrote into the region is overwritten when the region's
// own fragment comes, and the region is not counted as received). A
// fragment that is the one expected is placed by marking it arrived: no
// copy.
//
// The buffer must not be written into once its receive has let it go:
//   - the expectations are rebuilt (or withdrawn) after every batch, from
//     the message's state under its peer's rxmu, so they never name a
//     region received before the batch, and serve one receive only;
//   - whatever lets a receive go while the message is expected (a cancel,
//     a failure, an abort: disownLocked, releaseOwnerLocked) withdraws
//     them first (withdraw), which waits for a receive using them to end;
//   - a fragment received in place is checked when handled, under the
//     peer's rxmu, to be still the owned message's and expected under the
//     current generation (bumped by every withdrawal): a fragment whose
//     receive let the buffer go in between is dropped unread, as if lost;
//   - a fragment of the message arriving through another port withdraws
//     the expectations of the port that holds them.

// placedDg is a datagram received with its body in place: its header
// (decoded when the port asked whether it fit), where its body is, and
// the generation of the expectations it was received under.
type placedDg struct {
	head *byte
	h    wire.Header
	body []byte
	m    *mcb
	gen  uint64
	used bool
}

// expected is what the dispatcher expects of the datagram whose body was
// to go to the i-th region of its expectations.
type expected struct {
	srcProc uint32
	msgID   uint64
	frag    uint32
	m       *mcb
}

// placingState is a dispatcher's part in receiving into place. All of it
// but gen is used by the holder of the progress token alone.
type placingState struct {
	placer fabric.Placer
	fitsFn func(i int, dg []byte, n int) bool
	leader fabric.Leader
	leadFn func(dg []byte, n int)

	// The message last placed into in place (the one to expect).
	lastP    *peer
	lastM    *mcb
	lastID   uint64
	lastFrag uint32
	// The total of the message last placed into: after a large one the
	// port is asked to lead, until a lead finds no large message.
	lastTotal uint64

	exp     []expected // the expectations the port holds, by region
	regions [][]byte
	expGen  uint64 // gen when they were made
	live    bool   // the port may hold expectations

	placed []placedDg // datagrams the port returned in place
	cur    *placedDg  // the one being handled
}

func (d *dispatcher) initPlacing() {
	if pl, ok := d.fab.(fabric.Placer); ok {
		d.pl.placer = pl
		d.pl.fitsFn = d.fits
		if ld, ok := pl.(fabric.Leader); ok {
			d.pl.leader = ld
			d.pl.leadFn = d.lead
		}
	}
}

// withdraw takes back the port's expectations; once it returns the port
// writes into no buffer named before, and fragments received in place
// under them are dropped when handled. Any goroutine may call it, with
// a peer's rxmu held or not.
func (d *dispatcher) withdraw() {
	d.placeGen.Add(1)
	d.pl.placer.Expect(0, nil, nil)
	d.c.withdrawals.Add(1)
}

// unexpect withdraws the expectations naming m's buffer, before its
// receive lets it go. p.rxmu is held.
func (m *mcb) unexpect() {
	if m.expBy != nil {
		m.expBy.withdraw()
		m.expBy = nil
	}
}

// unexpectOther withdraws the expectations naming m's buffer held by a
// port other than d's. p.rxmu is held.
func (m *mcb) unexpectOther(d *dispatcher) {
	if m.expBy != d {
		m.unexpect()
	}
}

// fits is the port's question whether the datagram whose header is dg
// (n bytes in all), received with its body in region i, is the fragment
// expected there. It runs within the port's receive, on the goroutine
// holding the token.
func (d *dispatcher) fits(i int, dg []byte, n int) bool {
	s := &d.pl
	if i == 0 {
		// A new receive: every datagram of the last one was handled.
		clear(s.placed)
		s.placed = s.placed[:0]
	}
	if i >= len(s.exp) {
		return false
	}
	x := &s.exp[i]
	body := s.regions[i]
	if n != wire.HeaderSize+len(body) {
		return false
	}
	h, _, err := wire.DecodeSplit(dg, body, d.e.cfg.JobKey)
	if err != nil || h.Kind != wire.Data || h.Flags&(wire.FlagReliable|wire.FlagBundle) != 0 ||
		h.SrcProc != x.srcProc || ProcID(h.DstProc) != d.e.cfg.Proc || h.MsgID != x.msgID || h.FragIndex != x.frag {
		return false
	}
	s.placed = append(s.placed, placedDg{head: unsafe.SliceData(dg), h: h, body: body, m: x.m, gen: s.expGen})
	return true
}

// placedFor returns the datagram received in place whose header is pkt,
// or nil.
func (d *dispatcher) placedFor(pkt []byte) *placedDg {
	s := &d.pl
	if len(s.placed) == 0 || len(pkt) != wire.HeaderSize {
		return nil
	}
	p := unsafe.SliceData(pkt)
	for i := range s.placed {
		if x := &s.placed[i]; x.head == p && !x.used {
			x.used = true
			return x
		}
	}
	return nil
}

// inPlace reports whether fragment h of m, received in place as x, is
// still the owned message's and its region still m's: then its bytes are
// where they belong. p.rxmu is held.
func (d *dispatcher) inPlace(x *placedDg, m *mcb, h *wire.Header) bool {
	if x.gen != d.placeGen.Load() || x.m != m || m.owner == nil || m.data == nil || len(x.body) == 0 {
		return false
	}
	off := uint64(h.FragIndex) * uint64(m.fragSize)
	if off+uint64(len(x.body)) > uint64(len(m.data)) {
		return false
	}
	return unsafe.SliceData(m.data[off:]) == unsafe.SliceData(x.body)
}

// notePlaced records that fragment idx of m (from p) was placed into an
// owned receive's buffer, through port d: the message to expect next.
// p.rxmu is held.
func (d *dispatcher) notePlaced(p *peer, m *mcb, idx uint32) {
	m.unexpectOther(d) // its fragments come through this port too
	if d.pl.placer == nil || m.data == nil {
		return
	}
	s := &d.pl
	s.lastP, s.lastM, s.lastID, s.lastFrag, s.lastTotal = p, m, m.msgID, idx, m.total
}

// expect tells the port where the next fragments of the message last
// placed into are to go, or withdraws what it was told after the last
// batch; after a large message, it asks the port (fabric.Leader) to show
// it the head of the next datagram before receiving it (lead). The
// caller holds the token.
func (d *dispatcher) expect() {
	s := &d.pl
	if s.placer == nil {
		return
	}
	// The batch's datagrams received in place were all handled (the
	// port returns them first); any it holds back for the next call
	// (behind a GRO buffer) are then taken for short and dropped.
	clear(s.placed)
	s.placed = s.placed[:0]
	p, m := s.lastP, s.lastM
	s.lastP, s.lastM = nil, nil
	s.reset()
	if p != nil {
		p.rxmu.Lock()
		if p.rx.inprog[s.lastID] == m && m.owner != nil && m.data != nil && uint64(len(m.data)) >= m.total {
			m.unexpectOther(d)
			s.regionsLocked(m, s.lastFrag+1, d.fab.BatchSize())
		}
		d.tellLocked(m)
		p.rxmu.Unlock()
	} else {
		d.tellLocked(nil)
	}
	if s.leader != nil && s.lastTotal >= leadMin {
		s.leader.Lead(s.leadFn)
	}
}

// reset forgets the expectations made for the last receive.
func (s *placingState) reset() {
	clear(s.exp)
	s.exp = s.exp[:0]
	clear(s.regions)
	s.regions = s.regions[:0]
}

// regionsLocked expects the fragments of m from index from on that have
// not arrived, up to limit of them. m is owned and its peer's rxmu held.
func (s *placingState) regionsLocked(m *mcb, from uint32, limit int) {
	for idx := from; idx < m.nfrag && len(s.exp) < limit; idx++ {
		if m.hasFrag(idx) {
			continue
		}
		off := uint64(idx) * uint64(m.fragSize)
		n := wire.FragLen(m.total, m.fragSize, idx)
		if n == 0 {
			continue
		}
		s.exp = append(s.exp, expected{srcProc: uint32(m.key.srcProc), msgID: m.msgID, frag: idx, m: m})
		s.regions = append(s.regions, m.data[off:off+n:off+n])
	}
}

// tellLocked tells the port the expectations made (of m's fragments), or
// withdraws those it holds when none were. m's peer's rxmu is held.
func (d *dispatcher) tellLocked(m *mcb) {
	s := &d.pl
	if len(s.exp) > 0 {
		m.expBy = d
		s.expGen = d.placeGen.Load()
		s.placer.Expect(wire.HeaderSize, s.regions, s.fitsFn)
		s.live = true
	} else if s.live {
		s.placer.Expect(0, nil, nil)
		s.live = false
	}
}

// leadMin is the smallest message after which the port is asked to show
// the head of the next datagram before receiving it: a look costs a
// system call, which copying a fragment of 32 KiB costs several times.
const leadMin = 32 << 10

// lead is shown the head of the next datagram (n bytes in all) before the
// port receives it, after a large message (expect). When it is the first
// fragment of a large message that a posted receive is waiting for, the
// message is started and its receive claimed now, as its first fragment
// would do, so that the fragment itself, and those after it, are
// received in place. The datagram is then handled as any other (it may
// yet be dropped: the message then waits for its fragments to be sent
// again, as for a fragment lost). Anything else is left to the handling
// of the datagram. It runs within the port's receive, on the goroutine
// holding the token.
func (d *dispatcher) lead(dg []byte, n int) {
	e := d.e
	// Asked again only once a large message is placed into again.
	d.pl.lastTotal = 0
	h, err := wire.DecodeHead(dg, n, e.cfg.JobKey)
	if err != nil || !d.protected || h.Kind != wire.Data || h.Flags&(wire.FlagReliable|wire.FlagBundle|wire.FlagRendezvous) != 0 ||
		ProcID(h.DstProc) != e.cfg.Proc || h.DstInc != 0 && h.DstInc != e.inc ||
		h.Total < leadMin || int64(h.Total) > e.cfg.MaxMessage {
		return
	}
	nfrag := wire.FragCount(h.Total, h.FragSize)
	if nfrag > 1 && h.FragSize < minFragSize {
		return
	}
	p := e.peer(ProcID(h.SrcProc))
	if p == nil || h.SrcInc != p.inc.Load() {
		return
	}
	p.rxmu.Lock()
	defer p.rxmu.Unlock()
	rx := &p.rx
	if rx.silent || rx.has(h.Seq) || h.Seq >= rx.cum+rx.window() || rx.finished(h.MsgID) || rx.inprog[h.MsgID] != nil {
		return
	}
	m := e.table.getMCB(nil)
	if m == nil {
		return
	}
	m.key = key{ProcID(h.SrcProc), ThreadID(h.SrcThread), ThreadID(h.DstThread), Tag(h.Tag)}
	m.msgID = h.MsgID
	m.rndv = false
	m.total = h.Total
	if e.claimPostedLocked(p, m, false) == nil {
		e.pool.put(m)
		return
	}
	m.start(h.Total, h.FragSize, uint32(nfrag), &e.bufs)
	d.trackLocked(p, m)
	d.c.peekStarts.Add(1)
	s := &d.pl
	s.reset()
	s.regionsLocked(m, 0, d.fab.BatchSize())
	d.tellLocked(m)
}
