package engine

import (
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// post starts request r: a send joins its peer's queue (or goes straight
// into the receive table for a thread of this process), a receive is
// matched against the messages that arrived or waits in the table.
func (e *Engine) post(r *Request) {
	e.flushDeferred()
	r.via = e.drivePort(r)
	if r.kind == sendReq {
		e.isend(r)
	} else {
		e.irecv(r)
	}
}

func (e *Engine) isend(r *Request) {
	if e.closed.Load() {
		r.complete(ErrClosed)
		return
	}
	if int64(len(r.data)) > e.cfg.MaxMessage {
		r.complete(&TooLargeError{Proc: e.cfg.Proc, Size: int64(len(r.data)), Limit: e.cfg.MaxMessage})
		return
	}
	if r.dstProc == e.cfg.Proc {
		e.sendLocal(r)
		return
	}
	p := e.peer(r.dstProc)
	if p == nil {
		if err := e.downErr(r.dstProc); err != nil {
			r.complete(err)
			return
		}
		// Never a peer: most often a member that has not joined yet
		// (a send right after Join, before Directory().Wait).
		r.complete(&UnreachableError{Proc: r.dstProc, Reason: "no route: not a peer of this process (not joined yet, or never added)"})
		return
	}
	if e.rndvSized(r) {
		if a := e.rndvAnnouncement(r, p); a != nil {
			r = a // r waits for its receiver to read it
		}
	}
	// A small posted copy for the reliable path may wait for more to
	// bundle with while the destination is behind (relbundle.go).
	behind := r.pooled && p.reliable.Load() && bundleable(r) && p.deferBehind()
	p.mu.Lock()
	if err := p.tx.failed; err != nil {
		p.mu.Unlock()
		r.complete(err)
		return
	}
	// The clock is read once for the stream and the batch (a read costs
	// about 50 ns), and not at all on the reliable path, where no timer
	// runs: pendingSince 0 there says the time was not read (onTimer).
	var now int64
	rel := p.reliable.Load()
	if p.tx.idle() {
		if !rel {
			now = nanotime()
		}
		p.tx.pendingSince = now
	}
	r.peer = p
	if rel && !behind && p.tx.queue.head == nil && p.shortLocked(r) {
		return // transmitted, p.mu released
	}
	if !rel && p.tx.queue.head == nil && p.soloLocked(r, now) {
		return // transmitted, p.mu released
	}
	p.tx.enqueue(r)
	if rel {
		deferred := p.deferLocked(r, behind)
		p.mu.Unlock()
		if !deferred {
			p.sendReliable(r)
		}
		return
	}
	// With enough in flight, acknowledgements clock out what is queued,
	// many fragments to a system call; otherwise send at once.
	clocked := p.tx.pipe() >= e.cfg.AckEvery
	p.mu.Unlock()
	if !clocked {
		p.pumpAt(now)
	}
}

// soloMax is the largest message the solo path takes (soloLocked): its
// datagram, header and body, is built in the peer's scratch.
const soloMax = 416

// soloLocked transmits r at once on the datagram path, a message of at
// most soloMax bytes posted with nothing queued before it and room in the
// windows: what fillLocked, build and pumpBatch would do for it, without
// a batch, its locks and its loops (the send of a ping-pong, a request, a
// reply). Its datagram, header and body, is written into the peer's
// scratch, so that no transmission reads r's data once p.mu is released.
// It reports false, having done nothing, when r is not such a message or
// another thread transmits to p (xmitMu held); the caller then queues r.
// now is the time if the caller read it, else 0. p.mu is held, and
// released if it reports true.
func (p *peer) soloLocked(r *Request, now int64) bool {
	t := &p.tx
	if len(r.data) > soloMax || r.rndv || t.failed != nil || t.nNeed > 0 || t.probeSeq != 0 || !t.ssBounded ||
		t.pipe() >= min(int(t.cwnd), p.e.cfg.AckEvery) || t.rlen >= t.peerWin {
		return false
	}
	rs := p.routes.Load()
	if rs == nil || len(*rs) == 0 {
		return false
	}
	rt := rs.pick(int64(len(r.data)))
	fragSize := fragSizeFor(uint64(len(r.data)), rt.maxDg-wire.HeaderSize)
	if uint64(len(r.data)) > uint64(fragSize) || !p.xmitMu.TryLock() {
		return false
	}
	if now == 0 {
		now = nanotime()
	}
	if now < t.busyUntil {
		p.xmitMu.Unlock()
		return false
	}
	r.started = true
	r.msgID = t.nextMsgID
	t.nextMsgID++
	r.rt, r.fragSize, r.nfrag, r.nextFrag = rt, fragSize, 1, 1
	if t.rlen == 0 {
		t.progressAt, t.probes = now, 0 // a new flight starts
	}
	seq := t.nextSeq
	t.push(txEntry{seq: seq, req: r, msgID: r.msgID, kind: wire.Data, sentAt: now})
	t.nextSeq++
	at := now + int64(t.rto)
	if pa := t.probeAt(p.e.cfg.AckDelay); pa != 0 {
		at = min(at, max(pa, now))
	}
	p.armTimerLocked(at, now)
	p.mu.Unlock()
	// The acknowledgement the datagram carries is read after the cut,
	// xmitMu held (pumpBatch reads it before: either way it is at least
	// what the receive stream had when the datagram was cut).
	p.rxmu.Lock()
	cum, piggy := p.rx.cum, p.rx.cum > 0 || p.rx.ackPending
	if piggy {
		p.sentDataLocked(cum, now)
	}
	p.rxmu.Unlock()
	h := p.msgHeader(wire.Data, r, r.msgID, seq)
	h.FragSize, h.Total = fragSize, uint64(len(r.data))
	if piggy {
		h.Flags |= wire.FlagAck
		h.AckCum = cum
	}
	if r.ackNow {
		h.Flags |= wire.FlagAckNow
	}
	s := &p.solo
	n := copy(s.buf[wire.HeaderSize:], r.data)
	if rt.disp.protected && !p.e.cfg.SumBodies {
		// A small whole message on a protected route: no checksum at
		// all (see build).
		h.Flags |= wire.FlagBodyUnsummed
		h.EncodeUnsealed(s.buf[:wire.HeaderSize], s.buf[wire.HeaderSize:wire.HeaderSize+n])
	} else {
		h.Encode(s.buf[:wire.HeaderSize], s.buf[wire.HeaderSize:wire.HeaderSize+n])
	}
	s.dg[0] = fabric.Datagram{Head: s.buf[:wire.HeaderSize+n], To: rt.ep}
	p.e.transmit(rt.disp, s.dg[:])
	s.dg[0] = fabric.Datagram{}
	p.xmitMu.Unlock()
	// Work queued meanwhile by a thread that found xmitMu held was left
	// to this one (see pump).
	if p.pumpWanted.Load() {
		p.pump()
	}
	return true
}

// pump transmits what the windows allow: due retransmissions first, then
// new fragments cut from the head of the queue.
//
// Only one thread cuts and transmits for a peer at a time (xmitMu). A
// thread that finds another doing it leaves its part to that one rather
// than wait: it marks the peer wanted, and the transmitting thread looks
// again before it goes. Many threads sending to one process then neither
// park on xmitMu, behind a system call, nor each make a system call of
// their own: what they queued meanwhile leaves in the next batch.
func (p *peer) pump() { p.pumpAt(0) }

// pumpAt is pump with the time the caller has just read (0: none), which
// the first batch uses rather than read the clock again.
func (p *peer) pumpAt(now int64) {
	rs := p.routes.Load()
	if rs == nil {
		return
	}
	p.pumpWanted.Store(true)
	for p.xmitMu.TryLock() {
		// Cleared before cutting: work queued from here on is either
		// in this batch or marks the peer wanted again, which this
		// thread sees once it has let go of xmitMu.
		p.pumpWanted.Store(false)
		more := p.pumpBatch(*rs, now)
		now = 0
		if !more && !p.pumpWanted.Load() {
			return
		}
		p.pumpWanted.Store(true) // a full batch: look again
	}
}

// pumpBatch cuts one batch of datagrams and transmits it, xmitMu held,
// and lets go of xmitMu. It reports whether the batch was full (more may
// be due). now is the time if the caller has just read it, else 0 (a
// caller's time may be older by the wait for the locks, which makes the
// round trips measured from it at most that much longer).
func (p *peer) pumpBatch(rs routeSet, now int64) bool {
	b := p.e.getBatch()
	p.rxmu.Lock()
	b.ackCum, b.piggy = p.rx.cum, p.rx.cum > 0 || p.rx.ackPending
	p.rxmu.Unlock()
	p.mu.Lock()
	if now == 0 {
		now = nanotime()
	}
	p.fillLocked(b, rs, now)
	p.mu.Unlock()
	n := len(b.dgs)
	if n > 0 && b.piggy {
		p.rxmu.Lock()
		p.sentDataLocked(b.ackCum, now)
		p.rxmu.Unlock()
	}
	p.e.transmitRuns(b.ports, b.dgs)
	p.xmitMu.Unlock()
	for _, r := range b.reqs {
		if r.xmitDone() {
			r.finish() // its outcome was decided during the transmission
		}
		if r.refs.Add(-1) == 0 {
			r.free()
		}
	}
	full := b.full()
	p.e.putBatch(b)
	return n > 0 && full
}

// fillLocked adds datagrams to b. p.mu is held.
func (p *peer) fillLocked(b *batch, rs routeSet, now int64) {
	t := &p.tx
	if t.failed != nil {
		return
	}
	if now < t.busyUntil {
		p.armTimerLocked(t.busyUntil, now)
		return
	}
	cwnd := t.window()
	if t.probeSeq != 0 {
		if en := t.find(t.probeSeq); en != nil && en.need {
			p.resendLocked(b, rs, en, now)
		}
		t.probeSeq = 0
	}
	if t.nNeed > 0 {
		for i := 0; i < t.rlen && t.nNeed > 0 && !b.full() && t.pipe() < cwnd; i++ {
			if en := t.at(i); en.need {
				p.resendLocked(b, rs, en, now)
			}
		}
	}
	if t.rlen == 0 {
		t.progressAt, t.probes = now, 0 // a new flight starts
	}
	for !b.full() && t.queue.head != nil && t.pipe() < cwnd && t.rlen < t.peerWin {
		if p.bundleLocked(b, rs, cwnd, now) {
			continue
		}
		r := t.queue.head
		if !r.started {
			r.started = true
			r.msgID = t.nextMsgID
			t.nextMsgID++
			r.rt = rs.pick(int64(len(r.data)))
			r.fragSize = fragSizeFor(uint64(len(r.data)), r.rt.maxDg-wire.HeaderSize)
			r.nfrag = uint32(wire.FragCount(uint64(len(r.data)), r.fragSize))
			c := slowStartCap(r.rt.ssRoom, min(int(r.fragSize), len(r.data)))
			if !t.ssBounded {
				t.ssBounded = true
				if c > 0 && t.ssthresh > c {
					t.ssthresh = c // the first slow start stops short of the socket's room
				}
			}
			t.roomCap = int(c)
			cwnd = t.window()
		}
		t.push(txEntry{seq: t.nextSeq, req: r, msgID: r.msgID, frag: r.nextFrag, kind: wire.Data, sentAt: now})
		t.nextSeq++
		r.nextFrag++
		if r.nextFrag == r.nfrag {
			t.queue.unlink(nil, r)
		}
		p.build(b, r.rt, t.at(t.rlen-1))
	}
	if t.rlen > 0 {
		at := now + int64(t.rto)
		if pa := t.probeAt(p.e.cfg.AckDelay); pa != 0 {
			at = min(at, max(pa, now))
		}
		p.armTimerLocked(at, now)
	}
}

// resendLocked adds fragment en, due for (re)transmission, to b. p.mu is
// held.
func (p *peer) resendLocked(b *batch, rs routeSet, en *txEntry, now int64) {
	t := &p.tx
	en.need = false
	en.timedOut = false
	t.nNeed--
	rt := en.req.rt
	if !rs.has(rt) {
		rt = rs.repick(int64(len(en.req.data)), int(en.req.fragSize)+wire.HeaderSize)
		en.req.rt = rt
	}
	if en.sentAt != 0 {
		en.retrans = true
		rt.disp.c.retrans.Add(1)
	}
	en.sentAt = now
	p.build(b, rt, en)
}

// fragSizeFor spreads a message of total bytes evenly over the fewest
// fragments of at most limit bytes, so that no message ends in a tiny tail
// fragment: each datagram costs about the same to send and to receive
// whatever its size, and a 64 KiB message over UDP on loopback goes as two
// datagrams of 32 KiB rather than 65,411 and 125 bytes. The fragments of
// a message then differ by at most their count in bytes. A message that
// fits in one fragment keeps the limit as its fragment size.
func fragSizeFor(total uint64, limit int) uint32 {
	if limit <= 0 || total <= uint64(limit) {
		return uint32(max(limit, 0))
	}
	n := (total + uint64(limit) - 1) / uint64(limit)
	return uint32((total + n - 1) / n)
}

// msgHeader is the header a datagram of r's message to this peer starts
// from: sender, destination, tag, message id and sequence number.
func (p *peer) msgHeader(kind wire.Kind, r *Request, msgID, seq uint64) wire.Header {
	e := p.e
	return wire.Header{
		Kind:      kind,
		JobKey:    e.cfg.JobKey,
		Hops:      wire.DefaultHops,
		SrcInc:    e.inc,
		DstInc:    p.inc.Load(),
		SrcProc:   uint32(e.cfg.Proc),
		SrcThread: uint32(r.srcThread),
		DstProc:   uint32(p.proc),
		DstThread: uint32(r.dstThread),
		Tag:       int32(r.tag),
		MsgID:     msgID,
		Seq:       seq,
	}
}

// build encodes the datagram for entry en into b.
func (p *peer) build(b *batch, rt *route, en *txEntry) {
	r := en.req
	h := p.msgHeader(en.kind, r, en.msgID, en.seq)
	if en.retrans {
		h.Flags |= wire.FlagRetransmit
	}
	h.Flags |= rndvFlag(r)
	if b.piggy {
		h.Flags |= wire.FlagAck
		h.AckCum = b.ackCum
	}
	var body []byte
	if en.kind == wire.Data {
		if r.ackNow && en.frag+1 == r.nfrag {
			h.Flags |= wire.FlagAckNow
		}
		if rt.disp.protected && !p.e.cfg.SumBodies {
			h.Flags |= wire.FlagBodyUnsummed
		}
		h.FragSize = r.fragSize
		h.Total = uint64(len(r.data))
		h.FragIndex = en.frag
		off := uint64(en.frag) * uint64(r.fragSize)
		n := wire.FragLen(h.Total, r.fragSize, en.frag)
		body = r.data[off : off+n]
		// The body is read by the transmission after p.mu is released:
		// the request (and a posted copy) stays referenced until then.
		r.refs.Add(1)
		r.xmit.Add(1)
		b.reqs = append(b.reqs, r)
	}
	i := len(b.dgs)
	head := b.heads[i][:]
	if h.Flags&wire.FlagBodyUnsummed != 0 && r.nfrag == 1 && h.Total < ownMin {
		// A small whole message, never placed nor looked at before it
		// is received: nothing verifies a checksum of its header alone
		// (wire.EncodeUnsealed), which costs about 230 instructions.
		h.EncodeUnsealed(head, body)
	} else {
		h.Encode(head, body)
	}
	b.dgs = append(b.dgs, fabric.Datagram{Head: head, Body: body, To: rt.ep})
	b.ports = append(b.ports, rt.disp)
}

// cancelSend withdraws a send: unsent fragments are dropped, fragments in
// flight become aborts, and one abort is queued so that the destination
// discards what it holds of the message.
func (e *Engine) cancelSend(r *Request) {
	if r.rndvID != 0 {
		e.rndvCancel(r)
		return
	}
	p := r.peer
	if p == nil {
		if e.removeLocal(r) {
			r.complete(ErrCanceled)
		}
		return
	}
	p.mu.Lock()
	t := &p.tx
	if r.state.Load() != statePending || r.canceled || r.rel {
		// (A message on the reliable path goes to its end once begun.)
		p.mu.Unlock()
		return
	}
	r.canceled = true
	if r.nextFrag < r.nfrag || !r.started {
		t.queue.remove(r)
	}
	if r.started {
		for i := 0; i < t.rlen; i++ {
			if en := t.at(i); en.req == r && en.kind == wire.Data {
				en.kind = wire.Abort
			}
		}
		t.push(txEntry{seq: t.nextSeq, req: r, msgID: r.msgID, kind: wire.Abort, need: true})
		t.nextSeq++
		t.nNeed++
	}
	p.mu.Unlock()
	r.complete(ErrCanceled)
	p.pump()
}
