package faulty

import (
	"container/heap"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// Port is a fabric.Port that injects faults into another one.
type Port struct {
	inner fabric.Port
	cut   atomic.Bool
	stats counters

	mu       sync.Mutex
	faults   Faults // normalized
	rng      *rand.Rand
	pcg      *rand.PCG
	pending  dueHeap // delayed and reordered datagrams by due time
	reorderQ []*held // reordered datagrams waiting for later ones, in order
	closed   bool

	wake      chan struct{} // the timer goroutine has a new earliest due time
	done      chan struct{} // closed by Close
	stopped   chan struct{} // closed when the timer goroutine returns
	closeOnce sync.Once
	closeErr  error
}

var _ fabric.Port = (*Port)(nil)

// Wrap returns a Port that sends through p with the faults f. Values of f
// out of range are clamped (use Faults.Validate to reject them instead).
// Closing the returned Port closes p.
func Wrap(p fabric.Port, f Faults) *Port {
	f = f.normalized()
	pcg := rand.NewPCG(f.Seed, seedStream)
	fp := &Port{
		inner:   p,
		faults:  f,
		pcg:     pcg,
		rng:     rand.New(pcg),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go fp.run()
	return fp
}

// seedStream is the second PCG seed word; it only needs to be fixed.
const seedStream = 0x9e3779b97f4a7c15

// SetFaults replaces the faults. The random stream goes on where it was
// unless f.Seed differs from the current seed, in which case it restarts
// from the new seed. Datagrams already held keep their schedule.
func (p *Port) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	f = f.normalized()
	p.mu.Lock()
	if f.Seed != p.faults.Seed {
		p.pcg.Seed(f.Seed, seedStream)
	}
	p.faults = f
	p.mu.Unlock()
	return nil
}

// Faults returns the faults in force, with defaults filled in.
func (p *Port) Faults() Faults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults
}

// SetPartitioned cuts the port off (true) or reconnects it (false). While
// cut, Send drops every datagram and Receive and Poll discard every one
// that arrives. Datagrams already held are not affected.
func (p *Port) SetPartitioned(cut bool) { p.cut.Store(cut) }

// Partitioned reports whether the port is cut off.
func (p *Port) Partitioned() bool { return p.cut.Load() }

// Stats returns the counters.
func (p *Port) Stats() Stats { return p.stats.snapshot() }

// Unwrap returns the wrapped port.
func (p *Port) Unwrap() fabric.Port { return p.inner }

// Send applies the faults to dgs and hands what goes out now to the wrapped
// port. It returns len(dgs) when every datagram was dealt with (sent,
// dropped or held), and otherwise the index of the first datagram the
// wrapped port refused, with its error.
func (p *Port) Send(dgs []fabric.Datagram) (int, error) {
	select {
	case <-p.done:
		return 0, fabric.ErrClosed
	default:
	}
	n, tooBig := len(dgs), false
	for i := range dgs {
		if dgs[i].Len() > p.inner.MaxDatagram(dgs[i].To) {
			n, tooBig = i, true
			break
		}
	}
	b := batchPool.Get().(*batch)
	defer func() {
		b.release()
		batchPool.Put(b)
	}()

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, fabric.ErrClosed
	}
	var now time.Time
	wake := false
	for i := range dgs[:n] {
		if p.decide(b, &dgs[i], i, &now) {
			wake = true
		}
	}
	p.mu.Unlock()
	if wake {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}

	if len(b.out) > 0 {
		sent, err := p.inner.Send(b.out)
		p.stats.sent.Add(uint64(sent))
		if err != nil {
			if sent < len(b.src) {
				return b.src[sent], err
			}
			return n, err
		}
	}
	if tooBig {
		return n, fabric.ErrTooBig
	}
	return n, nil
}

