package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// Engine is the messaging engine of one process.
type Engine struct {
	cfg   Config
	inc   uint32 // this engine's incarnation
	pool  *mcbPool
	table *recvTable
	bufs  bufPool
	// runBufs recycles the storage of runs (runs.go).
	runBufs freeList[[runBytes]byte]

	// spinners counts the threads spinning before they block on a
	// request (spin.go), at most spinMax of them; spinScore follows how
	// recent spins ended, spinTries the waits that did not spin.
	spinners  atomic.Int32
	spinMax   int32
	spinScore atomic.Int32
	spinTries atomic.Uint32

	// budgetUsed is written by every thread that frees a message, on a
	// cache line of its own: beside it, the deadline of the deferred
	// acknowledgements (acks.due), which a driving thread reads at every
	// empty poll, went back and forth between the CPUs with it.
	_          [64]byte
	budgetUsed atomic.Int64
	_          [56]byte
	acks       deferredAcks // acknowledgements waiting for a reply (ackout.go)
	// room counts the events that may let a held datagram in (see
	// reliable.go): budget or a control block freed, a receive posted,
	// routes set. holders says a port can hold datagrams (one on the
	// reliable path): without one, nobody reads room.
	room    atomic.Uint64
	holders atomic.Bool

	peersMu sync.Mutex
	peers   atomic.Pointer[map[ProcID]*peer]
	// peerIdx holds the peers of ids below peerIdxMax by id, made with
	// peers (setPeers): a stream's every message looks its peer up two
	// or three times (peer), and indexing costs less than the map.
	peerIdx atomic.Pointer[[]*peer]

	portsMu  sync.Mutex
	ports    []*dispatcher
	portList atomic.Pointer[[]*dispatcher] // ports, read without the lock
	dataPort atomic.Pointer[dispatcher]    // the port data last came through (progress.go)

	localMu      sync.Mutex
	localQ       []*Request
	localWaiting atomic.Int32

	batches freeList[batch]
	posts   freeList[Request] // requests of posted sends
	// postedBytes is what the posted sends not yet acknowledged or
	// failed take (post.go): more than zero while there are any.
	postedBytes atomic.Int64
	// deferring counts the peers with messages deferred for a bundle on
	// the reliable path (relbundle.go).
	deferring atomic.Int32

	closing   chan struct{}
	closed    atomic.Bool
	closeOnce sync.Once
	wg        sync.WaitGroup

	down map[ProcID]error // processes removed, guarded by peersMu

	rndv rndvTable // rendezvous sends waiting for their receiver (rndv.go)
}

// New creates an engine; ports are added with AddPort.
func New(cfg Config) (*Engine, error) {
	cfg.fillLocked()
	if cfg.Proc == AnyProc {
		return nil, errors.New("pcor: invalid process id")
	}
	e := &Engine{cfg: cfg, closing: make(chan struct{}), spinMax: int32(runtime.GOMAXPROCS(0) - 1)}
	for e.inc == 0 {
		e.inc = rand.Uint32()
	}
	e.pool = newMCBPool(cfg.MCBs)
	e.table = newRecvTable(e.pool, cfg.Buckets)
	m := map[ProcID]*peer{}
	e.peers.Store(&m)
	return e, nil
}

// Proc is the engine's process id.
func (e *Engine) Proc() ProcID { return e.cfg.Proc }

// AddPort starts a dispatcher for fab and returns the port's index.
func (e *Engine) AddPort(fab fabric.Port, mode Mode) (int, error) {
	if e.closed.Load() {
		return 0, ErrClosed
	}
	e.portsMu.Lock()
	defer e.portsMu.Unlock()
	d := &dispatcher{e: e, fab: fab, mode: mode, idx: len(e.ports)}
	d.prog.init(fab)
	d.adoptCaps()
	if d.holder != nil {
		// Before the port runs (go d.loop below): a resumeHeld that
		// still finds no holder comes before anything the port holds.
		e.holders.Store(true)
	}
	e.ports = append(e.ports, d)
	ps := append([]*dispatcher(nil), e.ports...)
	e.portList.Store(&ps)
	e.wg.Add(1)
	go d.loop()
	return d.idx, nil
}

func (e *Engine) dispatcherAt(i int) *dispatcher {
	e.portsMu.Lock()
	defer e.portsMu.Unlock()
	if i < 0 || i >= len(e.ports) {
		return nil
	}
	return e.ports[i]
}

