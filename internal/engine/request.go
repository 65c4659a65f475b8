package engine

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

type reqKind uint8

const (
	sendReq reqKind = iota + 1
	recvReq
)

const (
	statePending uint32 = iota
	stateClaimed
	stateDone
	// stateHeld: a send's outcome is decided (err set) while a
	// transmission still reads its data; the last one completes it
	// (Request.xmit). It counts as not yet done.
	stateHeld
)

// Request is a pending send or receive. Test polls it, Wait blocks until it
// completes, Cancel withdraws it. A Request is meant to be waited on by one
// goroutine at a time.
type Request struct {
	eng   *Engine
	kind  reqKind
	state atomic.Uint32
	// done is the channel a waiter blocks on, made by the first that
	// does (doneChan): most requests complete before anyone waits (a
	// message that had arrived, a copied send) and need none.
	done atomic.Pointer[chan struct{}]
	err  error
	// parked says a goroutine waits, or may wait, on done (chanWait,
	// Done): complete signals done only then, so that a request
	// completed before anyone waited (a send to a thread of this
	// process, a message that had arrived) costs no channel operation.
	parked atomic.Bool

	// The message: for sends what is sent, for receives what arrived.
	data      []byte
	srcProc   ProcID
	srcThread ThreadID
	from      key // the key of the message a receive completed with
	dstProc   ProcID
	dstThread ThreadID
	tag       Tag

	// Receive matching (wildcards allowed) and the caller's buffer.
	buf     []byte
	postSeq uint64
	next    *Request // posted-receive chain or send queue

	// The message being placed into buf while it arrives (guarded by
	// ownerPeer's rxmu), and the peer it comes from while it does.
	owned     *mcb
	ownerPeer atomic.Pointer[peer]

	// via is the port a waiter drives (set when the request is posted);
	// driver is that port while the waiter drives it, so that completing
	// the request wakes it from the fabric.
	via    *dispatcher
	driver atomic.Pointer[dispatcher]

	// A posted send (Post) owns a pooled copy of the data and goes back
	// to the pool once acknowledged.
	pooled bool
	box    *[]byte

	// refs counts the fragments in flight that point at this send.
	refs atomic.Int32

	// xmit counts the transmissions under way that read the send's data
	// (cut under the peer's mutex, handed to the fabric after it), with
	// xmitHeld set when the send's outcome was decided meanwhile (it was
	// acknowledged, cancelled, its peer lost, the engine closed): the last
	// of them completes it, so that the data is not read after Send or
	// Wait returns, whatever the outcome.
	xmit atomic.Int32

	// Send progress, guarded by the peer's mutex.
	peer     *peer
	rt       *route
	msgID    uint64
	started  bool
	rel      bool // transmitted on the reliable path
	canceled bool
	ackNow   bool // the sender waits: ask for the acknowledgement at once
	fragSize uint32
	nfrag    uint32
	nextFrag uint32
	acked    uint32

	rndv   bool   // a rendezvous announcement or done message (rndv.go)
	rndvID uint64 // a send waiting as rendezvous id

	// timer bounds a wait on done (block), kept from one wait to the
	// next so that a thread waiting in turn with many others allocates
	// no timer per message.
	timer *time.Timer

	// An endpoint's own request, waited on again and again with the
	// same context, learns of the context's end on done (ctxwait.go):
	// w is nil for every other request.
	w *ownWait
}

func newRequest(e *Engine, k reqKind) *Request {
	return &Request{eng: e, kind: k}
}

// doneChan returns r's done channel, making it the first time.
func (r *Request) doneChan() chan struct{} {
	if p := r.done.Load(); p != nil {
		return *p
	}
	c := make(chan struct{}, 1)
	if r.done.CompareAndSwap(nil, &c) {
		return c
	}
	return *r.done.Load()
}

// reset prepares a completed request for reuse by its owner. A
// completion under way (its signal sent, its state not yet done) is
// waited out first: its late state would mark the next use done.
func (r *Request) reset() {
	r.completed()
	// Only a parked request is ever signalled (complete, Done, and the
	// context watch of a parked wait): one that completed before anyone
	// waited, as a message that had arrived, has nothing on done, and
	// its channel, a cache line of its own, is left alone.
	if r.parked.Load() {
		if p := r.done.Load(); p != nil {
			select {
			case <-*p:
			default:
			}
		}
		r.parked.Store(false)
	}
	r.state.Store(statePending)
	r.err = nil
	r.data, r.buf, r.next = nil, nil, nil
	r.srcProc, r.srcThread, r.dstProc, r.dstThread, r.tag = 0, 0, 0, 0, 0
	r.from = key{}
	r.postSeq = 0
	r.owned = nil
	if r.ownerPeer.Load() != nil { // a store is a locked instruction
		r.ownerPeer.Store(nil)
	}
	r.peer, r.rt = nil, nil
	r.msgID, r.started, r.rel, r.canceled, r.ackNow = 0, false, false, false, false
	r.fragSize, r.nfrag, r.nextFrag, r.acked = 0, 0, 0, 0
	r.rndv, r.rndvID = false, 0
}

