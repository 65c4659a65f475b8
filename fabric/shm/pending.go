//go:build linux

package shm

import "github.com/pcor-go/pcor/fabric"

var _ fabric.Pender = (*Port)(nil)

// Pending reports whether a ring of the port holds records its producer
// wrote and the port has not handed back: unread, taken in a batch not yet
// handled, or held back (Hold). Any goroutine may call it: it reads the
// segment's shared words alone, none of the receiver's own state.
func (p *Port) Pending() bool {
	if p.closed.Load() {
		return false
	}
	mem := p.seg.mem
	hw := p.highWater()
	for i := 0; i < hw; i++ {
		base := slotOffset(i, p.seg.ringSize)
		if load32(mem, base+slotOwner) == 0 {
			continue
		}
		if load64(mem, base+slotTail) > load64(mem, base+slotHead) {
			return true
		}
	}
	return false
}
