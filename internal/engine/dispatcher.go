package engine

import (
	"errors"
	"runtime"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// port is one fabric port and its dispatcher.
type port struct {
	e    *Engine
	fab  fabric.Port
	mode Mode
	idx  int
	c    counters

	// Used only by the dispatcher goroutine.
	touched   []*peer
	wake      []match // receives to complete once the batch is acknowledged
	fwd       []fabric.Datagram
	fwdPorts  []*port
	delivered []*mcb
	busy      []busyReply
	ackBody   wire.AckBody
}

type busyReply struct {
	p *peer
	h wire.Header
}

// loop is the dispatcher: it receives batches of datagrams, handles each,
// then acknowledges once per peer per batch.
func (pt *port) loop() {
	defer pt.e.wg.Done()
	n := pt.fab.BatchSize()
	if n <= 0 {
		n = 1
	}
	msgs := make([][]byte, n)
	idle := 0
	for {
		var k int
		var err error
		if pt.mode == Polling {
			k, err = pt.fab.Poll(msgs)
			if k == 0 && err == nil {
				if pt.e.closed.Load() {
					return
				}
				idle++
				if idle%64 == 0 {
					runtime.Gosched()
				}
				continue
			}
			idle = 0
		} else {
			k, err = pt.fab.Receive(msgs)
		}
		if err != nil {
			if pt.e.closed.Load() || errors.Is(err, fabric.ErrClosed) {
				return
			}
			pt.c.recvErrs.Add(1)
			time.Sleep(time.Millisecond)
			continue
		}
		now := nanotime()
		for i := 0; i < k; i++ {
			pt.handle(msgs[i], now)
			msgs[i] = nil
		}
		pt.flush()
	}
}

var decodeDrop = map[error]int{
	wire.ErrShort:    DropShort,
	wire.ErrMagic:    DropMagic,
	wire.ErrVersion:  DropVersion,
	wire.ErrJobKey:   DropJobKey,
	wire.ErrChecksum: DropChecksum,
	wire.ErrLength:   DropLength,
	wire.ErrKind:     DropKind,
}

// handle processes one received datagram.
func (pt *port) handle(pkt []byte, now int64) {
	e := pt.e
	pt.c.fragsRecv.Add(1)
	pt.c.bytesRecv.Add(uint64(len(pkt)))
	h, body, err := wire.Decode(pkt, e.cfg.JobKey)
	if err != nil {
		reason, ok := decodeDrop[err]
		if !ok {
			reason = DropLength
		}
		pt.c.drops[reason].Add(1)
		return
	}
	if ProcID(h.DstProc) != e.cfg.Proc {
		pt.forward(&h, pkt)
		return
	}
	p := e.peer(ProcID(h.SrcProc))
	if p == nil {
		pt.c.drops[DropUnknownPeer].Add(1)
		return
	}
	if h.DstInc != 0 && h.DstInc != e.inc {
		// Addressed to an earlier run of this process.
		pt.c.drops[DropStale].Add(1)
		p.rxmu.Lock()
		p.rx.ackPending = true
		p.rxmu.Unlock()
		pt.touch(p)
		return
	}
	if !p.checkInc(h.SrcInc) {
		pt.c.drops[DropStale].Add(1)
		return
	}
	p.lastHeard.Store(now)
	switch h.Kind {
	case wire.Data, wire.Abort:
		if h.Flags&wire.FlagAck != 0 && h.AckCum > p.ackedCum.Load() {
			a := wire.AckBody{Cum: h.AckCum, Echo: noEcho}
			p.onAck(&a, pt)
		}
		pt.onData(p, &h, body)
	case wire.Ack:
		a, err := wire.DecodeAck(body)
		if err != nil {
			pt.c.drops[DropLength].Add(1)
			return
		}
		pt.c.acksRecv.Add(1)
		p.onAck(&a, pt)
	case wire.Busy:
		pt.c.busyRecv.Add(1)
		p.onBusy(h.Seq)
	case wire.Hello:
		p.rxmu.Lock()
		p.rx.ackPending = true
		p.rxmu.Unlock()
		pt.touch(p)
	}
}

func (pt *port) touch(p *peer) {
	for _, q := range pt.touched {
		if q == p {
			return
		}
	}
	pt.touched = append(pt.touched, p)
}

// onData accepts a fragment (or an abort) into the peer's receive stream.
func (pt *port) onData(p *peer, h *wire.Header, body []byte) {
	e := pt.e
	pt.touch(p)
	p.rxmu.Lock()
	rx := &p.rx
	rx.ackPending = true
	rx.unacked++
	if rx.unacked >= e.cfg.AckEvery || h.Flags&(wire.FlagRetransmit|wire.FlagAckNow) != 0 || h.Kind == wire.Abort {
		rx.ackNow = true
	}
	rx.echo = h.Seq // the newest arrival, for a clean round-trip sample
	if rx.has(h.Seq) {
		rx.ackNow = true // our acknowledgement may have been lost
		p.rxmu.Unlock()
		pt.c.dups.Add(1)
		return
	}
	if h.Seq >= rx.cum+rx.window() {
		rx.ackNow = true
		p.rxmu.Unlock()
		pt.c.drops[DropWindow].Add(1)
		return
	}
	if h.Kind == wire.Abort {
		if !rx.finished(h.MsgID) {
			if m := rx.inprog[h.MsgID]; m != nil {
				delete(rx.inprog, h.MsgID)
				if m.owner != nil {
					e.releaseOwner(m, nil) // the receive waits for another message
				}
				e.freeMCB(m)
			}
			pt.delivered = rx.complete(h.MsgID, nil, pt.delivered)
		}
		rx.mark(h.Seq)
		pt.deliver(p)
		return
	}
	if rx.finished(h.MsgID) {
		rx.mark(h.Seq)
		p.rxmu.Unlock()
		pt.c.dups.Add(1)
		return
	}
	m := rx.inprog[h.MsgID]
	if m == nil {
		if int64(h.Total) > e.cfg.MaxMessage {
			p.rxmu.Unlock()
			pt.c.drops[DropTooLarge].Add(1)
			return
		}
		nfrag := wire.FragCount(h.Total, h.FragSize)
		if nfrag > 1 && h.FragSize < minFragSize {
			p.rxmu.Unlock()
			pt.c.drops[DropLength].Add(1)
			return
		}
		k := key{ProcID(h.SrcProc), ThreadID(h.SrcThread), ThreadID(h.DstThread), Tag(h.Tag)}
		m = e.pool.get()
		var owner *Request
		if m != nil && h.Total > chunkSize {
			owner = e.claimPosted(p, m, k, h.MsgID, h.Total)
		}
		if m == nil || owner == nil && !e.reserve(int64(h.Total)) {
			if m != nil {
				e.pool.put(m)
			}
			p.rxmu.Unlock()
			pt.busy = append(pt.busy, busyReply{p, *h})
			return
		}
		if owner == nil {
			m.reserved = int64(h.Total)
		}
		m.key = k
		m.msgID = h.MsgID
		m.start(h.Total, h.FragSize, uint32(nfrag), &e.bufs)
		rx.inprog[h.MsgID] = m
	} else if m.total != h.Total || m.fragSize != h.FragSize || m.key.srcThread != ThreadID(h.SrcThread) ||
		m.key.dstThread != ThreadID(h.DstThread) || m.key.tag != Tag(h.Tag) {
		p.rxmu.Unlock()
		pt.c.drops[DropInconsistent].Add(1)
		return
	}
	if m.hasFrag(h.FragIndex) {
		rx.mark(h.Seq)
		p.rxmu.Unlock()
		pt.c.dups.Add(1)
		return
	}
	complete := m.place(h.FragIndex, body)
	rx.mark(h.Seq)
	if !rx.inOrder() {
		rx.ackNow = true
	}
	if complete {
		delete(rx.inprog, h.MsgID)
		pt.delivered = rx.complete(h.MsgID, m, pt.delivered)
	}
	pt.deliver(p)
}

// deliver enters the messages completed in order into the receive table
// and unlocks p.rxmu; matched receives are completed after the unlock.
func (pt *port) deliver(p *peer) {
	e := pt.e
	if len(pt.delivered) == 0 {
		p.rxmu.Unlock()
		return
	}
	for _, m := range pt.delivered {
		pt.c.msgsRecv.Add(1)
		if m.owner != nil {
			m.owner.ownerPeer.Store(nil) // no longer cancellable
			pt.wake = append(pt.wake, match{m.owner, m})
			continue
		}
		h := hashKey(m.key)
		s := e.table.stripe(m.key.dstThread)
		s.mu.Lock()
		if r := e.table.takePosted(s, m.key, h); r != nil {
			s.mu.Unlock()
			pt.wake = append(pt.wake, match{r, m})
		} else {
			e.table.enqueue(s, m, h)
			s.mu.Unlock()
		}
	}
	clear(pt.delivered)
	pt.delivered = pt.delivered[:0]
	p.rxmu.Unlock()
}

// match is a completed message and the receive it goes to.
type match struct {
	r *Request
	m *mcb
}

// flush sends the forwarded datagrams, acknowledgements and BUSY replies
// of a batch.
func (pt *port) flush() {
	e := pt.e
	if len(pt.fwd) > 0 {
		pt.flushForward()
	}
	for _, br := range pt.busy {
		rt := br.p.ctrl()
		if rt == nil {
			continue
		}
		h := wire.Header{Kind: wire.Busy, JobKey: e.cfg.JobKey, SrcProc: uint32(e.cfg.Proc), DstProc: uint32(br.p.proc),
			SrcThread: br.h.DstThread, DstThread: br.h.SrcThread, MsgID: br.h.MsgID, Seq: br.h.Seq, Hops: wire.DefaultHops,
			SrcInc: e.inc, DstInc: br.p.inc.Load()}
		b := e.getBatch()
		head := b.heads[0][:]
		h.Encode(head, nil)
		b.dgs = append(b.dgs, fabric.Datagram{Head: head, To: rt.ep})
		e.transmit(rt.port, b.dgs)
		e.putBatch(b)
		pt.c.busySent.Add(1)
	}
	clear(pt.busy)
	pt.busy = pt.busy[:0]
	if len(pt.touched) == 0 {
		pt.wakeAll()
		return
	}
	b := e.getBatch()
	var out *port
	for _, p := range pt.touched {
		rt := p.ctrl()
		if rt == nil {
			continue
		}
		p.rxmu.Lock()
		if !p.rx.ackPending {
			p.rxmu.Unlock()
			continue
		}
		if !p.rx.ackNow && e.cfg.AckDelay > 0 {
			// Wait a little for data going back to carry it.
			p.armAck()
			p.rxmu.Unlock()
			continue
		}
		p.takeAck(&pt.ackBody)
		p.rxmu.Unlock()
		if out != nil && (out != rt.port || b.full()) {
			e.transmit(out, b.dgs)
			b.reset()
		}
		out = rt.port
		i := len(b.dgs)
		buf := b.heads[i][:]
		body := pt.ackBody.Put(b.ackScratch(i))
		h := wire.Header{Kind: wire.Ack, JobKey: e.cfg.JobKey, SrcProc: uint32(e.cfg.Proc), DstProc: uint32(p.proc), Hops: wire.DefaultHops,
			SrcInc: e.inc, DstInc: p.inc.Load()}
		h.Encode(buf, body)
		b.dgs = append(b.dgs, fabric.Datagram{Head: buf, Body: body, To: rt.ep})
		pt.c.acksSent.Add(1)
	}
	if out != nil && len(b.dgs) > 0 {
		e.transmit(out, b.dgs)
	}
	e.putBatch(b)
	clear(pt.touched)
	pt.touched = pt.touched[:0]
	pt.wakeAll()
}

// wakeAll completes the receives matched during a batch. It runs after the
// batch's acknowledgements left, so a receiver that exits as soon as it has
// its message has already acknowledged it.
func (pt *port) wakeAll() {
	for i, x := range pt.wake {
		pt.e.fillFromMCB(x.r, x.m)
		pt.wake[i] = match{}
	}
	pt.wake = pt.wake[:0]
}

// forward passes on a datagram whose final destination is another
// process, fragment by fragment, along this process's route to it. The
// datagram leaves unchanged but for its hop count.
func (pt *port) forward(h *wire.Header, pkt []byte) {
	e := pt.e
	if h.Hops == 0 {
		pt.c.drops[DropMisrouted].Add(1)
		return
	}
	q := e.peer(ProcID(h.DstProc))
	if q == nil {
		pt.c.drops[DropNoRoute].Add(1)
		return
	}
	rs := q.routes.Load()
	if rs == nil {
		pt.c.drops[DropNoRoute].Add(1)
		return
	}
	rt := rs.pick(int64(h.Total))
	if h.Kind != wire.Data {
		rt = (*rs)[0]
	}
	if len(pkt) > rt.maxDg {
		pt.c.drops[DropTooBig].Add(1)
		return
	}
	wire.SetHops(pkt, h.Hops-1)
	pt.fwd = append(pt.fwd, fabric.Datagram{Head: pkt, To: rt.ep})
	pt.fwdPorts = append(pt.fwdPorts, rt.port)
	pt.c.forwarded.Add(1)
}

// flushForward sends the datagrams forwarded during a batch.
func (pt *port) flushForward() {
	pt.e.transmitRuns(pt.fwdPorts, pt.fwd)
	clear(pt.fwd)
	pt.fwd = pt.fwd[:0]
	clear(pt.fwdPorts)
	pt.fwdPorts = pt.fwdPorts[:0]
}

// noEcho is the Echo of an acknowledgement that names no datagram.
const noEcho = ^uint64(0)

// takeAck fills a with the acknowledgement of the receive stream and marks
// it sent. p.rxmu is held.
func (p *peer) takeAck(a *wire.AckBody) {
	p.rx.ack(a)
	p.rx.ackPending, p.rx.ackNow, p.rx.unacked = false, false, 0
}

// armAck schedules a delayed acknowledgement. p.rxmu is held.
func (p *peer) armAck() {
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
	p.takeAck(&a)
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
	e.transmit(rt.port, b.dgs)
	rt.port.c.acksSent.Add(1)
	e.putBatch(b)
}
