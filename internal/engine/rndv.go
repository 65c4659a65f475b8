package engine

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// Rendezvous: large messages over a port that reads remote memory.
//
//	sender                                    receiver
//	Expose(data) -> desc
//	announcement {id, length, desc, endpoint} ------>  (matched like any
//	  (a small message, wire.FlagRendezvous)           message, in order)
//	                                           ReadRemote(desc) into the
//	            <====== RDMA READ ==========   receive's own buffer
//	                                           receive completes
//	release, Send completes  <------------------ done {id}
//
// A message of at least Config.Rendezvous bytes whose route is on a port
// with fabric.RemoteMemory (fabric.RemoteReader) is not cut into
// fragments: its memory is exposed and an announcement takes its place in
// the send stream, so it is matched in the order the message was posted
// and waits as an announcement, not as a copy, when no receive is posted
// yet. The receive that takes it reads the message straight into its
// buffer and tells the sender, whose Send then completes: no copy on
// either side. Announcements and done messages travel as ordinary small
// messages (reliably, on any fabric path), marked wire.FlagRendezvous.
//
// Failure: a read that fails (the sender died or closed) fails the
// receive; a sender waiting for its done message fails when the peer
// fails (p.fail: lost, removed, unreachable, Close). A receive whose read
// has begun cannot be cancelled.
//
// Withdrawal: cancelling a rendezvous send (Cancel, or a blocking Send
// whose context ends) whose announcement has not left drops it. Once it
// has left, the sender asks the receiver to withdraw it:
//
//	withdraw {id} ------------------------>  announcement still unmatched:
//	                                         dropped; else a receive took it
//	release, ErrCanceled  <--------------- withdrawn {id}
//	(or, taken: the send   <-------------- taken {id}, done {id} once read)
//	completes with done)
//
// Control messages to a peer are delivered in the order they were sent,
// on every path (the datagram path's sequence numbers put them in order
// and drop duplicates), so the withdrawal always finds its announcement
// delivered: in the receive table as unexpected, or already matched. The
// receiver decides under the receive table's lock, which a receive
// matching the announcement also takes, so exactly one of the two wins:
// a receive posted after the withdrawal never sees the message, and a
// withdrawal after the match is answered taken, the send then completing
// when the read ends. The exposed memory is released only on withdrawn
// or done, so no reader can touch it once Cancel's send has completed. A
// withdrawal that finds nothing (a repeat, or an unknown id) is answered
// taken, which the sender ignores when the send is no longer waiting.
//
// Budget: a receive without a buffer reads into storage the engine
// allocates, which is held for a message not yet received until the read
// ends, so it is charged to Config.RecvBudget meanwhile. A read that finds
// no budget waits, in order, until budget is released; one read at a time
// may pass the budget (a message larger than the whole budget, or budget
// held by messages nobody receives), so a receive is never starved. The
// memory held for reads into engine storage thus stays within the budget
// plus one message, however many such receives are posted.

// defaultRendezvous is the smallest message sent by rendezvous when the
// route allows it.
const defaultRendezvous = 32 << 10

// Rendezvous message kinds (the first byte of the body).
const (
	rndvAnnounce  = 1
	rndvDone      = 2
	rndvWithdraw  = 3 // sender to receiver: drop the announcement id
	rndvWithdrawn = 4 // receiver to sender: dropped, nobody reads id
	rndvTaken     = 5 // receiver to sender: a receive took id; done follows
)

// rndvTable holds the rendezvous sends waiting for their done message.
type rndvTable struct {
	mu    sync.Mutex
	next  uint64
	sends map[uint64]*rndvSend

	// Reads into engine storage (t.mu): those charged to the budget and
	// not yet done, and those waiting for budget, in order.
	reading  int
	waiting  []*rndvRead
	nwaiting atomic.Int32

	announced, read, drops atomic.Uint64
}

// RendezvousStats counts messages moved by rendezvous: Announced by this
// process as sender, Read into its receives, and announcements Dropped as
// malformed or unreadable.
type RendezvousStats struct {
	Announced, Read, Dropped uint64
}

