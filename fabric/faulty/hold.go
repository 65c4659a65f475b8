package faulty

import (
	"container/heap"
	"sync"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// bufPool holds the buffers datagrams are copied into when they are held
// back or altered.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// copyDatagram copies d into a pooled buffer and returns the buffer and a
// datagram whose Head and Body alias it.
func copyDatagram(d *fabric.Datagram) (*[]byte, fabric.Datagram) {
	bp := bufPool.Get().(*[]byte)
	n := d.Len()
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	b := (*bp)[:n]
	h := copy(b, d.Head)
	copy(b[h:], d.Body)
	return bp, fabric.Datagram{Head: b[:h:h], Body: b[h:], To: d.To}
}

func putBuf(bp *[]byte) {
	if bp != nil {
		bufPool.Put(bp)
	}
}

// held is a datagram waiting in the port: delayed, or reordered.
type held struct {
	buf    *[]byte
	dg     fabric.Datagram
	copies int       // 1, or 2 when duplicated
	due    time.Time // when the timer goroutine sends it
	// after counts the datagrams still to pass before a reordered
	// datagram goes; 0 for one released by time only.
	after int
	index int // position in the heap
}

var heldPool = sync.Pool{New: func() any { return new(held) }}

// dueHeap orders held datagrams by due time, earliest first.
type dueHeap []*held

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *dueHeap) Push(x any) {
	it := x.(*held)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

// remove takes it out of the heap.
func (h *dueHeap) remove(it *held) { heap.Remove(h, it.index) }

// batch collects what one Send or one timer round hands the wrapped port.
type batch struct {
	out  []fabric.Datagram
	src  []int     // index of the Send argument each out entry came from
	bufs []*[]byte // buffers to return once out has been sent
}

var batchPool = sync.Pool{New: func() any { return new(batch) }}

func (b *batch) emit(dg fabric.Datagram, copies, src int) {
	for range copies {
		b.out = append(b.out, dg)
		b.src = append(b.src, src)
	}
}

// release frees the buffers and clears the batch for reuse.
func (b *batch) release() {
	for i, bp := range b.bufs {
		putBuf(bp)
		b.bufs[i] = nil
	}
	clear(b.out)
	b.out, b.src, b.bufs = b.out[:0], b.src[:0], b.bufs[:0]
}

// freeHeld returns it to its pool, keeping its buffer in b for later.
func freeHeld(it *held, b *batch) {
	if b != nil {
		b.bufs = append(b.bufs, it.buf)
	} else {
		putBuf(it.buf)
	}
	*it = held{}
	heldPool.Put(it)
}
