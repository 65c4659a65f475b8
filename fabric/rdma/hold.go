package rdma

import (
	"fmt"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// Holding back. A receiver with no room yet for what a peer sent holds
// the peer's datagram (fabric.Holder): the port keeps it, with every later
// datagram from the same queue pair, out of delivery until Resume, and
// stops reposting receive buffers on that queue pair. Once its posted
// receives are used up, the peer's sends meet receiver-not-ready and the
// peer's transport retries them (RNRRetry 7: for as long as it takes),
// so the peer's send queue fills and its Send waits: a slow receiver
// slows that one sender, and its memory stays bounded by RecvPerPeer
// buffers. Other peers go on. The keep-alive READ runs on the other queue
// pair, so a held peer is not taken for dead.

var (
	_ fabric.Holder  = (*Port)(nil)
	_ fabric.Flusher = (*Port)(nil)
)

// holdWake is how often a blocked Receive looks for datagrams released by
// Resume while some are held (Resume cannot raise a completion event).
const holdWake = time.Millisecond

// Hold gives msgs[i] of the last batch back to the port, with the
// datagrams after it from the same queue pair, which are msgs[i+1:i+1+n]
// (a batch lists each queue pair's datagrams together). They are
// delivered again, in order, after Resume.
func (p *Port) Hold(i int) int {
	p.rxMu.Lock()
	defer p.rxMu.Unlock()
	if i < 0 || i >= len(p.lent) || p.lent[i].idx < 0 {
		return 0
	}
	c := p.recvOwner[p.lent[i].idx]
	j := i + 1
	for j < len(p.lent) && p.lent[j].idx >= 0 && p.recvOwner[p.lent[j].idx] == c {
		j++
	}
	held := append([]readyDg(nil), p.lent[i:j]...)
	for k := i; k < j; k++ {
		p.lent[k].idx = -1 // not released by Handled
	}
	// What arrived from c since the batch was taken goes after them.
	kept := p.ready[:0]
	for _, r := range p.ready {
		if p.recvOwner[r.idx] == c {
			held = append(held, r)
		} else {
			kept = append(kept, r)
		}
	}
	p.ready = kept
	c.held = append(held, c.held...)
	if !c.holding {
		c.holding = true
		p.holding.Add(1)
	}
	p.stats.held.Add(1)
	return j - i - 1
}

// Handled returns the buffers of the last batch, but those held, to the
// pool, and reposts receives where rings ran short.
func (p *Port) Handled() {
	p.rxMu.Lock()
	p.releaseLentLocked()
	p.rxMu.Unlock()
}

// Resume delivers the held datagrams again and reposts the receives of
// their queue pairs. Any goroutine may call it, at any time.
func (p *Port) Resume() {
	if p.holding.Load() == 0 {
		return
	}
	p.rxMu.Lock()
	defer p.rxMu.Unlock()
	if p.closed.Load() {
		return
	}
	for _, c := range p.rxConns {
		if !c.holding {
			continue
		}
		c.holding = false
		p.holding.Add(-1)
		p.ready = append(p.ready, c.held...)
		c.held = nil
		for !c.dead.Load() && c.recvPosted < p.cfg.RecvPerPeer {
			if !p.postRecvLocked(c) {
				p.starved++
				break
			}
		}
	}
}

// groupLocked orders a batch so that each queue pair's datagrams lie
// together, in their order (Hold returns the ones after the held one).
// Runs under rxMu.
func (p *Port) groupLocked(b []readyDg) {
	for i := 1; i < len(b); i++ {
		c := p.recvOwner[b[i].idx]
		if p.recvOwner[b[i-1].idx] == c {
			continue
		}
		// Move b[i] after the last earlier datagram of its queue pair.
		last := -1
		for k := i - 2; k >= 0; k-- {
			if p.recvOwner[b[k].idx] == c {
				last = k
				break
			}
		}
		if last < 0 {
			continue
		}
		r := b[i]
		copy(b[last+2:i+1], b[last+1:i])
		b[last+1] = r
	}
}

// Taken reports whether every datagram sent to to has completed: the
// peer's transport acknowledged it, so it lies in a receive buffer of the
// peer (a held peer's transport does not take more). It fails if one of
// them was not delivered (the peer was lost first).
func (p *Port) Taken(to fabric.Endpoint) (bool, error) {
	ep, ok := to.(Endpoint)
	if !ok {
		return false, fmt.Errorf("rdma: endpoint %v (%T) is not an rdma endpoint", to, to)
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if p.closed.Load() {
		return false, fabric.ErrClosed
	}
	c := p.sentTo[string(ep)]
	if c == nil {
		return true, nil // nothing was sent there
	}
	p.reapSend()
	switch {
	case c.unsent > 0:
		return false, fmt.Errorf("%w: %d datagrams to %s not delivered: %v", ErrPeerLost, c.unsent, ep, c.failure())
	case c.outstanding == 0:
		return true, nil
	case c.dead.Load():
		return false, fmt.Errorf("%w: %s: %v", ErrPeerLost, ep, c.failure())
	}
	return false, nil
}

// WaitTaken sleeps until a send completes (Taken may then report to
// taken), or at most d: it arms the send completion queue's channel and
// waits for its event, so a blocking pcor Send that waits for its peer's
// transport to acknowledge its message wakes with the acknowledgement
// rather than at the next tick of a timer. It returns at once when
// nothing sent to to is outstanding, or the peer is known lost; the
// caller asks Taken.
func (p *Port) WaitTaken(to fabric.Endpoint, d time.Duration) {
	ep, ok := to.(Endpoint)
	if !ok || d <= 0 {
		return
	}
	deadline := time.Now().Add(d)
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if p.closed.Load() {
		return
	}
	c := p.sentTo[string(ep)]
	if c == nil {
		return
	}
	if p.reapSend(); c.outstanding == 0 || c.unsent > 0 || c.dead.Load() {
		return
	}
	if err := p.sendCQ.Arm(); err != nil {
		return
	}
	// Completions that came before the arm raise no event.
	if p.reapSend() > 0 {
		return
	}
	p.stats.takenWaits.Add(1)
	// Sends to other peers go on meanwhile.
	p.sendMu.Unlock()
	p.sendCQ.Wait(deadline)
	p.sendMu.Lock()
}
