package engine

// Messages between threads of the same process go straight into the
// receive table: a posted receive gets a copy of the data at once; else the
// message is copied into a control block as unexpected. When no block or
// budget is free the send waits, in order, until a receive frees some or
// a receive for it is posted.

func (e *Engine) sendLocal(r *Request) {
	if e.localWaiting.Load() == 0 && e.tryLocal(r) {
		return
	}
	e.localMu.Lock()
	if len(e.localQ) == 0 && e.tryLocal(r) {
		e.localMu.Unlock()
		return
	}
	e.localQ = append(e.localQ, r)
	e.localWaiting.Add(1)
	e.localMu.Unlock()
	// A receive may have freed space between the attempt and the enqueue.
	e.drainLocal()
}

func (e *Engine) tryLocal(r *Request) bool {
	k := key{e.cfg.Proc, r.srcThread, r.dstThread, r.tag}
	h := hashKey(k)
	s := e.table.stripe(r.dstThread)
	s.mu.Lock()
	if e.closed.Load() {
		s.mu.Unlock()
		r.complete(ErrClosed)
		return true
	}
	if q := e.table.takePosted(s, k, h); q != nil {
		s.mu.Unlock()
		e.fillFromSend(q, r.data, k)
		r.complete(nil)
		return true
	}
	n := int64(len(r.data))
	m := e.table.takeFree(s)
	if m == nil {
		m = e.table.getMCB(s)
	}
	if m == nil {
		s.mu.Unlock()
		return false
	}
	if !e.reserve(n) {
		e.pool.put(m)
		s.mu.Unlock()
		return false
	}
	m.reserved = n
	m.key = k
	m.total = uint64(n)
	if n <= chunkSize {
		m.data, m.box = e.bufs.get(int(n))
	} else {
		m.data = make([]byte, n)
	}
	copy(m.data, r.data)
	e.table.enqueue(s, m, h)
	s.mu.Unlock()
	r.complete(nil)
	return true
}

// drainLocal admits waiting local sends while space allows.
func (e *Engine) drainLocal() {
	e.localMu.Lock()
	defer e.localMu.Unlock()
	for len(e.localQ) > 0 {
		r := e.localQ[0]
		if r.state.Load() == statePending && !e.tryLocal(r) {
			return
		}
		e.localQ[0] = nil
		e.localQ = e.localQ[1:]
		e.localWaiting.Add(-1)
	}
}

func (e *Engine) removeLocal(r *Request) bool {
	e.localMu.Lock()
	defer e.localMu.Unlock()
	for i, q := range e.localQ {
		if q == r {
			e.localQ = append(e.localQ[:i], e.localQ[i+1:]...)
			e.localWaiting.Add(-1)
			return true
		}
	}
	return false
}
