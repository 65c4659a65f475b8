package engine

import "github.com/pcor-go/pcor/internal/wire"

// The receive side of a peer's stream: a fragment (or an abort) is
// accepted into the stream, placed into its message, and the messages it
// completes in order are entered into the receive table. All of it runs
// under the peer's rxmu, taken and released in onData alone; the receives
// matched are completed later, once the batch is acknowledged (wakeAll).

// onData accepts a fragment (or an abort) from p.
func (d *dispatcher) onData(p *peer, h *wire.Header, body []byte) {
	p.rxmu.Lock()
	if d.wholeLocked(p, h, body, false) {
		if !d.deferLoneLocked(p) {
			d.touch(p)
		}
	} else {
		d.touch(p)
		d.acceptLocked(p, h, body)
		d.deliverLocked()
	}
	p.rxmu.Unlock()
	d.returnCredit()
}

// deferLoneLocked defers the acknowledgement a whole message from p calls
// for, for data going back to carry it, as flush would at the end of the
// batch, when flush would look at p alone: the datagram is the batch's
// last (handleBatch) and no peer was touched before it. It reports whether
// it did; if not, the caller touches p for flush to decide. Deciding
// here, under the lock the message was taken with, spares flush its own
// look at p under the lock again (a ping-pong's every datagram). p.rxmu
// is held.
func (d *dispatcher) deferLoneLocked(p *peer) bool {
	rx := &p.rx
	if !d.lastDg || len(d.touched) != 0 || !rx.ackPending || rx.ackNow || !rx.ackAsked || p.ctrl() == nil ||
		!p.deferAckLocked(d.keepsDue, d.clock()) {
		return false
	}
	d.c.acksDeferred.Add(1)
	return true
}

// The short path of a receive: a whole message in one datagram, the next
// one expected from its sender (in order in its stream, no earlier one in
// progress or held), most often answering a receive already posted (a
// ping-pong, a request and its reply). It is accepted without a control
// block and without the stream's maps: a posted receive gets the body
// copied into its buffer at once, and is completed with the batch's other
// receives (wakeAll); with none posted, the message is stored as
// unexpected, as on the general path. Anything else (a fragment of a
// larger message, a datagram out of order, duplicate or outside the
// window, received in place, a rendezvous message, one with no control
// block or budget for it) takes the general path, which sees the stream
// as if the short path did not exist.

// wholeLocked takes data datagram h if it is such a message and reports
// whether it did. reliable: it came on the reliable path (no sequence
// numbers to keep). p.rxmu is held.
func (d *dispatcher) wholeLocked(p *peer, h *wire.Header, body []byte, reliable bool) bool {
	rx := &p.rx
	if !d.wholeFits(p, h, body) {
		return false
	}
	if !reliable && (h.Seq != rx.cum || rx.maxSeen > rx.cum) {
		return false
	}
	k := key{ProcID(h.SrcProc), ThreadID(h.SrcThread), ThreadID(h.DstThread), Tag(h.Tag)}
	s := d.e.table.stripe(k.dstThread)
	s.mu.Lock()
	r, ok := d.takeWholeLocked(s, k, h, body)
	s.mu.Unlock()
	if !ok {
		return false // the general path may give it to a receive
	}
	if !reliable {
		// Marked as arrived: in order, so the cumulative point passes it.
		rx.arrivedLocked(h, d.e.cfg.AckEvery)
		rx.cum++
		rx.maxSeen = rx.cum
	}
	rx.nextMsg++
	d.c.msgsRecv.Add(1)
	if r != nil {
		d.fillWhole(r, k, body)
	}
	return true
}

// wholeFits reports whether data datagram h from p is a whole message,
// the next one of its stream, that the short path may take (sequence
// numbers aside). p.rxmu is held.
func (d *dispatcher) wholeFits(p *peer, h *wire.Header, body []byte) bool {
	rx := &p.rx
	return h.Kind == wire.Data && h.FragIndex == 0 && uint64(len(body)) == h.Total && h.Flags&wire.FlagRendezvous == 0 &&
		h.MsgID == rx.nextMsg && !rx.silent && d.pl.cur == nil && len(rx.inprog) == 0 && len(rx.held) == 0 &&
		int64(h.Total) <= d.e.cfg.MaxMessage
}