// RendezvousStats returns the rendezvous counters.
func (e *Engine) RendezvousStats() RendezvousStats {
	t := &e.rndv
	return RendezvousStats{Announced: t.announced.Load(), Read: t.read.Load(), Dropped: t.drops.Load()}
}

type rndvSend struct {
	r         *Request
	ann       *Request // the announcement
	peer      *peer
	release   func()
	withdrawn bool // the receiver was asked to withdraw the announcement (t.mu)
}

// rndvSized reports whether send r is large enough to go by rendezvous,
// if its route allows (rndvAnnouncement). Inlined where a send is posted:
// most are smaller, and the call, into a function of a large frame, was
// about 3% of a stream of 64-byte messages' sending (perf of bench rate
// --fabric shm).
func (e *Engine) rndvSized(r *Request) bool {
	return e.cfg.Rendezvous >= 0 && int64(len(r.data)) >= e.cfg.Rendezvous && !r.rndv
}

// rndvAnnouncement returns the announcement to queue in place of r when r
// goes by rendezvous, or nil when it goes as fragments.
func (e *Engine) rndvAnnouncement(r *Request, p *peer) *Request {
	if !e.rndvSized(r) {
		return nil
	}
	rs := p.routes.Load()
	if rs == nil {
		return nil
	}
	rt := rs.pick(int64(len(r.data)))
	rr, ok := rt.disp.fab.(fabric.RemoteReader)
	if !ok || !fabric.CapsOf(rt.disp.fab).Has(fabric.RemoteMemory) {
		return nil
	}
	if m, ok := rt.disp.fab.(fabric.RemoteReadMin); ok && len(r.data) < m.RemoteReadMin() {
		return nil // cheaper as fragments on this fabric
	}
	if rb, ok := rt.disp.fab.(fabric.RemoteReadable); ok && !rb.ReadableBy(rt.ep) {
		return nil // the destination may not read this process: fragments
	}
	local := rt.disp.fab.LocalEndpoint().String()
	kind := rt.disp.fab.Kind()
	if len(local) > 255 || len(kind) > 255 {
		return nil
	}
	desc, release, err := rr.Expose(r.data)
	if err != nil || len(desc) > 255 {
		if err == nil {
			release()
		}
		return nil // sent as fragments instead
	}
	t := &e.rndv
	// The table entry is made under p.mu, so that a peer failing now
	// either fails the announcement in isend or finds the entry.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tx.failed != nil {
		release()
		return nil // failed by isend
	}
	t.mu.Lock()
	if t.sends == nil {
		t.sends = map[uint64]*rndvSend{}
	}
	t.next++
	id := t.next
	body := make([]byte, 0, 1+8+8+3+len(desc)+len(local)+len(kind))
	body = append(body, rndvAnnounce)
	body = binary.LittleEndian.AppendUint64(body, id)
	body = binary.LittleEndian.AppendUint64(body, uint64(len(r.data)))
	body = append(body, byte(len(desc)))
	body = append(body, desc...)
	body = append(body, byte(len(kind)))
	body = append(body, kind...)
	body = append(body, byte(len(local)))
	body = append(body, local...)
	a := newRequest(e, sendReq)
	a.setSend(r.srcThread, r.dstProc, r.dstThread, r.tag, body)
	a.rndv = true
	r.rndvID = id
	r.peer = p
	t.sends[id] = &rndvSend{r: r, ann: a, peer: p, release: release}
	t.mu.Unlock()
	t.announced.Add(1)
	return a
}

// take removes and returns the send to p waiting under id.
func (t *rndvTable) take(id uint64, p *peer) *rndvSend {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sends[id]
	if s == nil || s.peer != p {
		return nil
	}
	delete(t.sends, id)
	return s
}