// idle reports whether the request has completed and the engine holds no
// reference to it any more, so that its owner may reuse it (fragments in
// flight can refer to a send after it completed).
// A completion under way (a waiter woken by its signal returns before the
// state is done) is waited out.
func (r *Request) idle() bool { return r.completed() && r.refs.Load() == 0 }

// setSend fills r as a send from thread src of this process.
func (r *Request) setSend(src ThreadID, dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) {
	r.srcProc = r.eng.cfg.Proc
	r.srcThread, r.dstProc, r.dstThread, r.tag, r.data = src, dstProc, dstThread, tag, data
}

// setRecv fills r as a receive for thread dst of this process.
func (r *Request) setRecv(dst ThreadID, srcProc ProcID, srcThread ThreadID, tag Tag, buf []byte) {
	r.dstProc = r.eng.cfg.Proc
	r.dstThread, r.srcProc, r.srcThread, r.tag, r.buf = dst, srcProc, srcThread, tag, buf
}

// xmitHeld marks a send whose outcome was decided while a transmission
// still reads its data (Request.xmit).
const xmitHeld = 1 << 30

// holdForXmit reports whether a transmission of r's data is under way, and
// if so leaves r's completion to the last of them (xmitDone). r is in
// stateHeld.
func (r *Request) holdForXmit() bool {
	for {
		v := r.xmit.Load()
		if v == 0 {
			return false
		}
		if r.xmit.CompareAndSwap(v, v|xmitHeld) {
			return true
		}
	}
}

// xmitDone ends one transmission of r's data. It reports whether r's
// outcome was decided meanwhile and r is now for the caller to complete
// (finish).
func (r *Request) xmitDone() bool {
	if r.xmit.Add(-1) != xmitHeld {
		return false
	}
	r.xmit.Store(0)
	return true
}

// complete finishes the request once; later calls are ignored. It reports
// whether this call completed it. A send whose data a transmission still
// reads completes when that transmission returns (holdForXmit): no
// transmission of its data begins once its outcome is decided (the
// acknowledgement of its last fragment, a cancel or a refusal turning its
// fragments into aborts, the stream drained for a failure).
func (r *Request) complete(err error) bool {
	if !r.state.CompareAndSwap(statePending, stateClaimed) {
		return false
	}
	r.err = err
	if r.kind == sendReq && r.xmit.Load() != 0 && r.hold() {
		return true
	}
	// finish's body, inline: complete is on the way of every message.
	if r.parked.Load() {
		*r.done.Load() <- struct{}{}
	}
	r.state.Store(stateDone)
	if d := r.driver.Load(); d != nil {
		d.interrupt()
	}
	return true
}

// hold leaves the completion of r, claimed and its outcome set, to the
// last transmission still reading its data, if one is (holdForXmit). r
// is held before the mark: the transmission that sees the mark finishes
// r after this store.
func (r *Request) hold() bool {
	r.state.Store(stateHeld)
	if r.holdForXmit() {
		return true
	}
	// Claimed again before the caller signals (see finish).
	r.state.Store(stateClaimed)
	return false
}

// finishHook, if set (by tests only), runs in finish between its look at
// parked and the state done, where a waiter parking meanwhile must not
// block.
var finishHook func()

// finish signals the completion of r, its outcome set.
func (r *Request) finish() {
	// The request is claimed again, from held, before parked is read: a
	// waiter sets parked before it looks at the state (chanWait, Done),
	// and blocks if it finds the request held. Either this sees parked
	// and signals, or the waiter sees the request claimed or done and
	// waits the completion out (completed) rather than block on a
	// signal that would never come.
	r.state.Store(stateClaimed)
	// The signal goes before the state done: an owner that sees the
	// request done (a driving waiter, Test) and reuses it finds the
	// signal there for reset to drain; none can land in the next use.
	parked := r.parked.Load()
	if finishHook != nil {
		finishHook()
	}
	if parked {
		*r.done.Load() <- struct{}{} // made before parked was set
	}
	r.state.Store(stateDone)
	if d := r.driver.Load(); d != nil {
		d.interrupt()
	}
}

// Done delivers one value when the request completes. A goroutine that
// selects on it waits outside the port's progress: Wait drives the port,
// or counts as one of its waiters, which keeps other threads from taking
// the port from the dispatcher. After a receive from Done, Wait and Test
// report the outcome.
func (r *Request) Done() <-chan struct{} {
	c := r.doneChan() // copiedSend's is closed
	if r == copiedSend {
		return c
	}
	r.parked.Store(true)
	if r.completed() {
		// Completed before anyone waited: no signal was sent, or one
		// was and fills the channel's one place.
		select {
		case c <- struct{}{}:
		default:
		}
	}
	return c
}

