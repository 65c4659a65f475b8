package engine

import (
	"context"
	"runtime"
	"sync/atomic"
)

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
// context, or when the request is collected (its endpoint dropped): the
// watch refers to the request's ownWait and done channel, not to the
// request, so that a context that lives on keeps neither.
//
// The watch signals only a wait under way, which takes every signal it
// was sent before it returns, so that no signal of the watch outlives
// its wait and done keeps meaning "completed" for every other wait
// (block): ownWait.wait is 1 while plainWait waits, and the watch signals only
// if it turns 1 into 2; the wait turns 1 back into 0 when it wakes, and
// if it finds 2 the watch's signal is one of the two it may have to take.

const (
	ctxIdle    uint32 = iota
	ctxWaiting        // plainWait waits on done
	ctxClaimed        // the watch signals done
)

// ownWait is what an endpoint's own request keeps to wait watched:
// seen is the Done channel of the last wait, done the one watched, stop
// and cleanup end the watch, wait says whether a wait takes the watch's
// signal. The watch refers to this, not to its request.
type ownWait struct {
	seen, done <-chan struct{}
	stop       func() bool
	cleanup    runtime.Cleanup // stops the watch once the request is collected
	wait       atomic.Uint32
}

// watches reports whether a wait on r with ctx (whose Done channel is c)
// may use plainWait, making
// the watch of ctx the second time in a row a wait on r uses it.
func (r *Request) watches(ctx context.Context, c <-chan struct{}) bool {
	w := r.w
	if w == nil {
		return false
	}
	if w.done == c {
		return true
	}
	if w.seen != c {
		w.seen = c
		return false
	}
	if w.stop != nil {
		w.stop()
		w.cleanup.Stop()
	}
	wake := r.doneChan()
	w.done = c
	// The watch holds w and r's done channel, not r, and r's cleanup
	// stops it: a context that outlives r's endpoint (dropped, its
	// thread gone) keeps neither r nor the watch.
	stop := context.AfterFunc(ctx, func() {
		if w.wait.CompareAndSwap(ctxWaiting, ctxClaimed) {
			wake <- struct{}{}
		}
	})
	w.stop = stop
	w.cleanup = runtime.AddCleanup(r, func(stop func() bool) { stop() }, stop)
	return true
}

// plainWait is block's wait on done without select, r watching ctx.
func (r *Request) plainWait(ctx context.Context, wake chan struct{}) (err error, done bool) {
	w := r.w
	for {
		w.wait.Store(ctxWaiting)
		if ctx.Err() == nil || !w.wait.CompareAndSwap(ctxWaiting, ctxIdle) {
			<-wake
			if w.wait.CompareAndSwap(ctxWaiting, ctxIdle) {
				// The watch did not signal: completed (complete).
				return r.err, true
			}
			// The watch signalled: if r is completing too, the
			// completion's signal comes as well; the two are taken.
			if r.state.Load() != statePending {
				<-wake
				w.wait.Store(ctxIdle)
				return r.err, true
			}
			w.wait.Store(ctxIdle)
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
	r.w = new(ownWait)
	return r
}
