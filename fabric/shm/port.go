//go:build linux

package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/tally"
)

// Kind is the fabric name of shared-memory ports.
const Kind = "shm"

var (
	// ErrAddrInUse is returned by Listen for a name another port holds.
	ErrAddrInUse = errors.New("shm: address in use")
	// ErrNoPort is returned when no port listens at an endpoint.
	ErrNoPort = errors.New("shm: no port at that endpoint")
	// ErrBadSegment is returned for a segment file that is not a valid
	// pcor segment.
	ErrBadSegment = errors.New("shm: bad segment")
	// ErrOtherHost is returned by ParseEndpoint for an endpoint whose
	// shared memory this process cannot map.
	ErrOtherHost = errors.New("shm: endpoint on another host")
	// ErrNoSlot is returned when a receiver's segment has no free slot.
	ErrNoSlot = errors.New("shm: receiver has no free slot")
)

// Port is a fabric.Port over shared memory. Any number of goroutines may
// call Send concurrently; one goroutine at a time calls Receive or Poll.
type Port struct {
	cfg   Config
	local Endpoint
	seg   *segment
	// bell is the read end of the port's doorbell, which the receiving
	// goroutine sleeps on; bellBuf takes what it holds.
	bell    *os.File
	bellBuf [64]byte

	// Receive side, used by the one receiving goroutine.
	in       []*ring // per slot, nil until claimed
	next     int     // slot to read first, for fairness
	lastScan time.Time
	looks    uint64 // empty looks at the rings (see scanLooks)
	taken    bool   // records taken since the rings last gave room back
	// The last batch received: the slot and ring position of each
	// datagram (for Hold), and how many there were.
	src   []int32
	at    []uint64
	nlast int
	// resumed counts Resume calls; seen is the count the receiver last
	// acted on (see hold.go).
	resumed atomic.Uint64
	seen    uint64
	// interrupted: Interrupt was called (see wait.go).
	interrupted atomic.Bool
	// watch tells of the death of peers (watch_linux.go); scanDue is set
	// then, for the receiver to look at its slots and destinations.
	watch   watcher
	scanDue atomic.Bool

	outMu sync.Mutex // guards out
	out   map[string]*outRing
	// lastOut is the ring of the last destination sent to: a sender that
	// sends to one destination after another finds it without the lock
	// and the map.
	lastOut atomic.Pointer[outRing]

	lost atomic.Pointer[func(fabric.Endpoint)] // OnPeerLost's function

	reads readQueue // ReadRemote's reads (cma_linux.go)

	closeOnce sync.Once
	closed    atomic.Bool

	st stats
}

var _ fabric.Port = (*Port)(nil)

// outRing is this port's slot in another port's segment.
type outRing struct {
	mu   sync.Mutex // guards r and the ring's producer position
	name string     // the receiver's port name
	seg  *segment
	r    *ring
	dead bool          // the receiver closed or died
	cma  atomic.Uint32 // the receiver's verdict on reading this process (cma_linux.go)

	// lastHead is the consumer position when the receiver was found gone:
	// what it read before it went was taken (Taken).
	lastHead uint64

	checked time.Time // when Taken last looked whether the receiver lives
	looks   uint64    // Taken's looks at the ring while not read (hold.go)

	// sent counts the datagrams written into the ring, under mu (the
	// port's count is the sum over its rings, see Stats).
	sent tally.Counter
}

// markDeadLocked records that the receiver closed or died, and how far it
// had read. o.mu is held and the segment is still mapped.
func (o *outRing) markDeadLocked() {
	o.lastHead = load64(o.seg.mem, o.r.base+slotHead)
	o.dead = true
}

var portNames atomic.Uint64

