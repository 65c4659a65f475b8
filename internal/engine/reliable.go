package engine

import (
	"runtime"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/osyield"
	"github.com/pcor-go/pcor/internal/wire"
)

// The path for reliable fabrics.
//
// A port whose fabric is reliable (every datagram Send took arrives once
// and in order, unless the destination is lost), protected (the bytes
// arrive as sent) and able to hold datagrams back (fabric.Holder) needs
// none of the datagram protocol: a peer all of whose routes are direct on
// one such port is sent to without sequence numbers, acknowledgements,
// retransmission timers or windows, and without a checksum of the body.
// Any fabric offering fabric.Reliable|fabric.Protected and fabric.Holder
// takes this path: shared memory does, and so can RDMA's reliable
// connections (holding back by not reposting receives, which the peer
// sees as receiver-not-ready).
//
// Sending. The thread that posts a message cuts it and hands every
// fragment to the fabric itself, in order, marked wire.FlagReliable; the
// fabric waits while the destination's queue is full, so a slow receiver
// slows the sender. The message completes when the fabric has taken its
// last fragment: the data may then be reused, and the destination will
// receive it unless it dies. A blocking Send (Endpoint.Send) returns once
// the destination has also handled it (fabric.Flusher): the message is
// then accepted, as a datagram-path Send is once acknowledged. One thread at a time transmits to a peer
// (peer.sendMu); a thread that finds another transmitting leaves its
// message queued, and the one transmitting sends it after its own, so
// messages leave in the order they were posted. Small messages queued
// together leave as one bundle, and a small posted copy may wait in the
// queue for more while the destination is behind (relbundle.go). A message
// whose transmission has begun runs to its end: cancelling it has no
// effect (except a rendezvous send's, whose announcement is withdrawn from
// the receiver, see rndv.go).
//
// Receiving. Fragments are placed into their message and completed
// messages are entered into the receive table in message order, as on the
// datagram path, but nothing is acknowledged and nothing waits for a
// retransmission. A message that finds no control block or receive budget
// is not refused (its sender kept no copy): its first fragment is held in
// the fabric (fabric.Holder), which stops reading from that sender only,
// and it is taken again once budget is released or a receive is posted.
// A message larger than MaxMessage is refused as on the datagram path;
// its sender has already completed it, so only this process counts it
// (DropTooLarge).
//
// Loss. A destination that dies or closes is reported by the fabric
// (fabric.LostPeers): sends to it fail with a PeerDownError, as do the
// receives waiting on a message from it. A sender that dies in the middle
// of a message is given up after the unreachable timeout, as on the
// datagram path.
//
// Closing. Close waits (at most the unreachable timeout, no more than two
// seconds) until the destinations have handled what was sent to them
// (fabric.Flusher), so that a process that posts its last message and
// leaves is not found gone before the message is read.

// reliableCaps are the capabilities a port needs for the reliable path.
const reliableCaps = fabric.Reliable | fabric.Protected

// adoptCaps reads what the port offers when the engine adds it.
func (d *dispatcher) adoptCaps() {
	caps := fabric.CapsOf(d.fab)
	d.protected = caps.Has(fabric.Protected)
	d.initPlacing()
	if h, ok := d.fab.(fabric.Holder); ok && caps.Has(reliableCaps) {
		d.holder = h
	}
	if lp, ok := d.fab.(fabric.LostPeers); ok && caps.Has(fabric.PeerLost) {
		lp.OnPeerLost(func(ep fabric.Endpoint) { d.e.peerLost(d, ep) })
	}
	if k, ok := d.fab.(fabric.JobKeyed); ok {
		k.SetJobKey(d.e.cfg.JobKey)
	}
}

// reliableRoutes reports whether every route of rs is a direct one on the
// same port of the reliable path.
func reliableRoutes(rs routeSet, direct bool) bool {
	if !direct || len(rs) == 0 || rs[0].disp.holder == nil {
		return false
	}
	for _, r := range rs[1:] {
		if r.disp != rs[0].disp {
			return false
		}
	}
	return true
}

