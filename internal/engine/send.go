package engine

import (
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// NewSend prepares a send request from thread src to dst with tag.
func (e *Engine) NewSend(src ThreadID, dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) *Request {
	r := newRequest(e, sendReq)
	r.setSend(src, dstProc, dstThread, tag, data)
	return r
}

func (r *Request) setSend(src ThreadID, dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) {
	r.srcProc = r.eng.cfg.Proc
	r.srcThread, r.dstProc, r.dstThread, r.tag, r.data = src, dstProc, dstThread, tag, data
}

// Start posts a request made by NewSend or NewRecv.
func (e *Engine) Start(r *Request) {
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
		r.complete(ErrTooLarge)
		return
	}
	if r.dstProc == e.cfg.Proc {
		e.sendLocal(r)
		return
	}
	p := e.peer(r.dstProc)
	if p == nil {
		r.complete(&UnreachableError{Proc: r.dstProc, Reason: "no route"})
		return
	}
	p.mu.Lock()
	if err := p.tx.failed; err != nil {
		p.mu.Unlock()
		r.complete(err)
		return
	}
	if p.tx.idle() {
		p.tx.pendingSince = nanotime()
	}
	r.peer = p
	p.tx.enqueue(r)
	// With enough in flight, acknowledgements clock out what is queued,
	// many fragments to a system call; otherwise send at once.
	clocked := p.tx.pipe() >= e.cfg.AckEvery
	p.mu.Unlock()
	if !clocked {
		p.pump()
	}
}

// pump transmits what the windows allow: due retransmissions first, then
// new fragments cut from the head of the queue.
func (p *peer) pump() {
	rs := p.routes.Load()
	if rs == nil {
		return
	}
	for {
		b := p.e.getBatch()
		p.rxmu.Lock()
		b.ackCum, b.piggy = p.rx.cum, p.rx.cum > 0 || p.rx.ackPending
		p.rxmu.Unlock()
		p.mu.Lock()
		p.fill(b, *rs, nanotime())
		p.mu.Unlock()
		n := len(b.dgs)
		if n > 0 && b.piggy {
			p.rxmu.Lock()
			if p.rx.ackPending && p.rx.cum == b.ackCum && p.rx.inOrder() {
				p.rx.ackPending, p.rx.ackNow, p.rx.unacked = false, false, 0
			}
			p.rxmu.Unlock()
		}
		p.e.transmitRuns(b.ports, b.dgs)
		full := b.full()
		p.e.putBatch(b)
		if n == 0 || !full {
			return
		}
	}
}

// transmitRuns sends dgs, datagram i leaving from ports[i], one fabric call
// per run of datagrams on the same port.
func (e *Engine) transmitRuns(ports []*port, dgs []fabric.Datagram) {
	for i := 0; i < len(dgs); {
		j := i + 1
		for j < len(dgs) && ports[j] == ports[i] {
			j++
		}
		e.transmit(ports[i], dgs[i:j])
		i = j
	}
}

func (e *Engine) transmit(pt *port, dgs []fabric.Datagram) {
	sent, err := pt.fab.Send(dgs)
	var bytes uint64
	for i := 0; i < sent; i++ {
		bytes += uint64(dgs[i].Len())
	}
	pt.c.fragsSent.Add(uint64(sent))
	pt.c.bytesSent.Add(bytes)
	if err != nil {
		pt.c.sendErrs.Add(1)
	}
}

