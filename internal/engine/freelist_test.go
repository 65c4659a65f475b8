package engine

import "testing"

// A free list gives back the objects put into it, the last first once
// the put side's list is swapped in, nil when empty, and keeps no more
// than its bound on the put side.
func TestFreeList(t *testing.T) {
	var l freeList[int]
	if x := l.get(); x != nil {
		t.Fatalf("empty list gave %d", *x)
	}
	a, b := new(int), new(int)
	l.put(a, 4)
	l.put(b, 4)
	if x := l.get(); x != b {
		t.Fatalf("first get: %p, want the last put %p", x, b)
	}
	c := new(int)
	l.put(c, 4) // onto the put side, while a waits on the get side
	if x := l.get(); x != a {
		t.Fatalf("second get: %p, want %p", x, a)
	}
	if x := l.get(); x != c {
		t.Fatalf("third get: %p, want %p", x, c)
	}
	if x := l.get(); x != nil {
		t.Fatalf("drained list gave %p", x)
	}
	for range 10 {
		l.put(new(int), 4)
	}
	if n := l.size(); n != 4 {
		t.Fatalf("%d kept, want the bound 4", n)
	}
}