// takeWholeLocked gives whole message h (key k, its body body) to the
// receive posted for it, taken from the table and returned for fillWhole,
// or stores it as unexpected (r nil). ok is false, and nothing is done,
// if it found no receive and no control block or budget to store it in.
// s, k's stripe, is locked.
func (d *dispatcher) takeWholeLocked(s *stripe, k key, h *wire.Header, body []byte) (r *Request, ok bool) {
	hk := hashKey(k)
	if r = d.e.table.takePosted(s, k, hk); r != nil {
		return r, true
	}
	if d.appendRunLocked(s, k, h, body) {
		return nil, true
	}
	// Unexpected: stored in a control block with budget of its own.
	m := d.unexpectedLocked(s, k, h, body)
	if m == nil {
		return nil, false
	}
	d.e.table.enqueue(s, m, hk)
	return nil, true
}

// fillWhole copies whole message body (key k) into receive r, taken from
// the table for it, and adds r to the batch's completions.
func (d *dispatcher) fillWhole(r *Request, k key, body []byte) {
	var err error
	if r.buf != nil {
		n := copy(r.buf, body)
		if n < len(body) {
			err = ErrTruncated
		} else if n >= ownMin {
			d.c.inPlace.Add(1) // as one that owned its receive (MessagesInPlace)
		}
		r.data = r.buf[:n]
	} else {
		r.data = append(make([]byte, 0, len(body)), body...)
	}
	r.setFrom(k)
	d.wake = append(d.wake, match{r: r, err: err})
}

// unexpectedLocked copies the whole message h (key k) into a control block
// of its own, with its budget reserved, for wholeLocked to store as
// unexpected; nil if it is too large for that or there is no block or
// budget for it. s, k's stripe, is locked: a block its receives gave
// back is taken first.
func (d *dispatcher) unexpectedLocked(s *stripe, k key, h *wire.Header, body []byte) *mcb {
	e := d.e
	if h.Total > chunkSize || h.Total >= ownMin {
		return nil
	}
	m := e.table.takeFree(s)
	if m == nil {
		m = e.table.getMCB(s)
	}
	if m == nil {
		return nil
	}
	if !d.reserve(int64(h.Total)) {
		e.pool.put(m)
		return nil
	}
	m.key, m.msgID, m.reserved = k, h.MsgID, int64(h.Total)
	m.start(h.Total, h.FragSize, 1, &e.bufs)
	m.place(0, body)
	return m
}

// creditChunk is how much receive budget the holder of a port's token
// takes at a time for the small messages of one datagram (a bundle holds
// up to wire.MaxBundled).
const creditChunk = 16 << 10

// reserve takes n bytes of the receive budget as Engine.reserve does, for
// a message the datagram being handled starts, from budget taken ahead
// for the datagram's messages: the budget's counter is written by this
// thread and by the threads that receive the messages and give their
// budget back, and a compare-and-swap on it for every message passed its
// cache line between their CPUs each time. What is left goes back when
// the datagram has been handled (returnCredit). Only the holder of the
// progress token calls it.
func (d *dispatcher) reserve(n int64) bool {
	if d.credit < n {
		take := max(n-d.credit, creditChunk)
		if !d.e.reserve(take) {
			take = n - d.credit
			if !d.e.reserve(take) {
				return false
			}
		}
		d.credit += take
	}
	d.credit -= n
	return true
}

// returnCredit gives back the budget reserve took ahead and did not use.
func (d *dispatcher) returnCredit() {
	if d.credit > 0 {
		n := d.credit
		d.credit = 0
		d.e.release(n)
	}
}

// acceptLocked enters datagram h into p's receive stream, or counts why it
// is dropped. p.rxmu is held.
func (d *dispatcher) acceptLocked(p *peer, h *wire.Header, body []byte) {
	rx := &p.rx
	if rx.silent {
		d.c.drops[DropStale].Add(1)
		return
	}
	rx.arrivedLocked(h, d.e.cfg.AckEvery)
	switch {
	case rx.has(h.Seq):
		rx.ackNow = true // our acknowledgement may have been lost
		d.c.dups.Add(1)
	case h.Seq >= rx.cum+rx.window():
		rx.ackNow = true
		d.c.drops[DropWindow].Add(1)
	case h.Kind == wire.Abort:
		d.abortLocked(p, h)
	case rx.finished(h.MsgID):
		rx.mark(h.Seq)
		d.c.dups.Add(1)
	default:
		d.fragmentLocked(p, h, body)
	}
}