// Listen opens a port named name in cfg.Dir ("" picks a name unique to
// this process). Segments left behind by crashed processes in that
// directory are removed first.
func Listen(name string, cfg Config) (*Port, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if name == "" {
		name = strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(portNames.Add(1), 10)
	}
	if !validName(name) {
		return nil, fmt.Errorf("shm: bad port name %q (letters, digits, '.', '_', '-')", name)
	}
	host, err := HostID(cfg.Dir)
	if err != nil {
		return nil, err
	}
	reap(cfg.Dir)
	seg, bell, err := createSegment(filepath.Join(cfg.Dir, filePrefix+name), cfg.Slots, cfg.RingSize)
	if err != nil {
		return nil, err
	}
	return &Port{
		cfg:   cfg,
		local: Endpoint{Host: host, Name: name},
		seg:   seg,
		bell:  bell,
		in:    make([]*ring, cfg.Slots),
		out:   make(map[string]*outRing),
	}, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// BatchSize is the number of datagrams Send and Receive handle per call.
func (p *Port) BatchSize() int { return p.cfg.BatchSize }

// MaxDatagram is the largest datagram a ring carries.
func (p *Port) MaxDatagram(fabric.Endpoint) int { return p.cfg.MaxDatagram }

// LocalEndpoint is the address peers on this host use to reach the port.
func (p *Port) LocalEndpoint() fabric.Endpoint { return p.local }

// ParseEndpoint parses "host/name". It fails with ErrOtherHost for an
// endpoint whose memory this process does not share.
func (p *Port) ParseEndpoint(s string) (fabric.Endpoint, error) {
	e, err := ParseEndpoint(s)
	if err != nil {
		return nil, err
	}
	if e.Host != p.local.Host {
		return nil, fmt.Errorf("%w: %s (this host is %s)", ErrOtherHost, s, p.local.Host)
	}
	return e, nil
}

// Kind is "shm".
func (p *Port) Kind() string { return Kind }

// Send copies each datagram into the destination's ring. A full ring makes
// Send wait for room; a destination that closed or died has its datagrams
// dropped, as a network would.
func (p *Port) Send(dgs []fabric.Datagram) (int, error) {
	if p.closed.Load() {
		return 0, fabric.ErrClosed
	}
	for i := range dgs {
		d := &dgs[i]
		if d.Len() > p.cfg.MaxDatagram {
			return i, fmt.Errorf("%w: %d > %d", fabric.ErrTooBig, d.Len(), p.cfg.MaxDatagram)
		}
		e, ok := d.To.(Endpoint)
		if !ok {
			return i, fmt.Errorf("shm: endpoint %v is not an shm endpoint", d.To)
		}
		lost, err := p.sendOne(e, d)
		if err != nil {
			return i, err
		}
		if lost {
			p.peerLost(e)
		}
	}
	return len(dgs), nil
}

// sendOne writes d into the ring of e's port. It reports lost when it
// found the receiver gone (and dropped the datagram).
func (p *Port) sendOne(e Endpoint, d *fabric.Datagram) (lost bool, err error) {
	o := p.lastOut.Load()
	if o != nil && o.name == e.Name {
		lost, stale, err := p.put(o, d, true)
		if !stale {
			return lost, err
		}
		// The remembered ring's receiver went away: find the port that
		// listens under the name now.
		p.lastOut.CompareAndSwap(o, nil)
	}
	o, err = p.outTo(e)
	if err != nil {
		if errors.Is(err, ErrNoPort) {
			p.st.dropped.Add(1)
			return true, nil
		}
		return false, err
	}
	p.lastOut.Store(o)
	lost, _, err = p.put(o, d, false)
	return lost, err
}

// put writes one datagram into o, waiting while the ring is full. It
// reports lost when it found the receiver gone (and dropped the datagram).
// A ring remembered from an earlier send (cached) whose receiver was
// already known gone is stale: nothing is written, and the caller looks
// the destination up again.
func (p *Port) put(o *outRing, d *fabric.Datagram, cached bool) (lost, stale bool, err error) {
	o.mu.Lock()
	if !o.dead && o.r.put(d.Head, d.Body) {
		// Under the lock: a ring found dead is unmapped once unlocked.
		p.wake(o.seg)
		o.sent.Add(1)
		o.mu.Unlock()
		return false, false, nil
	}
	o.mu.Unlock()
	return p.putSlow(o, d, cached)
}

// putSlow is put for a ring found full or a receiver known gone.
func (p *Port) putSlow(o *outRing, d *fabric.Datagram, cached bool) (lost, stale bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead {
		if cached {
			return false, true, nil
		}
		p.st.dropped.Add(1)
		return false, false, nil
	}
	for spins := 0; ; spins++ {
		if o.r.put(d.Head, d.Body) {
			o.sent.Add(1)
			p.wake(o.seg)
			return false, false, nil
		}
		if p.closed.Load() {
			return false, false, fabric.ErrClosed
		}
		if spins == 0 {
			p.st.full.Add(1)
		}
		// Make sure a sleeping receiver drains the ring.
		p.wake(o.seg)
		switch {
		case spins < 64:
			runtime.Gosched()
		case spins%4 == 0 && !o.seg.ownerAlive():
			o.markDeadLocked()
			p.st.dropped.Add(1)
			return true, false, nil
		default:
			// Sleep until the receiver frees room (it wakes this thread
			// then), or a while, to look whether it lives.
			p.st.roomWaits.Add(1)
			o.r.waitRoom(d.Len(), roomWait)
		}
	}
}

// roomWait bounds each sleep of a sender waiting for room in a ring (a
// variable for tests).
var roomWait = 10 * time.Millisecond

// wake rings the doorbell of seg's receiver if it sleeps. Of the senders
// that find it asleep, the one that clears the flag rings.
func (p *Port) wake(seg *segment) {
	if load32(seg.mem, offSleeping) != 0 && casUint32(seg.mem, offSleeping, 1, 0) {
		pokeBell(seg.bell)
		p.st.wakes.Add(1)
	}
}

// outTo returns this port's ring in e's segment, claiming a slot there the
// first time.
func (p *Port) outTo(e Endpoint) (*outRing, error) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	if o := p.out[e.Name]; o != nil {
		o.mu.Lock()
		dead := o.dead
		o.mu.Unlock()
		if !dead {
			return o, nil
		}
		// The receiver went away; a new one may listen under the name.
		p.st.sent.Add(o.sent.Load())
		delete(p.out, e.Name)
		o.seg.unmap()
	}
	if p.closed.Load() {
		return nil, fabric.ErrClosed
	}
	seg, err := openSegment(filepath.Join(p.cfg.Dir, filePrefix+e.Name))
	if err != nil {
		return nil, err
	}
	if !seg.ownerAlive() {
		seg.unmap()
		return nil, fmt.Errorf("%w: %s (closed)", ErrNoPort, e)
	}
	if seg.bell, err = openBell(seg.path); err != nil {
		seg.unmap()
		return nil, err
	}
	r, err := claim(seg)
	if err != nil {
		seg.unmap()
		return nil, fmt.Errorf("%w: %s", err, e)
	}
	o := &outRing{name: e.Name, seg: seg, r: r}
	p.out[e.Name] = o
	p.watch.watch(load32(seg.mem, offPid), load64(seg.mem, offStart), p.peerExited)
	return o, nil
}

