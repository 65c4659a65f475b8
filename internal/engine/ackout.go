package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// owesAck notes that the peer is owed an acknowledgement (it probed, or
// wrote to an earlier run of this process); the dispatcher sends it at the
// end of the batch.
func (p *peer) owesAck() {
	p.rxmu.Lock()
	p.rx.ackPending = true
	p.rxmu.Unlock()
}

// noEcho is the Echo of an acknowledgement that names no datagram.
const noEcho = ^uint64(0)

// takeAckLocked fills a with the acknowledgement of the receive stream and marks
// it sent. p.rxmu is held.
func (p *peer) takeAckLocked(a *wire.AckBody) {
	rx := &p.rx
	rx.ack(a)
	rx.ackPending, rx.ackNow, rx.unacked = false, false, 0
	rx.ackAsked, rx.ackDue, rx.ackAt = false, 0, nanotime()
}

// Acknowledgements that ride on replies.
//
// A blocking Send asks for its acknowledgement at once (wire.FlagAckNow).
// A message answered at once (a ping-pong, a request and its reply) would
// then cost two datagrams more than its data: the acknowledgement of the
// request and that of the reply. Every data datagram carries the
// cumulative acknowledgement of the reverse stream (wire.FlagAck), so an
// acknowledgement that waits for the reply costs nothing.
//
// The receive side of each peer predicts whether data will go back soon:
// rxStream.replies counts, up to replyCertain, the times data for the peer
// left while an acknowledgement was owed or within ackDefer after one left
// on its own (the data carried it, or could have), and drops to zero when
// a deferred acknowledgement had to leave on its own after all. While the
// count is at least replyLikely, an acknowledgement a sender asked for is
// deferred: it leaves with the next data for the peer, or on its own once
// ackDefer has passed. (One not asked for waits up to AckDelay for data,
// on the peer's timer, as before.)
//
// No timer is armed per message (arming one wakes an idle CPU). The
// deadline is kept by whoever holds a port's progress token: a driving
// thread between polls and before it sleeps, a polling dispatcher between
// polls, a dispatcher waiting for an unattended port whenever it wakes;
// a dispatcher about to sleep in its fabric sends every deferred
// acknowledgement first. Only a holder that keeps the deadline defers (a
// driving thread, a polling dispatcher), so an acknowledgement deferred
// in vain leaves at worst about progressGrace late, once, and the peer
// stops deferring until replies come quickly again.
const (
	replyLikely  = 2
	replyCertain = 4
)

// ackDefer is how long an acknowledgement waits for a reply to carry it (a
// variable for the benchmarks, which count a round trip's instructions
// with no acknowledgement leaving on its own).
var ackDefer = 200 * time.Microsecond

// deferredAcks are the peers whose acknowledgement waits for a reply.
type deferredAcks struct {
	mu    sync.Mutex
	peers []*peer
	spare []*peer
	due   atomic.Int64 // the earliest deadline among them (0: none); may be stale
}

// deferAckLocked defers p's pending acknowledgement if a reply is likely to
// carry it and the caller keeps the deadline (keep). p.rxmu is held.
func (p *peer) deferAckLocked(keep bool, now int64) bool {
	rx := &p.rx
	if !keep || rx.replies < replyLikely {
		return false
	}
	wait := min(ackDefer, p.e.cfg.AckDelay)
	if wait <= 0 {
		return false
	}
	if rx.ackDue == 0 {
		rx.ackDue = now + int64(wait)
	}
	// Listed already, with an earliest deadline no later than this one,
	// schedule would change nothing: its lock is spared (a ping-pong's
	// every message is deferred within ackDefer of the last).
	if cur := p.e.acks.due.Load(); !rx.ackListed || cur == 0 || cur > rx.ackDue {
		p.e.acks.schedule(p, rx.ackDue, !rx.ackListed)
	}
	rx.ackListed = true
	return true
}

// schedule lists p (with list) and brings the earliest deadline forward
// to due if it is earlier.
func (da *deferredAcks) schedule(p *peer, due int64, list bool) {
	da.mu.Lock()
	if list {
		da.peers = append(da.peers, p)
	}
	if cur := da.due.Load(); cur == 0 || due < cur {
		da.due.Store(due)
	}
	da.mu.Unlock()
}