// arrivedLocked notes an arrival for the acknowledgement it calls for.
// The peer's rxmu is held.
func (rx *rxStream) arrivedLocked(h *wire.Header, ackEvery int) {
	rx.ackPending = true
	rx.unacked++
	if rx.unacked >= ackEvery || h.Flags&wire.FlagRetransmit != 0 || h.Kind == wire.Abort {
		rx.ackNow = true
	}
	if h.Flags&wire.FlagAckNow != 0 {
		rx.ackAsked = true // at once, unless a reply is likely to carry it
	}
	rx.echo = h.Seq // the newest arrival, for a clean round-trip sample
}

// abortLocked ends message h.MsgID, withdrawn by its sender: what arrived
// of it is dropped and a receive that owned it waits for another message.
// p.rxmu is held.
func (d *dispatcher) abortLocked(p *peer, h *wire.Header) {
	e, rx := d.e, &p.rx
	if !rx.finished(h.MsgID) {
		if m := rx.inprog[h.MsgID]; m != nil {
			delete(rx.inprog, h.MsgID)
			if m.owner != nil {
				e.releaseOwnerLocked(m, nil)
			}
			e.freeMCB(m)
		}
		d.delivered = rx.complete(h.MsgID, nil, d.delivered)
	}
	rx.mark(h.Seq)
}

// fragmentLocked places a data fragment into its message. p.rxmu is held.
func (d *dispatcher) fragmentLocked(p *peer, h *wire.Header, body []byte) {
	rx := &p.rx
	m := rx.inprog[h.MsgID]
	fresh := m == nil
	x := d.pl.cur
	if x != nil && (fresh || !m.fits(h) || (!m.hasFrag(h.FragIndex) && !d.inPlace(x, m, h))) {
		// Received in place into a buffer its receive has let go since:
		// dropped unread, as if lost.
		d.c.placedLost.Add(1)
		return
	}
	if fresh {
		if m = d.startMessageLocked(p, h); m == nil {
			return
		}
	} else if !m.fits(h) {
		d.c.drops[DropInconsistent].Add(1)
		return
	}
	if m.hasFrag(h.FragIndex) {
		rx.mark(h.Seq)
		d.c.dups.Add(1)
		return
	}
	if !d.roomLocked(p, m, h.FragIndex, uint64(len(body))) {
		// Not marked as arrived: the sender pauses and sends it again.
		if fresh {
			delete(rx.inprog, h.MsgID)
			d.e.freeMCB(m)
		}
		d.busy = append(d.busy, busyReply{p, *h})
		return
	}
	var complete bool
	if x != nil {
		complete = m.arrived(h.FragIndex, uint64(len(body)))
		d.c.fragsInPlace.Add(1)
	} else {
		complete = m.place(h.FragIndex, body)
	}
	if m.owner != nil {
		d.notePlaced(p, m, h.FragIndex)
	}
	rx.mark(h.Seq)
	if !rx.inOrder() {
		rx.ackNow = true
	}
	if complete {
		delete(rx.inprog, h.MsgID)
		d.delivered = rx.complete(h.MsgID, m, d.delivered)
	}
}

// startMessageLocked takes a control block for the first fragment of a
// message to arrive, and a posted receive to own it (from ownMin bytes),
// or else for a small message (at most one chunk) its receive budget; a
// large one takes budget chunk by chunk in roomLocked, or is owned there.
// Without them it queues a BUSY reply and returns nil; a message over the
// size limit or with impossible geometry is dropped. p.rxmu is held.
func (d *dispatcher) startMessageLocked(p *peer, h *wire.Header) *mcb {
	m := d.newMessageLocked(p, h)
	if m != nil {
		d.trackLocked(p, m)
	}
	return m
}

// trackLocked enters m, started, among p's messages in progress (until
// its last fragment comes). p.rxmu is held.
func (d *dispatcher) trackLocked(p *peer, m *mcb) {
	p.rx.inprog[m.msgID] = m
	p.armWatchLocked(d.e.cfg.UnreachableTimeout)
}