// claim takes a free slot of seg for this process.
func claim(seg *segment) (*ring, error) {
	pid, start := selfID()
	for i := 0; i < seg.slots; i++ {
		base := slotOffset(i, seg.ringSize)
		if !casUint32(seg.mem, base+slotOwner, 0, pid) {
			continue
		}
		store64(seg.mem, base+slotStart, start)
		offerProbe(seg.mem, base)
		for {
			hw := load32(seg.mem, offHighWater)
			if uint32(i) < hw || casUint32(seg.mem, offHighWater, hw, uint32(i)+1) {
				break
			}
		}
		return newRing(seg, i), nil
	}
	return nil, ErrNoSlot
}

// Receive blocks until at least one datagram has arrived, stores up to
// len(msgs) of them in msgs and returns how many. Each msgs[i] aliases the
// ring and stays valid until the next Receive, Poll, Wait or Park.
func (p *Port) Receive(msgs [][]byte) (int, error) { return p.receive(msgs, waitBlock, time.Time{}) }

// Poll is Receive that never blocks.
func (p *Port) Poll(msgs [][]byte) (int, error) { return p.receive(msgs, waitNone, time.Time{}) }

// How receive waits when nothing has arrived.
const (
	waitNone  = iota // return 0 at once (Poll)
	waitBlock        // until a datagram arrives or the port closes (Receive)
	waitIntr         // also until Interrupt or the deadline (Wait, Park)
)

