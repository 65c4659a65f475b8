package tally

import (
	"sync"
	"testing"
)

// TestCounterOrderedWriters: writers that take turns under a lock, as the
// holders of a port's token do, lose no add, and a reader that loads the
// count meanwhile never sees it go back.
func TestCounterOrderedWriters(t *testing.T) {
	const writers, adds = 4, 20000
	var (
		c    Counter
		mu   sync.Mutex
		wg   sync.WaitGroup
		done = make(chan struct{})
		back = make(chan [2]uint64, 1)
	)
	go func() {
		defer close(back)
		var last uint64
		for {
			select {
			case <-done:
				return
			default:
			}
			if v := c.Load(); v < last {
				back <- [2]uint64{last, v}
				return
			} else {
				last = v
			}
		}
	}()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < adds; i++ {
				mu.Lock()
				c.Add(uint64(i%3 + 1))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(done)
	if b, ok := <-back; ok {
		t.Fatalf("count went back from %d to %d", b[0], b[1])
	}
	var want uint64
	for i := 0; i < adds; i++ {
		want += uint64(i%3 + 1)
	}
	want *= writers
	if got := c.Load(); got != want {
		t.Fatalf("count %d, want %d", got, want)
	}
}

// TestFlag: a flag reads as last stored.
func TestFlag(t *testing.T) {
	var f Flag
	if f.Load() {
		t.Fatal("zero flag set")
	}
	f.Store(true)
	if !f.Load() {
		t.Fatal("flag not set after Store(true)")
	}
	f.Store(false)
	if f.Load() {
		t.Fatal("flag set after Store(false)")
	}
}
