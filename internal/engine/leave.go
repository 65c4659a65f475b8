package engine

import (
	"time"

	"github.com/pcor-go/pcor/internal/wire"
)

// A process that closes says goodbye to each peer that sent it data
// (Close): a Bye datagram carrying the acknowledgement of all it received
// from it. Its leave is announced on another path (the directory's
// connection), which can overtake it: the announcement may come while the
// acknowledgement of a message the process did receive still waits in
// this process's socket. PeerLeft therefore removes a peer to which sends
// are pending only once its goodbye has been taken (with everything it
// sent before it); a process that died without one is removed after
// leaveGrace.

// leaveGrace is how long a process announced gone, to which sends are
// pending, has for its goodbye to be taken before they fail. It is
// generous: this process may be slow to read its port (a loaded machine;
// half a second was seen), and only a process that died waits it out.
var leaveGrace = 2 * time.Second // a variable for tests

// PeerLeft removes process proc, which left the job, as RemovePeer does
// with err (ErrPeerDown if nil), but once what it sent before it left has
// been taken: while sends to it wait for their acknowledgement, the
// removal waits for its goodbye, at most leaveGrace (or the unreachable
// timeout if shorter). A peer with no send pending is removed at once.
func (e *Engine) PeerLeft(proc ProcID, err error) {
	if err == nil {
		err = &PeerDownError{Proc: proc}
	}
	p := e.peer(proc)
	if p == nil || !p.owed() {
		e.RemovePeer(proc, err)
		return
	}
	e.peersMu.Lock()
	if (*e.peers.Load())[proc] != p || p.bye || e.closed.Load() {
		e.peersMu.Unlock()
		e.removePeer(proc, p, err)
		return
	}
	if p.leaveErr == nil {
		p.leaveErr = err
		p.leaveTimer = time.AfterFunc(min(leaveGrace, e.cfg.UnreachableTimeout), func() { e.finishLeave(p) })
	}
	e.peersMu.Unlock()
}

// owed reports whether a send to the peer waits for it: fragments
// unacknowledged or queued, or a message it is to read from this
// process's memory (rendezvous).
func (p *peer) owed() bool {
	p.mu.Lock()
	idle := p.tx.idle()
	p.mu.Unlock()
	if !idle {
		return true
	}
	t := &p.e.rndv
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.sends {
		if s.peer == p {
			return true
		}
	}
	return false
}

// onBye takes the peer's goodbye: everything it sent before has been
// handled, so a removal waiting for it goes ahead.
func (e *Engine) onBye(p *peer) {
	e.peersMu.Lock()
	p.bye = true
	if p.leaveErr != nil {
		p.leaveTimer.Reset(0) // finishLeave, outside the batch being handled
	}
	e.peersMu.Unlock()
}

// finishLeave removes p if it is leaving (PeerLeft) and still proc's peer.
func (e *Engine) finishLeave(p *peer) {
	e.peersMu.Lock()
	leaving := p.leaveErr != nil
	e.peersMu.Unlock()
	if leaving {
		e.removePeer(p.proc, p, nil)
	}
}

// sendGoodbye sends the peer a Bye carrying the acknowledgement a, on its
// control route (Close); owed: a was due, and counts as one sent.
func (p *peer) sendGoodbye(a *wire.AckBody, owed bool) {
	rt := p.ctrl()
	if rt == nil {
		return
	}
	a.Echo = noEcho // no round trip to measure: it may have waited
	p.sendAckAs(rt, wire.Bye, a)
	if owed {
		rt.disp.c.acksSent.Add(1)
	}
}