// newMessageLocked is startMessageLocked without entering the message
// among those in progress.
func (d *dispatcher) newMessageLocked(p *peer, h *wire.Header) *mcb {
	e := d.e
	if int64(h.Total) > e.cfg.MaxMessage {
		// Refused, not marked as arrived: the sender fails the message
		// and sends this sequence number again as an abort.
		d.c.drops[DropTooLarge].Add(1)
		d.refuse = append(d.refuse, busyReply{p, *h})
		return nil
	}
	nfrag := wire.FragCount(h.Total, h.FragSize)
	if nfrag > 1 && h.FragSize < minFragSize {
		d.c.drops[DropLength].Add(1)
		return nil
	}
	k := key{ProcID(h.SrcProc), ThreadID(h.SrcThread), ThreadID(h.DstThread), Tag(h.Tag)}
	m := e.table.getMCB(nil)
	if m == nil {
		d.busy = append(d.busy, busyReply{p, *h})
		return nil
	}
	m.key = k
	m.msgID = h.MsgID
	m.rndv = h.Flags&wire.FlagRendezvous != 0 // an announcement: never owned
	m.total = h.Total
	switch {
	case h.Total >= ownMin && !m.rndv && e.claimPostedLocked(p, m, false) != nil:
	case h.Total > chunkSize:
		// Budget is taken chunk by chunk as fragments arrive (roomLocked).
	case d.reserve(int64(h.Total)):
		m.reserved = int64(h.Total)
	case !m.rndv && e.claimPostedLocked(p, m, true) != nil:
		// No budget left, but a receive is waiting for it.
	default:
		e.pool.put(m)
		d.busy = append(d.busy, busyReply{p, *h})
		return nil
	}
	m.start(h.Total, h.FragSize, uint32(nfrag), &e.bufs)
	return m
}

// roomLocked makes room for fragment idx (n bytes) of message m, which
// has none: a message stored in chunks of its own takes budget for the
// chunks the fragment starts or, with the budget spent, is handed to a
// posted receive, which then owns it. It reports false when there is no
// room. p.rxmu is held.
func (d *dispatcher) roomLocked(p *peer, m *mcb, idx uint32, n uint64) bool {
	if m.owner != nil {
		return true // the receive's buffer, or storage charged to the receive
	}
	k := m.newChunks(idx, n)
	if k == 0 {
		return true
	}
	if d.e.reserve(k * chunkSize) {
		m.reserved += k * chunkSize
		return true
	}
	return d.e.claimPostedLocked(p, m, true) != nil
}

// fits reports whether a later fragment h agrees with the message's first.
func (m *mcb) fits(h *wire.Header) bool {
	return m.total == h.Total && m.fragSize == h.FragSize && m.key.srcThread == ThreadID(h.SrcThread) &&
		m.key.dstThread == ThreadID(h.DstThread) && m.key.tag == Tag(h.Tag)
}

// deliverLocked enters the messages completed in order into the receive
// table; the receives they match are completed by wakeAll. The peer's
// rxmu is held.
func (d *dispatcher) deliverLocked() {
	e := d.e
	for _, m := range d.delivered {
		d.c.msgsRecv.Add(1)
		if m.rndv && d.rndvControlLocked(e.peer(m.key.srcProc), m) {
			continue
		}
		if m.owner != nil {
			m.owner.ownerPeer.Store(nil) // no longer cancellable
			d.wake = append(d.wake, match{r: m.owner, m: m})
			continue
		}
		d.deliverOneLocked(m, m.key, hashKey(m.key))
	}
	clear(d.delivered)
	d.delivered = d.delivered[:0]
}

// deliverOneLocked gives message m (key k, hashed hk), complete and owned
// by no receive, to the receive posted for it or stores it as unexpected.
// The sender's peer's rxmu is held.
func (d *dispatcher) deliverOneLocked(m *mcb, k key, hk uint64) {
	e := d.e
	s := e.table.stripe(k.dstThread)
	s.mu.Lock()
	if r := e.table.takePosted(s, k, hk); r != nil {
		s.mu.Unlock()
		d.wake = append(d.wake, match{r: r, m: m})
	} else {
		e.table.enqueue(s, m, hk)
		s.mu.Unlock()
	}
}

// match is a completed message and the receive it goes to; a nil m is a
// receive already filled (wholeLocked), to complete with err.
type match struct {
	r   *Request
	m   *mcb
	err error
}