func (p *Port) receive(msgs [][]byte, mode int, deadline time.Time) (int, error) {
	if p.closed.Load() {
		return 0, fabric.ErrClosed
	}
	// What the last batch took goes back to its producers (once: an
	// empty look has nothing to give back). No slot at or above the high
	// water mark was ever read.
	if p.taken {
		p.taken = false
		for _, r := range p.in[:p.highWater()] {
			if r != nil {
				r.release()
			}
		}
	}
	for spins := 0; ; spins++ {
		if n := p.collect(msgs); n > 0 {
			p.st.received.Add(uint64(n))
			return n, nil
		}
		if p.closed.Load() {
			return 0, fabric.ErrClosed
		}
		// Reading the clock costs as much as a look at every ring (a
		// polling caller looks millions of times a second): look at it
		// only every scanLooks empty looks.
		if p.looks++; p.scanDue.Load() && p.scanDue.Swap(false) ||
			p.looks%scanLooks == 0 && time.Since(p.lastScan) > scanEvery {
			p.scanOwners()
		}
		switch mode {
		case waitNone:
			return 0, nil
		case waitIntr:
			if p.interrupted.Swap(false) {
				return 0, nil
			}
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				return 0, os.ErrDeadlineExceeded
			}
		}
		if spins < p.cfg.Spin {
			runtime.Gosched()
			continue
		}
		p.sleep(mode == waitIntr, deadline)
		spins = 0
	}
}

// A receiver frees the slots of producers that let go or died, and looks
// whether its destinations live, every scanEvery at most, found out after
// scanLooks empty looks at its rings.
const (
	scanEvery = 100 * time.Millisecond
	scanLooks = 64
)

// sleep waits on the doorbell until a sender rings it, Resume is called
// (or Interrupt, when intr), the deadline passes or a timeout, to notice a
// close or a dead sender.
func (p *Port) sleep(intr bool, deadline time.Time) {
	mem := p.seg.mem
	// A sender stores its tail, then looks at the flag; this looks at
	// the tails after storing the flag: one of the two sees the other.
	store32(mem, offSleeping, 1)
	if p.pending() || p.closed.Load() || p.scanDue.Load() || p.resumed.Load() != p.seen || intr && p.interrupted.Load() {
		store32(mem, offSleeping, 0)
		return
	}
	d := idleScan
	if !p.watch.allWatched() {
		d = scanEvery
	}
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline))
	}
	if d > 0 {
		p.st.sleeps.Add(1)
		waitBell(p.bell, p.bellBuf[:], d)
	}
	store32(mem, offSleeping, 0)
}

// pending reports whether any ring holds unread records.
func (p *Port) pending() bool {
	hw := p.highWater()
	for i := 0; i < hw; i++ {
		if r := p.inRing(i); r != nil && !r.held && !r.broken && !r.empty() {
			return true
		}
	}
	return false
}

func (p *Port) highWater() int {
	hw := int(load32(p.seg.mem, offHighWater))
	if hw > p.seg.slots {
		hw = p.seg.slots
	}
	return hw
}

// inRing returns the consumer side of slot i, or nil if it is free.
func (p *Port) inRing(i int) *ring {
	if p.in[i] == nil {
		if load32(p.seg.mem, slotOffset(i, p.seg.ringSize)+slotOwner) == 0 {
			return nil
		}
		p.in[i] = newRing(p.seg, i)
		base := slotOffset(i, p.seg.ringSize)
		p.watch.watch(load32(p.seg.mem, base+slotOwner), load64(p.seg.mem, base+slotStart), p.peerExited)
	}
	return p.in[i]
}

// peerExited is called when a watched peer process has exited: the
// receiver looks at its slots and destinations at once.
func (p *Port) peerExited() {
	p.scanDue.Store(true)
	p.wake(p.seg)
}