// inlineLimit is the largest message an Isend or Post transmits before it
// returns; a larger one is transmitted by a goroutine, so that Isend does
// not wait for the destination to make room. A blocking Send always
// transmits its message itself.
const inlineLimit = 256 << 10

// sendReliable transmits r, queued on the reliable path.
func (p *peer) sendReliable(r *Request) {
	if r.ackNow || len(r.data) <= inlineLimit {
		p.pumpReliable()
		return
	}
	e := p.e
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		p.pumpReliable()
	}()
}

// pumpReliable transmits the peer's queued messages on the reliable path
// unless another thread does.
func (p *peer) pumpReliable() {
	for p.sendMu.TryLock() {
		p.sending.Store(true)
		p.transmitQueuedLocked()
		p.sending.Store(false)
		p.sendMu.Unlock()
		// A message may have been queued after the last look and before
		// the unlock, by a thread that found sendMu held and left it to
		// this one: look again.
		if !p.reliableQueued() {
			return
		}
	}
}

// reliableQueued reports whether the head of the queue waits to be
// transmitted on the reliable path.
func (p *peer) reliableQueued() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reliableHeadLocked() != nil || p.openWaitsLocked()
}

// reliableHeadLocked returns the head of the queue if it waits to be
// transmitted on the reliable path: nil if the queue is empty or its head
// belongs to the datagram path. p.mu is held.
func (p *peer) reliableHeadLocked() *Request {
	r := p.tx.queue.head
	if r == nil || r.started || p.tx.failed != nil || !p.reliable.Load() {
		return nil
	}
	return r
}

// transmitQueuedLocked sends the queued messages one after the other.
// p.sendMu is held.
func (p *peer) transmitQueuedLocked() {
	e := p.e
	b := e.getBatch()
	defer e.putBatch(b)
	for {
		p.mu.Lock()
		if p.openWaitsLocked() {
			// The open bundle's messages go before anything queued
			// (openbundle.go).
			if !p.transmitOpenLocked(b) {
				return
			}
			continue
		}
		r := p.reliableHeadLocked()
		if r == nil {
			p.mu.Unlock()
			return
		}
		t := &p.tx
		rs := p.routes.Load()
		if n, rt := bundleRun(*rs, r, wire.MaxBundled, true); n >= 2 {
			if !p.transmitBundleLocked(b, r, n, rt) {
				return
			}
			continue
		}
		t.queue.unlink(nil, r)
		p.undeferLocked()
		r.started, r.rel = true, true
		r.msgID = t.nextMsgID
		t.nextMsgID++
		r.rt = rs.pick(int64(len(r.data)))
		r.fragSize = fragSizeFor(uint64(len(r.data)), r.rt.maxDg-wire.HeaderSize)
		r.nfrag = uint32(wire.FragCount(uint64(len(r.data)), r.fragSize))
		p.mu.Unlock()
		lost := p.lost.Load()
		if !p.settleReliable([]*Request{r}, lost, p.transmitMessage(b, r)) {
			return
		}
	}
}

// settleReliable completes reqs, the messages of one transmission on the
// reliable path in order, after it ended with err; lost is p.lost from
// before it began. If the last one's sender waits for the destination to
// take it (a blocking Send), it waits for that first. It reports whether
// they succeeded. reqs is the caller's scratch: it is overwritten.
func (p *peer) settleReliable(reqs []*Request, lost uint32, err error) bool {
	last := reqs[len(reqs)-1]
	taken := false
	if err == nil && last.ackNow {
		taken, err = p.awaitTaken(last)
	}
	if err == nil && !taken && p.lost.Load() != lost {
		// The fabric found the destination gone while the messages
		// left: some may have been dropped. (A peer removed for another
		// reason after the fabric took them has them: that is success;
		// so are messages the fabric says the destination took before
		// it went.)
		reason := "its port went away during the send"
		if l := p.lostErr.Load(); l != nil {
			reason += " (" + l.Reason + ")"
		}
		err = &PeerDownError{Proc: p.proc, Reason: reason}
	}
	// Once complete, a request may be reused by its owner: take what is
	// needed of it first.
	// The completions are counted, and the requests freed, once for all.
	c := &last.rt.disp.c
	e := p.e
	sent, freed := uint64(0), int64(0)
	k := 0
	for _, q := range reqs {
		if q.complete(err) && err == nil {
			sent++
		}
		if q.refs.Load() == 0 {
			if n := q.unpost(); n != 0 {
				freed += n
				reqs[k] = q
				k++
			}
		}
	}
	if sent != 0 {
		c.msgsSent.Add(sent)
	}
	if k != 0 {
		e.postedBytes.Add(-freed)
		e.posts.putAll(reqs[:k], postsKept)
	}
	return err == nil
}

