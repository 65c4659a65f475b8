package rdma

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/verbs"
)

// ErrPeerLost is the cause recorded when a peer's queue pair is retired
// (it closed its port, stopped answering the keep-alive, a work request
// failed, or sends to it
// stalled past Config.SendTimeout).
var ErrPeerLost = errors.New("rdma: peer lost")

// ErrNoDevice: the host has no RDMA device (or not the one asked for).
// ErrUnsupportedProvider: the device's provider is not one this package
// drives (only soft-RoCE, rxe, is).
var (
	ErrNoDevice            = verbs.ErrNoDevice
	ErrUnsupportedProvider = verbs.ErrUnsupportedProvider
)

// ErrForeignJob: the port at the endpoint belongs to another job (its
// Config.JobKey differs) and refused the connection.
var ErrForeignJob = errors.New("rdma: the peer belongs to another job")

var errClosed = fabric.ErrClosed

// Endpoint is the address of a Port: the GID and QPN of its
// connection-manager queue pair, "IP:QPN" (see handshake.go).
type Endpoint string

func (e Endpoint) String() string { return string(e) }

// Stats are a Port's counters.
type Stats struct {
	Sent, Received   uint64 // datagrams
	Dropped          uint64 // datagrams dropped: no connection, dead peer, failed completion
	CMDropped        uint64 // connection-manager messages dropped: malformed, or no room to send
	Foreign          uint64 // connection-manager messages of another job, dropped (a REQ is answered REJ)
	ZeroCopy         uint64 // datagrams sent with the body read in place
	Yields           uint64 // times a Poll (empty) or a Wait spinning gave the CPU up (sched_yield)
	Held             uint64 // datagrams given back by the receiver (Hold), with those after them
	KeepAlives       uint64 // keep-alive READs answered
	Connects         uint64 // queue pairs brought to RTS (both directions)
	PeerFailures     uint64 // peers lost (queue pairs failed)
	Retired          uint64 // failed queue pairs destroyed
	HandshakeFailure uint64
	TakenWaits       uint64 // WaitTaken sleeps on the send completion channel
}

type stats struct {
	sent, received, dropped, cmDropped, foreign, zeroCopy, yields, held, keepAlives, connects, peerFailures, retired, handshakeFailures, takenWaits atomic.Uint64
}

// Port is a fabric.Port over RC queue pairs, one per peer.
type Port struct {
	cfg    Config
	ctx    *verbs.Context
	pd     *verbs.PD
	gid    verbs.GIDEntry
	mtu    uint8
	sendCQ *verbs.CQ
	recvCQ *verbs.CQ
	recv   *pool
	send   *pool
	local  Endpoint
	done   chan struct{} // closed by Close

	// The connection manager (cm.go).
	ud       *verbs.QP
	udCQ     *verbs.CQ // receives, served by cmLoop
	udSendCQ *verbs.CQ
	udMR     *verbs.MR // cmRecvSlots receive slots, then cmSendSlots send slots
	udAddr   udAddr
	jobKey   atomic.Uint64
	udMu     sync.Mutex // UD send ring, udOut, udNext, udClosed, ahs
	udOut    int
	udNext   int
	udClosed bool
	ahs      map[verbs.GID]*verbs.AH

	mu       sync.Mutex // conns, byQPN, all, dialing, failed, causes, dials, accepted, conn.rem
	conns    map[string]*conn
	byQPN    map[uint32]*conn
	all      []*conn
	dialing  map[string]*dialState
	failed   map[string]time.Time
	causes   map[string]error      // why each endpoint was last reported lost (PeerLostCause)
	dials    map[uint32]chan cmMsg // dials waiting for their REP, by datagram QPN
	accepted map[acceptKey]*conn   // conns made for a peer's REQ

	rxMu        sync.Mutex // recv CQ, recv pool, recvOwner, ready, lent, rxConns, RQ posting, conn.recvPosted
	recvOwner   []*conn
	ready       []readyDg
	readyBuf    []readyDg
	lent        []readyDg // the last batch handed out (idx -1: held)
	rxConns     []*conn
	starved     int
	pendingGone []*conn      // peers that closed, whose datagrams are not all handled
	holding     atomic.Int32 // conns holding datagrams back (hold.go)
	rxErr       error
	recvWC      []verbs.WC

	sendMu    sync.Mutex // send pool, SQ posting, send CQ
	sendOwner []*conn
	sendSeq   []uint64         // sends posted from each send buffer
	sentTo    map[string]*conn // the conn that carried the last send to each endpoint (Taken)
	sendWC    []verbs.WC

	recvMu      sync.Mutex  // the consumer: Receive/Poll, idleSince, idlePolls
	idleSince   time.Time   // first of the current run of empty Polls
	idlePolls   uint64      // empty Polls in that run
	waitSlept   atomic.Bool // the last Wait lasted longer than waitSpin: the next spins blockSpin
	interrupted atomic.Bool // Interrupt called: the next Wait or Park returns

	allocMu sync.RWMutex
	allocs  []*verbs.MR // by address: Alloc'd regions are disjoint

	reg     *regCache // registrations of message buffers (Expose, ReadRemote)
	rmaCQ   *verbs.CQ
	rmaMu   sync.Mutex // rmaOps, rmaNext, conn.rmaPosted, conn.rmaQueue, conn.rmaErr, posting on rma QPs
	rmaOps  map[uint64]*rmaOp
	probes  map[uint64]*conn // keep-alive READs in flight
	rmaNext uint64

	deadConns atomic.Int64 // failed conns not yet retired

	lost        atomic.Pointer[func(fabric.Endpoint)] // OnPeerLost's function
	lastFailure atomic.Pointer[error]
	closed      atomic.Bool
	closeOnce   sync.Once
	wg          sync.WaitGroup
	stats       stats
}

