package rdma

import (
	"errors"
	"os"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// Receive blocks until at least one datagram has arrived and stores up
// to len(msgs) of them. Each msgs[i] is a slice of a receive buffer, valid
// until the next Receive or Poll, which posts the buffers again.
func (p *Port) Receive(msgs [][]byte) (int, error) {
	return p.receive(msgs, true)
}

// Poll is Receive without blocking.
func (p *Port) Poll(msgs [][]byte) (int, error) {
	return p.receive(msgs, false)
}

func (p *Port) receive(msgs [][]byte, block bool) (int, error) {
	p.recvMu.Lock()
	defer p.recvMu.Unlock()
	if p.closed.Load() {
		return 0, fabric.ErrClosed
	}
	p.repost()
	if len(msgs) == 0 {
		return 0, nil
	}
	for {
		if n := p.reapRecv(msgs); n > 0 || !block {
			return n, nil
		}
		if err := p.recvCQ.Arm(); err != nil {
			if p.closed.Load() {
				return 0, fabric.ErrClosed
			}
			return 0, err
		}
		if n := p.reapRecv(msgs); n > 0 {
			return n, nil
		}
		err := p.recvCQ.Wait(time.Time{})
		if p.closed.Load() || errors.Is(err, os.ErrClosed) {
			return 0, fabric.ErrClosed
		}
		if err != nil {
			return 0, err
		}
	}
}

// repost gives the buffers lent by the previous call back to their QPs,
// or to the pool when the QP is gone.
func (p *Port) repost() {
	if len(p.lent) == 0 {
		return
	}
	p.mu.Lock()
	for _, idx := range p.lent {
		c := p.recvOwner[idx]
		if c != nil && !c.dead.Load() && c.qp.PostRecv(uint64(idx), p.recv.sge(idx, BufSize)) == nil {
			c.recvPosted++
			continue
		}
		p.recvOwner[idx] = nil
		p.recv.put(idx)
	}
	p.mu.Unlock()
	p.lent = p.lent[:0]
}

// reapRecv turns receive completions into datagrams.
func (p *Port) reapRecv(msgs [][]byte) int {
	got := 0
	for got < len(msgs) {
		want := min(len(msgs)-got, len(p.recvWC))
		n := p.recvCQ.Poll(p.recvWC[:want])
		if n == 0 {
			break
		}
		p.mu.Lock()
		for _, wc := range p.recvWC[:n] {
			if idx := int(wc.WrID); idx >= 0 && idx < len(p.recvOwner) && p.recvOwner[idx] != nil {
				p.recvOwner[idx].recvPosted--
			}
		}
		p.mu.Unlock()
		for _, wc := range p.recvWC[:n] {
			idx := int(wc.WrID)
			if idx < 0 || idx >= len(p.recvOwner) {
				continue
			}
			if wc.Status != wcSuccess {
				p.mu.Lock()
				if c := p.recvOwner[idx]; c != nil && wc.Status != wcFlushErr {
					p.mu.Unlock()
					c.fail(&WCError{Status: wc.Status, QPNum: wc.QPNum})
					p.mu.Lock()
				}
				p.recvOwner[idx] = nil
				p.recv.put(idx)
				p.mu.Unlock()
				continue
			}
			msgs[got] = p.recv.buf(idx)[:wc.ByteLen]
			p.lent = append(p.lent, idx)
			got++
		}
	}
	p.stats.received.Add(uint64(got))
	return got
}
