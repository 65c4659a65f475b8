package engine

import "context"

func (e *Engine) irecv(r *Request) {
	s := e.table.stripe(r.dstThread)
	s.mu.Lock()
	if e.closed.Load() {
		s.mu.Unlock()
		r.complete(ErrClosed)
		return
	}
	m := e.table.post(s, r)
	// A message that arrived before its sender went down is still
	// received; only a receive nothing can satisfy any more fails.
	if m == nil {
		if err := e.goneErr(r.srcProc); err != nil {
			e.table.unpost(s, r)
			s.mu.Unlock()
			r.complete(err)
			return
		}
	} else if m.runLeft() || m.inRun || m.total <= keptData && m.data != nil && m.owner == nil && m.expBy == nil && !m.rndv {
		e.fillSmallLocked(s, r, m)
		return
	}
	s.mu.Unlock()
	if m != nil && m.rndv {
		e.rndvReceive(r, m, true) // this thread holds nothing: it may read
	} else if m != nil {
		e.fillFromMCB(r, m)
	} else {
		e.resumeHeld() // a held message may fit this receive's buffer
		if e.localWaiting.Load() > 0 {
			e.drainLocal() // a local send waiting for budget may go to r
		}
	}
}

// goneErr is the error for a receive or probe naming proc that no message
// has come for: proc was removed, given up for silence in the middle of a
// message, or reported lost by its fabric. Nil if proc may still send.
func (e *Engine) goneErr(proc ProcID) error {
	if proc == AnyProc || proc == e.cfg.Proc {
		return nil
	}
	p := e.peer(proc)
	if p == nil {
		return e.downErr(proc)
	}
	if u := p.silent.Load(); u != nil {
		return u
	}
	if l := p.lostErr.Load(); l != nil {
		return l
	}
	return nil
}

// downErr is the error for receives naming a process that was removed.
func (e *Engine) downErr(proc ProcID) error {
	e.peersMu.Lock()
	defer e.peersMu.Unlock()
	if e.down == nil {
		return nil
	}
	return e.down[proc]
}

// ownMin is the smallest message placed straight into the buffer of a
// receive posted for it, from the datagrams, in one copy. A smaller message
// is stored in a pooled buffer and copied again when it is received: for a
// few KiB that copy costs less than finding the receive early does.
const ownMin = 4 << 10

// claimPostedLocked gives message m, arriving from p, to the receive that
// will take it, so that its fragments go straight into the receive's buffer
// (or, with anyBuf, for a receive without one, into storage charged to the
// receive rather than to the budget): the earliest posted receive matching
// m, if its buffer is large enough and it could match no earlier message from p
// still to be accepted. What already arrived moves into the buffer, and
// the budget m held is released. It returns the receive, or nil. p.rxmu is
// held (and the receive table's stripe is taken under it).
func (e *Engine) claimPostedLocked(p *peer, m *mcb, anyBuf bool) *Request {
	k, msgID, total := m.key, m.msgID, m.total
	s := e.table.stripe(k.dstThread)
	s.mu.Lock()
	r := e.table.peekPosted(s, k, hashKey(k))
	if r == nil || r.buf == nil && !anyBuf || r.buf != nil && uint64(len(r.buf)) < total || !p.rx.firstFor(r, msgID) {
		s.mu.Unlock()
		return nil
	}
	e.table.takePosted(s, k, hashKey(k))
	s.mu.Unlock()
	m.owner = r
	r.owned = m
	r.ownerPeer.Store(p)
	if r.buf != nil {
		buf := r.buf[:total]
		if m.data != nil {
			copy(buf, m.data)
			e.bufs.put(m.data, m.box)
			m.box = nil
		} else if m.chunks != nil {
			m.copyTo(buf)
			m.releaseChunks()
		}
		m.data = buf
	}
	n := m.reserved
	m.reserved = 0
	e.release(n)
	return r
}

// release the receive owning m (cancelled, or its peer gone): m keeps the
// data received so far in storage of its own, charged to the budget even
// past it (what arrived was accepted; the rest waits for budget as any
// message does). p.rxmu is held.
func (e *Engine) disownLocked(m *mcb) {
	m.unexpect()
	r := m.owner
	m.owner = nil
	r.owned = nil
	r.ownerPeer.Store(nil)
	if r.buf != nil {
		m.reserved = m.unpin(m.data, &e.bufs)
	} else {
		m.reserved = m.storage()
	}
	e.budgetUsed.Add(m.reserved)
}

