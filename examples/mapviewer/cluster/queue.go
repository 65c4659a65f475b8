package cluster

import (
	"sync"

	"github.com/pcor-go/pcor/pcor"
)

// maxQueued bounds the requests a daemon holds undecoded: beyond it the
// daemon stops receiving requests (they wait in pcor, and the viewer's
// sends with them) until its workers catch up.
const maxQueued = 4096

// jobKey names a request: its sender thread and the id it gave it.
type jobKey struct {
	src pcor.Addr
	id  uint32
}

// job is a request a daemon has received and not yet answered.
type job struct {
	key jobKey
	req request
}

// queue is a daemon's requests waiting for a worker, in arrival order,
// and those being decoded. A cancelled request leaves the queue before a
// worker takes it; one cancelled while being decoded is not answered.
type queue struct {
	mu      sync.Mutex
	cond    sync.Cond
	items   []*job          // waiting, oldest first, and cancelled ones not yet passed over
	waiting map[jobKey]*job // the live entries of items
	running map[jobKey]bool // being decoded: true once cancelled
	// early holds cancels of requests not received yet (a cancel comes
	// on another thread and may overtake its request), at most maxQueued,
	// oldest forgotten first; cancels of requests already answered land
	// here too and are forgotten in time.
	early     map[jobKey]struct{}
	earlyFIFO []jobKey
	stats     DaemonStats // counted under mu
	closed    bool
}

// DaemonStats counts what a daemon did with the requests it received.
type DaemonStats struct {
	Received  int64 // requests received
	Decoded   int64 // requests whose tile was loaded (answered or not)
	Cancelled int64 // requests cancelled before a worker took them
	Discarded int64 // requests cancelled while decoded: not answered
	Queued    int   // requests waiting now
	Decoding  int   // requests being decoded now
}

func newQueue() *queue {
	q := &queue{waiting: map[jobKey]*job{}, running: map[jobKey]bool{}, early: map[jobKey]struct{}{}}
	q.cond.L = &q.mu
	return q
}

// push adds j, waiting while maxQueued requests wait; false once closed.
func (q *queue) push(j *job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.waiting) >= maxQueued && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return false
	}
	q.stats.Received++
	if _, ok := q.early[j.key]; ok {
		delete(q.early, j.key)
		q.stats.Cancelled++
		return true
	}
	if _, dup := q.waiting[j.key]; dup {
		return true // a sender reusing a live id: the first stands
	}
	q.items = append(q.items, j)
	q.waiting[j.key] = j
	q.cond.Broadcast()
	return true
}

// pop takes the oldest waiting request and marks it running; false once
// closed.
func (q *queue) pop() (*job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for len(q.items) > 0 {
			j := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			if q.waiting[j.key] != j {
				continue // cancelled
			}
			delete(q.waiting, j.key)
			q.running[j.key] = false
			q.cond.Broadcast() // room for push
			return j, true
		}
		if q.closed {
			return nil, false
		}
		q.cond.Wait()
	}
}

// done records that j was decoded and reports whether it was cancelled
// meanwhile (then it is not answered).
func (q *queue) done(j *job) (cancelled bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cancelled = q.running[j.key]
	delete(q.running, j.key)
	q.stats.Decoded++
	if cancelled {
		q.stats.Discarded++
	}
	return cancelled
}

// cancel drops the request k if it waits, marks it if it is being
// decoded, and else remembers it for a while in case the request is yet
// to come.
func (q *queue) cancel(k jobKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.waiting[k]; ok {
		delete(q.waiting, k)
		q.stats.Cancelled++
		if len(q.items) > 2*len(q.waiting)+64 {
			q.compactLocked()
		}
		q.cond.Broadcast()
		return
	}
	if _, ok := q.running[k]; ok {
		q.running[k] = true
		return
	}
	if _, ok := q.early[k]; ok {
		return
	}
	if len(q.earlyFIFO) >= maxQueued {
		delete(q.early, q.earlyFIFO[0])
		q.earlyFIFO = q.earlyFIFO[1:]
	}
	q.early[k] = struct{}{}
	q.earlyFIFO = append(q.earlyFIFO, k)
}

// compactLocked drops the cancelled entries from items.
func (q *queue) compactLocked() {
	live := q.items[:0]
	for _, j := range q.items {
		if q.waiting[j.key] == j {
			live = append(live, j)
		}
	}
	clear(q.items[len(live):])
	q.items = live
}

// close wakes every push and pop with false.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

func (q *queue) snapshot() DaemonStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.stats
	st.Queued, st.Decoding = len(q.waiting), len(q.running)
	return st
}
