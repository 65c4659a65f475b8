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
// and, when that is empty, swaps the two lists, so that the two sides
// meet once per batch of objects and not per object.
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

// get takes an object, or returns nil when none is kept.
func (l *freeList[T]) get() *T {
	l.mu.Lock()
	if len(l.take) == 0 {
		l.retMu.Lock()
		l.take, l.ret = l.ret, l.take
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

// put keeps x for reuse, unless max objects already wait to be swapped
// in: a list keeps at most twice max (what get holds and what put does).
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
