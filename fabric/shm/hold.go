//go:build linux

package shm

import (
	"fmt"
	"sync/atomic"
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

// Handled gives the room of the last batch's records back to their
// producers, which then see them taken.
func (p *Port) Handled() {
	for j := 0; j < p.nlast; j++ {
		if j > 0 && p.src[j] == p.src[j-1] {
			continue
		}
		if r := p.in[p.src[j]]; r != nil {
			r.release()
		}
	}
}

// takenLooks is how many looks of Taken at a ring not yet read go by
// between two looks at whether its receiver lives.
const takenLooks = 16

// Taken reports whether the receiver at to has read every record this
// port wrote into its ring and handed their room back (it does when it
// receives again, or calls Handled). It fails with ErrNoPort once the
// receiver has closed or died before taking them; what it took before it
// went stays taken.
func (p *Port) Taken(to fabric.Endpoint) (bool, error) {
	e, ok := to.(Endpoint)
	if !ok {
		return false, fmt.Errorf("shm: endpoint %v is not an shm endpoint", to)
	}
	// A sender asks about the destination it sent to last: its ring is
	// found without the port's lock and map.
	if o := p.lastOut.Load(); o != nil && o.name == e.Name {
		o.mu.Lock()
		if !o.dead {
			taken, err := p.takenLocked(o, e)
			o.mu.Unlock()
			return taken, err
		}
		o.mu.Unlock()
	}
	p.outMu.Lock()
	o := p.out[e.Name]
	p.outMu.Unlock()
	if o == nil {
		return true, nil // nothing was sent there
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return p.takenLocked(o, e)
}

// takenLocked is Taken for o, the ring of e. o.mu is held.
func (p *Port) takenLocked(o *outRing, e Endpoint) (bool, error) {
	if o.dead {
		// A receiver that read everything before it went took it.
		if o.lastHead >= o.r.pos {
			return true, nil
		}
		return false, fmt.Errorf("%w: %s", ErrNoPort, e)
	}
	if atomic.LoadUint64(o.r.head) >= o.r.pos {
		return true, nil
	}
	// A sender asks again and again while its receiver reads: reading
	// the clock costs more than the rest of a look, so it is read only
	// every takenLooks looks.
	if o.looks++; o.looks%takenLooks != 0 {
		return false, nil
	}
	if now := time.Now(); now.Sub(o.checked) > 10*time.Millisecond {
		o.checked = now
		if !o.seg.ownerAlive() {
			// It may have read the rest between the look above and this.
			if o.markDeadLocked(); o.lastHead >= o.r.pos {
				return true, nil
			}
			return false, fmt.Errorf("%w: %s (closed or died)", ErrNoPort, e)
		}
	}
	return false, nil
}

// WaitTaken sleeps until the receiver at to has taken every record this
// port wrote into its ring (Taken would report it), or at most d: it wakes
// the sender when it hands room back (Handled, or its next receive). It
// returns at once when nothing waits to be taken or the receiver is known
// gone; the caller asks Taken whether it was taken, and whether the
// receiver lives.
//
// The sleep is a futex in the shared segment. Other sends to the same
// destination wait meanwhile.
func (p *Port) WaitTaken(to fabric.Endpoint, d time.Duration) {
	e, ok := to.(Endpoint)
	if !ok || d <= 0 {
		return
	}
	p.outMu.Lock()
	o := p.out[e.Name]
	p.outMu.Unlock()
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead || p.closed.Load() {
		return
	}
	p.st.takenWaits.Add(1)
	o.r.waitTaken(d)
}
