package engine

import "context"

// Waiting on a request without select.
//
// A thread that blocks on its request while its context can end waits in
// a select on the request's done channel and ctx.Done(): between threads
// of one process that is one park a round trip, and a select of two
// channels costs about 1,200 instructions more than a receive from one
// (callgrind, a Go channel ping-pong: 2,150 against 4,610 a round trip).
// An endpoint's own requests (Recv's and Send's), waited on again and
// again with the same context, have the context's end signalled on done
// instead, by a context.AfterFunc made at the second wait in a row with
// the same Done channel and kept while the waits go on using it (a
// context made for each call, which would pay for a watch each time,
// keeps the select). The watch is stopped when a wait uses another
// context; until then it lasts as long as the context (a request of an
// endpoint dropped meanwhile stays referenced by it until it ends).
//
// The watch signals only a wait under way, which takes every signal it
// was sent before it returns, so that no signal of the watch outlives
// its wait and done keeps meaning "completed" for every other wait
// (block): ctxWait is 1 while plainWait waits, and the watch signals only
// if it turns 1 into 2; the wait turns 1 back into 0 when it wakes, and
// if it finds 2 the watch's signal is one of the two it may have to take.

const (
	ctxIdle    uint32 = iota
	ctxWaiting        // plainWait waits on done
	ctxClaimed        // the watch signals done
)

// watches reports whether a wait on r with ctx may use plainWait, making
// the watch of ctx the second time in a row a wait on r uses it.
func (r *Request) watches(ctx context.Context) bool {
	if !r.own {
		return false
	}
	c := ctx.Done()
	if r.ctxDone == c {
		return true
	}
	if r.ctxSeen != c {
		r.ctxSeen = c
		return false
	}
	if r.ctxStop != nil {
		r.ctxStop()
	}
	wake := r.doneChan()
	r.ctxDone = c
	r.ctxStop = context.AfterFunc(ctx, func() {
		if r.ctxWait.CompareAndSwap(ctxWaiting, ctxClaimed) {
			wake <- struct{}{}
		}
	})
	return true
}

// plainWait is block's wait on done without select, r watching ctx.
func (r *Request) plainWait(ctx context.Context, wake chan struct{}) (err error, done bool) {
	for {
		r.ctxWait.Store(ctxWaiting)
		if ctx.Err() == nil || !r.ctxWait.CompareAndSwap(ctxWaiting, ctxIdle) {
			<-wake
			if r.ctxWait.CompareAndSwap(ctxWaiting, ctxIdle) {
				// The watch did not signal: completed (complete).
				return r.err, true
			}
			// The watch signalled: if r is completing too, the
			// completion's signal comes as well; the two are taken.
			if r.state.Load() != statePending {
				<-wake
				r.ctxWait.Store(ctxIdle)
				return r.err, true
			}
			r.ctxWait.Store(ctxIdle)
		}
		if ctx.Err() != nil {
			if r.state.Load() == stateDone {
				return r.err, true
			}
			return ctx.Err(), true
		}
		// The watch of a context an earlier wait used, stopped too late:
		// wait on.
	}
}

// ownRequest is a request an endpoint keeps for its blocking calls.
func ownRequest(e *Engine, k reqKind) *Request {
	r := newRequest(e, k)
	r.own = true
	return r
}
