package sim

// event kinds
const (
	evPreDone     uint8 = iota // a task's Pre work ended on proc p
	evPostDone                 // a task's Post work ended on proc p (the task is done)
	evResult                   // a child's result reached its parent's process
	evStealArrive              // a steal request reached victim q
	evStealReply               // an answer reached thief p (task n, or none when n < 0)
	evWake                     // proc p looks for work
)

// event is one scheduled happening. Ties in time are broken by seq, the
// order in which events were scheduled, so a run is deterministic.
type event struct {
	t     int64
	seq   uint64
	kind  uint8
	from  uint8 // hws.Stack of a steal
	wide  bool
	async bool
	p, q  int32 // thief/owner, victim
	n     int32 // task
}

// queue is a binary min-heap of events by (t, seq).
type queue struct {
	h   []event
	seq uint64
}

func (q *queue) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	return a.t < b.t || a.t == b.t && a.seq < b.seq
}

func (q *queue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *queue) pop() event {
	e := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.less(l, m) {
			m = l
		}
		if r < last && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return e
}

func (q *queue) len() int { return len(q.h) }

// deque is a task stack: the owner pushes and pops at the back, thieves
// take from the front.
type deque struct {
	s    []int32
	head int
}

func (d *deque) push(n int32) { d.s = append(d.s, n) }

func (d *deque) empty() bool { return d.head == len(d.s) }

func (d *deque) back() (int32, bool) {
	if d.empty() {
		return 0, false
	}
	return d.s[len(d.s)-1], true
}

func (d *deque) front() (int32, bool) {
	if d.empty() {
		return 0, false
	}
	return d.s[d.head], true
}

func (d *deque) popBack() (int32, bool) {
	if d.empty() {
		return 0, false
	}
	n := d.s[len(d.s)-1]
	d.s = d.s[:len(d.s)-1]
	if d.empty() {
		d.s, d.head = d.s[:0], 0
	}
	return n, true
}

func (d *deque) popFront() (int32, bool) {
	if d.empty() {
		return 0, false
	}
	n := d.s[d.head]
	d.head++
	if d.empty() {
		d.s, d.head = d.s[:0], 0
	} else if d.head > 64 && d.head > len(d.s)/2 {
		d.s = append(d.s[:0], d.s[d.head:]...)
		d.head = 0
	}
	return n, true
}
