package engine

import (
	"time"

	"github.com/pcor-go/pcor/internal/wire"
)

// Open bundles on the reliable path.
//
// A small message posted as a copy (Post, IsendCopy) for a peer of the
// reliable path while the destination is behind and nothing is queued for
// the peer does not become a request: it is copied straight into the
// peer's open bundle, its sub-header first, and given its message id there
// and then. The bundle leaves as one datagram of the reliable path
// (relbundle.go), as the same messages deferred in the queue would have,
// when the deferred messages would have: it is full, the destination is
// seen to have caught up, a send is queued behind it (it goes first), any
// call that posts or waits on a request of this process, Close, or the
// timer (deferFlush). Without it a stream of small messages took, for each
// message, a pooled request to fill, queue, complete and give back and a
// copy more (into the request's buffer, then into the bundle's).
//
// Order. The messages of the open bundle have the message ids that were
// next, so while it holds any no other id is given: a message is appended
// only while the queue is empty (one queued goes after the bundle, and so
// does every message after it until the queue empties again), the short
// path (shortLocked) is not taken while it holds any, and the one who
// transmits the queue (transmitQueuedLocked) sends the open bundle before
// anything queued. A change of routes and a restart of the peer turn the
// open bundle's messages back into posted requests at the head of the
// queue, their ids given back (unbundleLocked); a peer that fails drops
// them, as it fails its queued posted copies (their senders learn it from
// their next send).
//
// Memory. The open bundle counts a whole bundle (bundleBytes) and a
// request's postCost in postedBytes from its first message until it has
// been transmitted: a bundle is opened only within maxPostedBytes, as a
// posted copy is. Each peer keeps two bodies for it: the open one, filled
// under p.mu, and the one the thread transmitting to the peer sends from
// (peer.obSpare, under p.sendMu).

// openBundle is a peer's open bundle. It is guarded by p.mu.
type openBundle struct {
	body    []byte // the sub-headers and bytes of the messages
	n       int    // messages in body
	firstID uint64 // the message id of the first
	total   uint64 // their bytes, sub-headers not counted
	rt      *route // the route they take
	room    int    // the largest body rt takes
}

// openCost is what an open bundle counts in postedBytes.
const openCost = bundleBytes + postCost

// appendOpen appends a message of data from thread src to thread dstThread
// of p with tag to p's open bundle, if it may go there (see above): data
// is at most bundleMax bytes and p was on the reliable path a moment ago.
// It reports false, having done nothing, when the message must take a
// request instead.
func (p *peer) appendOpen(src ThreadID, dstThread ThreadID, tag Tag, data []byte) bool {
	behind := p.deferBehind()
	for try := 0; ; try++ {
		p.mu.Lock()
		t := &p.tx
		ob := &p.ob
		if t.failed != nil || t.queue.head != nil || !p.reliable.Load() || (!behind && ob.n == 0) {
			p.mu.Unlock()
			return false
		}
		if ob.n == 0 {
			if !p.openLocked(len(data)) {
				p.mu.Unlock()
				return false
			}
		} else if ob.n == wire.MaxBundled || len(ob.body)+wire.SubSize+len(data) > ob.room || !p.routeOf(ob.rt, len(data)) {
			// The message does not go with the others: they leave
			// first, then it opens a bundle of its own.
			p.mu.Unlock()
			if try > 0 {
				return false
			}
			p.pumpReliable()
			continue
		}
		s := wire.Sub{SrcThread: uint32(src), DstThread: uint32(dstThread), Tag: int32(tag), Len: uint16(len(data))}
		i := len(ob.body)
		ob.body = ob.body[:i+wire.SubSize]
		s.Put(ob.body[i:])
		ob.body = append(ob.body, data...)
		ob.n++
		ob.total += uint64(len(data))
		t.nextMsgID++
		full := ob.n == wire.MaxBundled || len(ob.body)+wire.SubSize+len(data) > ob.room
		if behind && !full {
			p.armFlushLocked()
		}
		p.mu.Unlock()
		if !behind || full {
			p.pumpReliable()
		}
		return true
	}
}

// routeOf reports whether a message of n bytes to p takes route rt.
func (p *peer) routeOf(rt *route, n int) bool {
	rs := p.routes.Load()
	return rs != nil && len(*rs) > 0 && rs.pick(int64(n)) == rt
}

