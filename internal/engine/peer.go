package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/tally"
	"github.com/pcor-go/pcor/internal/wire"
)

// route is one way to reach a peer: a local port and the endpoint of the
// peer, or of the gateway that forwards to it, for messages of at least
// minSize bytes.
type route struct {
	disp    *dispatcher
	ep      fabric.Endpoint
	maxDg   int
	minSize int64
	// ssRoom bounds a stream's first slow start on this route (0: no
	// bound): half the bytes the port's socket receive buffer holds, in
	// datagrams of the first message's fragments (see socketSlowStart).
	ssRoom int
}

// routeSet is a peer's routes by increasing minSize; the first takes
// messages of any size up to the next one's minSize.
type routeSet []*route

// pick returns the route for a message of size bytes.
func (s routeSet) pick(size int64) *route {
	i := len(s) - 1
	for i > 0 && size < s[i].minSize {
		i--
	}
	return s[i]
}

// repick chooses a new route for a message under way whose fragments are
// need bytes: the one for its size if it carries them, else any that does.
func (s routeSet) repick(size int64, need int) *route {
	rt := s.pick(size)
	if rt.maxDg >= need {
		return rt
	}
	for _, r := range s {
		if r.maxDg >= need {
			return r
		}
	}
	return rt
}

// has reports whether rt is still one of the routes.
func (s routeSet) has(rt *route) bool {
	for _, r := range s {
		if r == rt {
			return true
		}
	}
	return false
}

// peer holds everything the engine keeps about one remote process: the
// route to it, the send stream (queue, fragments in flight, congestion and
// retransmission state) and the receive stream from it.
type peer struct {
	e      *Engine
	proc   ProcID
	routes atomic.Pointer[routeSet]
	// fwd, if set, are the routes datagrams forwarded to the peer take
	// (RouteSpec.Forward); otherwise they take routes.
	fwd atomic.Pointer[routeSet]

	lastHeard atomic.Int64  // monotonic ns of the last valid datagram from it
	ackedCum  atomic.Uint64 // highest cumulative acknowledgement received

	// inc is the peer's incarnation (0: not heard from yet); retired are
	// earlier ones, whose late datagrams are dropped. Guarded by incMu.
	incMu   sync.Mutex
	inc     atomic.Uint32
	retired [4]uint32

	mu sync.Mutex
	tx txStream
	// xmitMu is held by pump from cutting a batch of datagrams until the
	// fabric has them, so that batches leave in the order they were cut:
	// a probe cut while an earlier batch was still being handed over
	// would overtake it, and its acknowledgement would make the fragments
	// behind it look lost.
	xmitMu sync.Mutex
	// pumpWanted: a thread found xmitMu held and left its transmission
	// to the holder, which looks again before it goes (pump).
	pumpWanted atomic.Bool

	// reliable: the peer is sent to on the reliable path (reliable.go);
	// sendMu is held by the one thread transmitting to it there; lost
	// counts the fabric's reports of the peer gone.
	reliable atomic.Bool
	sendMu   sync.Mutex
	sending  tally.Flag // sendMu is held (written by its holder)
	// short is the scratch of the short path (shortLocked), guarded by
	// sendMu: one datagram's header, and the datagram handed to the
	// fabric.
	short struct {
		head [wire.HeaderSize]byte
		dg   [1]fabric.Datagram
	}
	// solo is the scratch of the datagram path's solo send
	// (soloLocked), guarded by xmitMu: a whole datagram, header and body,
	// and the datagram handed to the fabric.
	solo struct {
		buf [wire.HeaderSize + soloMax]byte
		dg  [1]fabric.Datagram
	}
	lost atomic.Uint32 // times the fabric reported the peer gone
	// flushArmed: messages were deferred for a bundle since the last flush
	// (relbundle.go), and flushTimer (guarded by mu) will send them.
	flushArmed atomic.Bool
	flushTimer *time.Timer
	// ob is the open bundle of small posted copies (openbundle.go),
	// guarded by mu; obSpare is the body the thread transmitting to the
	// peer sends the last one from, guarded by sendMu.
	ob      openBundle
	obSpare []byte
	// behindSkips counts the looks at whether the destination is behind
	// that a message deferred while others wait skipped (deferBehind).
	behindSkips atomic.Uint32

	rxmu     sync.Mutex
	rx       rxStream
	ackTimer *time.Timer // sends a delayed acknowledgement; guarded by rxmu
	ackArmed bool
	// watch fires while messages from the peer are half received, to give
	// them up once the peer has been silent for the unreachable timeout.
	// Guarded by rxmu.
	watch      *time.Timer
	watchArmed bool
	watchAt    int64 // when the armed watch is due (nanotime)
	// rxLooks and txLooks: the ports found with datagrams waiting when
	// the watch (under rxmu) or the send timer (under mu) last found the
	// peer silent (ownStall).
	rxLooks, txLooks []portLook
	// silent is the error the peer was given up with for silence in the
	// middle of a message, until it restarts; receives naming it fail.
	silent atomic.Pointer[UnreachableError]
	// lostErr is the error the peer was failed with when its fabric
	// reported it gone (peerLost); receives naming it fail with it too.
	lostErr atomic.Pointer[PeerDownError]

	// The process leaving (leave.go), guarded by e.peersMu: leaveErr,
	// it was announced gone and its removal waits for its goodbye, or
	// leaveTimer; bye, its goodbye came.
	leaveErr   error
	leaveTimer *time.Timer
	bye        bool
}

