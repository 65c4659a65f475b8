package engine

import (
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// Bundles of small messages (wire/bundle.go).
//
// When the sender cuts new fragments and the head of a peer's queue holds
// several small messages for the same route, they leave as one datagram:
// each message after a 16-byte sub-header, the 96-byte header once. Only
// what is already queued is bundled, so a lone message leaves at once, as
// before; messages queue up behind the window when they come faster than
// the peer acknowledges them, and those go together. Each message keeps
// its own sequence number and message id (consecutive within a bundle), so
// acknowledgement, flow control, BUSY and matching treat it as if it had
// come alone, and a message of a bundle that is lost goes again alone.

// bundleMax is the largest message sent in a bundle.
const bundleMax = 1024

// bundleBytes bounds the body of a bundle: the copy into it costs little
// next to a datagram's system-call and handling cost.
const bundleBytes = 8 << 10

// bundleable reports whether request r, at the head of the queue and not
// yet started, may travel in a bundle.
func bundleable(r *Request) bool {
	return !r.started && len(r.data) <= bundleMax && !r.rndv
}

// bundleLocked starts the small messages at the head of the queue that
// fit into one bundle on route rt with the windows open, and adds the
// bundle to b. It reports false, having started none, when fewer than two
// would go. p.mu is held.
func (p *peer) bundleLocked(b *batch, rs routeSet, cwnd int, now int64) bool {
	t := &p.tx
	n, rt := bundleRun(rs, t.queue.head, min(wire.MaxBundled, cwnd-t.pipe(), t.peerWin-t.rlen), false)
	if n < 2 {
		return false
	}
	fragSize := fragSizeFor(uint64(len(t.queue.head.data)), rt.maxDg-wire.HeaderSize) // the limit: every message fits
	body := b.bundleScratch(len(b.dgs))[:0]
	first := t.nextSeq
	firstID := t.nextMsgID
	var total uint64
	for range n {
		q := t.queue.head
		q.started = true
		q.msgID = t.nextMsgID
		t.nextMsgID++
		q.rt = rt
		q.fragSize = fragSize
		q.nfrag = 1
		q.nextFrag = 1
		t.push(txEntry{seq: t.nextSeq, req: q, msgID: q.msgID, kind: wire.Data, sentAt: now})
		t.nextSeq++
		t.queue.unlink(nil, q)
		var flags uint8
		if q.ackNow {
			flags = wire.FlagAckNow
		}
		body = appendSub(body, q, flags)
		total += uint64(len(q.data))
	}
	h := p.bundleHeader(fragSize, firstID, n, total)
	h.Seq = first
	if b.piggy {
		h.Flags |= wire.FlagAck
		h.AckCum = b.ackCum
	}
	if rt.disp.protected && !p.e.cfg.SumBodies {
		h.Flags |= wire.FlagBodyUnsummed
	}
	b.addBundle(rt, &h, body)
	return true
}

// bundleRun counts the messages from r on in the queue that go together
// in one bundle, at most max of them: small messages, not started, for the
// same route as r, whose bytes and sub-headers fit one datagram of at most
// bundleBytes. With endAtAck the run ends with the first message whose
// sender waits for it to be taken (ackNow).
func bundleRun(rs routeSet, r *Request, max int, endAtAck bool) (n int, rt *route) {
	if r == nil || r.next == nil || !bundleable(r) || !bundleable(r.next) {
		return 0, nil
	}
	rt = rs.pick(int64(len(r.data)))
	room := min(rt.maxDg-wire.HeaderSize, bundleBytes)
	size := 0
	for q := r; q != nil && n < max && bundleable(q); q = q.next {
		if size+wire.SubSize+len(q.data) > room || rs.pick(int64(len(q.data))) != rt {
			break
		}
		n++
		size += wire.SubSize + len(q.data)
		if endAtAck && q.ackNow {
			break
		}
	}
	return n, rt
}

// appendSub appends message q, its sub-header with flags first, to the
// body of a bundle.
func appendSub(body []byte, q *Request, flags uint8) []byte {
	s := wire.Sub{SrcThread: uint32(q.srcThread), DstThread: uint32(q.dstThread), Tag: int32(q.tag), Len: uint16(len(q.data)), Flags: flags}
	i := len(body)
	body = body[:i+wire.SubSize]
	s.Put(body[i:])
	return append(body, q.data...)
}

// bundleHeader is the header of a bundle of n messages to p, the first
// with id firstID, total bytes together.
func (p *peer) bundleHeader(fragSize uint32, firstID uint64, n int, total uint64) wire.Header {
	return wire.Header{
		Kind:      wire.Data,
		Flags:     wire.FlagBundle,
		JobKey:    p.e.cfg.JobKey,
		Hops:      wire.DefaultHops,
		SrcInc:    p.e.inc,
		DstInc:    p.inc.Load(),
		SrcProc:   uint32(p.e.cfg.Proc),
		DstProc:   uint32(p.proc),
		FragSize:  fragSize,
		MsgID:     firstID,
		Total:     total,
		FragIndex: uint32(n),
	}
}

// addBundle encodes bundle h with body into b, to leave on route rt.
func (b *batch) addBundle(rt *route, h *wire.Header, body []byte) {
	head := b.heads[len(b.dgs)][:]
	h.Encode(head, body)
	b.dgs = append(b.dgs, fabric.Datagram{Head: head, Body: body, To: rt.ep})
	b.ports = append(b.ports, rt.disp)
	rt.disp.c.bundlesSent.Add(1)
	rt.disp.c.msgsBundled.Add(uint64(h.FragIndex))
}

// onBundle accepts the messages of bundle h from p, each as the datagram
// it would have been alone.
func (d *dispatcher) onBundle(p *peer, h *wire.Header, body []byte) {
	d.touch(p)
	p.rxmu.Lock()
	m := *h // each message's header in turn (wire.Header.Unbundle)
	for i := 0; i < int(h.FragIndex); i++ {
		data, rest, ok := m.Unbundle(h, i, body)
		if !ok {
			d.c.drops[DropLength].Add(1) // wire.Decode checked it: never
			break
		}
		body = rest
		// A whole message next in its stream takes the short path, as
		// alone in a datagram (onData), unless one before it in the
		// bundle completed on the general path and waits in delivered
		// to enter the receive table: it would overtake that one.
		if len(d.delivered) == 0 && d.wholeLocked(p, &m, data, false) {
			continue
		}
		d.acceptLocked(p, &m, data)
	}
	d.deliverLocked()
	p.rxmu.Unlock()
	d.returnCredit()
}
