package rdma

import (
	"errors"
	"fmt"
	"time"

	"github.com/pcor-go/pcor/internal/verbs"
)

// The connection manager: one UD queue pair per Port, whose address is the
// port's Endpoint, carries the messages that connect the RC queue pairs
// (handshake.go gives their layout) and keeps watch on connected peers.
// A goroutine (cmLoop) serves it: it answers REQs and PINGs, hands REPs to
// the dialers waiting for them, and every Config.KeepAlive pings each
// connected peer, failing those silent for Config.PeerTimeout.

const (
	cmQKey      = 0x50434f52 // "PCOR"; below 2^31, so not a privileged Q_Key
	cmRecvSlots = 32
	cmSendSlots = 64
	cmSlot      = 128 // bytes per slot: room for the GRH and a message
	maxAHs      = 4096
)

// acceptKey names a connection a peer asked for: its endpoint and the QPN
// of its datagram queue pair.
type acceptKey struct {
	ep  string
	qpn uint32
}

// startCM creates and brings up the UD queue pair, posts its receives
// and sets the port's endpoint.
func (p *Port) startCM() error {
	var err error
	if p.udCQ, err = p.ctx.CreateCQ(cmRecvSlots+8, true); err != nil {
		return err
	}
	if p.udSendCQ, err = p.ctx.CreateCQ(cmSendSlots+8, false); err != nil {
		return err
	}
	if p.ud, err = p.pd.CreateUDQP(p.udSendCQ, p.udCQ, verbs.QPCaps{MaxSendWR: cmSendSlots, MaxRecvWR: cmRecvSlots, MaxSendSGE: 1, MaxRecvSGE: 1}); err != nil {
		return err
	}
	if err = p.ud.ToInitUD(p.cfg.Port, cmQKey); err != nil {
		return err
	}
	if err = p.ud.ToRTSUD(verbs.RandomPSN()); err != nil {
		return err
	}
	if p.udMR, err = p.pd.AllocMR((cmRecvSlots+cmSendSlots)*cmSlot, verbs.AccessLocalWrite); err != nil {
		return err
	}
	for i := 0; i < cmRecvSlots; i++ {
		if err = p.postCMRecv(i); err != nil {
			return err
		}
	}
	p.udAddr = udAddr{gid: p.gid.GID, qpn: p.ud.QPN}
	p.local = p.udAddr.endpoint()
	return nil
}

func (p *Port) cmSlotBuf(i int) []byte {
	return p.udMR.Buf[i*cmSlot : (i+1)*cmSlot : (i+1)*cmSlot]
}

// postCMRecv posts receive slot i. Only cmLoop (and startCM before it)
// posts receives.
func (p *Port) postCMRecv(i int) error {
	return p.ud.PostRecv(uint64(i), verbs.SGEOf(p.udMR, p.cmSlotBuf(i)))
}

// cmSend sends m, from this port, to the UD queue pair at to. Datagrams
// are unreliable: a message that finds no room is dropped (the protocol
// sends again).
func (p *Port) cmSend(to udAddr, m *cmMsg) {
	m.from = p.udAddr
	if m.kind != cmRej {
		m.key = p.jobKey.Load()
	}
	p.udMu.Lock()
	defer p.udMu.Unlock()
	if p.udClosed {
		return
	}
	if p.udOut > 0 {
		var wcs [cmSendSlots]verbs.WC
		p.udOut -= p.udSendCQ.Poll(wcs[:])
	}
	ah := p.ahs[to.gid]
	if ah == nil {
		if len(p.ahs) >= maxAHs {
			for g, a := range p.ahs {
				a.Close()
				delete(p.ahs, g)
			}
		}
		var err error
		if ah, err = p.pd.CreateAH(p.cfg.Port, uint8(p.gid.Index), to.gid); err != nil {
			p.stats.cmDropped.Add(1)
			return
		}
		p.ahs[to.gid] = ah
	}
	if p.udOut >= cmSendSlots {
		p.stats.cmDropped.Add(1)
		return
	}
	slot := cmRecvSlots + p.udNext%cmSendSlots
	b := m.marshal(p.cmSlotBuf(slot)[:0])
	if err := p.ud.PostSendUD(uint64(slot), ah, to.qpn, cmQKey, verbs.SGEOf(p.udMR, b)); err != nil {
		p.stats.cmDropped.Add(1)
		return
	}
	p.udNext++
	p.udOut++
	p.ud.Doorbell()
}

