package engine

import "context"

// Endpoint is one thread's access to the engine: it posts the thread's
// sends and receives, and owns the two requests its blocking calls reuse,
// so that a thread's Send and Recv allocate nothing in the steady state.
// An Endpoint is used by one goroutine at a time.
type Endpoint struct {
	e    *Engine
	id   ThreadID
	recv *Request // reused by Recv
	// recvAlt takes Recv's turn while the last completion of recv is
	// still under way (made the first time that happens).
	recvAlt *Request
	send    *Request // reused by Send once the engine lets go of it
	// local carries IsendCopy's message to a thread of this process
	// while it is copied (sendCopyLocal); nobody else ever sees it.
	local *Request
}

// Endpoint returns an endpoint for thread id.
func (e *Engine) Endpoint(id ThreadID) *Endpoint {
	return &Endpoint{e: e, id: id, recv: ownRequest(e, recvReq)}
}

// ID is the endpoint's thread id.
func (ep *Endpoint) ID() ThreadID { return ep.id }

// Isend posts a send of data to thread dstThread of process dstProc.
func (ep *Endpoint) Isend(dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) *Request {
	r := newRequest(ep.e, sendReq)
	r.setSend(ep.id, dstProc, dstThread, tag, data)
	ep.e.post(r)
	return r
}

// IsendCopy is Isend that completes at once for a small message to
// another process: while the posted copies awaiting their acknowledgement
// leave room (maxPostedBytes), data of at most EagerLimit bytes is copied and queued
// (Post) and the request returned is already done, so data may be reused
// at once. A failure known at once (the destination is down or
// unreachable, the engine closed) completes the request with that error; a
// delivery that fails later is reported by the next send to that process.
// Otherwise it is Isend. The request of a copied send is shared: it holds
// no message, and Cancel does nothing to it.
//
// A small message to a thread of this process that can be copied at once
// (into the receive posted for it, or as unexpected) is copied, and the
// request returned is also the shared done one: such a send completes
// when Isend returns in any case, and needs no request of its own.
func (ep *Endpoint) IsendCopy(dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) *Request {
	if dstProc == ep.e.cfg.Proc {
		if ok, err := ep.sendCopyLocal(dstThread, tag, data); ok {
			if err != nil {
				return failedSend(ep.e, err)
			}
			return copiedSend
		}
	}
	if len(data) > EagerLimit || dstProc == ep.e.cfg.Proc || !ep.e.postRoom(len(data)) {
		return ep.Isend(dstProc, dstThread, tag, data)
	}
	if err := ep.Post(dstProc, dstThread, tag, data); err != nil {
		return failedSend(ep.e, err)
	}
	return copiedSend
}

// failedSend is the request IsendCopy returns for a message that failed
// at once: a send done with err.
func failedSend(e *Engine, err error) *Request {
	r := newRequest(e, sendReq)
	r.err = err
	r.state.Store(stateDone)
	return r
}

// sendCopyLocal copies a message to a thread of this process if it can be
// at once, without a request of its own: ok reports that it was (err is
// then its outcome: nil, or ErrClosed). It is not for a message over
// EagerLimit or MaxMessage, nor while local sends wait already (it must
// not pass them), nor when no room is left for it: the caller then sends
// it with a request (Isend, Send).
func (ep *Endpoint) sendCopyLocal(dstThread ThreadID, tag Tag, data []byte) (ok bool, err error) {
	e := ep.e
	if len(data) > EagerLimit || int64(len(data)) > e.cfg.MaxMessage {
		return false, nil
	}
	e.flushDeferred() // as post does
	if e.localWaiting.Load() != 0 {
		return false, nil
	}
	r := ep.local
	if r == nil {
		r = &Request{eng: e, kind: sendReq} // never waited on: no done channel
		ep.local = r
	}
	r.state.Store(statePending)
	r.err = nil
	r.setSend(ep.id, e.cfg.Proc, dstThread, tag, data)
	ok = e.tryLocal(r)
	err = r.err
	r.data = nil // keep no reference to the caller's buffer
	return ok, err
}

// copiedSend is the request IsendCopy returns for a message it copied: a
// send done without error, whose Done channel is closed.
var copiedSend = func() *Request {
	r := &Request{kind: sendReq}
	c := make(chan struct{})
	close(c)
	r.done.Store(&c)
	r.state.Store(stateDone)
	return r
}()

// CopiedSend is the request IsendCopy returns for a message it copied.
func CopiedSend() *Request { return copiedSend }

// FailedRequest returns a request that is done with err, posted nowhere:
// what an API layer hands back for a call it refused, so that its
// requests are all of one kind.
func FailedRequest(err error) *Request {
	r := &Request{err: err}
	r.state.Store(stateDone)
	return r
}

// Copied reports whether r is the request IsendCopy returns for a message
// it copied.
func (r *Request) Copied() bool { return r == copiedSend }

