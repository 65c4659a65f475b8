package faulty

import (
	"container/heap"
	"time"
)

// run sends held datagrams when they fall due, until Close.
func (p *Port) run() {
	defer close(p.stopped)
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	b := new(batch)
	for {
		p.mu.Lock()
		now := time.Now()
		for len(p.pending) > 0 && !p.pending[0].due.After(now) {
			it := heap.Pop(&p.pending).(*held)
			if it.after > 0 {
				p.dropReordered(it)
			}
			b.emit(it.dg, it.copies, 0)
			freeHeld(it, b)
		}
		var wait time.Duration = -1
		if len(p.pending) > 0 {
			wait = p.pending[0].due.Sub(now)
		}
		p.mu.Unlock()

		if len(b.out) > 0 {
			n, err := p.inner.Send(b.out)
			p.stats.sent.Add(uint64(n))
			if err != nil {
				p.stats.sendErrors.Add(1)
			}
			b.release()
			continue // time has passed: look again
		}
		if wait >= 0 {
			t.Reset(wait)
		}
		select {
		case <-p.done:
			return
		case <-p.wake:
		case <-t.C:
		}
		t.Stop()
	}
}