// rndvCancel withdraws a rendezvous send: an announcement that has not
// left is dropped and the send completes with ErrCanceled; one that has
// left is withdrawn from the receiver (see Withdrawal above), and the send
// completes when the receiver answers.
func (e *Engine) rndvCancel(r *Request) {
	t := &e.rndv
	id := r.rndvID
	t.mu.Lock()
	s := t.sends[id]
	t.mu.Unlock()
	if s == nil {
		return
	}
	p := s.peer
	p.mu.Lock()
	dropped := !s.ann.started && p.tx.queue.remove(s.ann)
	p.mu.Unlock()
	if dropped {
		if t.take(id, p) != nil {
			s.ann.complete(ErrCanceled)
			s.release()
			r.complete(ErrCanceled)
		}
		return
	}
	t.mu.Lock()
	if t.sends[id] != s || s.withdrawn {
		t.mu.Unlock()
		return // done meanwhile, or asked already
	}
	s.withdrawn = true
	t.mu.Unlock()
	// Queued behind the announcement, to the same thread with the same
	// tag: it reaches the receiver after it.
	e.rndvSendControl(r.srcThread, p.proc, r.dstThread, r.tag, rndvWithdraw, id)
}

// rndvFailPeer fails the rendezvous sends to p (which failed with err).
func (e *Engine) rndvFailPeer(p *peer, err error) {
	t := &e.rndv
	var failed []*rndvSend
	t.mu.Lock()
	for id, s := range t.sends {
		if s.peer == p {
			delete(t.sends, id)
			failed = append(failed, s)
		}
	}
	var reads []*rndvRead
	kept := t.waiting[:0]
	for _, rd := range t.waiting {
		if rd.k.srcProc == p.proc {
			reads = append(reads, rd)
		} else {
			kept = append(kept, rd)
		}
	}
	clear(t.waiting[len(kept):])
	t.waiting = kept
	t.nwaiting.Store(int32(len(kept)))
	t.mu.Unlock()
	for _, s := range failed {
		s.release()
		s.r.complete(err)
	}
	for _, rd := range reads {
		rd.r.complete(err)
	}
}

// rndvControlLocked consumes a rendezvous control message delivered from
// p and reports whether m was one; announcements are left to be matched.
// A done or withdrawn message completes the send it names, and m is
// freed. A withdrawal is answered: m is turned into the answer and queued
// on d.wake (wakeAll sends it, once p.rxmu is released). p.rxmu is held.
func (d *dispatcher) rndvControlLocked(p *peer, m *mcb) bool {
	e := d.e
	if len(m.data) == 0 || m.data[0] == rndvAnnounce {
		return false
	}
	if len(m.data) != 1+8 || p == nil {
		e.freeMCB(m)
		return true
	}
	id := binary.LittleEndian.Uint64(m.data[1:])
	switch m.data[0] {
	case rndvDone:
		if s := e.rndv.take(id, p); s != nil {
			s.release()
			s.r.complete(nil)
		}
	case rndvWithdrawn:
		// Nobody reads the memory any more: it may be reused.
		if s := e.rndv.take(id, p); s != nil {
			s.release()
			s.r.complete(ErrCanceled)
		}
	case rndvWithdraw:
		m.data[0] = rndvTaken
		if e.withdrawLocked(m.key, id) {
			m.data[0] = rndvWithdrawn
		}
		d.wake = append(d.wake, match{m: m})
		return true
	}
	// (Taken: the send completes with its done message.)
	e.freeMCB(m)
	return true
}

// withdrawLocked drops the announcement id of key k if it waits
// unexpected, and reports whether it did. The sender's peer's rxmu is
// held.
func (e *Engine) withdrawLocked(k key, id uint64) bool {
	t := e.table
	s := t.stripe(k.dstThread)
	h := hashKey(k)
	s.mu.Lock()
	found := t.findExact(s, k, h)
	for found != nil && !(found.rndv && len(found.data) >= 1+8 && found.data[0] == rndvAnnounce &&
		binary.LittleEndian.Uint64(found.data[1:]) == id) {
		found = t.exactFrom(found.hnext, k)
	}
	if found != nil {
		t.unlink(s, found, h)
	}
	s.mu.Unlock()
	if found == nil {
		return false
	}
	e.freeMCB(found)
	return true
}

