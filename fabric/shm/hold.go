//go:build linux

package shm

import (
	"context"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

var (
	_ fabric.Holder  = (*Port)(nil)
	_ fabric.Flusher = (*Port)(nil)
)

// Hold gives datagram i of the last batch received back to its ring,
// with the datagrams after it from the same ring (how many is returned):
// the ring's read position goes back to it, and the ring is not read
// again until Resume. Its producer sees the ring fill and waits, while the
// other rings are read as before. Only the receiving goroutine calls it.
func (p *Port) Hold(i int) int {
	if i < 0 || i >= p.nlast {
		return 0
	}
	s := p.src[i]
	r := p.in[s]
	if r == nil {
		return 0
	}
	r.pos = p.at[i]
	r.held = true
	p.st.held.Add(1)
	n := 0
	for j := i + 1; j < p.nlast && p.src[j] == s; j++ {
		n++
	}
	return n
}

// Resume lets the held rings be read again and wakes the receiver if it
// sleeps. Any goroutine may call it.
func (p *Port) Resume() {
	p.resumed.Add(1)
	if !p.closed.Load() {
		p.wake(p.seg)
	}
}

// unholdIfResumed clears every ring's hold once Resume has been called
// since the receiver last looked.
func (p *Port) unholdIfResumed() {
	if g := p.resumed.Load(); g != p.seen {
		p.seen = g
		for _, r := range p.in {
			if r != nil {
				r.held = false
			}
		}
	}
}

// Flush waits until the receiver of every ring this port writes has read
// all of it (and handled it: a receiver gives a ring's room back only
// when it receives again), or has closed or died, or ctx ends.
func (p *Port) Flush(ctx context.Context) error {
	type target struct {
		o   *outRing
		pos uint64
	}
	p.outMu.Lock()
	var ts []target
	for _, o := range p.out {
		o.mu.Lock()
		if !o.dead {
			ts = append(ts, target{o, o.r.pos})
		}
		o.mu.Unlock()
	}
	p.outMu.Unlock()
	for _, t := range ts {
		for i := 0; ; i++ {
			t.o.mu.Lock()
			done := t.o.dead || load64(t.o.seg.mem, t.o.r.base+slotHead) >= t.pos ||
				i%256 == 255 && !t.o.seg.ownerAlive()
			t.o.mu.Unlock()
			if done {
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}