// Test reports whether the request has completed, and its error if so.
func (r *Request) Test() (bool, error) {
	if r.completed() {
		return true, r.err
	}
	return false, nil
}

// completed reports whether the request is done, waiting out a
// completion under way (between its signal and its state).
func (r *Request) completed() bool {
	switch r.state.Load() {
	case stateDone:
		return true
	case stateClaimed:
		return r.completedSlow()
	}
	return false
}

// completedSlow is completed for a completion under way: short, so that
// completed, called several times a message, is inlined.
func (r *Request) completedSlow() bool {
	for {
		switch r.state.Load() {
		case stateDone:
			return true
		case stateClaimed:
			runtime.Gosched()
		default:
			return false
		}
	}
}

// Wait blocks until the request completes or ctx ends. Cancelling ctx
// stops the wait only: the request stays pending (see Cancel).
func (r *Request) Wait(ctx context.Context) error {
	if r.completed() {
		return r.err
	}
	r.eng.flushDeferred() // what this thread posted goes before it waits
	if r.via != nil {
		return r.via.wait(r, ctx)
	}
	return r.chanWait(ctx)
}

// chanWait blocks until r completes or ctx ends, while others drive the
// port.
func (r *Request) chanWait(ctx context.Context) error {
	err, _ := r.chanWaitFor(ctx, 0)
	return err
}

// chanWaitFor is chanWait for at most d (no limit if d <= 0): done is
// false if r has not completed by then and ctx has not ended. A waiter
// that goes on waiting after that calls block, its request parked already.
func (r *Request) chanWaitFor(ctx context.Context, d time.Duration) (err error, done bool) {
	if r.spin() {
		return r.err, true
	}
	r.doneChan()
	r.parked.Store(true)
	if r.completed() {
		return r.err, true
	}
	return r.block(ctx, d)
}

// block waits on done, for at most d if d > 0, once r is parked (complete
// signals done).
func (r *Request) block(ctx context.Context, d time.Duration) (err error, done bool) {
	wake := r.doneChan()
	var timeout <-chan time.Time
	if d > 0 {
		// Reset and Stop leave no stale tick in the channel (Go 1.23
		// timers), so the timer serves the next wait as new.
		if r.timer == nil {
			r.timer = time.NewTimer(d)
		} else {
			r.timer.Reset(d)
		}
		defer r.timer.Stop()
		timeout = r.timer.C
	} else if c := ctx.Done(); c == nil {
		<-wake
		return r.err, true
	} else if r.watches(ctx, c) {
		return r.plainWait(ctx, wake)
	}
	select {
	case <-wake:
		// The signal comes after the outcome is set and before the
		// state (complete): the outcome is known here, and what needs
		// the state done (the owner's next use of r in reset, Test,
		// Err) waits out the completion's last store then. Waiting for
		// it here instead, at once, found it still under way about once
		// a message at 1,000 threads: the completing thread was still
		// waking this one's processor, and each look gave up the
		// processor (runtime.Gosched) for a turn of the scheduler.
		return r.err, true
	case <-ctx.Done():
		if r.state.Load() == stateDone {
			return r.err, true
		}
		return ctx.Err(), true
	case <-timeout:
		return nil, false
	}
}

// waitOrCancel waits for r; if ctx ends first, r is cancelled. A request
// that completed before the cancel took effect reports its own outcome.
func (r *Request) waitOrCancel(ctx context.Context) error {
	err := r.Wait(ctx)
	if err != nil && ctx.Err() != nil && err == ctx.Err() {
		r.Cancel()
		if werr := r.Wait(context.Background()); werr != ErrCanceled {
			return werr
		}
	}
	return err
}

// Cancel withdraws a pending request: a receive not yet matched is
// removed, a send not yet fully transmitted is stopped (fragments already
// sent are retracted, and the destination discards what it holds of the
// message). A send may race its own completion: Cancel then has no effect.
// A cancelled request completes with ErrCanceled.
func (r *Request) Cancel() {
	if r.state.Load() != statePending {
		return
	}
	switch r.kind {
	case recvReq:
		r.eng.cancelRecv(r)
	case sendReq:
		r.eng.cancelSend(r)
	}
}

// Err is the request's error once it has completed.
func (r *Request) Err() error {
	if r.completed() {
		return r.err
	}
	return nil
}

// Data is the message's content once a receive has completed: the
// caller's buffer (trimmed to the message length) or a buffer the library
// allocated and hands over.
func (r *Request) Data() []byte { return r.data }

// setFrom records whom a receive's message came from. The posted key
// (srcProc, srcThread, tag) is left as posted: a concurrent cancel still
// reads it to find the receive in the table.
func (r *Request) setFrom(k key) { r.from = k }

// Source is the sender of a completed receive.
func (r *Request) Source() (ProcID, ThreadID) { return r.from.srcProc, r.from.srcThread }

// Tag is the tag of a completed receive.
func (r *Request) Tag() Tag { return r.from.tag }