func newPeer(e *Engine, proc ProcID) *peer {
	p := &peer{e: e, proc: proc}
	p.tx.init(e)
	p.rx.init(e.cfg.Window)
	p.lastHeard.Store(nanotime())
	return p
}

// checkInc compares a datagram's source incarnation with the peer's. A new
// one means the process restarted: both streams start afresh, pending sends
// go to the new process from their beginning, and messages arriving from
// the old one are dropped (receives that owned them fail with
// ErrPeerDown). It reports false for a datagram of a retired incarnation,
// which must be dropped.
func (p *peer) checkInc(inc uint32) bool {
	if inc == p.inc.Load() {
		return true
	}
	p.incMu.Lock()
	defer p.incMu.Unlock()
	cur := p.inc.Load()
	if inc == cur {
		return true
	}
	for _, r := range p.retired {
		if r == inc {
			return false
		}
	}
	p.inc.Store(inc)
	if cur == 0 {
		return true
	}
	copy(p.retired[1:], p.retired[:])
	p.retired[0] = cur
	p.restartTx()
	p.ackedCum.Store(0)
	p.rxmu.Lock()
	p.e.dropOwnedLocked(p, nil) // receives wait for the new process's messages
	for id, m := range p.rx.inprog {
		delete(p.rx.inprog, id)
		p.e.freeMCB(m)
	}
	for id, m := range p.rx.held {
		delete(p.rx.held, id)
		if m != nil {
			p.e.freeMCB(m)
		}
	}
	p.rx.init(p.e.cfg.Window)
	p.rx.cum, p.rx.maxSeen, p.rx.nextMsg = 0, 0, 0
	p.rx.silent = false
	p.silent.Store(nil)
	p.rxmu.Unlock()
	return true
}

// armWatchLocked makes sure the peer's half-received messages are looked at
// once it may have been silent for the unreachable timeout. p.rxmu is
// held.
func (p *peer) armWatchLocked(d time.Duration) {
	if p.watchArmed {
		return
	}
	p.watchArmed = true
	p.watchAt = nanotime() + int64(d)
	if p.watch == nil {
		p.watch = time.AfterFunc(d, p.onWatch)
		return
	}
	p.watch.Reset(d)
}

// resumed takes a timer judging the peer's silence that ran at now,
// though due at due, for a sign that this process stalled meanwhile: it
// was stopped, or the machine gave it no CPU. What the peer sent during
// the stall may wait unread in the fabric, and the peer, if it stalled
// too, has not yet had the time to answer: the silence is this process's
// own, and the peer's is counted afresh from now. Late by more than half
// the unreachable timeout counts as a stall (a timer on a loaded machine
// runs late by milliseconds, a few tens under the race detector).
func (p *peer) resumed(due, now int64) {
	if due != 0 && now-due > int64(p.e.cfg.UnreachableTimeout/2) {
		p.lastHeard.Store(now)
	}
}

// onWatch gives up the messages half received from a peer silent for the
// unreachable timeout: receives waiting on them fail with an
// UnreachableError, their memory is freed, and the peer is failed both
// ways, as a sender with data outstanding fails it.
func (p *peer) onWatch() {
	e := p.e
	if e.closed.Load() {
		return
	}
	now := nanotime()
	p.rxmu.Lock()
	p.watchArmed = false
	if !p.rx.partial() {
		p.rxmu.Unlock()
		return
	}
	p.resumed(p.watchAt, now)
	if p.rx.heldBack {
		// Its data waits in the fabric for room on this side: the peer
		// is slowed down by this receiver, not silent (a peer gone is
		// reported by the fabric).
		p.lastHeard.Store(nanotime())
	}
	silence := time.Duration(nanotime() - p.lastHeard.Load())
	if silence < e.cfg.UnreachableTimeout {
		p.rxLooks = nil
		p.armWatchLocked(e.cfg.UnreachableTimeout - silence + time.Millisecond)
		p.rxmu.Unlock()
		return
	}
	if e.ownStall(&p.rxLooks) {
		// The peer's next datagram may wait unread in this process's
		// own port.
		p.armWatchLocked(e.lookAgain())
		p.rxmu.Unlock()
		return
	}
	err := &UnreachableError{Proc: p.proc, Reason: "silent for " + silence.Round(time.Millisecond).String() + " in the middle of a message"}
	e.dropPartialLocked(p, err)
	p.rx.silent = true
	p.silent.Store(err)
	p.rxmu.Unlock()
	p.fail(err)
	e.failPostedNamed(p.proc, err)
}