// fillFromMCB completes receive r with message m and frees m.
func (e *Engine) fillFromMCB(r *Request, m *mcb) {
	if m.rndv {
		e.rndvReceive(r, m, false)
		return
	}
	var err error
	if m.owner == r {
		if r.buf != nil {
			r.data = r.buf[:m.total]
			m.data = nil
		} else {
			r.data = m.bytes()
			m.data, m.box = nil, nil // handed over
		}
		r.owned = nil
	} else {
		err = r.takeData(m)
	}
	r.setFrom(m.key)
	e.freeMCB(m)
	r.complete(err)
}

// takeData gives receive r the message m stored, which r did not own
// (not received into r's buffer): copied into r's buffer, or m's data
// handed over if r has none. It reports ErrTruncated if the buffer is too
// small.
func (r *Request) takeData(m *mcb) error {
	if r.buf == nil {
		r.data = m.bytes()
		m.data, m.box = nil, nil // handed over
		return nil
	}
	r.data = r.buf[:m.copyTo(r.buf)]
	if m.total > uint64(len(r.buf)) {
		return ErrTruncated
	}
	return nil
}

// fillSmallLocked completes receive r with m, a small message stored whole
// in a data buffer of its own, which r's post has just taken from the
// table: the copy is made under the stripe lock s, already held, and m
// goes onto the stripe's free list before s is unlocked (the common case
// of many threads each receiving its own stream: most of their messages
// arrive before their receive). It unlocks s.
func (e *Engine) fillSmallLocked(s *stripe, r *Request, m *mcb) {
	if m.runLeft() {
		e.fillRunLocked(s, r, m)
		return
	}
	if m.inRun && r.buf == nil {
		m.data = append([]byte(nil), m.data...) // the run's storage stays the block's
		m.inRun = false
	}
	err := r.takeData(m)
	if m.inRun {
		m.data = nil
	}
	n := e.dropRun(m)
	if m.data != nil { // copied
		m.keep(&e.bufs)
	}
	r.setFrom(m.key)
	n += m.reserved
	kept := e.table.giveFree(s, m)
	s.mu.Unlock()
	if !kept {
		e.pool.put(m)
	}
	e.release(n)
	r.complete(err)
}

// fillFromSend completes receive r with a local sender's data.
func (e *Engine) fillFromSend(r *Request, data []byte, k key) {
	var err error
	if r.buf != nil {
		n := copy(r.buf, data)
		if len(data) > len(r.buf) {
			err = ErrTruncated
		}
		r.data = r.buf[:n]
	} else {
		r.data = append(make([]byte, 0, len(data)), data...)
	}
	r.setFrom(k)
	r.complete(err)
}

func (e *Engine) cancelRecv(r *Request) {
	s := e.table.stripe(r.dstThread)
	s.mu.Lock()
	ok := e.table.unpost(s, r)
	s.mu.Unlock()
	if !ok {
		ok = e.disownRequest(r)
	}
	if ok {
		r.complete(ErrCanceled)
	}
}

// disownRequest detaches r from a message being placed into its buffer.
func (e *Engine) disownRequest(r *Request) bool {
	for {
		p := r.ownerPeer.Load()
		if p == nil {
			return false
		}
		p.rxmu.Lock()
		if r.ownerPeer.Load() != p {
			p.rxmu.Unlock()
			continue
		}
		m := r.owned
		if m.owner != r {
			p.rxmu.Unlock()
			return false
		}
		e.disownLocked(m)
		p.rxmu.Unlock()
		return true
	}
}

// failPostedFrom fails the posted receives naming process proc, and
// records proc as down: later receives and sends naming it fail at once.
func (e *Engine) failPostedFrom(proc ProcID, err error) {
	e.peersMu.Lock()
	if e.down == nil {
		e.down = make(map[ProcID]error)
	}
	e.down[proc] = err
	e.peersMu.Unlock()
	e.failPostedNamed(proc, err)
}

// dropPartialLocked ends every message half received from p, or held for an
// earlier one: receives that own one fail with err, and the memory and
// budget they held are freed. p.rxmu is held.
func (e *Engine) dropPartialLocked(p *peer, err error) {
	e.dropOwnedLocked(p, err)
	for id, m := range p.rx.inprog {
		delete(p.rx.inprog, id)
		e.freeMCB(m)
	}
	for id, m := range p.rx.held {
		if m != nil {
			delete(p.rx.held, id)
			e.freeMCB(m)
		}
	}
}