// rndvAnswer sends the answer m holds (withdrawn or taken, made of a
// withdrawal by rndvControlLocked) to the withdrawal's sender; m is freed.
func (e *Engine) rndvAnswer(m *mcb) {
	k := m.key
	kind, id := m.data[0], binary.LittleEndian.Uint64(m.data[1:])
	e.freeMCB(m)
	e.rndvSendControl(k.dstThread, k.srcProc, k.srcThread, k.tag, kind, id)
}

// announcement is a decoded announcement.
type announcement struct {
	id, length uint64
	desc       []byte
	kind, ep   string
}

func parseAnnouncement(b []byte) (a announcement, ok bool) {
	if len(b) < 1+8+8+1 || b[0] != rndvAnnounce {
		return a, false
	}
	a.id = binary.LittleEndian.Uint64(b[1:])
	a.length = binary.LittleEndian.Uint64(b[9:])
	b = b[17:]
	field := func() ([]byte, bool) {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return nil, false
		}
		f := b[1 : 1+int(b[0])]
		b = b[1+int(b[0]):]
		return f, true
	}
	desc, ok1 := field()
	kind, ok2 := field()
	ep, ok3 := field()
	if !ok1 || !ok2 || !ok3 || len(b) != 0 {
		return a, false
	}
	// Copied: b is the storage of the announcement's control block,
	// reused once it is freed, and a read may start later.
	a.desc, a.kind, a.ep = append([]byte(nil), desc...), string(kind), string(ep)
	return a, true
}

// msgLen is the length of the message m stands for: an announcement's
// message, or m's own.
func (m *mcb) msgLen() int {
	if m.rndv {
		if a, ok := parseAnnouncement(m.data); ok {
			return int(a.length)
		}
	}
	return int(m.total)
}