// Irecv posts a receive of a message from srcProc and srcThread (wildcards
// allowed) with tag (or AnyTag) into buf (nil: the engine allocates).
func (ep *Endpoint) Irecv(srcProc ProcID, srcThread ThreadID, tag Tag, buf []byte) *Request {
	r := newRequest(ep.e, recvReq)
	r.setRecv(ep.id, srcProc, srcThread, tag, buf)
	ep.e.post(r)
	return r
}

// IrecvReuse is Irecv into r, a receive posted by an endpoint of this
// engine that has completed: r is reset and posted again, so that a thread
// that keeps receives posted allocates no request per message. What r
// held of its last message (Data, Source, Tag, Err) is forgotten. A nil r,
// a send, or a request not yet completed is left alone and a new request
// is posted as Irecv does.
func (ep *Endpoint) IrecvReuse(r *Request, srcProc ProcID, srcThread ThreadID, tag Tag, buf []byte) *Request {
	if r == nil || r.kind != recvReq || r.eng != ep.e || !r.completed() {
		return ep.Irecv(srcProc, srcThread, tag, buf)
	}
	r.reset()
	r.setRecv(ep.id, srcProc, srcThread, tag, buf)
	ep.e.post(r)
	return r
}

// Send sends data and returns once the destination process has accepted
// the whole message; the destination acknowledges it at once, since the
// caller waits, unless data going back is likely to carry the
// acknowledgement soon (see ackout.go). If ctx ends first the send is
// cancelled.
func (ep *Endpoint) Send(ctx context.Context, dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) error {
	// A small message to a thread of this process that is accepted at
	// once (copied into its receive, or kept as unexpected) needs no
	// request to wait on: the send is done when the copy is.
	if dstProc == ep.e.cfg.Proc {
		if ok, err := ep.sendCopyLocal(dstThread, tag, data); ok {
			return err
		}
	}
	// A send request can stay referenced by fragments in flight after it
	// completes; it is reused only once the engine holds none.
	r := ep.send
	if r != nil && r.idle() {
		r.reset()
		r.kind = sendReq
	} else {
		r = ownRequest(ep.e, sendReq)
		ep.send = r
	}
	r.setSend(ep.id, dstProc, dstThread, tag, data)
	r.ackNow = true
	ep.e.post(r)
	return r.waitOrCancel(ctx)
}

// SendBuffered is Send that returns as soon as data may be reused: a small
// message to another process is posted (a copy is queued, see Post) while
// the posted copies awaiting their acknowledgement leave room
// (maxPostedBytes);
// otherwise it waits as Send does, so that a sender faster than its
// receiver is slowed down and its copies stay bounded.
func (ep *Endpoint) SendBuffered(ctx context.Context, dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) error {
	if len(data) <= EagerLimit && dstProc != ep.e.cfg.Proc && ep.e.postRoom(len(data)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return ep.Post(dstProc, dstThread, tag, data)
	}
	return ep.Send(ctx, dstProc, dstThread, tag, data)
}

// Post sends a copy of data (at most EagerLimit bytes) to a thread of
// another process and returns once the copy is queued (see Engine.Post).
func (ep *Endpoint) Post(dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) error {
	return ep.e.Post(ep.id, dstProc, dstThread, tag, data)
}

// Recv receives a message from srcProc and srcThread (wildcards allowed)
// with tag (or AnyTag) into buf (nil: the engine allocates). It returns the
// endpoint's own request, valid until the next Recv, with the message; a
// message longer than buf fills it and comes with ErrTruncated. On any
// other error (ctx ended: the receive is withdrawn) the request is nil.
func (ep *Endpoint) Recv(ctx context.Context, srcProc ProcID, srcThread ThreadID, tag Tag, buf []byte) (*Request, error) {
	r := ep.recv
	if r.state.Load() == stateClaimed {
		// The message just received was signalled to this thread and
		// its completion has not yet marked it done (the completing
		// thread is still waking this one's processor): take the other
		// request rather than wait that out, which at 1,000 threads was
		// about once a message, each look a turn of the scheduler.
		if ep.recvAlt == nil {
			ep.recvAlt = ownRequest(ep.e, recvReq)
		}
		ep.recv, ep.recvAlt = ep.recvAlt, r
		r = ep.recv
	}
	r.reset()
	r.kind = recvReq
	r.setRecv(ep.id, srcProc, srcThread, tag, buf)
	ep.e.post(r)
	err := r.waitOrCancel(ctx)
	if err != nil && err != ErrTruncated {
		return nil, err
	}
	return r, err
}

// Iprobe reports whether a message for this endpoint matching the pattern
// has arrived, without receiving it.
func (ep *Endpoint) Iprobe(srcProc ProcID, srcThread ThreadID, tag Tag) (Status, bool) {
	return ep.e.iprobe(ep.id, srcProc, srcThread, tag)
}

// Probe waits until a message for this endpoint matching the pattern has
// arrived.
func (ep *Endpoint) Probe(ctx context.Context, srcProc ProcID, srcThread ThreadID, tag Tag) (Status, error) {
	return ep.e.probe(ctx, ep.id, srcProc, srcThread, tag)
}