// failPostedNamed fails the posted receives naming process proc.
func (e *Engine) failPostedNamed(proc ProcID, err error) {
	var victims []*Request
	for i := range e.table.stripes {
		s := &e.table.stripes[i]
		s.mu.Lock()
		for b := range s.posted {
			for r := s.posted[b].head; r != nil; r = r.next {
				if r.srcProc == proc {
					victims = append(victims, r)
				}
			}
		}
		for _, ts := range s.threads {
			for r := ts.wild.head; r != nil; r = r.next {
				if r.srcProc == proc {
					victims = append(victims, r)
				}
			}
		}
		for _, r := range victims {
			if stripeOf(r.dstThread) == i {
				e.table.unpost(s, r)
			}
		}
		// Probes waiting on proc look again.
		for _, ts := range s.threads {
			select {
			case ts.notify <- struct{}{}:
			default:
			}
		}
		s.mu.Unlock()
	}
	for _, r := range victims {
		r.complete(err)
	}
}

// Status describes a message found by Probe.
type Status struct {
	SrcProc   ProcID
	SrcThread ThreadID
	Tag       Tag
	Len       int
}

// iprobe reports whether a message for thread dst matching the pattern has
// arrived, without receiving it.
func (e *Engine) iprobe(dst ThreadID, srcProc ProcID, srcThread ThreadID, tag Tag) (Status, bool) {
	s := e.table.stripe(dst)
	pat := Request{dstThread: dst, srcProc: srcProc, srcThread: srcThread, tag: tag}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := e.table.findUnexpected(s, &pat)
	if m == nil {
		return Status{}, false
	}
	return Status{m.key.srcProc, m.key.srcThread, m.key.tag, m.msgLen()}, true
}

// probe waits until a message matching the pattern has arrived.
func (e *Engine) probe(ctx context.Context, dst ThreadID, srcProc ProcID, srcThread ThreadID, tag Tag) (Status, error) {
	s := e.table.stripe(dst)
	s.mu.Lock()
	ts := s.thread(dst)
	ts.probes++ // arrivals signal notify from now on
	notify := ts.notify
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		ts.probes--
		s.mu.Unlock()
	}()
	for {
		if st, ok := e.iprobe(dst, srcProc, srcThread, tag); ok {
			return st, nil
		}
		if e.closed.Load() {
			return Status{}, ErrClosed
		}
		if err := e.goneErr(srcProc); err != nil {
			return Status{}, err
		}
		select {
		case <-notify:
		case <-e.closing:
		case <-ctx.Done():
			return Status{}, ctx.Err()
		}
	}
}

// dropOwnedLocked ends every message from p that a receive owns, in progress or
// held for an earlier one: the message can no longer complete. With a nil
// err the receive is posted again (the message was withdrawn, a new one may
// match it); otherwise it fails with err. p.rxmu is held.
func (e *Engine) dropOwnedLocked(p *peer, err error) {
	for id, m := range p.rx.inprog {
		if m.owner != nil {
			e.releaseOwnerLocked(m, err)
			delete(p.rx.inprog, id)
			e.freeMCB(m)
		}
	}
	for id, m := range p.rx.held {
		if m != nil && m.owner != nil {
			e.releaseOwnerLocked(m, err)
			delete(p.rx.held, id)
			e.freeMCB(m)
		}
	}
}

// releaseOwnerLocked detaches the receive that owns m, which is being dropped,
// and fails it with err or, with a nil err, posts it again. p.rxmu is held.
func (e *Engine) releaseOwnerLocked(m *mcb, err error) {
	m.unexpect()
	r := m.owner
	m.owner, m.data = nil, nil
	r.owned = nil
	r.ownerPeer.Store(nil)
	if err != nil {
		r.complete(err)
		return
	}
	s := e.table.stripe(r.dstThread)
	s.mu.Lock()
	if e.closed.Load() {
		// Close drains the table under the stripe locks after it
		// marks the engine closed: r posted now would wait for ever.
		s.mu.Unlock()
		r.complete(ErrClosed)
		return
	}
	found := e.table.post(s, r)
	if found != nil && (found.runLeft() || found.inRun) {
		e.fillSmallLocked(s, r, found)
		return
	}
	s.mu.Unlock()
	if found != nil {
		e.fillFromMCB(r, found)
	}
}