// shortLocked transmits r at once, a message of one datagram posted while
// nothing is queued for p and no thread transmits to it: the short path
// of a send on the reliable path, which takes r straight to the fabric
// without queueing it, the batch and the pass of the queue that
// transmitQueuedLocked makes. It reports false, having done nothing, when
// r needs the queue (more than one datagram, another thread transmitting,
// the peer failed, messages in the open bundle, which go first); p.mu is
// held, and released when it reports true.
func (p *peer) shortLocked(r *Request) bool {
	t := &p.tx
	rs := p.routes.Load()
	if t.failed != nil || rs == nil || len(*rs) == 0 {
		return false
	}
	rt := rs.pick(int64(len(r.data)))
	fragSize := fragSizeFor(uint64(len(r.data)), rt.maxDg-wire.HeaderSize)
	if fragSize == 0 || wire.FragCount(uint64(len(r.data)), fragSize) != 1 || p.ob.n != 0 || !p.sendMu.TryLock() {
		return false
	}
	if t.deferred != 0 {
		p.undeferLocked()
	}
	r.started, r.rel = true, true
	r.msgID = t.nextMsgID
	t.nextMsgID++
	r.rt, r.fragSize, r.nfrag = rt, fragSize, 1
	p.mu.Unlock()
	p.sending.Store(true)
	lost := p.lost.Load()
	reqs := [1]*Request{r}
	p.settleReliable(reqs[:], lost, p.transmitOne(r))
	p.sending.Store(false)
	p.sendMu.Unlock()
	// A message queued meanwhile by a thread that found sendMu held was
	// left to this one (see pumpReliable).
	if p.reliableQueued() {
		p.pumpReliable()
	}
	return true
}

// transmitOne hands r, a message of one datagram, to its route's fabric,
// its header encoded in the peer's scratch. p.sendMu is held.
func (p *peer) transmitOne(r *Request) error {
	h := p.reliableHeader(r)
	h.BodyLen = uint32(len(r.data))
	s := &p.short
	h.Put(s.head[:])
	s.dg[0] = fabric.Datagram{Head: s.head[:], Body: r.data, To: r.rt.ep}
	err := p.e.transmit(r.rt.disp, s.dg[:])
	s.dg[0] = fabric.Datagram{} // holds no caller's data
	r.nextFrag = 1
	if err != nil {
		return &PeerDownError{Proc: p.proc, Reason: err.Error()}
	}
	return nil
}

// reliableHeader is the header of r's datagrams on the reliable path but
// for the fragment's index and length.
//
// Its checksum is left zero (wire.Header.Put, not Encode): the reliable
// path runs on protected fabrics only, whose receivers do not verify a
// checksum of the header alone (wire.DecodeProtected), and a datagram
// marked wire.FlagReliable that reaches any other port is dropped there
// whatever its checksum (onReliableData).
func (p *peer) reliableHeader(r *Request) wire.Header {
	e := p.e
	return wire.Header{
		Kind:      wire.Data,
		Flags:     wire.FlagReliable | rndvFlag(r),
		JobKey:    e.cfg.JobKey,
		Hops:      wire.DefaultHops,
		SrcInc:    e.inc,
		DstInc:    p.inc.Load(),
		SrcProc:   uint32(e.cfg.Proc),
		SrcThread: uint32(r.srcThread),
		DstProc:   uint32(p.proc),
		DstThread: uint32(r.dstThread),
		Tag:       int32(r.tag),
		MsgID:     r.msgID,
		FragSize:  r.fragSize,
		Total:     uint64(len(r.data)),
	}
}