// collect takes records from the rings, starting at a rotating slot so
// that no sender starves the others. A polling receiver calls it millions
// of times a second and mostly finds every ring empty: a ring is looked
// at with one load of the header at its position.
func (p *Port) collect(msgs [][]byte) int {
	p.unholdIfResumed()
	if len(p.src) < len(msgs) {
		p.src, p.at = make([]int32, len(msgs)), make([]uint64, len(msgs))
	}
	hw := p.highWater()
	n := 0
	i := p.next
	if i >= hw {
		i = 0
	}
	for k := 0; k < hw && n < len(msgs); k++ {
		r := p.in[i]
		if r == nil {
			r = p.inRing(i)
		}
		if r != nil && !r.held && !r.broken {
			if r.empty() {
				r.streamed = false
			} else {
				// A ring that had records at the last look too is
				// being streamed to: its tail says how far this batch
				// may go. Otherwise the record found is taken alone
				// and the tail's line is not read: its producer's next
				// store to it then waits for no other processor's copy
				// (in a ping-pong, one of the three lines a message
				// would otherwise move between the processors).
				tail := r.pos
				if r.streamed {
					tail = atomic.LoadUint64(r.tail)
				}
				r.streamed = true
				got, corrupt := r.take(msgs[n:], p.at[n:], p.cfg.MaxDatagram, tail)
				if got > 0 && !r.probed {
					p.probe(r)
				}
				for j := n; j < n+got; j++ {
					p.src[j] = int32(i)
				}
				n += got
				p.taken = true
				if corrupt {
					// The producer broke the ring's format: what it holds can
					// no longer be delimited. Count it, and take nothing more
					// from it until the producer is gone and the slot is
					// reset.
					p.st.corrupt.Add(1)
					r.broken = true
				}
			}
		}
		if i++; i == hw {
			i = 0
		}
	}
	if p.next++; p.next >= hw {
		p.next = 0
	}
	p.nlast = n
	return n
}

// scanOwners frees the slots whose producer let go or died once their
// rings are drained, and reports the destinations found gone.
func (p *Port) scanOwners() {
	p.lastScan = time.Now()
	p.scanDestinations()
	mem := p.seg.mem
	for i := 0; i < p.highWater(); i++ {
		base := slotOffset(i, p.seg.ringSize)
		owner := load32(mem, base+slotOwner)
		if owner == 0 {
			continue
		}
		r := p.inRing(i)
		if r == nil || !r.broken && !r.empty() {
			continue
		}
		if load32(mem, base+slotReleased) != 0 || !alive(owner, load64(mem, base+slotStart)) {
			r.reset()
			p.in[i] = nil
			p.st.reclaimed.Add(1)
		}
	}
}

// scanDestinations reports the destinations that closed or died since
// this port last wrote to them, so that a sender waiting on one without
// sending (for it to read a message from this process's memory) learns
// of it.
func (p *Port) scanDestinations() {
	var lost []Endpoint
	p.outMu.Lock()
	for name, o := range p.out {
		if !o.mu.TryLock() {
			continue // a send is at it, and looks itself
		}
		gone := !o.dead && !o.seg.ownerAlive()
		if gone {
			o.markDeadLocked()
		}
		o.mu.Unlock()
		if gone {
			lost = append(lost, Endpoint{Host: p.local.Host, Name: name})
		}
	}
	p.outMu.Unlock()
	for _, e := range lost {
		p.peerLost(e)
	}
}

// Close releases the port: its own segment is removed (senders that have
// it mapped see it closed) and its slots in other segments are released.
// A blocked Receive returns fabric.ErrClosed. Close is idempotent.
func (p *Port) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		mem := p.seg.mem
		store32(mem, offClosed, 1)
		pokeBell(p.seg.bell)
		// Senders opening the doorbell from now on find no port.
		os.Remove(p.seg.path + bellSuffix)
		p.bell.Close()
		p.watch.close()
		for i := 0; i < p.highWater(); i++ {
			// Senders waiting for room find the port closed.
			bell := slotOffset(i, p.seg.ringSize) + slotRoomBell
			atomicAdd32(mem, bell)
			futexWakeAll(u32at(mem, bell))
		}
		os.Remove(p.seg.path)

		p.outMu.Lock()
		for name, o := range p.out {
			o.mu.Lock()
			store32(o.seg.mem, o.r.base+slotReleased, 1)
			p.wake(o.seg)
			o.markDeadLocked()
			o.seg.unmap()
			p.st.sent.Add(o.sent.Load())
			o.mu.Unlock()
			delete(p.out, name)
		}
		p.outMu.Unlock()
		// The segment stays mapped: a Receive in flight may still read it.
		// It is unmapped when the port is collected.
		seg := p.seg
		runtime.SetFinalizer(p, func(*Port) { seg.unmap() })
	})
	return nil
}
