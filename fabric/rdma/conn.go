package rdma

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/internal/verbs"
)

// conn is the pair of RC queue pairs to one peer: one for datagrams, one
// for one-sided reads.
type conn struct {
	p    *Port
	ep   string // the peer's endpoint
	to   udAddr // the same, parsed
	key  acceptKey
	qp   *verbs.QP
	psn  uint32
	rma  *verbs.QP // one-sided reads (see rma.go)
	rpsn uint32
	rem  uint32 // the peer's datagram QPN once connected (Port.mu)
	dead atomic.Bool
	// confirmed: the peer's queue pairs are known to be ready (this port
	// dialed, or the peer sent on it or pinged it). Until then a conn
	// made for a peer's REQ carries nothing: its peer may not have its
	// REP yet, and a send or READ towards a queue pair not yet ready is
	// retried by the transport only RetryCount times.
	confirmed atomic.Bool
	since     time.Time // when connected (Port.mu)

	heard   atomic.Int64  // when the peer last answered (UnixNano)
	active  atomic.Uint64 // work completed with the peer: it answers too
	seen    uint64        // active when keepAlive last looked (cmLoop)
	goneErr error         // the peer closed: fail with this once drained (Port.rxMu)

	outstanding int // posted sends not yet completed (Port.sendMu)
	unsent      int // sends completed in error or flushed (Port.sendMu)
	rung        bool
	recvPosted  int       // posted receives not yet completed (Port.rxMu)
	holding     bool      // its datagrams are held back: not delivered, receives not reposted (Port.rxMu)
	held        []readyDg // the datagrams held back, in order (Port.rxMu)

	rmaPosted int     // reads posted on rma, not yet completed (Port.rmaMu)
	rmaQueue  []rmaWR // reads waiting for room on rma (Port.rmaMu)
	rmaErr    error   // why a read failed (Port.rmaMu)
	probing   bool    // a keep-alive READ is in flight (Port.rmaMu)

	failOnce sync.Once
	err      error
}

// dialState is a connection attempt other senders to the same endpoint
// wait for.
type dialState struct {
	done chan struct{}
	c    *conn
}

// connFor returns the live conn to ep, dialing it if there is none. It
// returns nil when the peer cannot be reached now (the datagram is then
// dropped); a dial that fails reports ep lost.
func (p *Port) connFor(ep string) *conn {
	p.mu.Lock()
	if c := p.conns[ep]; c != nil && !c.dead.Load() {
		p.mu.Unlock()
		return c
	}
	if c := p.acceptedLocked(ep); c != nil {
		p.conns[ep] = c
		p.mu.Unlock()
		return c
	}
	if t, ok := p.failed[ep]; ok && time.Now().Before(t) {
		p.mu.Unlock()
		return nil
	}
	if d := p.dialing[ep]; d != nil {
		p.mu.Unlock()
		select {
		case <-d.done:
		case <-time.After(p.cfg.HandshakeTimeout):
		}
		return d.c
	}
	d := &dialState{done: make(chan struct{})}
	p.dialing[ep] = d
	c, err := p.newConnLocked()
	p.mu.Unlock()
	if err == nil {
		err = p.dial(c, ep)
	}
	p.mu.Lock()
	delete(p.dialing, ep)
	if err != nil {
		p.stats.handshakeFailures.Add(1)
		p.noteCauseLocked(ep, fmt.Errorf("%w: cannot connect: %v", ErrPeerLost, err))
		if t := time.Now().Add(p.cfg.RetryBackoff); t.After(p.failed[ep]) {
			p.failed[ep] = t
		}
		if c != nil {
			c.dead.Store(true)
			p.deadConns.Add(1)
			if !p.closed.Load() {
				c.qp.ToError()
				c.rma.ToError()
			}
		}
		c = nil
	} else {
		delete(p.failed, ep)
		if old := p.conns[ep]; old != nil && !old.dead.Load() {
			// The peer dialed this port meanwhile and its queue pair
			// became the route (cmAccept), which datagrams may have
			// taken already: keep it, so that they all go in one order.
			// The one dialed here stays open for what the peer sends.
			c = old
		} else {
			p.conns[ep] = c
		}
	}
	d.c = c
	close(d.done)
	p.mu.Unlock()
	if c == nil && !p.closed.Load() {
		// What is sent there is dropped: say so, once per failed dial.
		p.peerLost(ep)
	}
	return c
}

