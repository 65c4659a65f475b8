package rdma

import (
	"net"
	"time"
)

// dialState is a connection attempt other senders to the same endpoint
// wait for.
type dialState struct {
	done chan struct{}
	c    *conn
}

// connFor returns the live conn to ep, dialing it if there is none. It
// returns nil when the peer cannot be reached now (the datagram is then
// dropped).
func (p *Port) connFor(ep string) *conn {
	p.mu.Lock()
	if c := p.conns[ep]; c != nil && !c.dead.Load() {
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
		p.failed[ep] = time.Now().Add(p.cfg.RetryBackoff)
		if c != nil {
			c.dead.Store(true)
			if !p.closed.Load() {
				c.qp.ToError()
				c.rma.ToError()
			}
		}
		c = nil
	} else {
		delete(p.failed, ep)
		p.conns[ep] = c
	}
	d.c = c
	close(d.done)
	p.mu.Unlock()
	return c
}

// dial runs the initiator side of the handshake on c's QP.
func (p *Port) dial(c *conn, ep string) error {
	dl := net.Dialer{Timeout: p.cfg.HandshakeTimeout}
	tc, err := dl.Dial("tcp", ep)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		tc.Close()
		return errClosed
	}
	c.tcp, c.ep = tc, ep
	p.mu.Unlock()
	tc.SetDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
	h := c.local()
	b, err := h.marshal()
	if err == nil {
		_, err = tc.Write(b)
	}
	var rem hello
	if err == nil {
		rem, err = readHello(tc)
	}
	if err == nil {
		err = c.connect(rem)
	}
	if err != nil {
		tc.Close()
		return err
	}
	tc.SetDeadline(time.Time{})
	p.stats.connects.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		c.watch()
	}()
	return nil
}

// acceptLoop serves incoming handshakes until the listener closes.
func (p *Port) acceptLoop() {
	defer p.wg.Done()
	for {
		tc, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed.Load() {
			p.mu.Unlock()
			tc.Close()
			return
		}
		p.hsConns[tc] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serveHandshake(tc)
	}
}

// serveHandshake runs the responder side: create a QP, bring it to RTS
// towards the dialer's QP, answer, then watch the connection.
func (p *Port) serveHandshake(tc net.Conn) {
	defer p.wg.Done()
	drop := func() {
		p.stats.handshakeFailures.Add(1)
		p.mu.Lock()
		delete(p.hsConns, tc)
		p.mu.Unlock()
		tc.Close()
	}
	tc.SetDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
	rem, err := readHello(tc)
	if err != nil {
		drop()
		return
	}
	if _, err := p.ParseEndpoint(rem.Endpoint); err != nil {
		drop()
		return
	}
	p.mu.Lock()
	c, err := p.newConnLocked()
	p.mu.Unlock()
	if err != nil {
		drop()
		return
	}
	c.ep = rem.Endpoint
	if err := c.connect(rem); err != nil {
		c.fail(err)
		drop()
		return
	}
	// Become the route to the dialer before answering, so that a reply
	// sent as soon as the dialer's first datagram arrives reuses this QP
	// instead of dialing back.
	p.mu.Lock()
	delete(p.hsConns, tc)
	if p.closed.Load() {
		p.mu.Unlock()
		tc.Close()
		return
	}
	c.tcp = tc
	if old := p.conns[c.ep]; old == nil || old.dead.Load() {
		p.conns[c.ep] = c
	}
	p.mu.Unlock()
	h := c.local()
	b, err := h.marshal()
	if err == nil {
		_, err = tc.Write(b)
	}
	if err != nil {
		p.stats.handshakeFailures.Add(1)
		c.fail(err)
		return
	}
	tc.SetDeadline(time.Time{})
	p.stats.connects.Add(1)
	c.watch()
}