// decide draws the fate of d (the i-th datagram of a Send) and either
// drops it, appends it to b, or holds it. It reports whether it pushed a
// datagram onto the timer heap. now is read from the clock on first need.
// p.mu is held.
func (p *Port) decide(b *batch, d *fabric.Datagram, i int, now *time.Time) bool {
	f := &p.faults
	// A fixed number of draws per datagram keeps the fate of the n-th
	// datagram independent of the faults applied to earlier ones.
	uLoss, uDup, uReorder, uCorrupt := p.rng.Float64(), p.rng.Float64(), p.rng.Float64(), p.rng.Float64()
	bit, jitter := p.rng.Uint64(), p.rng.Uint64()
	p.stats.offered.Add(1)

	if p.cut.Load() {
		p.stats.cutOut.Add(1)
		return false
	}
	if uLoss < f.Loss {
		p.stats.dropped.Add(1)
		return false
	}
	dg := *d
	var buf *[]byte
	if uCorrupt < f.Corrupt && d.Len() > 0 {
		buf, dg = copyDatagram(d)
		pos := bit % uint64(dg.Len()*8)
		if byteAt := int(pos / 8); byteAt < len(dg.Head) {
			dg.Head[byteAt] ^= 1 << (pos % 8)
		} else {
			dg.Body[byteAt-len(dg.Head)] ^= 1 << (pos % 8)
		}
		p.stats.corrupted.Add(1)
	}
	copies := 1
	if uDup < f.Duplicate {
		copies = 2
		p.stats.duplicated.Add(1)
	}
	delay := f.Delay
	if f.Jitter > 0 {
		delay += time.Duration(jitter % uint64(f.Jitter+1))
	}
	reorder := uReorder < f.Reorder
	if delay <= 0 && !reorder {
		if buf != nil {
			b.bufs = append(b.bufs, buf)
		}
		b.emit(dg, copies, i)
		p.passed(b, i)
		return false
	}

	// Held: copy what is not copied yet, and schedule it.
	if buf == nil {
		buf, dg = copyDatagram(d)
	}
	it := heldPool.Get().(*held)
	*it = held{buf: buf, dg: dg, copies: copies}
	if delay > 0 {
		p.stats.delayed.Add(1)
	}
	if reorder {
		p.stats.reordered.Add(1)
		delay += f.ReorderDelay
		if delay == f.ReorderDelay { // not delayed: wait for later datagrams
			it.after = f.ReorderAfter
			p.reorderQ = append(p.reorderQ, it)
		}
	}
	if now.IsZero() {
		*now = time.Now()
	}
	it.due = now.Add(delay)
	heap.Push(&p.pending, it)
	return true
}

// passed counts one datagram going out now against the reordered ones
// waiting, and appends to b those whose turn has come. p.mu is held.
func (p *Port) passed(b *batch, i int) {
	if len(p.reorderQ) == 0 {
		return
	}
	keep := p.reorderQ[:0]
	for _, it := range p.reorderQ {
		it.after--
		if it.after > 0 {
			keep = append(keep, it)
			continue
		}
		p.pending.remove(it)
		b.emit(it.dg, it.copies, i)
		freeHeld(it, b)
	}
	clear(p.reorderQ[len(keep):])
	p.reorderQ = keep
}

// dropReordered removes it from the queue of reordered datagrams, when it
// leaves by time. p.mu is held.
func (p *Port) dropReordered(it *held) {
	for j, q := range p.reorderQ {
		if q == it {
			copy(p.reorderQ[j:], p.reorderQ[j+1:])
			p.reorderQ[len(p.reorderQ)-1] = nil
			p.reorderQ = p.reorderQ[:len(p.reorderQ)-1]
			return
		}
	}
}

// Receive passes on what the wrapped port receives, discarding it while
// the port is cut off.
func (p *Port) Receive(msgs [][]byte) (int, error) {
	for {
		n, err := p.inner.Receive(msgs)
		if err != nil || n == 0 || !p.cut.Load() {
			return n, err
		}
		p.stats.cutIn.Add(uint64(n))
	}
}

// Poll passes on what the wrapped port has waiting, discarding it while
// the port is cut off.
func (p *Port) Poll(msgs [][]byte) (int, error) {
	n, err := p.inner.Poll(msgs)
	if n > 0 && p.cut.Load() {
		p.stats.cutIn.Add(uint64(n))
		return 0, err
	}
	return n, err
}

// BatchSize is the wrapped port's.
func (p *Port) BatchSize() int { return p.inner.BatchSize() }

// MaxDatagram is the wrapped port's.
func (p *Port) MaxDatagram(to fabric.Endpoint) int { return p.inner.MaxDatagram(to) }

// LocalEndpoint is the wrapped port's.
func (p *Port) LocalEndpoint() fabric.Endpoint { return p.inner.LocalEndpoint() }

// ParseEndpoint is the wrapped port's.
func (p *Port) ParseEndpoint(s string) (fabric.Endpoint, error) { return p.inner.ParseEndpoint(s) }

// Kind is the wrapped port's: the wrapper is invisible to routing.
func (p *Port) Kind() string { return p.inner.Kind() }

// Alloc is the wrapped port's.
func (p *Port) Alloc(n int) []byte { return p.inner.Alloc(n) }

// Close stops the timer goroutine, discards held datagrams and closes the
// wrapped port. It is idempotent.
func (p *Port) Close() error {
	p.closeOnce.Do(func() {
		close(p.done)
		p.closeErr = p.inner.Close() // unblocks a timer send in progress
		<-p.stopped
		p.mu.Lock()
		p.closed = true
		for _, it := range p.pending {
			p.stats.discarded.Add(1)
			freeHeld(it, nil)
		}
		clear(p.pending)
		p.pending = p.pending[:0]
		clear(p.reorderQ)
		p.reorderQ = p.reorderQ[:0]
		p.mu.Unlock()
	})
	return p.closeErr
}