// RouteSpec describes one route to a process for SetRoutes.
type RouteSpec struct {
	// Port is the index of the local port.
	Port int
	// Endpoint is where datagrams go on that port: the process's own
	// endpoint, or a gateway's that forwards them.
	Endpoint string
	// MinSize is the smallest message this route is used for.
	MinSize int64
	// MaxDatagram, if positive, caps the datagram size (for paths whose
	// later hops carry smaller datagrams than the first).
	MaxDatagram int
	// Gateway says that Endpoint is a gateway's, which forwards: the
	// fabric's guarantees then end there (see reliable.go).
	Gateway bool
	// Forward marks a route that only carries datagrams this process
	// forwards to the peer as a gateway (see forward.go); the others then
	// carry only its own messages. A peer given no Forward route forwards
	// on its routes.
	Forward bool
}

// SetPeer adds process proc, reached through port portIdx at endpoint ep,
// or changes its route. A peer that had failed is reset.
func (e *Engine) SetPeer(proc ProcID, portIdx int, ep string) error {
	return e.SetRoutes(proc, []RouteSpec{{Port: portIdx, Endpoint: ep}})
}

// SetRoutes sets the routes to process proc, chosen by message size.
// Messages already under way keep their route while it remains.
func (e *Engine) SetRoutes(proc ProcID, specs []RouteSpec) error {
	if proc == e.cfg.Proc || proc == AnyProc {
		return fmt.Errorf("pcor: invalid peer id %d", proc)
	}
	var rs, fwd routeSet
	direct := true
	for _, sp := range specs {
		rt, err := e.newRoute(sp)
		if err != nil {
			return err
		}
		if sp.Forward {
			fwd = append(fwd, rt)
			continue
		}
		direct = direct && !sp.Gateway
		rs = append(rs, rt)
	}
	if len(rs) == 0 {
		return fmt.Errorf("pcor: no route to %d", proc)
	}
	if len(fwd) > 0 {
		sort.SliceStable(fwd, func(i, j int) bool { return fwd[i].minSize < fwd[j].minSize })
		fwd[0].minSize = 0
	}
	if p := e.peer(proc); p != nil {
		// A process that left and joins again is a new peer.
		e.finishLeave(p)
	}
	if p := e.peer(proc); p != nil {
		// Keep the route objects that did not change, so that messages
		// under way on them are not disturbed.
		if old := p.routes.Load(); old != nil {
			for i, r := range rs {
				for _, o := range *old {
					if o.disp == r.disp && o.ep.String() == r.ep.String() && o.maxDg == r.maxDg && o.minSize == r.minSize {
						rs[i] = o
					}
				}
			}
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].minSize < rs[j].minSize })
	rs[0].minSize = 0
	var pumpAfter *peer // a peer to pump once peersMu is released
	e.peersMu.Lock()
	defer func() {
		e.peersMu.Unlock()
		if pumpAfter != nil {
			pumpAfter.pump()
		}
	}()
	delete(e.down, proc)
	old := *e.peers.Load()
	p := old[proc]
	if p != nil {
		p.mu.Lock()
		failed := p.tx.failed != nil
		p.mu.Unlock()
		if failed {
			p = nil
		}
	}
	if p == nil {
		p = newPeer(e, proc)
		m := make(map[ProcID]*peer, len(old)+1)
		for k, v := range old {
			m[k] = v
		}
		m[proc] = p
		e.setPeers(m)
	}
	// The open bundle's messages were given ids for their route: if it
	// is no longer the peer's, on the reliable path, they become queued
	// requests for the new routes (openbundle.go), turned under p.mu with
	// the change, so that none is appended after it for the old routes.
	rel := reliableRoutes(rs, direct)
	p.mu.Lock()
	unbundled := false
	if ob := p.ob.rt; ob != nil && (!rel || !slices.Contains(rs, ob)) {
		unbundled = p.unbundleLocked()
	}
	p.routes.Store(&rs)
	if fwd != nil {
		p.fwd.Store(&fwd)
	} else {
		p.fwd.Store(nil)
	}
	p.reliable.Store(rel)
	if unbundled && rel {
		p.armFlushLocked() // sent as deferred messages are
	} else if unbundled && p.tx.pendingSince == 0 {
		p.tx.pendingSince = nanotime() // the datagram path's timers start
	}
	p.mu.Unlock()
	if unbundled && !rel {
		pumpAfter = p
	}
	e.resumeHeld() // datagrams from the peer may have come first
	return nil
}

// newRoute checks sp and makes its route.
func (e *Engine) newRoute(sp RouteSpec) (*route, error) {
	d := e.dispatcherAt(sp.Port)
	if d == nil {
		return nil, fmt.Errorf("pcor: no port %d", sp.Port)
	}
	fep, err := d.fab.ParseEndpoint(sp.Endpoint)
	if err != nil {
		return nil, err
	}
	maxDg := d.fab.MaxDatagram(fep)
	if maxDg > wire.MaxFragment {
		maxDg = wire.MaxFragment
	}
	if sp.MaxDatagram > 0 && sp.MaxDatagram < maxDg {
		maxDg = sp.MaxDatagram
	}
	if maxDg < wire.HeaderSize+minFragSize {
		return nil, fmt.Errorf("pcor: datagrams of %d bytes are too small", maxDg)
	}
	return &route{disp: d, ep: fep, maxDg: maxDg, minSize: sp.MinSize, ssRoom: socketSlowStart(d.fab)}, nil
}

