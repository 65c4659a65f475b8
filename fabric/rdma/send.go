package rdma

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/verbs"
)

// Send posts each datagram as one RC SEND on the queue pair to its
// endpoint, dialing the peer on first use. Head, and Body unless it lies
// in memory from Alloc and is at least Config.ZeroCopyMin bytes, are
// copied into one registered send buffer; such a Body becomes a second
// SGE and is read in place, and
// Send then waits for those sends to complete before returning, so that
// no slice is used after Send returns. Datagrams to an unreachable or
// dead peer are dropped and counted (Stats.Dropped), and the peer is
// reported lost (OnPeerLost). Send blocks while the peer's queue pair has
// Config.SendDepth sends outstanding (the peer holds its datagrams back,
// or is slow), without holding up sends to other peers; a peer that
// answers nothing, not even the keep-alive, for Config.SendTimeout
// meanwhile is declared lost.
func (p *Port) Send(dgs []fabric.Datagram) (int, error) {
	if p.closed.Load() {
		return 0, fabric.ErrClosed
	}
	conns := make([]*conn, len(dgs))
	for i := range dgs {
		d := &dgs[i]
		if d.Len() > MaxDatagram {
			return i, fabric.ErrTooBig
		}
		ep, ok := d.To.(Endpoint)
		if !ok {
			return i, fmt.Errorf("rdma: endpoint %v (%T) is not an rdma endpoint", d.To, d.To)
		}
		if i > 0 && dgs[i-1].To == d.To {
			conns[i] = conns[i-1]
		} else {
			conns[i] = p.connFor(string(ep))
		}
		if p.closed.Load() {
			return i, fabric.ErrClosed
		}
	}

	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if p.closed.Load() {
		return 0, fabric.ErrClosed
	}
	p.reapSend()
	p.retireDead()
	var rung []*conn
	var zc []zcSend // zero-copy sends
	for i := range dgs {
		d, c := &dgs[i], conns[i]
		if c == nil || c.dead.Load() {
			// Reported lost (OnPeerLost) when its dial or its queue
			// pair failed.
			p.stats.dropped.Add(1)
			continue
		}
		idx, err := p.sendSlot(c, &rung)
		if err != nil {
			if errors.Is(err, fabric.ErrClosed) {
				return i, err
			}
			p.stats.dropped.Add(1)
			continue
		}
		buf := p.send.buf(idx)
		n := copy(buf, d.Head)
		sges := [2]verbs.SGE{}
		nsge := 1
		if mr := p.zeroCopyMR(d.Body); mr != nil {
			sges[1] = verbs.SGEOf(mr, d.Body)
			nsge = 2
			zc = append(zc, zcSend{idx, p.sendSeq[idx] + 1})
			p.stats.zeroCopy.Add(1)
		} else {
			n += copy(buf[n:], d.Body)
		}
		sges[0] = p.send.sge(idx, n)
		if n == 0 && nsge == 2 {
			sges[0], nsge = sges[1], 1
		}
		wr := verbs.SendWR{WrID: uint64(idx), Opcode: verbs.OpSend, Signaled: true, SGEs: sges[:nsge]}
		if nsge == 1 && sges[0].Length == 0 {
			wr.SGEs = nil
		}
		if err := c.qp.PostSend(&wr); err != nil {
			p.send.put(idx)
			p.stats.dropped.Add(1)
			c.fail(fmt.Errorf("%w: posting a send to %s: %v", ErrPeerLost, c.ep, err))
			continue
		}
		p.sendSeq[idx]++
		p.sendOwner[idx] = c
		if p.sentTo[c.ep] != c {
			p.sentTo[c.ep] = c
		}
		c.outstanding++
		if !c.rung {
			c.rung = true
			rung = append(rung, c)
		}
		p.stats.sent.Add(1)
	}
	if err := p.ring(&rung); err != nil {
		return len(dgs), err
	}
	// Zero-copy bodies are read by the device after the doorbell: wait
	// until those sends have completed (or failed).
	giveUp := time.Now().Add(2 * p.cfg.SendTimeout)
	for _, z := range zc {
		// (While waitSend let go of sendMu, the slot may have completed
		// and carried another send.)
		for p.sendOwner[z.idx] != nil && p.sendSeq[z.idx] == z.seq && time.Now().Before(giveUp) {
			// The doorbell's own system call often carried the send to
			// its end: look before arming the completion channel.
			if p.reapSend(); p.sendOwner[z.idx] == nil || p.sendSeq[z.idx] != z.seq {
				break
			}
			c := p.sendOwner[z.idx]
			if err := p.waitSend(c); err != nil {
				if errors.Is(err, fabric.ErrClosed) {
					return len(dgs), err
				}
			}
		}
	}
	return len(dgs), nil
}