// portLook is a port found with datagrams waiting, and the batches it had
// handled then (ownStall).
type portLook struct {
	d *dispatcher
	n uint64
}

// ownStall reports whether a peer's silence may be this process's own: a
// port of this process has datagrams waiting unread (fabric.Pender) and
// has handled no batch since the last look at it, which looks keeps (the
// caller holds the lock guarding it). The peer's next datagram may then
// wait among them, while the timer judging the peer runs on time: the
// port's token is held by a thread that does not drive it, or the machine
// gives its holder no CPU. A port first seen with datagrams waiting is
// looked at once more, for a stall that began since its last batch. The
// silence is the peer's when every port is empty (a peer gone, whether
// this side reads or not), has handled a batch since the last look (it
// reads, a port busy with other peers' datagrams too, and from the peer
// came nothing), or holds datagrams back for want of room (this side
// waits for its receives, not for CPU; the peer whose datagram is held is
// not blamed, see heldBack). A port whose fabric cannot tell counts as
// empty.
func (e *Engine) ownStall(looks *[]portLook) bool {
	prev := *looks
	*looks = nil
	ps := e.portList.Load()
	if ps == nil {
		return false
	}
	own := false
	for _, d := range *ps {
		f, ok := d.fab.(fabric.Pender)
		if !ok || d.holding.Load() || !f.Pending() {
			continue
		}
		n := d.prog.dispatcherBatches.Load() + d.prog.threadBatches.Load()
		if !handledSince(prev, d, n) {
			own = true
		}
		*looks = append(*looks, portLook{d, n})
	}
	return own
}

// handledSince reports whether port d, whose batches are n, was looked at
// in looks and has handled a batch since.
func handledSince(looks []portLook, d *dispatcher, n uint64) bool {
	for _, l := range looks {
		if l.d == d {
			return l.n != n
		}
	}
	return false
}

// lookAgain is how long after a silence that may be this process's own
// (ownStall) it is judged again: a peer gone is so given up within one and
// a half unreachable timeouts of this process reading its ports again.
func (e *Engine) lookAgain() time.Duration {
	return max(e.cfg.UnreachableTimeout/4, time.Millisecond)
}

// ctrl is the route for acknowledgements and other control datagrams: the
// one for the smallest messages.
func (p *peer) ctrl() *route {
	if rs := p.routes.Load(); rs != nil && len(*rs) > 0 {
		return (*rs)[0]
	}
	return nil
}

var epoch = time.Now()

// nanotime is a monotonic clock in nanoseconds since the package started.
// It reads the runtime's clock through time.Since, as the runtime asks
// (go.dev/issue/67401), not by linking to runtime.nanotime: that would
// spare about 60 instructions a read, a few reads a message.
func nanotime() int64 { return int64(time.Since(epoch)) }

// fail completes every pending send to the peer with err and refuses new
// ones until the peer is set again.
func (p *peer) fail(err error) {
	p.mu.Lock()
	if p.tx.failed != nil {
		p.mu.Unlock()
		return
	}
	p.tx.failed = err
	p.dropOpenLocked()
	reqs := p.drainTxLocked()
	p.mu.Unlock()
	p.e.rndvFailPeer(p, err)
	for _, r := range reqs {
		if r.complete(err) {
			r.free() // a request appears once per fragment: free it once
		}
	}
}

// restartTx starts the stream anew for a peer that restarted: the messages
// still pending are sent again from their beginning, in their order, to
// the new process.
func (p *peer) restartTx() {
	p.mu.Lock()
	p.unbundleLocked() // its messages start again with the rest
	reqs := p.drainTxLocked()
	failed := p.tx.failed
	p.tx = txStream{}
	p.tx.init(p.e)
	p.tx.failed = failed
	seen := make(map[*Request]bool, len(reqs))
	for _, r := range reqs {
		if seen[r] || r.canceled || r.state.Load() != statePending {
			continue
		}
		seen[r] = true
		r.started, r.rt, r.msgID, r.nextFrag, r.acked = false, nil, 0, 0, 0
		p.tx.enqueue(r)
	}
	if !p.tx.idle() {
		p.tx.pendingSince = nanotime()
	}
	p.mu.Unlock()
	p.pump()
}

// drainTxLocked empties the send stream and returns its requests. p.mu is held.
func (p *peer) drainTxLocked() []*Request {
	t := &p.tx
	if t.timer != nil {
		t.timer.Stop()
		t.timerAt = 0
	}
	var reqs []*Request
	for i := 0; i < t.rlen; i++ {
		if r := t.at(i).req; r != nil && r.peer == p {
			reqs = append(reqs, r)
		}
	}
	for r := t.queue.head; r != nil; r = r.next {
		reqs = append(reqs, r)
	}
	for t.rlen > 0 {
		t.pop()
	}
	t.queue = reqList{}
	return reqs
}