// socketBuffered is implemented by ports whose datagrams wait in a socket
// buffer of a fixed size (UDP).
type socketBuffered interface {
	SocketBuffers() (recv, send int)
}

// socketSlowStart returns the room a first slow start over port f may
// fill, in bytes: half of its socket receive buffer, taken as the peer's
// (both ends ask for the same size). Slow start doubles the window every
// round trip until a loss, so on loopback, where nothing else limits it,
// it ran to 850 fragments of 64 KiB against a buffer that holds about
// 250, and the burst of losses that ended it cost hundreds of
// retransmissions. The same room bounds the window after slow start as
// well (txStream.window), at the size of each message's fragments. 0: no
// bound.
func socketSlowStart(f any) int {
	sb, ok := f.(socketBuffered)
	if !ok {
		return 0
	}
	recv, _ := sb.SocketBuffers()
	return recv / 2
}

// slowStartCap is the bound of a first slow start (in datagrams) that
// room bytes set for a stream whose first message goes in datagrams
// carrying fragSize bytes (the message's length, if it fits in one): a
// stream of small messages, whose datagrams the buffer holds many more
// of, is bounded by as many of them, not by as many datagrams as fit at
// the largest size (which cut the batches of a 64 B message stream by
// three). 0: no bound.
func slowStartCap(room, fragSize int) float64 {
	if room <= 0 {
		return 0
	}
	return float64(max(room/(fragSize+wire.HeaderSize), initialCwnd))
}

// RemovePeer forgets process proc: its pending sends, and receives
// waiting specifically on it, fail with err (ErrPeerDown if nil).
func (e *Engine) RemovePeer(proc ProcID, err error) {
	e.removePeer(proc, nil, err)
}

// removePeer is RemovePeer; with only set, it does nothing unless only is
// still proc's peer.
func (e *Engine) removePeer(proc ProcID, only *peer, err error) {
	e.peersMu.Lock()
	old := *e.peers.Load()
	p := old[proc]
	if only != nil && p != only {
		e.peersMu.Unlock()
		return
	}
	if p != nil && p.leaveErr != nil {
		if err == nil {
			err = p.leaveErr
		}
		p.leaveErr = nil
		p.leaveTimer.Stop()
	}
	if err == nil {
		err = &PeerDownError{Proc: proc}
	}
	if p != nil {
		m := make(map[ProcID]*peer, len(old))
		for k, v := range old {
			if k != proc {
				m[k] = v
			}
		}
		e.setPeers(m)
	}
	e.peersMu.Unlock()
	if p != nil {
		p.fail(err)
		p.rxmu.Lock()
		e.dropPartialLocked(p, err)
		if p.watch != nil {
			p.watch.Stop()
		}
		p.rxmu.Unlock()
	}
	e.failPostedFrom(proc, err)
}

func (e *Engine) peer(proc ProcID) *peer {
	if idx := e.peerIdx.Load(); idx != nil && uint64(proc) < uint64(len(*idx)) {
		return (*idx)[proc]
	}
	return (*e.peers.Load())[proc]
}

// peerIdxMax bounds the ids of the peers indexed in peerIdx.
const peerIdxMax = 4096

// setPeers makes m the engine's peers. e.peersMu is held.
func (e *Engine) setPeers(m map[ProcID]*peer) {
	n := 0
	for k := range m {
		if k < peerIdxMax {
			n = max(n, int(k)+1)
		}
	}
	idx := make([]*peer, n)
	for k, v := range m {
		if k < peerIdxMax {
			idx[k] = v
		}
	}
	// A reader may find one stored and not yet the other, as it may
	// load the map just before it is replaced.
	e.peerIdx.Store(&idx)
	e.peers.Store(&m)
}

// Alloc returns memory the first port's fabric can send from directly.
func (e *Engine) Alloc(n int) []byte {
	e.portsMu.Lock()
	defer e.portsMu.Unlock()
	if len(e.ports) > 0 {
		return e.ports[0].fab.Alloc(n)
	}
	return make([]byte, n)
}

// Stats returns the counters of every port.
func (e *Engine) Stats() []PortStats {
	e.portsMu.Lock()
	defer e.portsMu.Unlock()
	out := make([]PortStats, len(e.ports))
	for i, d := range e.ports {
		out[i].Fabric = d.fab.Kind()
		out[i].Endpoint = d.fab.LocalEndpoint().String()
		out[i].Mode = d.mode
		d.c.snapshot(&out[i])
		d.prog.snapshot(&out[i])
	}
	return out
}