// sentDataLocked notes that data for the peer left, carrying the
// acknowledgement of the receive stream up to cum: a pending
// acknowledgement is no longer owed if that covers it, and either way the
// data counts as a reply if one was owed or had just left. p.rxmu is held.
func (p *peer) sentDataLocked(cum uint64, now int64) {
	rx := &p.rx
	switch {
	case rx.ackPending:
		if rx.cum != cum || !rx.inOrder() {
			return
		}
		rx.ackPending, rx.ackNow, rx.unacked = false, false, 0
		rx.ackAsked, rx.ackDue = false, 0
	case now-rx.ackAt >= int64(ackDefer):
		return
	}
	if rx.replies < replyCertain {
		rx.replies++
	}
}

// flushAcks sends the deferred acknowledgements whose deadline passed, or
// all of them with force.
func (e *Engine) flushAcks(now int64, force bool) {
	da := &e.acks
	if due := da.due.Load(); due == 0 || !force && now < due {
		return
	}
	da.mu.Lock()
	ps := da.peers
	da.peers, da.spare = da.spare, nil
	da.due.Store(0)
	da.mu.Unlock()
	var a wire.AckBody
	for i, p := range ps {
		ps[i] = nil
		p.rxmu.Lock()
		rx := &p.rx
		switch {
		case !rx.ackPending || rx.ackDue == 0:
			// Data carried it.
			rx.ackListed, rx.ackDue = false, 0
			p.rxmu.Unlock()
			continue
		case !force && now < rx.ackDue:
			da.schedule(p, rx.ackDue, true)
			p.rxmu.Unlock()
			continue
		}
		rx.ackListed = false
		late := now >= rx.ackDue
		if late {
			rx.replies = 0 // deferred in vain: acknowledge at once for a while
		}
		p.takeAckLocked(&a)
		p.rxmu.Unlock()
		if late {
			if rt := p.ctrl(); rt != nil {
				rt.disp.c.acksLate.Add(1)
			}
		}
		p.sendAck(&a)
	}
	da.mu.Lock()
	if da.spare == nil {
		da.spare = ps[:0]
	}
	da.mu.Unlock()
}

// armAckLocked schedules a delayed acknowledgement. p.rxmu is held.
func (p *peer) armAckLocked() {
	if p.ackArmed {
		return
	}
	p.ackArmed = true
	if p.ackTimer == nil {
		p.ackTimer = time.AfterFunc(p.e.cfg.AckDelay, p.delayedAck)
		return
	}
	p.ackTimer.Reset(p.e.cfg.AckDelay)
}

// delayedAck sends the acknowledgement no data carried in time.
func (p *peer) delayedAck() {
	p.rxmu.Lock()
	p.ackArmed = false
	if !p.rx.ackPending || p.e.closed.Load() {
		p.rxmu.Unlock()
		return
	}
	var a wire.AckBody
	p.takeAckLocked(&a)
	p.rxmu.Unlock()
	p.sendAck(&a)
}

// sendAck transmits acknowledgement a on the peer's control route.
func (p *peer) sendAck(a *wire.AckBody) {
	if rt := p.ctrl(); rt != nil {
		p.sendAckAs(rt, wire.Ack, a)
		rt.disp.c.acksSent.Add(1)
	}
}

// sendAckAs transmits a datagram of kind k (Ack, Bye) whose body is
// acknowledgement a, on route rt.
func (p *peer) sendAckAs(rt *route, k wire.Kind, a *wire.AckBody) {
	e := p.e
	b := e.getBatch()
	body := a.Put(b.ackScratch(0))
	head := b.heads[0][:]
	h := wire.Header{Kind: k, JobKey: e.cfg.JobKey, SrcProc: uint32(e.cfg.Proc), DstProc: uint32(p.proc), Hops: wire.DefaultHops,
		SrcInc: e.inc, DstInc: p.inc.Load()}
	h.Encode(head, body)
	b.dgs = append(b.dgs, fabric.Datagram{Head: head, Body: body, To: rt.ep})
	e.transmit(rt.disp, b.dgs)
	e.putBatch(b)
}
