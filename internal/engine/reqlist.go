package engine

// reqList is a FIFO of requests linked through Request.next: posted
// receives waiting in a bucket or on a thread, or sends waiting in a
// peer's queue.
type reqList struct {
	head, tail *Request
}

func (l *reqList) push(r *Request) {
	r.next = nil
	if l.tail == nil {
		l.head = r
	} else {
		l.tail.next = r
	}
	l.tail = r
}

// unlink removes r, whose predecessor is prev (nil for the head).
func (l *reqList) unlink(prev, r *Request) {
	if prev == nil {
		l.head = r.next
	} else {
		prev.next = r.next
	}
	if l.tail == r {
		l.tail = prev
	}
	r.next = nil
}

// remove unlinks r and reports whether it was on the list.
func (l *reqList) remove(r *Request) bool {
	var prev *Request
	for q := l.head; q != nil; prev, q = q, q.next {
		if q == r {
			l.unlink(prev, r)
			return true
		}
	}
	return false
}
