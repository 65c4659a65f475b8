package engine

import "sync"

// freeList keeps objects of one kind for reuse: the requests and buffers
// of posted sends, small message buffers, batches. Unlike a sync.Pool it
// is not emptied by each garbage collection, so a stream of small
// messages allocates nothing once its objects exist: refilling a
// sync.Pool after every collection allocated the objects again, which
// kept the collector running, and an object put back on one CPU and
// taken on another went through the pool's slow path every time.
//
// Objects are mostly taken by one thread (the sender) and put back by
// another (the one that handles the acknowledgement), on other CPUs. Each
// side has its own lock and list: put adds to ret, get takes from take
// and, when that is empty, moves over the last objects put (at most
// takeRun), so that the two sides meet once per run of objects and not
// per object.
//
// Only the objects put last move: those put before stay at the bottom of
// ret, for a time when more are in use at once. Swapping the whole lists
// instead went round every object kept, each cold in the cache when taken
// again: a stream that once had thousands of posted copies in flight, and
// then tens, took each request after thousands of others (its first look
// at the request's state was 5% of the sender's samples, perf of bench
// rate --fabric shm).
//
// The zero freeList is empty and ready.
type freeList[T any] struct {
	mu   sync.Mutex
	take []*T

	_     [64]byte // what put writes, on cache lines of its own
	retMu sync.Mutex
	ret   []*T
	_     [64]byte
}

// takeRun is the most objects get moves from the put side at a time.
const takeRun = 256

// get takes an object, or returns nil when none is kept.
func (l *freeList[T]) get() *T {
	l.mu.Lock()
	if len(l.take) == 0 {
		l.retMu.Lock()
		n := len(l.ret)
		k := n - min(n, takeRun)
		l.take = append(l.take, l.ret[k:]...)
		clear(l.ret[k:])
		l.ret = l.ret[:k]
		l.retMu.Unlock()
	}
	var x *T
	if n := len(l.take); n > 0 {
		x = l.take[n-1]
		l.take[n-1] = nil
		l.take = l.take[:n-1]
	}
	l.mu.Unlock()
	return x
}

// put keeps x for reuse, unless max objects already wait to be moved
// in: a list keeps at most max and takeRun (what put holds and what get
// moved over).
func (l *freeList[T]) put(x *T, max int) {
	l.retMu.Lock()
	if len(l.ret) < max {
		l.ret = append(l.ret, x)
	}
	l.retMu.Unlock()
}

// putAll keeps xs, as put does each.
func (l *freeList[T]) putAll(xs []*T, limit int) {
	l.retMu.Lock()
	l.ret = append(l.ret, xs[:min(len(xs), max(0, limit-len(l.ret)))]...)
	l.retMu.Unlock()
}

// size is the number of objects kept.
func (l *freeList[T]) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retMu.Lock()
	defer l.retMu.Unlock()
	return len(l.take) + len(l.ret)
}