// fill adds datagrams to b. p.mu is held.
func (p *peer) fill(b *batch, rs routeSet, now int64) {
	t := &p.tx
	if t.failed != nil {
		return
	}
	if now < t.busyUntil {
		p.armTimer(t.busyUntil, now)
		return
	}
	cwnd := int(t.cwnd)
	if t.nNeed > 0 {
		for i := 0; i < t.rlen && t.nNeed > 0 && !b.full() && t.pipe() < cwnd; i++ {
			en := t.at(i)
			if !en.need {
				continue
			}
			en.need = false
			t.nNeed--
			rt := en.req.rt
			if !rs.has(rt) {
				rt = rs.repick(int64(len(en.req.data)), int(en.req.fragSize)+wire.HeaderSize)
				en.req.rt = rt
			}
			if en.sentAt != 0 {
				en.retrans = true
				rt.port.c.retrans.Add(1)
			}
			en.sentAt = now
			p.build(b, rt, en)
		}
	}
	for !b.full() && t.queue.head != nil && t.pipe() < cwnd && t.rlen < t.peerWin {
		r := t.queue.head
		if !r.started {
			r.started = true
			r.msgID = t.nextMsgID
			t.nextMsgID++
			r.rt = rs.pick(int64(len(r.data)))
			r.fragSize = uint32(r.rt.maxDg - wire.HeaderSize)
			r.nfrag = uint32(wire.FragCount(uint64(len(r.data)), r.fragSize))
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
		p.armTimer(now+int64(t.rto), now)
	}
}

// build encodes the datagram for entry en into b.
func (p *peer) build(b *batch, rt *route, en *txEntry) {
	r := en.req
	h := wire.Header{
		Kind:      en.kind,
		JobKey:    p.e.cfg.JobKey,
		Hops:      wire.DefaultHops,
		SrcInc:    p.e.inc,
		DstInc:    p.inc.Load(),
		SrcProc:   uint32(p.e.cfg.Proc),
		SrcThread: uint32(r.srcThread),
		DstProc:   uint32(p.proc),
		DstThread: uint32(r.dstThread),
		Tag:       int32(r.tag),
		MsgID:     en.msgID,
		Seq:       en.seq,
	}
	if en.retrans {
		h.Flags |= wire.FlagRetransmit
	}
	if b.piggy {
		h.Flags |= wire.FlagAck
		h.AckCum = b.ackCum
	}
	var body []byte
	if en.kind == wire.Data {
		if r.ackNow && en.frag+1 == r.nfrag {
			h.Flags |= wire.FlagAckNow
		}
		h.FragSize = r.fragSize
		h.Total = uint64(len(r.data))
		h.FragIndex = en.frag
		off := uint64(en.frag) * uint64(r.fragSize)
		n := wire.FragLen(h.Total, r.fragSize, en.frag)
		body = r.data[off : off+n]
	}
	i := len(b.dgs)
	head := b.heads[i][:]
	h.Encode(head, body)
	b.dgs = append(b.dgs, fabric.Datagram{Head: head, Body: body, To: rt.ep})
	b.ports = append(b.ports, rt.port)
}

// armTimer makes sure the peer's timer fires no later than at. p.mu is held.
func (p *peer) armTimer(at, now int64) {
	t := &p.tx
	if t.timerAt != 0 && t.timerAt <= at {
		return
	}
	d := time.Duration(at - now)
	if d < 0 {
		d = 0
	}
	t.timerAt = at
	if t.timer == nil {
		t.timer = time.AfterFunc(d, p.onTimer)
		return
	}
	t.timer.Reset(d)
}

// onTimer retransmits what timed out, resumes after BUSY, and declares the
// peer unreachable after a silence of UnreachableTimeout.
func (p *peer) onTimer() {
	e := p.e
	if e.closed.Load() {
		return
	}
	now := nanotime()
	p.mu.Lock()
	t := &p.tx
	t.timerAt = 0
	if t.failed != nil || t.idle() {
		p.mu.Unlock()
		return
	}
	last := p.lastHeard.Load()
	if t.pendingSince > last {
		last = t.pendingSince
	}
	if now-last > int64(e.cfg.UnreachableTimeout) {
		p.mu.Unlock()
		p.fail(&UnreachableError{Proc: p.proc, Reason: "no answer for " + time.Duration(now-last).Round(time.Millisecond).String()})
		return
	}
	if now < t.busyUntil {
		p.armTimer(t.busyUntil, now)
		p.mu.Unlock()
		p.pump()
		return
	}
	expired := false
	var first uint64
	for i := 0; i < t.rlen; i++ {
		en := t.at(i)
		if en.sacked || en.need || en.sentAt == 0 {
			continue
		}
		if now-en.sentAt >= int64(t.rto) {
			if !expired {
				first = en.seq
			}
			en.need = true
			t.nNeed++
			expired = true
		}
	}
	if expired {
		if rt := p.ctrl(); rt != nil {
			rt.port.c.timeouts.Add(1)
		}
		t.onLoss(first, true)
		t.rto *= 2
		if t.rto > e.cfg.MaxRTO {
			t.rto = e.cfg.MaxRTO
		}
	}
	next := now + int64(t.rto)
	if d := last + int64(e.cfg.UnreachableTimeout) + int64(time.Millisecond); d < next {
		next = d
	}
	p.armTimer(next, now)
	p.mu.Unlock()
	p.pump()
}

// dupAckThreshold is how far the selective acknowledgements must reach
// past a fragment before it counts as lost (TCP's three duplicate acks).
const dupAckThreshold = 3

// onAck applies an acknowledgement from the peer.
func (p *peer) onAck(a *wire.AckBody, pt *port) {
	e := p.e
	now := nanotime()
	b := e.getBatch()
	p.mu.Lock()
	t := &p.tx
	if a.Window > 0 {
		t.peerWin = int(a.Window)
	}
	if en := t.find(a.Echo); en != nil && !en.retrans && !en.sacked && en.sentAt != 0 && (en.seq < a.Cum || inSack(a, en.seq)) {
		t.sampleRTT(time.Duration(now-en.sentAt), e.cfg.MinRTO, e.cfg.MaxRTO)
	}
	if a.Cum > p.ackedCum.Load() {
		p.ackedCum.Store(a.Cum)
	}
	newly := 0
	for t.rlen > 0 {
		en := t.at(0)
		if en.seq >= a.Cum {
			break
		}
		if !en.sacked {
			newly++
			p.acked(en, b)
		}
		t.pop()
	}
	highest := a.Cum
	for i := 0; i < int(a.NSack); i++ {
		blk := a.Sack[i]
		for s := blk.Start; s < blk.End; s++ {
			en := t.find(s)
			if en == nil {
				if t.rlen == 0 || s >= t.at(0).seq+uint64(t.rlen) {
					break
				}
				continue
			}
			if !en.sacked {
				en.sacked = true
				t.nSacked++
				newly++
				p.acked(en, b)
				if en.need {
					en.need = false
					t.nNeed--
				}
			}
		}
		if blk.End > highest {
			highest = blk.End
		}
	}
	if a.NSack > 0 {
		lost := false
		var first uint64
		for i := 0; i < t.rlen; i++ {
			en := t.at(i)
			if en.seq+dupAckThreshold >= highest {
				break
			}
			if en.sacked || en.need || en.sentAt == 0 {
				continue
			}
			if now-en.sentAt < int64(t.srtt) {
				continue
			}
			if !lost {
				first = en.seq
			}
			lost = true
			en.need = true
			t.nNeed++
		}
		if lost {
			pt.c.fastRetrans.Add(1)
			t.onLoss(first, false)
		}
	}
	if newly > 0 {
		t.busyDelay = time.Millisecond
		t.onAcked(newly, float64(e.cfg.Window))
		t.resetBackoff(e.cfg.MinRTO, e.cfg.MaxRTO)
	}
	p.mu.Unlock()
	for _, r := range b.done {
		if r.complete(nil) {
			pt.c.msgsSent.Add(1)
		}
	}
	e.putBatch(b)
	p.pump()
}

func inSack(a *wire.AckBody, seq uint64) bool {
	for i := 0; i < int(a.NSack); i++ {
		if seq >= a.Sack[i].Start && seq < a.Sack[i].End {
			return true
		}
	}
	return false
}

// acked counts fragment en as delivered. p.mu is held.
func (p *peer) acked(en *txEntry, b *batch) {
	if en.kind != wire.Data || en.req == nil {
		return
	}
	r := en.req
	r.acked++
	if r.acked == r.nfrag && !r.canceled {
		b.done = append(b.done, r)
	}
}

// onBusy handles the peer's refusal of fragment seq for lack of resources:
// the stream pauses and the fragment is sent again later. It is not loss.
func (p *peer) onBusy(seq uint64) {
	now := nanotime()
	p.mu.Lock()
	t := &p.tx
	if en := t.find(seq); en != nil && !en.sacked && !en.need {
		en.need = true
		en.retrans = true
		t.nNeed++
	}
	if t.busyUntil < now {
		t.busyUntil = now + int64(t.busyDelay)
		t.busyDelay *= 2
		if t.busyDelay > 50*time.Millisecond {
			t.busyDelay = 50 * time.Millisecond
		}
	}
	p.armTimer(t.busyUntil, now)
	p.mu.Unlock()
}

// fail completes every pending send to the peer with err and refuses new
// ones until the peer is set again.
func (p *peer) fail(err error) {
	p.mu.Lock()
	if p.tx.failed != nil {
		p.mu.Unlock()
		return
	}
	p.tx.failed = err
	reqs := p.drainTx()
	p.mu.Unlock()
	for _, r := range reqs {
		r.complete(err)
	}
}

// restartTx starts the stream anew for a peer that restarted: the messages
// still pending are sent again from their beginning, in their order, to
// the new process.
func (p *peer) restartTx() {
	p.mu.Lock()
	reqs := p.drainTx()
	failed := p.tx.failed
	p.tx = txStream{}
	p.tx.init(p.e)
	p.tx.failed = failed
	seen := make(map[*Request]bool, len(reqs))
	for _, r := range reqs {
		if seen[r] || r.canceled || r.state.Load() != statePending {
			continue
		}
		seen[r] = true
		r.started, r.rt, r.msgID, r.nextFrag, r.acked = false, nil, 0, 0, 0
		p.tx.enqueue(r)
	}
	if !p.tx.idle() {
		p.tx.pendingSince = nanotime()
	}
	p.mu.Unlock()
	p.pump()
}

// drainTx empties the send stream and returns its requests. p.mu is held.
func (p *peer) drainTx() []*Request {
	t := &p.tx
	if t.timer != nil {
		t.timer.Stop()
		t.timerAt = 0
	}
	var reqs []*Request
	for i := 0; i < t.rlen; i++ {
		if r := t.at(i).req; r != nil && r.peer == p {
			reqs = append(reqs, r)
		}
	}
	for r := t.queue.head; r != nil; r = r.next {
		reqs = append(reqs, r)
	}
	for t.rlen > 0 {
		t.pop()
	}
	t.queue = reqList{}
	return reqs
}

// cancelSend withdraws a send: unsent fragments are dropped, fragments in
// flight become aborts, and one abort is queued so that the destination
// discards what it holds of the message.
func (e *Engine) cancelSend(r *Request) {
	p := r.peer
	if p == nil {
		if e.removeLocal(r) {
			r.complete(ErrCanceled)
		}
		return
	}
	p.mu.Lock()
	t := &p.tx
	if r.state.Load() != statePending || r.canceled {
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