var _ fabric.Port = (*Port)(nil)

// Listen opens the device, registers the buffer pools and brings up the
// connection manager's UD queue pair, whose address is the Endpoint.
func Listen(cfg Config) (p *Port, err error) {
	cfg = cfg.withDefaults()
	dev, err := verbs.FindDevice(cfg.Sysfs, cfg.Device)
	if err != nil {
		return nil, err
	}
	p = &Port{cfg: cfg, conns: map[string]*conn{}, byQPN: map[uint32]*conn{},
		dialing: map[string]*dialState{}, failed: map[string]time.Time{}, causes: map[string]error{}, dials: map[uint32]chan cmMsg{},
		accepted: map[acceptKey]*conn{}, ahs: map[verbs.GID]*verbs.AH{}, done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.Close()
			p = nil
		}
	}()
	if p.ctx, err = verbs.Open(dev); err != nil {
		return nil, err
	}
	pa, err := p.ctx.QueryPort(cfg.Port)
	if err != nil {
		return nil, err
	}
	if pa.State != verbs.PortActive {
		return nil, fmt.Errorf("rdma: %s port %d is not active (state %d)", dev.Name, cfg.Port, pa.State)
	}
	p.mtu = pa.ActiveMTU
	if p.gid, err = p.chooseGID(); err != nil {
		return nil, err
	}
	if p.pd, err = p.ctx.AllocPD(); err != nil {
		return nil, err
	}
	if p.recv, err = newPool(p.pd, cfg.RecvBuffers, BufSize, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	if p.send, err = newPool(p.pd, cfg.SendBuffers, BufSize, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	p.recvOwner = make([]*conn, cfg.RecvBuffers)
	p.readyBuf = make([]readyDg, 0, cfg.RecvBuffers)
	p.ready = p.readyBuf
	p.sendOwner = make([]*conn, cfg.SendBuffers)
	p.sendSeq = make([]uint64, cfg.SendBuffers)
	p.sentTo = map[string]*conn{}
	p.sendWC = make([]verbs.WC, 64)
	p.recvWC = make([]verbs.WC, 64)
	// The receive CQ holds a completion of every buffer the pool may
	// grow to.
	attr, qerr := p.ctx.QueryDevice()
	if qerr == nil && attr.MaxCQE > 0 && int(attr.MaxCQE)-16 < p.cfg.MaxRecvBuffers {
		p.cfg.MaxRecvBuffers = max(int(attr.MaxCQE)-16, cfg.RecvBuffers)
	}
	if p.recvCQ, err = p.ctx.CreateCQ(p.cfg.MaxRecvBuffers+16, true); err != nil {
		return nil, err
	}
	if p.sendCQ, err = p.ctx.CreateCQ(cfg.SendBuffers+16, true); err != nil {
		return nil, err
	}
	if p.rmaCQ, err = p.ctx.CreateCQ(rmaDepth*4, true); err != nil {
		return nil, err
	}
	p.rmaOps = map[uint64]*rmaOp{}
	p.probes = map[uint64]*conn{}
	limit := cfg.MaxRegions
	if qerr == nil && attr.MaxMR > 0 {
		// Leave room for the pools and Alloc'd regions.
		if dev := int(attr.MaxMR) / 2; limit > dev {
			limit = dev
		}
	}
	p.jobKey.Store(cfg.JobKey)
	p.reg = newRegCache(p.pd, verbs.AccessLocalWrite|verbs.AccessRemoteRead, cfg.RegCacheBytes, limit)
	if err = p.startCM(); err != nil {
		return nil, err
	}
	p.wg.Add(2)
	go p.cmLoop()
	go p.reapRMA()
	return p, nil
}

func (p *Port) chooseGID() (verbs.GIDEntry, error) {
	if p.cfg.GID == "" {
		return verbs.PickGID(p.ctx, p.cfg.Port, -1)
	}
	ip := net.ParseIP(p.cfg.GID)
	if ip == nil {
		return verbs.GIDEntry{}, fmt.Errorf("rdma: Config.GID %q is not an address", p.cfg.GID)
	}
	all, err := p.ctx.QueryGIDTable(1024)
	if err != nil {
		return verbs.GIDEntry{}, err
	}
	for _, e := range all {
		if e.Port == uint32(p.cfg.Port) && net.IP(e.GID[:]).Equal(ip) {
			return e, nil
		}
	}
	return verbs.GIDEntry{}, fmt.Errorf("rdma: port %d has no GID %s", p.cfg.Port, ip)
}

// Stats returns a snapshot of the counters.
func (p *Port) Stats() Stats {
	s := &p.stats
	return Stats{Sent: s.sent.Load(), Received: s.received.Load(), Dropped: s.dropped.Load(), CMDropped: s.cmDropped.Load(),
		Foreign:  s.foreign.Load(),
		ZeroCopy: s.zeroCopy.Load(), Yields: s.yields.Load(), Held: s.held.Load(), KeepAlives: s.keepAlives.Load(), Connects: s.connects.Load(), PeerFailures: s.peerFailures.Load(), Retired: s.retired.Load(),
		HandshakeFailure: s.handshakeFailures.Load(), TakenWaits: s.takenWaits.Load()}
}

// SetJobKey replaces Config.JobKey: from now on the port connects only
// with ports of this key. Connections made before stay.
func (p *Port) SetJobKey(key uint64) { p.jobKey.Store(key) }

var _ fabric.JobKeyed = (*Port)(nil)

// LastFailure is why the most recently lost peer was retired (nil if
// none was).
func (p *Port) LastFailure() error {
	if e := p.lastFailure.Load(); e != nil {
		return *e
	}
	return nil
}

// BatchSize is the number of datagrams per Send/Receive call at best.
func (p *Port) BatchSize() int { return 64 }

// MaxDatagram is 65507 bytes for every peer: one RC SEND into a 64 KiB
// receive buffer.
func (p *Port) MaxDatagram(fabric.Endpoint) int { return MaxDatagram }

// LocalEndpoint is the address of the port's connection manager.
func (p *Port) LocalEndpoint() fabric.Endpoint { return p.local }

// ParseEndpoint accepts "IP:QPN": a GID in its IP form and the QPN of a
// port's connection-manager queue pair.
func (p *Port) ParseEndpoint(s string) (fabric.Endpoint, error) {
	if _, err := parseUDAddr(s); err != nil {
		return nil, err
	}
	return Endpoint(s), nil
}

// Kind is "rdma".
func (p *Port) Kind() string { return "rdma" }

// Alloc returns n bytes of registered memory: a Body lying inside it is
// sent without a copy (the device reads it in place). The memory stays
// valid after Close, but is then no longer registered.
func (p *Port) Alloc(n int) []byte {
	if n <= 0 {
		return []byte{}
	}
	p.allocMu.Lock()
	defer p.allocMu.Unlock()
	if p.closed.Load() {
		return make([]byte, n)
	}
	mr, err := p.pd.RegMR(make([]byte, n), verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	if err != nil {
		return make([]byte, n)
	}
	i, _ := slices.BinarySearchFunc(p.allocs, mr.Addr(), func(m *verbs.MR, a uint64) int { return cmp.Compare(m.Addr(), a) })
	p.allocs = slices.Insert(p.allocs, i, mr)
	return mr.Buf[:n:n]
}

// allocMR returns the Alloc'd region holding b, or nil: a binary search
// of the regions by address.
func (p *Port) allocMR(b []byte) *verbs.MR {
	if len(b) == 0 {
		return nil
	}
	a := uint64(uintptr(unsafe.Pointer(&b[0])))
	p.allocMu.RLock()
	defer p.allocMu.RUnlock()
	// The last region starting at or below a is the only one that can
	// hold it.
	i, found := slices.BinarySearchFunc(p.allocs, a, func(m *verbs.MR, a uint64) int { return cmp.Compare(m.Addr(), a) })
	if !found {
		i--
	}
	if i >= 0 && p.allocs[i].Contains(b) {
		return p.allocs[i]
	}
	return nil
}

// Close tells the connected peers that the port closes, retires every
// queue pair and releases all verbs objects. It is idempotent; blocked Receive and Send calls return
// fabric.ErrClosed.
func (p *Port) Close() error {
	p.closeOnce.Do(func() {
		p.sayGone()
		p.closed.Store(true)
		close(p.done)
		if p.udCQ != nil {
			p.udCQ.Interrupt()
		}
		if p.recvCQ != nil {
			p.recvCQ.Interrupt()
		}
		if p.sendCQ != nil {
			p.sendCQ.Interrupt()
		}
		if p.rmaCQ != nil {
			p.rmaCQ.Interrupt()
		}
		p.wg.Wait()
		p.recvMu.Lock()
		p.sendMu.Lock()
		p.allocMu.Lock()
		p.mu.Lock()
		p.rxMu.Lock()
		p.rmaMu.Lock()
		for _, c := range p.all {
			c.dead.Store(true)
			c.qp.Close()
			if c.rma != nil {
				c.rma.Close()
			}
		}
		p.all, p.conns, p.byQPN = nil, map[string]*conn{}, map[uint32]*conn{}
		p.closeCM()
		var pending []*rmaOp
		for _, op := range p.rmaOps {
			op.err = fabric.ErrClosed
			pending = append(pending, op)
		}
		p.rmaOps = nil
		if p.reg != nil {
			p.reg.close()
		}
		for _, cq := range []*verbs.CQ{p.sendCQ, p.recvCQ, p.rmaCQ} {
			if cq != nil {
				cq.Close()
			}
		}
		for _, mr := range p.allocs {
			mr.Close()
		}
		p.allocs = nil
		for _, pl := range []*pool{p.send, p.recv} {
			if pl != nil {
				pl.close()
			}
		}
		if p.pd != nil {
			p.pd.Close()
		}
		if p.ctx != nil {
			p.ctx.Close()
		}
		p.rmaMu.Unlock()
		p.rxMu.Unlock()
		p.mu.Unlock()
		p.allocMu.Unlock()
		p.sendMu.Unlock()
		p.recvMu.Unlock()
		finishRMA(pending)
	})
	return nil
}

// ListenAddr opens a Port with the default configuration on the device
// addr names: "" (the first supported one), "rxe0", or "rxe0:2" (device
// and port number). It has the shape of a fabric opener, e.g.
// pcor.RegisterFabric("rdma", rdma.ListenAddr).
func ListenAddr(addr string) (fabric.Port, error) {
	var cfg Config
	if addr != "" {
		dev, port, found := strings.Cut(addr, ":")
		cfg.Device = dev
		if found {
			n, err := strconv.ParseUint(port, 10, 8)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("rdma: address %q: want device or device:port", addr)
			}
			cfg.Port = uint8(n)
		}
	}
	p, err := Listen(cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}
