package athread

import (
	"container/heap"
	"sync"
	"sync/atomic"
)

// pool holds the tasks a process offers to other processes, shallowest
// first, then costliest, then smallest packed input. The process's own
// VPs take from it too.
type pool struct {
	mu    sync.Mutex
	items poolHeap
	seq   uint64 // offers so far (task.offered)
	n     atomic.Int32
}

type poolHeap []*task

func (h poolHeap) Len() int { return len(h) }
func (h poolHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.depth != b.depth {
		return a.depth < b.depth
	}
	if a.attr.Cost != b.attr.Cost {
		return a.attr.Cost > b.attr.Cost
	}
	return len(a.inBytes) < len(b.inBytes)
}
func (h poolHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *poolHeap) Push(x any)   { *h = append(*h, x.(*task)) }
func (h *poolHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

func (p *pool) put(t *task) {
	p.mu.Lock()
	p.seq++
	t.offered = p.seq
	heap.Push(&p.items, t)
	p.n.Store(int32(len(p.items)))
	p.mu.Unlock()
}

// take removes the best ready task for this process's VPs.
func (p *pool) take() *task {
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.items) > 0 {
		t := heap.Pop(&p.items).(*task)
		if t.state.Load() == stateReady {
			p.n.Store(int32(len(p.items)))
			return t
		}
	}
	p.n.Store(0)
	return nil
}

// takeNewest removes the ready task offered last, for this process's VPs
// (DepthFirstPolicy).
func (p *pool) takeNewest() *task {
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.items) > 0 {
		newest := 0
		for i, t := range p.items {
			if t.offered > p.items[newest].offered {
				newest = i
			}
		}
		t := heap.Remove(&p.items, newest).(*task)
		if t.state.Load() == stateReady {
			p.n.Store(int32(len(p.items)))
			return t
		}
	}
	p.n.Store(0)
	return nil
}

// give claims the best ready task that allow accepts, for another
// process, moving it to stateRemote. Tasks allow refuses stay.
func (p *pool) give(allow func(*task) bool) *task {
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var kept []*task
	var got *task
	for len(p.items) > 0 {
		t := heap.Pop(&p.items).(*task)
		if t.state.Load() != stateReady {
			continue
		}
		if !allow(t) {
			kept = append(kept, t)
			continue
		}
		if t.state.CompareAndSwap(stateReady, stateRemote) {
			got = t
			break
		}
	}
	for _, t := range kept {
		heap.Push(&p.items, t)
	}
	p.n.Store(int32(len(p.items)))
	return got
}

// drain removes every task.
func (p *pool) drain() []*task {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []*task(p.items)
	p.items = nil
	p.n.Store(0)
	return out
}

// infos describes the offered tasks (for policies and tests).
func (p *pool) len() int { return int(p.n.Load()) }