// transmitMessage hands every fragment of r to its route's fabric, a
// batch at a time.
func (p *peer) transmitMessage(b *batch, r *Request) error {
	e := p.e
	rt := r.rt
	h := p.reliableHeader(r)
	for r.nextFrag < r.nfrag {
		b.reset()
		for r.nextFrag < r.nfrag && !b.full() {
			h.FragIndex = r.nextFrag
			off := uint64(r.nextFrag) * uint64(r.fragSize)
			body := r.data[off : off+wire.FragLen(h.Total, r.fragSize, r.nextFrag)]
			i := len(b.dgs)
			head := b.heads[i][:]
			h.BodyLen = uint32(len(body))
			h.Put(head) // no checksum: see reliableHeader
			b.dgs = append(b.dgs, fabric.Datagram{Head: head, Body: body, To: rt.ep})
			r.nextFrag++
		}
		if err := e.transmit(rt.disp, b.dgs); err != nil {
			return &PeerDownError{Proc: p.proc, Reason: err.Error()}
		}
	}
	return nil
}

// awaitTaken waits until the destination has handled what was sent to it
// on r's route, r included: a blocking Send returns once its message is
// accepted (in the receive table or a posted receive), as on the datagram
// path, so that a process that sends its last message and leaves is not
// found gone before the message is received. It polls for driveSpin, then
// sleeps until the destination hands room back where the fabric can
// (takenWaiter). The wait ends early, as a
// success (the message is in the destination's memory), when r is
// cancelled or the engine closes. taken reports whether the fabric said
// the destination took it.
func (p *peer) awaitTaken(r *Request) (taken bool, err error) {
	d := r.rt.disp
	f, ok := d.fab.(fabric.Flusher)
	if !ok {
		return false, nil
	}
	tw, _ := f.(takenWaiter)
	// While it spins, the thread drives the port, taking it from the
	// dispatcher if no other thread waits on it (as a receive's wait
	// does) once the message is not taken at the first look: the answer
	// to the message often comes before the destination is seen to take
	// it, and left to a dispatcher asleep in the fabric it costs a
	// wake-up, after which the receive that follows finds it there, never
	// waits and so never takes the port back (a state that holds once
	// entered: every answer through the dispatcher).
	led := false
	defer func() {
		if led {
			d.letGo()
		}
	}()
	crowded := crowdedDriver() // see driveFor
	defer drivers.Add(-1)
	// The clock is read every 8th look (a read costs more than a look
	// at the ring and a poll of the port), the spin counted from the
	// first read.
	var start int64
	spinning := true
	for i := 0; ; i++ {
		taken, err := f.Taken(r.rt.ep)
		if err != nil {
			return false, &PeerDownError{Proc: p.proc, Reason: err.Error()}
		}
		if taken || p.e.closed.Load() {
			return taken, nil
		}
		if i%64 == 63 {
			p.mu.Lock()
			canceled := r.canceled
			p.mu.Unlock()
			if canceled {
				return false, nil
			}
		}
		if i == 0 && d.prog.waiter != nil {
			led = d.tryLead()
		}
		d.helpDrive(led)
		if i%8 == 7 {
			now := nanotime()
			if start == 0 {
				start = now
			}
			spinning = now-start < int64(driveSpin)
		}
		if led && !spinning {
			d.letGo()
			led = false
		}
		switch {
		case spinning:
			// As a driving thread's spin does (driveSpin): the
			// destination may wait for this very CPU to take the
			// message, and runtime.Gosched does not give it up.
			if d.mode == Blocking {
				osyield.Yield()
			}
			if i%64 == 63 || crowded {
				runtime.Gosched()
			}
		case tw != nil:
			// Asleep, this thread does not drive the port: one nobody
			// drives goes back to the dispatcher after progressGrace
			// (the destination may itself wait for this process to
			// take a message). Handing it over at once costs the next
			// receive a wake-up of the dispatcher, which can keep both
			// processes' waits beyond their spins.
			tw.WaitTaken(r.rt.ep, driveSlice)
		default:
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// takenWaiter is implemented by Flushers that can sleep until the
// destination takes what was sent to it (the shared-memory port, on a
// futex its receiver wakes when it hands room back). WaitTaken returns
// once it may have been taken, at the latest after d; the caller asks
// Taken.
type takenWaiter interface {
	WaitTaken(to fabric.Endpoint, d time.Duration)
}

// helpDrive handles what waits in the port if the caller holds the token
// (led) or nobody drives the port, so that a thread waiting for its
// destination to take a message also takes what the destination sends
// meanwhile (two processes sending to each other at once would otherwise
// wait for their dispatchers).
func (d *dispatcher) helpDrive(led bool) {
	pr := &d.prog
	if !led && pr.state.Load() != tokFree || !pr.drive.TryLock() {
		return
	}
	if k, err := d.fab.Poll(pr.msgs); k > 0 && err == nil {
		if led {
			pr.threadBatches.Add(1)
		}
		d.keepsDue = false
		d.handleBatch(pr.msgs[:k])
	}
	pr.drive.Unlock()
}

// peerLost fails the peers that port d reached at ep, which its fabric
// found gone: their sends, and the receives waiting on them.
func (e *Engine) peerLost(d *dispatcher, ep fabric.Endpoint) {
	s := ep.String()
	reason := "its " + d.fab.Kind() + " port is gone"
	if lc, ok := d.fab.(fabric.LostCause); ok {
		if err := lc.PeerLostCause(ep); err != nil {
			reason += ": " + err.Error()
		}
	}
	for _, p := range *e.peers.Load() {
		rs := p.routes.Load()
		if rs == nil {
			continue
		}
		for _, rt := range *rs {
			if rt.disp == d && rt.ep.String() == s {
				err := &PeerDownError{Proc: p.proc, Reason: reason}
				p.lost.Add(1)
				p.lostErr.Store(err)
				p.fail(err)
				e.failPostedNamed(p.proc, err)
				break
			}
		}
	}
}

// onReliableData accepts a fragment, or a bundle (relbundle.go), sent on
// the reliable path. A fragment that starts a message there is no room for
// yet sets d.held: the batch's handler gives it back to the fabric.
func (d *dispatcher) onReliableData(p *peer, h *wire.Header, body []byte) {
	if d.holder == nil || h.Kind != wire.Data {
		// Only a port of the reliable path (protected, so the body needs
		// no checksum) may carry these.
		d.c.drops[DropChecksum].Add(1)
		return
	}
	if h.Flags&wire.FlagBundle != 0 {
		d.onReliableBundle(p, h, body)
		d.returnCredit()
		return
	}
	p.rxmu.Lock()
	if !d.wholeLocked(p, h, body, true) {
		d.reliableLocked(p, h, body)
		d.deliverLocked()
	}
	p.rx.heldBack = d.held
	p.rxmu.Unlock()
	d.returnCredit()
}

// reliableLocked accepts one fragment of the reliable path. p.rxmu is
// held; the caller delivers what it completed.
func (d *dispatcher) reliableLocked(p *peer, h *wire.Header, body []byte) {
	rx := &p.rx
	switch m := rx.inprog[h.MsgID]; {
	case rx.silent:
		d.c.drops[DropStale].Add(1)
	case rx.finished(h.MsgID):
		// The rest of a message refused as too large.
		d.c.drops[DropTooLarge].Add(1)
	case m == nil:
		nb, nr := len(d.busy), len(d.refuse)
		if m = d.newMessageLocked(p, h); m != nil && m.nfrag == 1 && (m.data != nil || m.owner != nil) {
			// A message of one fragment, with its storage: complete at
			// once, never in progress (roomLocked has nothing to take).
			m.place(h.FragIndex, body)
			d.delivered = rx.complete(h.MsgID, m, d.delivered)
		} else if m != nil {
			d.trackLocked(p, m)
			d.placeReliableLocked(p, m, h, body)
		} else if len(d.busy) > nb {
			// No room yet: wait in the fabric rather than refuse.
			d.busy = d.busy[:nb]
			d.held = true
		} else if len(d.refuse) > nr {
			// Refused for good: pass over the message.
			d.delivered = rx.complete(h.MsgID, nil, d.delivered)
		}
	case !m.fits(h):
		d.c.drops[DropInconsistent].Add(1)
	case m.hasFrag(h.FragIndex):
		d.c.dups.Add(1)
	default:
		d.placeReliableLocked(p, m, h, body)
	}
}

// placeReliableLocked stores a fragment and completes its message with
// the last one. p.rxmu is held.
func (d *dispatcher) placeReliableLocked(p *peer, m *mcb, h *wire.Header, body []byte) {
	if !d.roomLocked(p, m, h.FragIndex, uint64(len(body))) {
		d.held = true // no budget for its chunk: wait in the fabric
		return
	}
	if m.place(h.FragIndex, body) {
		delete(p.rx.inprog, h.MsgID)
		d.delivered = p.rx.complete(h.MsgID, m, d.delivered)
	}
}

// holdUnknown decides about a reliable-path datagram from a process this
// one does not know yet: a new member whose first message outran its
// announcement. Nothing would send it again, so it waits in the fabric
// (d.held) until routes change; one from a process removed is dropped.
func (d *dispatcher) holdUnknown(h *wire.Header) bool {
	if d.holder == nil || d.e.downErr(ProcID(h.SrcProc)) != nil {
		return false
	}
	d.held = true
	return true
}

// hold gives datagram i of the batch being handled back to the fabric and
// returns how many datagrams after it went back with it.
func (d *dispatcher) hold(i int) int {
	d.held = false
	d.c.holds.Add(1)
	n := d.holder.Hold(i)
	d.holding.Store(true)
	if d.e.room.Load() != d.room {
		// Room may have come since the batch began, before resumeHeld
		// could see this hold: look again at once.
		d.holding.Store(false)
		d.holder.Resume()
	}
	return n
}

// resumeHeld lets the fabrics deliver again the datagrams held for want of
// room, once room may have been made (budget released, control block
// freed, receive posted).
//
// Every message received calls it: with no port that can hold a datagram
// (UDP's), it writes nothing shared, where the count of room events was
// one more atomic write to a line all the receiving threads share. With
// one (shared memory's), it writes the count only while a port handles a
// batch (which may hold a datagram for room that the count says came
// since it began, see hold) or holds one: a receiving thread that posts
// its receives while the port is idle, or driven by that very thread,
// writes nothing that the port's handler reads.
//
// The order makes it safe: the caller made its room before it looks, and
// a port sets batching before it reads the count and clears it only
// after any holding of its batch is set. A port not batching when looked
// at either begins its batch after the room was made, and sees it, or
// ended it before, and then shows holding if it held.
func (e *Engine) resumeHeld() {
	if e.holders.Load() { // inlined: every receive posted looks
		e.resumeHeldPorts()
	}
}

func (e *Engine) resumeHeldPorts() {
	ps := e.portList.Load()
	if ps == nil {
		return
	}
	quiet := true
	for _, d := range *ps {
		if d.holder != nil && (d.batching.Load() || d.holding.Load()) {
			quiet = false
			break
		}
	}
	if quiet {
		return
	}
	e.room.Add(1)
	for _, d := range *ps {
		if d.holding.Load() && d.holding.CompareAndSwap(true, false) {
			d.holder.Resume()
		}
	}
}

// beginBatch marks the start of a batch's handling, and notes the count
// of room events it begins from (hold, resumeHeld).
func (d *dispatcher) beginBatch() {
	if d.holder != nil {
		d.batching.Store(true)
	}
	d.room = d.e.room.Load()
}

// endBatch marks the end of a batch's handling, after its holds.
func (d *dispatcher) endBatch() {
	if d.holder != nil {
		d.batching.Store(false)
	}
}

// flushReliable waits a while for the destinations on the reliable path
// to take what was sent to them (see Close).
func (e *Engine) flushReliable() {
	deadline := nanotime() + int64(min(e.cfg.UnreachableTimeout, 2*time.Second))
	for _, p := range *e.peers.Load() {
		rt := p.ctrl()
		if rt == nil || !p.reliable.Load() {
			continue
		}
		f, ok := rt.disp.fab.(fabric.Flusher)
		if !ok {
			continue
		}
		for nanotime() < deadline {
			if taken, err := f.Taken(rt.ep); taken || err != nil {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
}