// openLocked opens p's bundle for a first message of n bytes: it reports
// false when there is no route, no room in maxPostedBytes, or the message
// does not fit in a bundle of its route. p.mu is held.
func (p *peer) openLocked(n int) bool {
	rs := p.routes.Load()
	if rs == nil || len(*rs) == 0 || !p.e.postRoom(openCost-postCost) {
		return false
	}
	rt := rs.pick(int64(n))
	room := min(rt.maxDg-wire.HeaderSize, bundleBytes)
	if wire.SubSize+n > room {
		return false
	}
	ob := &p.ob
	ob.rt, ob.room = rt, room
	ob.firstID = p.tx.nextMsgID
	ob.total = 0
	if ob.body == nil {
		ob.body = make([]byte, 0, bundleBytes)
	}
	ob.body = ob.body[:0]
	p.e.postedBytes.Add(openCost)
	return true
}

// armFlushLocked makes sure what waits for p to be bundled is sent by the
// timer if nothing else sends it first (see deferFlush). p.mu is held.
func (p *peer) armFlushLocked() {
	// Armed already for every message of a bundle but its first: the
	// look spares those a compare-and-swap (a locked instruction) that
	// would fail.
	if !p.flushArmed.Load() && p.flushArmed.CompareAndSwap(false, true) {
		p.e.deferring.Add(1)
		if p.flushTimer == nil {
			p.flushTimer = time.AfterFunc(deferFlush, p.flushDeferred)
		} else {
			p.flushTimer.Reset(deferFlush)
		}
	}
}

// openWaitsLocked reports whether p's open bundle waits to be transmitted.
// p.mu is held.
func (p *peer) openWaitsLocked() bool {
	return p.ob.n != 0 && p.tx.failed == nil
}

// transmitOpenLocked transmits p's open bundle. It reports whether it
// succeeded. p.sendMu and p.mu are held; p.mu is released.
func (p *peer) transmitOpenLocked(b *batch) bool {
	ob := &p.ob
	e := p.e
	body, n, firstID, total, rt := ob.body, ob.n, ob.firstID, ob.total, ob.rt
	if p.obSpare == nil {
		p.obSpare = make([]byte, 0, bundleBytes)
	}
	ob.body, p.obSpare = p.obSpare[:0], nil
	ob.n, ob.total, ob.rt = 0, 0, nil
	p.undeferLocked()
	p.mu.Unlock()
	b.reset()
	h := p.bundleHeader(fragSizeFor(bundleMax, rt.maxDg-wire.HeaderSize), firstID, n, total)
	h.Flags |= wire.FlagReliable
	b.addBundle(rt, &h, body)
	lost := p.lost.Load()
	err := e.transmit(rt.disp, b.dgs)
	b.reset()
	p.obSpare = body[:0]
	e.postedBytes.Add(-openCost)
	if err != nil || p.lost.Load() != lost {
		// As settleReliable: the messages may have been dropped, and
		// their senders, who returned long ago, learn it from the peer
		// failed.
		return false
	}
	rt.disp.c.msgsSent.Add(uint64(n))
	return true
}

// unbundleLocked turns the messages of p's open bundle back into posted
// requests at the head of p's queue, ahead of what was queued after them,
// and gives their message ids back: for a change of routes or a restart of
// the peer, after which they may take another path. It reports whether
// there were any. p.mu is held.
func (p *peer) unbundleLocked() bool {
	ob := &p.ob
	if ob.n == 0 {
		return false
	}
	e := p.e
	t := &p.tx
	t.nextMsgID = ob.firstID // no id was given since (see above)
	var l reqList
	body := ob.body
	for range ob.n {
		s, data, rest, err := wire.NextSub(body)
		if err != nil {
			break // never: appendOpen wrote it
		}
		body = rest
		r := e.postedCopy(ThreadID(s.SrcThread), p.proc, ThreadID(s.DstThread), Tag(s.Tag), data)
		r.refs.Store(0)
		r.peer = p
		l.push(r)
	}
	if l.tail != nil {
		l.tail.next = t.queue.head
		if t.queue.tail == nil {
			t.queue.tail = l.tail
		}
		t.queue.head = l.head
	}
	p.dropOpenLocked()
	return true
}

// dropOpenLocked empties p's open bundle. p.mu is held.
func (p *peer) dropOpenLocked() {
	ob := &p.ob
	if ob.n == 0 {
		return
	}
	ob.body = ob.body[:0]
	ob.n, ob.total, ob.rt = 0, 0, nil
	p.e.postedBytes.Add(-openCost)
}