// cmLoop serves the UD queue pair until the port closes.
func (p *Port) cmLoop() {
	defer p.wg.Done()
	wcs := make([]verbs.WC, cmRecvSlots)
	next := time.Now().Add(p.cfg.KeepAlive)
	for !p.closed.Load() {
		n := p.udCQ.Poll(wcs)
		for _, wc := range wcs[:n] {
			p.cmReceived(wc)
		}
		if now := time.Now(); !now.Before(next) {
			p.keepAlive(now)
			next = now.Add(p.cfg.KeepAlive)
		}
		if n > 0 {
			continue
		}
		if err := p.udCQ.Arm(); err != nil {
			return
		}
		if n = p.udCQ.Poll(wcs); n > 0 {
			for _, wc := range wcs[:n] {
				p.cmReceived(wc)
			}
			continue
		}
		if err := p.udCQ.Wait(next); err != nil && err != verbs.ErrTimeout {
			return
		}
	}
}

// cmReceived handles one receive completion and posts its slot again.
func (p *Port) cmReceived(wc verbs.WC) {
	i := int(wc.WrID)
	if i < 0 || i >= cmRecvSlots {
		return
	}
	if wc.Status == verbs.WCFlushErr || p.closed.Load() {
		return
	}
	if wc.Status == verbs.WCSuccess && wc.ByteLen >= verbs.GRHSize && wc.ByteLen <= cmSlot {
		if m, err := parseCMMsg(p.cmSlotBuf(i)[verbs.GRHSize:wc.ByteLen]); err != nil {
			p.stats.cmDropped.Add(1)
		} else if m.key != p.jobKey.Load() {
			p.stats.foreign.Add(1)
			if m.kind == cmReq {
				p.cmSend(m.from, &cmMsg{kind: cmRej, key: m.key, qp: verbs.Remote{QPN: p.udAddr.qpn}, peer: m.qp.QPN})
			}
		} else {
			p.cmHandle(m)
		}
	} else {
		p.stats.cmDropped.Add(1)
	}
	if err := p.postCMRecv(i); err != nil {
		p.stats.cmDropped.Add(1)
	}
}

func (p *Port) cmHandle(m cmMsg) {
	switch m.kind {
	case cmReq:
		p.cmAccept(m)
		return
	case cmRep, cmRej:
		p.mu.Lock()
		ch := p.dials[m.peer]
		p.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
		return
	}
	p.mu.Lock()
	c := p.byQPN[m.peer]
	if c != nil && (c.dead.Load() || c.to != m.from || (c.rem != m.qp.QPN && !(c.rem == 0 && m.kind == cmPing))) {
		c = nil
	}
	connected := c != nil && c.rem != 0
	p.mu.Unlock()
	switch m.kind {
	case cmPing:
		if c == nil {
			p.cmSend(m.from, &cmMsg{kind: cmGone, qp: verbs.Remote{QPN: m.peer}, peer: m.qp.QPN})
			return
		}
		c.heard.Store(time.Now().UnixNano())
		if connected {
			c.confirmed.Store(true) // the peer pings once its side is up
		}
		p.cmSend(m.from, &cmMsg{kind: cmPong, qp: c.localQP(), peer: m.qp.QPN})
	case cmPong:
		if c != nil {
			c.heard.Store(time.Now().UnixNano())
		}
	case cmGone:
		if c != nil {
			p.goneWhenDrained(c, fmt.Errorf("%w: %s closed the connection", ErrPeerLost, c.ep))
		}
	}
}

// cmAccept answers a REQ: it makes a conn for it, unless an earlier copy
// of the same REQ did, and replies with the conn's queue pairs.
func (p *Port) cmAccept(m cmMsg) {
	key := acceptKey{ep: string(m.from.endpoint()), qpn: m.qp.QPN}
	p.mu.Lock()
	c := p.accepted[key]
	if c == nil {
		var err error
		c, err = p.newConnLocked()
		if err != nil {
			full := errors.Is(err, errPoolFull)
			err = fmt.Errorf("%w: cannot accept its connection: %v", ErrPeerLost, err)
			p.noteCauseLocked(key.ep, err)
			p.lastFailure.Store(&err)
			p.mu.Unlock()
			p.stats.handshakeFailures.Add(1)
			if full {
				p.cmSend(m.from, &cmMsg{kind: cmRej, reason: rejFull, key: m.key, qp: verbs.Remote{QPN: p.udAddr.qpn}, peer: m.qp.QPN})
			}
			return
		}
		c.ep, c.to, c.key = key.ep, m.from, key
		p.accepted[key] = c
		p.mu.Unlock()
		if err := c.connect(m.qp, m.rma); err != nil {
			p.stats.handshakeFailures.Add(1)
			c.fail(err)
			return
		}
		c.heard.Store(time.Now().UnixNano())
		p.mu.Lock()
		c.rem = m.qp.QPN
		c.since = time.Now()
		// Once confirmed (the dialer's first datagram or PING), it
		// becomes the route to the dialer if there is none (connFor), so
		// that a reply reuses this QP instead of dialing back.
		p.stats.connects.Add(1)
	}
	dead := c.dead.Load()
	p.mu.Unlock()
	if !dead {
		p.cmSend(m.from, &cmMsg{kind: cmRep, qp: c.localQP(), rma: c.localRMA(), peer: m.qp.QPN})
	}
}

