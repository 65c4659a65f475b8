package rdma

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/pcor-go/pcor/internal/verbs"
)

// conn is the queue pair to one peer, with the TCP connection of its
// handshake kept open as a liveness signal.
type conn struct {
	p    *Port
	ep   string // the peer's endpoint
	qp   *verbs.QP
	psn  uint32
	rma  *verbs.QP // one-sided reads (see rma.go)
	rpsn uint32
	tcp  net.Conn
	dead atomic.Bool

	outstanding int // posted sends not yet completed (Port.sendMu)
	rung        bool
	recvPosted  int // posted receives not yet completed (Port.rxMu)

	rmaPosted int     // reads posted on rma, not yet completed (Port.rmaMu)
	rmaQueue  []rmaWR // reads waiting for room on rma (Port.rmaMu)
	rmaErr    error   // why a read failed (Port.rmaMu)

	failOnce sync.Once
	err      error
}

// newConn creates a QP in INIT with RecvPerPeer receives posted. It runs
// under p.mu.
func (p *Port) newConnLocked() (*conn, error) {
	if p.closed.Load() {
		return nil, errClosed
	}
	p.rxMu.Lock()
	free := len(p.recv.free)
	p.rxMu.Unlock()
	if free < p.cfg.RecvPerPeer {
		return nil, fmt.Errorf("rdma: receive buffer pool exhausted (%d free, %d needed per peer): raise Config.RecvBuffers", free, p.cfg.RecvPerPeer)
	}
	qp, err := p.pd.CreateQP(p.sendCQ, p.recvCQ, verbs.QPCaps{
		MaxSendWR: uint32(p.cfg.SendDepth), MaxRecvWR: uint32(p.cfg.RecvPerPeer),
		MaxSendSGE: 2, MaxRecvSGE: 1})
	if err != nil {
		return nil, err
	}
	if err := qp.ToInit(p.cfg.Port, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead); err != nil {
		qp.Close()
		return nil, err
	}
	rma, err := p.pd.CreateQP(p.rmaCQ, p.rmaCQ, verbs.QPCaps{MaxSendWR: rmaDepth, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	if err != nil {
		qp.Close()
		return nil, err
	}
	rma.RdAtomic = rmaRdAtomic
	if err := rma.ToInit(p.cfg.Port, verbs.AccessLocalWrite|verbs.AccessRemoteRead); err != nil {
		qp.Close()
		rma.Close()
		return nil, err
	}
	c := &conn{p: p, qp: qp, psn: verbs.RandomPSN(), rma: rma, rpsn: verbs.RandomPSN()}
	p.rxMu.Lock()
	for i := 0; i < p.cfg.RecvPerPeer && p.postRecvLocked(c); i++ {
	}
	p.rxConns = append(p.rxConns, c)
	p.rxMu.Unlock()
	p.byQPN[qp.QPN] = c
	p.all = append(p.all, c)
	return c, nil
}

// connect brings both QPs to RTS towards the peer's.
func (c *conn) connect(rem hello) error {
	p := c.p
	if err := c.qp.ToRTR(p.cfg.Port, uint8(p.gid.Index), p.mtu, rem.Remote); err != nil {
		return err
	}
	if err := c.qp.ToRTS(c.psn, p.cfg.AckTimeout, p.cfg.RetryCount, p.cfg.RNRRetry); err != nil {
		return err
	}
	if err := c.rma.ToRTR(p.cfg.Port, uint8(p.gid.Index), p.mtu, rem.RMA); err != nil {
		return err
	}
	return c.rma.ToRTS(c.rpsn, p.cfg.AckTimeout, p.cfg.RetryCount, p.cfg.RNRRetry)
}

func (c *conn) local() hello {
	g := c.p.gid.GID
	return hello{Remote: verbs.Remote{GID: g, QPN: c.qp.QPN, PSN: c.psn},
		RMA: verbs.Remote{GID: g, QPN: c.rma.QPN, PSN: c.rpsn}, Endpoint: c.p.local.String()}
}

// watch waits for the handshake connection to end (the peer closed or
// died) and then fails the conn.
func (c *conn) watch() {
	var b [64]byte
	for {
		if _, err := c.tcp.Read(b[:]); err != nil {
			if err == io.EOF {
				err = fmt.Errorf("rdma: peer %s closed its handshake connection", c.ep)
			}
			c.fail(fmt.Errorf("%w: %v", ErrPeerLost, err))
			return
		}
	}
}

// fail retires the conn: it moves the QP to the error state (outstanding
// work completes as flushed), stops sends to it and forgets it as the
// route to its endpoint, so that the next Send dials afresh.
func (c *conn) fail(err error) {
	c.failOnce.Do(func() {
		c.err = err
		c.dead.Store(true)
		p := c.p
		p.lastFailure.Store(&err)
		if !p.closed.Load() {
			p.stats.peerFailures.Add(1)
		}
		p.deadConns.Add(1)
		p.mu.Lock()
		if p.conns[c.ep] == c {
			delete(p.conns, c.ep)
		}
		if !p.closed.Load() {
			c.qp.ToError()
			c.rma.ToError() // posted reads complete as flushed
		}
		tcp := c.tcp
		p.mu.Unlock()
		if tcp != nil {
			tcp.Close()
		}
		if !p.closed.Load() && c.ep != "" {
			p.peerLost(c.ep)
		}
	})
}

// retireDead destroys the QPs of failed conns whose work has all
// completed (sends reaped, posted receives flushed), so that peers that
// come and go do not pile up queue pairs. It runs under sendMu, which
// keeps Send from posting to a QP being destroyed.
func (p *Port) retireDead() {
	if p.deadConns.Load() == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return
	}
	p.rxMu.Lock()
	defer p.rxMu.Unlock()
	p.rmaMu.Lock()
	defer p.rmaMu.Unlock()
	kept := p.all[:0]
	for _, c := range p.all {
		if c.dead.Load() && c.outstanding == 0 && c.recvPosted == 0 && c.rmaPosted == 0 && c.tcpClosed() {
			for i, rc := range p.rxConns {
				if rc == c {
					p.rxConns = append(p.rxConns[:i], p.rxConns[i+1:]...)
					break
				}
			}
			if p.byQPN[c.qp.QPN] == c {
				delete(p.byQPN, c.qp.QPN)
			}
			c.qp.Close()
			c.rma.Close()
			p.deadConns.Add(-1)
			p.stats.retired.Add(1)
			continue
		}
		kept = append(kept, c)
	}
	clear(p.all[len(kept):])
	p.all = kept
}

// tcpClosed reports that the conn's handshake connection is no longer
// in use (failed conns close it in fail).
func (c *conn) tcpClosed() bool { return c.err != nil || c.tcp == nil }