// acceptedLocked returns a live, confirmed conn made for ep's REQ, or
// nil. It runs under p.mu.
func (p *Port) acceptedLocked(ep string) *conn {
	for _, c := range p.all {
		if c.ep == ep && c.rem != 0 && !c.dead.Load() && c.confirmed.Load() {
			return c
		}
	}
	return nil
}

// newConn creates a QP in INIT with RecvPerPeer receives posted. It runs
// under p.mu.
func (p *Port) newConnLocked() (*conn, error) {
	if p.closed.Load() {
		return nil, errClosed
	}
	if err := p.growRecv(); err != nil {
		return nil, err
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

// errPoolFull: a port has no receive buffers for one more peer.
var errPoolFull = errors.New("rdma: receive buffer pool at its limit (Config.MaxRecvBuffers)")

// growRecv makes room in the receive pool for one more peer's
// RecvPerPeer receives: when fewer are free, it registers more buffers,
// up to Config.MaxRecvBuffers. It runs under p.mu.
func (p *Port) growRecv() error {
	p.rxMu.Lock()
	defer p.rxMu.Unlock()
	for len(p.recv.free) < p.cfg.RecvPerPeer {
		if p.recv.n+p.cfg.RecvPerPeer > p.cfg.MaxRecvBuffers {
			return fmt.Errorf("%w (%d buffers, %d free, %d needed per peer)", errPoolFull, p.recv.n, len(p.recv.free), p.cfg.RecvPerPeer)
		}
		if err := p.recv.grow(p.pd, p.cfg.RecvPerPeer, verbs.AccessLocalWrite); err != nil {
			return err
		}
		p.recvOwner = append(p.recvOwner, make([]*conn, p.cfg.RecvPerPeer)...)
		// ready never outgrows its backing array (no allocation as
		// datagrams come).
		rb := make([]readyDg, len(p.ready), p.recv.n)
		copy(rb, p.ready)
		p.readyBuf, p.ready = rb, rb
	}
	return nil
}

// connect brings both QPs to RTS towards the peer's.
func (c *conn) connect(qp, rma verbs.Remote) error {
	p := c.p
	if err := c.qp.ToRTR(p.cfg.Port, uint8(p.gid.Index), p.mtu, qp); err != nil {
		return err
	}
	if err := c.qp.ToRTS(c.psn, p.cfg.AckTimeout, p.cfg.RetryCount, p.cfg.RNRRetry); err != nil {
		return err
	}
	if err := c.rma.ToRTR(p.cfg.Port, uint8(p.gid.Index), p.mtu, rma); err != nil {
		return err
	}
	return c.rma.ToRTS(c.rpsn, p.cfg.AckTimeout, p.cfg.RetryCount, p.cfg.RNRRetry)
}

// failure is why c failed, or nil.
func (c *conn) failure() error {
	if c.dead.Load() {
		return c.err // set before dead
	}
	return nil
}

func (c *conn) localQP() verbs.Remote {
	return verbs.Remote{GID: c.p.gid.GID, QPN: c.qp.QPN, PSN: c.psn}
}
func (c *conn) localRMA() verbs.Remote {
	return verbs.Remote{GID: c.p.gid.GID, QPN: c.rma.QPN, PSN: c.rpsn}
}

// fail retires the conn: it moves the QP to the error state (outstanding
// work completes as flushed), stops sends to it and forgets it as the
// route to its endpoint, so that a later Send dials afresh.
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
		if c.ep != "" {
			p.noteCauseLocked(c.ep, err)
		}
		// A new connection to the peer is not tried for a while: a peer
		// whose queue pair failed has most likely died, and a dial that
		// nobody answers would hold its caller for HandshakeTimeout.
		if c.ep != "" && c.rem != 0 {
			if t := time.Now().Add(max(p.cfg.RetryBackoff, p.cfg.PeerTimeout)); t.After(p.failed[c.ep]) {
				p.failed[c.ep] = t
			}
		}
		if !p.closed.Load() {
			c.qp.ToError()
			c.rma.ToError() // posted reads complete as flushed
		}
		p.mu.Unlock()
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
		if c.dead.Load() && c.outstanding == 0 && c.recvPosted == 0 && c.rmaPosted == 0 {
			for i, rc := range p.rxConns {
				if rc == c {
					p.rxConns = append(p.rxConns[:i], p.rxConns[i+1:]...)
					break
				}
			}
			if p.byQPN[c.qp.QPN] == c {
				delete(p.byQPN, c.qp.QPN)
			}
			if p.accepted[c.key] == c {
				delete(p.accepted, c.key)
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