// dial connects c to the port at ep: it sends REQ, again with growing
// pauses, until REP comes or Config.HandshakeTimeout has passed.
func (p *Port) dial(c *conn, ep string) error {
	to, err := parseUDAddr(ep)
	if err != nil {
		return err
	}
	ch := make(chan cmMsg, 1)
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		return errClosed
	}
	c.ep, c.to = ep, to
	p.dials[c.qp.QPN] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.dials, c.qp.QPN)
		p.mu.Unlock()
	}()
	deadline := time.Now().Add(p.cfg.HandshakeTimeout)
	wait := 20 * time.Millisecond
	for {
		p.cmSend(to, &cmMsg{kind: cmReq, qp: c.localQP(), rma: c.localRMA()})
		t := time.NewTimer(min(wait, time.Until(deadline)))
		select {
		case m := <-ch:
			t.Stop()
			if m.from != to {
				continue
			}
			if m.kind == cmRej && m.reason == rejFull {
				return fmt.Errorf("rdma: %s refused the connection: its receive buffer pool is at its limit (Config.MaxRecvBuffers)", ep)
			}
			if m.kind == cmRej {
				return fmt.Errorf("%w: %s refused the connection", ErrForeignJob, ep)
			}
			if err := c.connect(m.qp, m.rma); err != nil {
				return err
			}
			c.heard.Store(time.Now().UnixNano())
			c.confirmed.Store(true) // the REP comes once the peer is ready
			p.mu.Lock()
			c.rem = m.qp.QPN
			c.since = time.Now()
			p.mu.Unlock()
			p.stats.connects.Add(1)
			return nil
		case <-p.done:
			t.Stop()
			return errClosed
		case <-t.C:
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("rdma: no answer from %s in %v", ep, p.cfg.HandshakeTimeout)
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// goneFor is how long a port remembers an endpoint that closed or stopped
// answering: sends to it are dropped and reads from it fail at once
// instead of waiting Config.HandshakeTimeout for an answer that cannot
// come (a port's endpoint names its queue pair, which dies with it).
const goneFor = 30 * time.Second

// gone fails c for err and remembers its endpoint as gone.
func (c *conn) gone(err error) {
	p := c.p
	p.mu.Lock()
	now := time.Now()
	if len(p.failed) >= 256 {
		for ep, t := range p.failed {
			if now.After(t) {
				delete(p.failed, ep)
			}
		}
	}
	p.failed[c.ep] = now.Add(goneFor)
	p.mu.Unlock()
	c.fail(err)
}

// goneWhenDrained fails c, whose peer closed, once the datagrams it
// received from the peer have been handled: the peer sent them before it
// closed (and before its GONE, which travels apart from them), so they
// are not lost with it. Until the consumer's next Receive or Poll finds
// none of them left, c stays (pendingGone).
func (p *Port) goneWhenDrained(c *conn, err error) {
	p.rxMu.Lock()
	failed := p.pumpRecvLocked()
	waiting := p.holdsFromLocked(c)
	if waiting && c.goneErr == nil {
		c.goneErr = err
		p.pendingGone = append(p.pendingGone, c)
	}
	p.rxMu.Unlock()
	p.failAll(failed)
	if !waiting {
		c.gone(err)
	}
}

// holdsFromLocked reports whether datagrams from c wait to be received or
// are being handled. Runs under rxMu.
func (p *Port) holdsFromLocked(c *conn) bool {
	for _, r := range p.ready {
		if p.recvOwner[r.idx] == c {
			return true
		}
	}
	if len(c.held) > 0 {
		return true
	}
	for _, r := range p.lent {
		if r.idx >= 0 && p.recvOwner[r.idx] == c {
			return true
		}
	}
	return false
}

// drainedGoneLocked takes the pending-gone conns none of whose datagrams
// are left. Runs under rxMu, after the lent buffers came back.
func (p *Port) drainedGoneLocked() (done []*conn) {
	kept := p.pendingGone[:0]
	for _, c := range p.pendingGone {
		if p.holdsFromLocked(c) {
			kept = append(kept, c)
		} else {
			done = append(done, c)
		}
	}
	clear(p.pendingGone[len(kept):])
	p.pendingGone = kept
	return done
}

// unconfirmedGrace is how long after accepting a peer's REQ the port
// waits for the peer to show its side up (a PING or a datagram) before it
// watches the peer with keep-alive READs anyway: a peer that dials and
// dies at once is found lost too.
const unconfirmedGrace = time.Second

// keepAlive checks every connected peer: a keep-alive READ (rma.go),
// whose failure retires the peer, and a PING, which a port that no
// longer knows the queue pair answers GONE. Peers from which nothing at
// all came back for Config.PeerTimeout are failed.
func (p *Port) keepAlive(now time.Time) {
	type ping struct {
		to udAddr
		m  cmMsg
	}
	var pings []ping
	var lost, live []*conn
	p.mu.Lock()
	for _, c := range p.all {
		if c.dead.Load() || c.rem == 0 {
			continue
		}
		// Traffic completed with the peer shows it alive as well as a
		// PONG does; under a heavy transfer the PONG may be slow.
		if a := c.active.Load(); a != c.seen {
			c.seen = a
			c.heard.Store(now.UnixNano())
		}
		if now.Sub(time.Unix(0, c.heard.Load())) > p.cfg.PeerTimeout {
			lost = append(lost, c)
			continue
		}
		// A peer heard from lately (a PONG, a PING, a completion) is
		// alive: the READ asks the kernel only for peers whose threads
		// have gone quiet, dead or starved.
		quiet := now.Sub(time.Unix(0, c.heard.Load())) > 2*p.cfg.KeepAlive
		if quiet && (c.confirmed.Load() || now.Sub(c.since) > unconfirmedGrace) {
			live = append(live, c)
		}
		pings = append(pings, ping{c.to, cmMsg{kind: cmPing, qp: c.localQP(), peer: c.rem}})
	}
	p.mu.Unlock()
	p.probe(live)
	for _, c := range lost {
		c.gone(fmt.Errorf("%w: no answer from %s in %v", ErrPeerLost, c.ep, p.cfg.PeerTimeout))
	}
	for i := range pings {
		p.cmSend(pings[i].to, &pings[i].m)
	}
}

// sayGone tells every connected peer that this port closes, and waits a
// little for the messages to leave. It first waits (as long) for the
// datagrams sent to them to be taken, so that each peer holds them before
// it learns that this port is gone.
func (p *Port) sayGone() {
	if p.ud == nil {
		return
	}
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		p.sendMu.Lock()
		p.reapSend()
		out := 0
		p.mu.Lock()
		for _, c := range p.all {
			if !c.dead.Load() {
				out += c.outstanding
			}
		}
		p.mu.Unlock()
		p.sendMu.Unlock()
		if out == 0 {
			break
		}
	}
	type gone struct {
		to udAddr
		m  cmMsg
	}
	var gs []gone
	p.mu.Lock()
	for _, c := range p.all {
		if !c.dead.Load() && c.rem != 0 {
			gs = append(gs, gone{c.to, cmMsg{kind: cmGone, qp: c.localQP(), peer: c.rem}})
		}
	}
	p.mu.Unlock()
	for i := range gs {
		p.cmSend(gs[i].to, &gs[i].m)
	}
	var wcs [cmSendSlots]verbs.WC
	for end := time.Now().Add(50 * time.Millisecond); ; {
		p.udMu.Lock()
		if p.udOut > 0 {
			p.udOut -= p.udSendCQ.Poll(wcs[:])
		}
		out := p.udOut
		p.udMu.Unlock()
		if out <= 0 || time.Now().After(end) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// closeCM releases the UD queue pair and its resources; cmLoop has ended.
func (p *Port) closeCM() {
	p.udMu.Lock()
	defer p.udMu.Unlock()
	p.udClosed = true
	if p.ud != nil {
		p.ud.Close()
	}
	for g, a := range p.ahs {
		a.Close()
		delete(p.ahs, g)
	}
	for _, cq := range []*verbs.CQ{p.udCQ, p.udSendCQ} {
		if cq != nil {
			cq.Close()
		}
	}
	if p.udMR != nil {
		p.udMR.Close()
	}
}
