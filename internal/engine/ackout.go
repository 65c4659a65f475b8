package engine

import (
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
	p.rx.ack(a)
	p.rx.ackPending, p.rx.ackNow, p.rx.unacked = false, false, 0
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
	e := p.e
	rt := p.ctrl()
	if rt == nil {
		return
	}
	b := e.getBatch()
	body := a.Put(b.ackScratch(0))
	head := b.heads[0][:]
	h := wire.Header{Kind: wire.Ack, JobKey: e.cfg.JobKey, SrcProc: uint32(e.cfg.Proc), DstProc: uint32(p.proc), Hops: wire.DefaultHops,
		SrcInc: e.inc, DstInc: p.inc.Load()}
	h.Encode(head, body)
	b.dgs = append(b.dgs, fabric.Datagram{Head: head, Body: body, To: rt.ep})
	e.transmit(rt.disp, b.dgs)
	rt.disp.c.acksSent.Add(1)
	e.putBatch(b)
}