// BudgetUsed is the number of bytes currently held for unreceived messages.
func (e *Engine) BudgetUsed() int64 { return e.budgetUsed.Load() }

// mcbsInUse is the number of message control blocks in use.
func (e *Engine) mcbsInUse() int { return e.pool.inUse() - e.table.freeBlocks() }

// reserve takes n bytes of the receive budget, or reports false when they
// would take it past RecvBudget. The budget is held for the storage of
// messages no receive has taken yet: a small message (at most one chunk)
// whole from its first fragment, a large one chunk by chunk as its
// fragments arrive. A message placed straight into a posted receive's
// buffer holds none, so a message larger than the whole budget is
// deliverable once its receive is posted.
func (e *Engine) reserve(n int64) bool {
	for {
		used := e.budgetUsed.Load()
		if used+n > e.cfg.RecvBudget {
			return false
		}
		if e.budgetUsed.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (e *Engine) release(n int64) {
	e.resumeHeld() // a control block or budget came free
	if n == 0 {
		return
	}
	e.budgetUsed.Add(-n)
	if e.localWaiting.Load() > 0 {
		e.drainLocal()
	}
	if e.rndv.nwaiting.Load() > 0 {
		e.rndvPump()
	}
}

// freeMCB returns m to the pool with its budget.
func (e *Engine) freeMCB(m *mcb) {
	n := m.reserved + m.runReserved()
	if m.inRun {
		m.data = nil
	}
	n += e.dropRun(m)
	if m.data != nil && m.total <= chunkSize {
		m.keep(&e.bufs)
	}
	e.pool.put(m)
	e.release(n)
}

func (e *Engine) getBatch() *batch {
	if b := e.batches.get(); b != nil {
		return b
	}
	return newBatch(64)
}

func (e *Engine) putBatch(b *batch) {
	b.reset()
	e.batches.put(b, batchesKept)
}

// batchesKept is the number of free batches an engine keeps (see
// freeList.put).
const batchesKept = 64

// Close stops the dispatchers, fails every pending request with ErrClosed
// and releases the ports. It is idempotent.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.flushDeferred()
		e.lingerPosted()
		e.flushReliable()
		// Say goodbye to the peers that sent this process data, with the
		// acknowledgement of what arrived, so that they do not see it as
		// lost, even when an earlier acknowledgement is still on its way
		// (leave.go). (Data on the reliable path is not acknowledged.)
		for _, p := range *e.peers.Load() {
			p.rxmu.Lock()
			var a wire.AckBody
			owed := p.rx.ackPending
			bye := owed || p.rx.maxSeen > 0
			if owed {
				p.takeAckLocked(&a)
			} else {
				p.rx.ack(&a)
			}
			if p.ackTimer != nil {
				p.ackTimer.Stop()
			}
			if p.watch != nil {
				p.watch.Stop()
			}
			p.rxmu.Unlock()
			if bye {
				p.sendGoodbye(&a, owed)
			}
		}
		e.closed.Store(true)
		close(e.closing)
		// No leave waits any more (PeerLeft sees the engine closed).
		e.peersMu.Lock()
		for _, p := range *e.peers.Load() {
			if p.leaveTimer != nil {
				p.leaveTimer.Stop()
			}
		}
		e.peersMu.Unlock()
		e.portsMu.Lock()
		ports := append([]*dispatcher(nil), e.ports...)
		e.portsMu.Unlock()
		for _, d := range ports {
			d.fab.Close()
		}
		e.wg.Wait()
		// A thread driving a port may be handling a batch it received
		// before the port closed: wait for it to let go (it sees the
		// engine closed before it handles another), so that what it
		// does is not undone behind the sweep below.
		for _, d := range ports {
			d.prog.drive.Lock()
			//lint:ignore SA2001 a barrier: the driver has let go of drive
			d.prog.drive.Unlock()
		}
		for _, p := range *e.peers.Load() {
			p.fail(ErrClosed)
			p.rxmu.Lock()
			e.dropOwnedLocked(p, ErrClosed)
			for id, m := range p.rx.inprog {
				delete(p.rx.inprog, id)
				e.freeMCB(m)
			}
			for id, m := range p.rx.held {
				delete(p.rx.held, id)
				if m != nil {
					e.freeMCB(m)
				}
			}
			p.rxmu.Unlock()
		}
		posted, unexp := e.table.drain()
		for _, r := range posted {
			r.complete(ErrClosed)
		}
		for _, m := range unexp {
			e.freeMCB(m)
		}
		e.localMu.Lock()
		q := e.localQ
		e.localQ = nil
		e.localMu.Unlock()
		for _, r := range q {
			r.complete(ErrClosed)
		}
	})
	return nil
}