// zeroCopyMR returns the Alloc'd region holding body when body is large
// enough for the device to read it in place (Config.ZeroCopyMin): a
// smaller one costs less to copy than the wait for its send to complete.
func (p *Port) zeroCopyMR(body []byte) *verbs.MR {
	if len(body) < p.cfg.ZeroCopyMin {
		return nil
	}
	return p.allocMR(body)
}

// zcSend is a posted send whose body the device reads in place: its
// buffer and the slot's send count then.
type zcSend struct {
	idx int
	seq uint64
}

// sendSlot returns a free send buffer once c has room for one more send,
// reaping completions and ringing pending doorbells while it waits.
func (p *Port) sendSlot(c *conn, rung *[]*conn) (int, error) {
	for {
		p.reapSend()
		if c.dead.Load() {
			return 0, ErrPeerLost
		}
		if c.outstanding < p.cfg.SendDepth {
			if idx, ok := p.send.get(); ok {
				return idx, nil
			}
		}
		if err := p.ring(rung); err != nil {
			return 0, err
		}
		if err := p.waitSend(c); err != nil {
			return 0, err
		}
	}
}

// ring rings the doorbell of every conn with unannounced sends.
func (p *Port) ring(rung *[]*conn) error {
	for _, c := range *rung {
		c.rung = false
		if c.dead.Load() {
			continue
		}
		if err := c.qp.Doorbell(); err != nil {
			c.fail(fmt.Errorf("%w: %v", ErrPeerLost, err))
		}
	}
	*rung = (*rung)[:0]
	if p.closed.Load() {
		return fabric.ErrClosed
	}
	return nil
}

// recvPumpInterval is how often a Send waiting for credit reaps receive
// completions, keeping this port's receive rings topped up meanwhile.
const recvPumpInterval = 2 * time.Millisecond

// waitSend blocks until the send CQ signals, pumping the receive side
// every recvPumpInterval. It lets go of sendMu while it sleeps, so that
// sends to other peers go on while c's peer holds its datagrams back. If
// c's peer answers nothing (no completion, no keep-alive) for
// SendTimeout, c is declared lost (its QP goes to the error state, which
// flushes its sends). It runs under sendMu.
func (p *Port) waitSend(c *conn) error {
	giveUp := time.Now().Add(p.cfg.SendTimeout)
	for {
		p.pumpRecv()
		if err := p.sendCQ.Arm(); err != nil {
			if p.closed.Load() {
				return fabric.ErrClosed
			}
			return err
		}
		if p.reapSend() > 0 {
			return nil
		}
		now := time.Now()
		if !now.Before(giveUp) {
			if c == nil {
				return nil
			}
			if heard := time.Unix(0, c.heard.Load()); now.Sub(heard) < p.cfg.SendTimeout {
				// Alive (the keep-alive is answered), but holding back.
				giveUp = heard.Add(p.cfg.SendTimeout)
			} else {
				c.fail(fmt.Errorf("%w: no send completion from %s in %v", ErrPeerLost, c.ep, p.cfg.SendTimeout))
				return nil
			}
		}
		wake := now.Add(recvPumpInterval)
		if giveUp.Before(wake) {
			wake = giveUp
		}
		p.sendMu.Unlock()
		err := p.sendCQ.Wait(wake)
		p.sendMu.Lock()
		switch {
		case p.closed.Load() || errors.Is(err, os.ErrClosed):
			return fabric.ErrClosed
		case err == nil:
			return nil
		case !errors.Is(err, verbs.ErrTimeout):
			return err
		}
	}
}

// reapSend processes send completions: it frees their buffers and retires
// the QP of a failed one. It runs under sendMu.
func (p *Port) reapSend() int {
	total := 0
	for {
		n := p.sendCQ.Poll(p.sendWC)
		for _, wc := range p.sendWC[:n] {
			idx := int(wc.WrID)
			if idx < 0 || idx >= len(p.sendOwner) || p.sendOwner[idx] == nil {
				continue
			}
			c := p.sendOwner[idx]
			p.sendOwner[idx] = nil
			c.outstanding--
			p.send.put(idx)
			if wc.Status == verbs.WCSuccess {
				c.active.Add(1)
			} else {
				p.stats.dropped.Add(1)
				c.unsent++
				if wc.Status != verbs.WCFlushErr {
					c.fail(fmt.Errorf("%w: %v", ErrPeerLost, &verbs.WCError{Status: wc.Status, QPNum: wc.QPNum}))
				}
			}
		}
		total += n
		if n < len(p.sendWC) {
			return total
		}
	}
}