// rndvReceive completes receive r with the message announced by m: it
// reads the message into r's buffer (or one of its own) from the sender's
// exposed memory, then tells the sender. m is freed. With now, the caller
// holds no lock and no progress token, so that a read made by this thread
// (fabric.RemoteReadNow) may end here.
func (e *Engine) rndvReceive(r *Request, m *mcb, now bool) {
	k := m.key
	a, ok := parseAnnouncement(m.data)
	e.freeMCB(m)
	r.setFrom(k)
	fail := func(reason string) {
		r.complete(&UnreachableError{Proc: k.srcProc, Reason: reason})
	}
	if !ok || a.length > uint64(e.cfg.MaxMessage) {
		e.rndv.drops.Add(1)
		fail("malformed rendezvous announcement")
		return
	}
	d, from := e.rndvPort(a)
	if d == nil {
		e.rndv.drops.Add(1)
		fail("rendezvous on a " + a.kind + " port this process does not have")
		return
	}
	rd := &rndvRead{r: r, k: k, a: a, d: d, from: from}
	if r.buf != nil {
		e.rndvRead(rd, now)
		return
	}
	// Storage of the engine's own: charged to the budget while it is read.
	t := &e.rndv
	t.mu.Lock()
	if e.closed.Load() {
		t.mu.Unlock()
		r.complete(ErrClosed)
		e.rndvSendDone(k, a.id)
		return
	}
	if len(t.waiting) > 0 || !e.rndvChargeLocked(rd) {
		t.waiting = append(t.waiting, rd)
		t.nwaiting.Add(1)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	e.rndvRead(rd, now)
}

// rndvRead is a rendezvous read into a receive: announced by a, from the
// sender's port at from, through port d.
type rndvRead struct {
	r       *Request
	k       key
	a       announcement
	d       *dispatcher
	from    fabric.Endpoint
	charged int64 // budget held for engine storage
}

// rndvChargeLocked takes the budget for a read into engine storage: the
// message's length, or past the budget when no other such read holds any.
// t.mu is held.
func (e *Engine) rndvChargeLocked(rd *rndvRead) bool {
	n := int64(rd.a.length)
	if !e.reserve(n) {
		if e.rndv.reading > 0 {
			return false
		}
		e.budgetUsed.Add(n)
	}
	rd.charged = n
	e.rndv.reading++
	return true
}

// rndvPump starts the reads waiting for budget that now find it.
func (e *Engine) rndvPump() {
	t := &e.rndv
	var start []*rndvRead
	t.mu.Lock()
	for len(t.waiting) > 0 && e.rndvChargeLocked(t.waiting[0]) {
		start = append(start, t.waiting[0])
		t.waiting[0] = nil
		t.waiting = t.waiting[1:]
		t.nwaiting.Add(-1)
	}
	t.mu.Unlock()
	for _, rd := range start {
		e.rndvRead(rd, false)
	}
}

// rndvRead reads the announced message into the receive's buffer, or
// storage of the engine's own, then tells the sender. With now (see
// rndvReceive), a port that reads on the calling thread does, and the
// receive completes and the sender is told here: handing the end of every
// read to another goroutine would wake a thread per message.
func (e *Engine) rndvRead(rd *rndvRead, now bool) {
	r, a, k := rd.r, rd.a, rd.k
	var dst []byte
	var trunc error
	if r.buf != nil {
		dst = r.buf[:min(uint64(len(r.buf)), a.length)]
		if a.length > uint64(len(r.buf)) {
			trunc = ErrTruncated
		}
	} else {
		dst = make([]byte, a.length)
	}
	done := func(err error) {
		if rd.charged > 0 {
			t := &e.rndv
			t.mu.Lock()
			t.reading--
			t.mu.Unlock()
			e.release(rd.charged) // starts waiting reads (rndvPump)
		}
		if err != nil {
			r.complete(&UnreachableError{Proc: k.srcProc, Reason: "rendezvous read: " + err.Error()})
		} else {
			r.data = dst
			e.rndv.read.Add(1)
			r.complete(trunc)
		}
		e.rndvSendDone(k, a.id)
	}
	if rn, ok := rd.d.fab.(fabric.RemoteReadNow); ok && now {
		done(rn.ReadRemoteNow(rd.from, dst, a.desc))
		return
	}
	if err := rd.d.fab.(fabric.RemoteReader).ReadRemote(rd.from, dst, a.desc, done); err != nil {
		done(err)
	}
}

// rndvPort finds the local port that reads the announced memory.
func (e *Engine) rndvPort(a announcement) (*dispatcher, fabric.Endpoint) {
	ps := e.portList.Load()
	if ps == nil {
		return nil, nil
	}
	for _, d := range *ps {
		if _, ok := d.fab.(fabric.RemoteReader); !ok || d.fab.Kind() != a.kind {
			continue
		}
		if ep, err := d.fab.ParseEndpoint(a.ep); err == nil {
			return d, ep
		}
	}
	return nil, nil
}

// rndvSendDone tells the sender of the message of key k that its
// rendezvous id is over (read, or given up).
func (e *Engine) rndvSendDone(k key, id uint64) {
	e.rndvSendControl(k.dstThread, k.srcProc, k.srcThread, k.tag, rndvDone, id)
}

// rndvSendControl sends the rendezvous control message kind about id from
// thread src to thread dst of process to, with tag.
func (e *Engine) rndvSendControl(src ThreadID, to ProcID, dst ThreadID, tag Tag, kind byte, id uint64) {
	body := make([]byte, 1+8)
	body[0] = kind
	binary.LittleEndian.PutUint64(body[1:], id)
	f := newRequest(e, sendReq)
	f.setSend(src, to, dst, tag, body)
	f.rndv = true
	e.isend(f)
}

// rndvFlag is the header flag of a rendezvous control message.
func rndvFlag(r *Request) uint8 {
	if r.rndv {
		return wire.FlagRendezvous
	}
	return 0
}
