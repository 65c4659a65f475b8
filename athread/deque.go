package athread

import "sync/atomic"

// deque is a Chase-Lev work-stealing deque of tasks: its owner VP pushes
// and pops at the bottom, other VPs steal from the top, where the oldest
// (shallowest) task of the owner waits.
type deque struct {
	top    atomic.Int64
	bottom atomic.Int64
	ring   atomic.Pointer[ring]
}

type ring struct {
	mask  int64
	slots []atomic.Pointer[task]
}

func newRing(size int64) *ring {
	return &ring{mask: size - 1, slots: make([]atomic.Pointer[task], size)}
}

func (r *ring) get(i int64) *task    { return r.slots[i&r.mask].Load() }
func (r *ring) put(i int64, t *task) { r.slots[i&r.mask].Store(t) }

func (d *deque) init() { d.ring.Store(newRing(64)) }

// push adds t at the bottom. Only the owner calls it.
func (d *deque) push(t *task) {
	b := d.bottom.Load()
	top := d.top.Load()
	r := d.ring.Load()
	if b-top > r.mask {
		bigger := newRing(2 * (r.mask + 1))
		for i := top; i < b; i++ {
			bigger.put(i, r.get(i))
		}
		d.ring.Store(bigger)
		r = bigger
	}
	r.put(b, t)
	d.bottom.Store(b + 1)
}

// pop takes the newest task from the bottom, or nil. Only the owner calls it.
func (d *deque) pop() *task {
	b := d.bottom.Load() - 1
	r := d.ring.Load()
	d.bottom.Store(b)
	top := d.top.Load()
	if top > b {
		d.bottom.Store(b + 1)
		return nil
	}
	t := r.get(b)
	if top == b {
		if !d.top.CompareAndSwap(top, top+1) {
			t = nil
		}
		d.bottom.Store(b + 1)
	}
	return t
}

// steal takes the oldest task from the top. It reports lost when another
// VP won the race for that task (the caller may try again).
func (d *deque) steal() (t *task, lost bool) {
	top := d.top.Load()
	b := d.bottom.Load()
	if top >= b {
		return nil, false
	}
	r := d.ring.Load()
	t = r.get(top)
	if !d.top.CompareAndSwap(top, top+1) {
		return nil, true
	}
	return t, false
}

// peekDepth is the depth of the task at the top, or -1 when the deque looks
// empty. It is a hint: the task may be taken at any moment.
func (d *deque) peekDepth() int32 {
	top := d.top.Load()
	b := d.bottom.Load()
	if top >= b {
		return -1
	}
	t := d.ring.Load().get(top)
	if t == nil {
		return -1
	}
	return t.depth
}

// size is the number of entries (a hint for other VPs).
func (d *deque) size() int64 {
	n := d.bottom.Load() - d.top.Load()
	if n < 0 {
		return 0
	}
	return n
}
