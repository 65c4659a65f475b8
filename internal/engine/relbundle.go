package engine

import (
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// Bundles on the reliable path.
//
// Small messages queued for a peer of the reliable path (reliable.go)
// leave together as one bundle (bundle.go), marked wire.FlagReliable: one
// datagram, one header, one slot of the fabric's queue and one pass of the
// receiver's handling for up to wire.MaxBundled messages. The messages
// keep their ids, one after the other, so that the receiver accepts each
// as if it had come alone and in order; a message there is no room for
// yet holds the whole bundle in the fabric (fabric.Holder), and when the
// bundle comes again the messages before it, accepted already, are passed
// over. A bundle ends with the first message whose sender waits for the
// destination to take it (a blocking Send).
//
// Messages queue up without an acknowledgement window to hold them back:
// a small message posted as a copy (Post, IsendCopy) while the destination
// has not yet taken what was sent to it (fabric.Flusher) waits in the
// queue, since it would wait in the destination's queue anyway, until one
// of these sends what is queued, bundled: a send that is not deferred
// (the destination caught up, a bundle's worth queued, a larger message,
// a blocking Send); any other call that posts or waits on a request of
// this process (so a thread that posts its messages and then waits for a
// reply sends them first); Close; or, if nothing else comes, a timer
// (deferFlush, though a process with nothing else to do sees its timers
// with the Go runtime's resolution, up to a millisecond). Deferred
// messages are posted copies, so the memory they take stays within
// maxPostedBytes; a peer found lost fails them with the rest of its queue.

// deferFlush is how long a deferred message waits for another send at
// most before the timer sends it (see above; a variable for tests).
var deferFlush = 50 * time.Microsecond

// deferLocked decides whether posted request r, just queued for a peer of
// the reliable path, waits for more to bundle with: behind reports that
// the destination has not taken all that was sent to it. p.mu is held.
func (p *peer) deferLocked(r *Request, behind bool) bool {
	t := &p.tx
	if !behind || !r.pooled || !bundleable(r) || t.deferred >= wire.MaxBundled-1 ||
		t.deferBytes+wire.SubSize+len(r.data) > bundleBytes-bundleMax-wire.SubSize {
		return false
	}
	t.deferred++
	t.deferBytes += wire.SubSize + len(r.data)
	p.armFlushLocked()
	return true
}

// behind reports whether the destination of the reliable path has not
// yet taken everything sent to it. It is called without p.mu. While a
// thread transmits to p (which may be waiting for room in the fabric) it
// does not ask the fabric, whose answer would wait for that thread: the
// message is then queued for that thread to send.
func (p *peer) behind() bool {
	rt := p.ctrl()
	if rt == nil || p.sending.Load() {
		return false
	}
	f, ok := rt.disp.fab.(fabric.Flusher)
	if !ok {
		return false
	}
	taken, err := f.Taken(rt.ep)
	return !taken && err == nil
}

// behindLooks is how many small posted copies in a row, while messages
// wait deferred, go by between two looks at the destination (deferBehind).
const behindLooks = 16

// deferBehind is behind for a small posted copy. While messages wait
// deferred for p (flushArmed), the destination was behind when the first
// of them was posted, and only every behindLooks-th message asks the
// fabric again; the others are taken as behind, to join the bundle. A
// look reads the head of the destination's ring, a cache line its
// receiver writes as it reads: asked for every message of a stream, it
// took about a tenth of the sender's time (perf of bench rate --fabric
// shm: 5.1% of both processes' samples, 1.7% with the looks skipped). A
// message that skips the look waits at most as a deferred message does
// (the bundle full, the next look, a post or wait of a thread of this
// process, or the timer).
func (p *peer) deferBehind() bool {
	if p.flushArmed.Load() && p.behindSkips.Add(1)%behindLooks != 0 {
		return true
	}
	return p.behind()
}

// flushDeferred sends the messages deferred for p, if any.
func (p *peer) flushDeferred() {
	if p.flushArmed.CompareAndSwap(true, false) {
		p.e.deferring.Add(-1)
		p.pumpReliable()
	}
}

// flushDeferred sends the messages deferred for every peer. It is called
// on every send and wait, nearly always with nothing deferred: that look
// is inlined.
func (e *Engine) flushDeferred() {
	if e.deferring.Load() != 0 {
		e.flushDeferredPeers()
	}
}

func (e *Engine) flushDeferredPeers() {
	for _, p := range *e.peers.Load() {
		if p.flushArmed.Load() {
			p.flushDeferred()
		}
	}
}

// undeferLocked notes that the queue's deferred messages are being sent.
// p.mu is held.
func (p *peer) undeferLocked() {
	p.tx.deferred, p.tx.deferBytes = 0, 0
	if p.flushArmed.CompareAndSwap(true, false) {
		p.e.deferring.Add(-1) // the timer, if it fires, finds nothing to do
	}
}

// transmitBundleLocked takes the n small messages at the head of the
// queue, r first, as one bundle on route rt, and transmits it. It reports
// whether it succeeded. p.sendMu and p.mu are held; p.mu is released.
func (p *peer) transmitBundleLocked(b *batch, r *Request, n int, rt *route) bool {
	t := &p.tx
	b.reset()
	fragSize := fragSizeFor(uint64(len(r.data)), rt.maxDg-wire.HeaderSize) // the limit: every message fits
	body := b.bundleScratch(0)[:0]
	firstID := t.nextMsgID
	var total uint64
	for range n {
		q := t.queue.head
		t.queue.unlink(nil, q)
		q.started, q.rel = true, true
		q.msgID = t.nextMsgID
		t.nextMsgID++
		q.rt = rt
		q.fragSize = fragSize
		q.nfrag, q.nextFrag = 1, 1
		body = appendSub(body, q, 0)
		total += uint64(len(q.data))
		b.reqs = append(b.reqs, q)
	}
	p.undeferLocked()
	p.mu.Unlock()
	h := p.bundleHeader(fragSize, firstID, n, total)
	h.Flags |= wire.FlagReliable
	b.addBundle(rt, &h, body)
	lost := p.lost.Load()
	var err error
	if err = p.e.transmit(rt.disp, b.dgs); err != nil {
		err = &PeerDownError{Proc: p.proc, Reason: err.Error()}
	}
	return p.settleReliable(b.reqs, lost, err)
}

// onReliableBundle accepts the messages of a bundle sent on the reliable
// path, each as the datagram it would have been alone. One there is no
// room for yet holds the bundle in the fabric (d.held); when the bundle
// comes again, the messages accepted before are passed over.
//
// A message next in its stream, with none completed before it still to
// deliver, takes the short path (wholeLocked), as one that came alone
// would: copied into the receive posted for it, or stored as unexpected,
// with no control block to fill and free between. Consecutive messages
// for threads of one stripe of the receive table (a stream's run, for one
// thread) take the stripe's lock once, and the messages taken are counted
// once: on a link that is reliable and ordered nothing else is to be done
// for each (no sequence number, no acknowledgement), and the lock and the
// count, both written by other threads too, were most of the time a
// message took there.
func (d *dispatcher) onReliableBundle(p *peer, h *wire.Header, body []byte) {
	rx := &p.rx
	p.rxmu.Lock()
	defer p.rxmu.Unlock()
	var s *stripe // locked by the short path
	short := uint64(0)
	m := *h // each message's header in turn (wire.Header.Unbundle)
	for i := 0; i < int(h.FragIndex) && !d.held; i++ {
		data, rest, ok := m.Unbundle(h, i, body)
		if !ok {
			d.c.drops[DropLength].Add(1) // wire.Decode checked it: never
			break
		}
		body = rest
		if m.MsgID < rx.nextMsg && !rx.silent {
			continue // accepted when the bundle came before
		}
		if len(d.delivered) == 0 && d.wholeFits(p, &m, data) {
			k := key{ProcID(m.SrcProc), ThreadID(m.SrcThread), ThreadID(m.DstThread), Tag(m.Tag)}
			if ks := d.e.table.stripe(k.dstThread); ks != s {
				if s != nil {
					s.mu.Unlock()
				}
				s = ks
				s.mu.Lock()
			}
			if r, ok := d.takeWholeLocked(s, k, &m, data); ok {
				rx.nextMsg++
				short++
				if r != nil {
					d.fillWhole(r, k, data)
				}
				continue
			}
		}
		if s != nil {
			s.mu.Unlock() // the general path takes stripe locks itself
			s = nil
		}
		d.reliableLocked(p, &m, data)
	}
	if s != nil {
		s.mu.Unlock()
	}
	if short != 0 {
		d.c.msgsRecv.Add(short)
	}
	d.deliverLocked()
	rx.heldBack = d.held
}
