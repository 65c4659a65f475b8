package engine

import "time"

// Buffered sends.
//
// Post sends a copy of a small message: the data is copied into a pooled
// buffer and queued, and the call returns at once, as MPI's eager Send
// does. The engine keeps the copy until the destination has acknowledged
// it (the acknowledgement usually rides on the destination's next data),
// retransmitting from it if need be, then returns buffer and request to
// their pools: nothing is allocated per message. A delivery that fails
// after Post returned (the destination process is found dead or
// unreachable) is reported by the next send to that process, which fails
// with the same error. Endpoint.Send, by contrast, waits until the
// destination has accepted the message (MPI's Ssend).

// EagerLimit is the largest message Post takes.
const EagerLimit = 16 << 10

// maxPostedBytes bounds the memory of the posted copies awaiting
// acknowledgement that IsendCopy and SendBuffered let a process have, all
// destinations together: each copy counts its buffer (its size rounded up
// to a power of two) and postCost for its request. Past it IsendCopy is
// Isend and SendBuffered is Send. The bound is in bytes rather than copies
// so that many threads each streaming small messages (1,000 senders with
// 32 in flight each) still post copies rather than fall back to a request
// allocated per message: 16 MiB holds 1,000 copies of EagerLimit bytes or
// about 37,000 of 64 B. The requests and buffers kept for reuse once the
// copies are acknowledged stay within it too (postsKept, bufClassKeep).
const maxPostedBytes = 16 << 20

// postCost is what a posted copy counts beyond its buffer: its request
// (280 bytes, allocated as 288) and the box that carries its buffer (24
// bytes), with some room. Counting 256 let a sender whose receiver took
// nothing hold 21 MB of copies of 64 B under a bound of 16 MiB
// (TestPostedCopiesMemoryBound).
const postCost = 384

// postRoom reports whether a copy of n bytes may be posted now.
func (e *Engine) postRoom(n int) bool {
	return e.postedBytes.Load()+int64(n)+postCost <= maxPostedBytes
}

// Post sends a copy of data from thread src to thread dstThread of process
// dstProc with tag and returns once the copy is queued. data may be reused
// at once. It fails at once for a destination known to be down or
// unreachable, after Close, and for data longer than EagerLimit
// (ErrTooLarge). Messages to threads of this process are not posted: use
// NewSend.
func (e *Engine) Post(src ThreadID, dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) error {
	if len(data) > EagerLimit || dstProc == e.cfg.Proc {
		return ErrTooLarge
	}
	if len(data) <= bundleMax && int64(len(data)) <= e.cfg.MaxMessage && !e.closed.Load() {
		if p := e.peer(dstProc); p != nil && p.reliable.Load() && p.appendOpen(src, dstThread, tag, data) {
			return nil
		}
	}
	r := e.postedCopy(src, dstProc, dstThread, tag, data)
	r.refs.Store(1) // held until isend has returned: nobody frees r before
	e.isend(r)
	var err error
	if r.state.Load() == stateDone {
		err = r.err // failed at once
	}
	r.refs.Add(-1)
	r.free()
	return err
}

// postedCopy returns a posted request, taken from the pool, that carries
// a copy of data from thread src to thread dstThread of process dstProc
// with tag, its memory counted in postedBytes. refs is left to the caller.
func (e *Engine) postedCopy(src ThreadID, dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) *Request {
	r := e.posts.get()
	if r == nil {
		// Nobody waits on a posted request (the caller gets its error,
		// IsendCopy a shared request), so it has no done channel: reset
		// and complete then touch no channel, which at many threads
		// posting was a cache miss a message.
		r = &Request{eng: e, kind: sendReq, pooled: true} // pooled for its whole life
	}
	r.reset()
	r.kind = sendReq
	r.setSend(src, dstProc, dstThread, tag, nil)
	if r.box != nil && sizeClass(len(data)) == sizeClass(cap(*r.box)) {
		r.data = (*r.box)[:len(data)] // the buffer of its last message
	} else {
		if r.box != nil {
			e.bufs.put(*r.box, r.box)
		}
		r.data, r.box = e.bufs.get(len(data))
	}
	copy(r.data, data)
	e.postedBytes.Add(int64(cap(r.data)) + postCost)
	return r
}

// lingerPosted gives posted sends still unacknowledged a while to be
// acknowledged before Close fails them, as a program that posts its last
// messages and closes expects them delivered: at most the unreachable
// timeout, and no more than two seconds.
func (e *Engine) lingerPosted() {
	if e.postedBytes.Load() == 0 {
		return
	}
	deadline := time.Now().Add(min(e.cfg.UnreachableTimeout, 2*time.Second))
	for e.postedBytes.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Microsecond)
	}
}

// free returns a posted request and its buffer to their free lists once it has
// completed and no fragment in flight refers to it. It is called where
// the last reference goes: under the peer's mutex when the entry leaves
// the send stream, or by the one that failed the request after draining
// the stream.
//
// Whoever sees the request done with no reference left frees it; the swap
// of refs to freedRefs makes sure only one does, even one that looks at a
// request already freed and posted again (pooled never changes, state and
// refs are atomic).
func (r *Request) free() {
	if n := r.unpost(); n != 0 {
		r.eng.postedBytes.Add(-n)
		r.eng.posts.put(r, postsKept)
	}
}

// unpost takes a posted request that has completed, with no reference
// left, out of the posted ones, if no one did, and returns what it took
// of postedBytes, for the caller to give back with the request (free);
// 0 if it was not for this call to free it.
func (r *Request) unpost() int64 {
	if !r.pooled || r.state.Load() != stateDone || !r.refs.CompareAndSwap(0, freedRefs) {
		return 0
	}
	n := int64(cap(r.data)) + postCost
	if cap(r.data) > keptData || r.box == nil {
		r.eng.bufs.put(r.data, r.box)
		r.box = nil
	}
	r.data = nil
	return n
}

// postsKept bounds the free posted requests an engine keeps (see
// freeList.put): as many as maxPostedBytes lets be in flight, since a
// stream of small copies runs that far ahead of its acknowledgements. A
// request keeps its buffer of up to keptData bytes for its next message
// of the same size class, so what the list holds is about what the posted
// copies held at their most.
const postsKept = maxPostedBytes / postCost

// freedRefs marks a posted request that is back in the pool.
const freedRefs = -1 << 30
