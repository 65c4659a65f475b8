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

// A free list that once held many objects and now serves few at a time
// hands out the same few again (the ones put last), not every object it
// keeps in turn: those are cold in the cache.
func TestFreeListReusesRecent(t *testing.T) {
	var l freeList[int]
	const kept = 4 * takeRun
	for range kept {
		l.put(new(int), kept)
	}
	seen := map[*int]bool{}
	var inUse []*int
	for range 20 * kept {
		x := l.get()
		if x == nil {
			t.Fatal("list ran out")
		}
		seen[x] = true
		if inUse = append(inUse, x); len(inUse) == 8 {
			for _, y := range inUse {
				l.put(y, kept)
			}
			inUse = inUse[:0]
		}
	}
	if len(seen) > takeRun+8 {
		t.Fatalf("%d different objects handed out of %d kept, 8 in use at a time: want at most %d", len(seen), kept, takeRun+8)
	}
	if n := l.size(); n != kept {
		t.Fatalf("%d kept, want %d", n, kept)
	}
}
