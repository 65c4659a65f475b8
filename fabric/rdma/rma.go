package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/verbs"
)

// One-sided operations (RDMA READ) run on a second queue pair per peer,
// beside the one that carries datagrams, with a completion queue of their
// own that one goroutine (reapRMA) waits on. The datagram path's locks,
// buffers and completion queues are not touched by a read, and a long
// read does not hold up datagrams behind it in a send queue.

const (
	// rmaDepth is the number of READ work requests posted on one queue
	// pair at once; more wait in the conn's queue.
	rmaDepth = 64
	// rmaRdAtomic is the number of READs in flight on one queue pair
	// (initiator and responder depth).
	rmaRdAtomic = 16
	// rmaChunk is the largest READ one work request carries.
	rmaChunk = 4 << 20
	// descLen is the size of a descriptor: address, length, rkey.
	descLen = 8 + 8 + 4
	// probeBit marks the work-request IDs of keep-alive READs.
	probeBit = 1 << 63
)

// rmaOp is one ReadRemote: its work requests, the registration of its
// destination and the function told of its end.
type rmaOp struct {
	id   uint64
	c    *conn
	reg  *region // nil for Alloc'd memory
	done func(error)
	left int // work requests not yet completed
	err  error
}

// rmaWR is a work request waiting for room on its queue pair.
type rmaWR struct {
	op *rmaOp
	wr verbs.SendWR
}

var (
	_ fabric.RemoteReader  = (*Port)(nil)
	_ fabric.RemoteReadMin = (*Port)(nil)
)

// RemoteReadMin is Config.ReadMin: below it a message costs less as
// datagrams (one SEND of at most a datagram and a copy out of the receive
// buffer) than as an announcement, a READ and a done message, each a
// round trip through rxe's kernel work. A 64 KiB message does not fit one
// datagram (fabric.MaxDatagramSize): as datagrams it is two SENDs, the
// second a tail of about a hundred bytes with a 64 KiB receive buffer and
// a completion of its own.
func (p *Port) RemoteReadMin() int { return p.cfg.ReadMin }

// Expose returns the descriptor of b for reading by peers: b lies in
// memory from Alloc (registered once, for good), or its registration is
// made or reused from the cache. b must not change until release, which
// may be called more than once.
func (p *Port) Expose(b []byte) ([]byte, func(), error) {
	desc := make([]byte, descLen)
	if len(b) == 0 {
		return desc, func() {}, nil
	}
	if p.closed.Load() {
		return nil, nil, fabric.ErrClosed
	}
	binary.LittleEndian.PutUint64(desc, uint64(uintptr(unsafe.Pointer(&b[0]))))
	binary.LittleEndian.PutUint64(desc[8:], uint64(len(b)))
	if mr := p.allocMR(b); mr != nil {
		binary.LittleEndian.PutUint32(desc[16:], mr.RKey)
		return desc, func() {}, nil
	}
	reg, err := p.reg.get(b)
	if err != nil {
		return nil, nil, err
	}
	binary.LittleEndian.PutUint32(desc[16:], reg.mr.RKey)
	var once sync.Once
	return desc, func() { once.Do(func() { p.reg.put(reg) }) }, nil
}

// ErrDescriptor is returned by ReadRemote for a descriptor that is
// malformed or describes fewer bytes than asked for.
var ErrDescriptor = errors.New("rdma: bad remote memory descriptor")

// ReadRemote reads len(dst) bytes of the memory described by desc (from
// the peer's Expose) into dst with RDMA READ, in pieces of at most 4 MiB,
// dialing the peer on first use. done is called once from the port's
// completion goroutine (or from Close, with fabric.ErrClosed); an error
// returned here means done will not be called. A failed read retires the
// peer's queue pairs (the peer is reported lost).
func (p *Port) ReadRemote(from fabric.Endpoint, dst []byte, desc []byte, done func(error)) error {
	ep, ok := from.(Endpoint)
	if !ok {
		return fmt.Errorf("rdma: endpoint %v (%T) is not an rdma endpoint", from, from)
	}
	if len(desc) != descLen {
		return fmt.Errorf("%w: %d bytes", ErrDescriptor, len(desc))
	}
	addr := binary.LittleEndian.Uint64(desc)
	n := binary.LittleEndian.Uint64(desc[8:])
	rkey := binary.LittleEndian.Uint32(desc[16:])
	if n < uint64(len(dst)) {
		return fmt.Errorf("%w: %d bytes exposed, %d wanted", ErrDescriptor, n, len(dst))
	}
	if p.closed.Load() {
		return fabric.ErrClosed
	}
	if len(dst) == 0 {
		go done(nil)
		return nil
	}
	c := p.connFor(string(ep))
	if c == nil {
		return fmt.Errorf("%w: cannot connect to %s", ErrPeerLost, ep)
	}
	mr := p.allocMR(dst)
	var reg *region
	if mr == nil {
		var err error
		if reg, err = p.reg.get(dst); err != nil {
			return err
		}
		mr = reg.mr
	}
	op := &rmaOp{c: c, reg: reg, done: done}
	p.rmaMu.Lock()
	if p.closed.Load() || c.dead.Load() {
		p.rmaMu.Unlock()
		if reg != nil {
			p.reg.put(reg)
		}
		if p.closed.Load() {
			return fabric.ErrClosed
		}
		return fmt.Errorf("%w: %s", ErrPeerLost, ep)
	}
	p.rmaNext++
	op.id = p.rmaNext
	p.rmaOps[op.id] = op
	for off := 0; off < len(dst); off += rmaChunk {
		k := min(rmaChunk, len(dst)-off)
		op.left++
		c.rmaQueue = append(c.rmaQueue, rmaWR{op: op, wr: verbs.SendWR{WrID: op.id, Opcode: verbs.OpRDMARead,
			Signaled: true, SGEs: []verbs.SGE{verbs.SGEOf(mr, dst[off:off+k])},
			RemoteAddr: addr + uint64(off), RKey: rkey}})
	}
	err := p.postRMALocked(c)
	p.rmaMu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("%w: %v", ErrPeerLost, err)) // its posted reads complete as flushed
	}
	return nil
}

// postRMALocked posts c's queued reads while its queue pair has room and
// rings its doorbell. p.rmaMu is held.
func (p *Port) postRMALocked(c *conn) error {
	n := 0
	for len(c.rmaQueue) > 0 && c.rmaPosted < rmaDepth {
		q := &c.rmaQueue[0]
		if err := c.rma.PostSend(&q.wr); err != nil {
			break
		}
		c.rmaQueue[0] = rmaWR{}
		c.rmaQueue = c.rmaQueue[1:]
		c.rmaPosted++
		n++
	}
	if len(c.rmaQueue) == 0 {
		c.rmaQueue = nil
	}
	if n > 0 {
		return c.rma.Doorbell()
	}
	return nil
}

// reapRMA is the completion goroutine of one-sided operations.
func (p *Port) reapRMA() {
	defer p.wg.Done()
	wcs := make([]verbs.WC, 32)
	var finished []*rmaOp
	var failed []*conn
	for {
		n := p.rmaCQ.Poll(wcs)
		if n == 0 {
			if err := p.rmaCQ.Arm(); err != nil && p.closed.Load() {
				return
			}
			n = p.rmaCQ.Poll(wcs)
		}
		if n == 0 {
			// The timeout is a backstop: reads queued behind a queue
			// pair that failed without flushing are failed by the sweep.
			err := p.rmaCQ.Wait(time.Now().Add(time.Second))
			if p.closed.Load() || errors.Is(err, os.ErrClosed) {
				return
			}
			if errors.Is(err, verbs.ErrTimeout) {
				p.rmaMu.Lock()
				finished = p.sweepRMALocked(finished[:0])
				p.rmaMu.Unlock()
				finishRMA(finished)
			}
			continue
		}
		p.rmaMu.Lock()
		finished, failed = p.completeRMALocked(wcs[:n], finished[:0], failed[:0])
		p.rmaMu.Unlock()
		for _, c := range failed {
			c.fail(fmt.Errorf("%w: %v", ErrPeerLost, c.rmaErr))
		}
		finishRMA(finished)
	}
}

// completeRMALocked accounts for completions: finished collects the
// operations whose last work request completed, failed the conns whose
// read failed (not merely flushed). p.rmaMu is held.
func (p *Port) completeRMALocked(wcs []verbs.WC, finished []*rmaOp, failed []*conn) ([]*rmaOp, []*conn) {
	for _, wc := range wcs {
		if wc.WrID&probeBit != 0 {
			failed = p.probedLocked(wc, failed)
			continue
		}
		op := p.rmaOps[wc.WrID]
		if op == nil {
			continue
		}
		c := op.c
		c.rmaPosted--
		op.left--
		if wc.Status == verbs.WCSuccess {
			c.active.Add(1)
		} else {
			werr := &verbs.WCError{Status: wc.Status, QPNum: wc.QPNum}
			if op.err == nil {
				op.err = fmt.Errorf("%w: read from %s: %v", ErrPeerLost, c.ep, werr)
			}
			if wc.Status != verbs.WCFlushErr && c.rmaErr == nil {
				c.rmaErr = werr
				failed = append(failed, c)
			}
		}
		if op.left == 0 {
			delete(p.rmaOps, op.id)
			finished = append(finished, op)
		}
		if c.dead.Load() || c.rmaErr != nil {
			finished = p.dropQueuedLocked(c, finished)
		} else if err := p.postRMALocked(c); err != nil && c.rmaErr == nil {
			c.rmaErr = err
			failed = append(failed, c)
		}
	}
	return finished, failed
}

// The keep-alive. Every Config.KeepAlive, cmLoop posts a zero-length RDMA
// READ to each connected peer that has no read posted already. The peer's
// kernel answers it (no thread of the peer's process takes part), so a
// live peer is answered for however busy its process is; a killed peer's
// queue pairs died with it, nothing answers, and the READ fails once the
// transport has retried Config.RetryCount times after Config.AckTimeout.
// A read posted for data watches the peer the same way.

// probeLocked posts a keep-alive READ on c unless one is in flight or a
// read is posted. p.rmaMu is held.
func (p *Port) probeLocked(c *conn) error {
	if c.probing || c.rmaPosted > 0 || len(c.rmaQueue) > 0 || c.dead.Load() || c.rmaErr != nil {
		return nil
	}
	p.rmaNext++
	id := p.rmaNext | probeBit
	wr := verbs.SendWR{WrID: id, Opcode: verbs.OpRDMARead, Signaled: true}
	if err := c.rma.PostSend(&wr); err != nil {
		return err
	}
	p.probes[id] = c
	c.probing = true
	c.rmaPosted++
	return c.rma.Doorbell()
}

// probedLocked accounts for the completion of a keep-alive READ. p.rmaMu
// is held.
func (p *Port) probedLocked(wc verbs.WC, failed []*conn) []*conn {
	c := p.probes[wc.WrID]
	if c == nil {
		return failed
	}
	delete(p.probes, wc.WrID)
	c.probing = false
	c.rmaPosted--
	switch {
	case wc.Status == verbs.WCSuccess:
		c.heard.Store(time.Now().UnixNano())
		p.stats.keepAlives.Add(1)
	case wc.Status != verbs.WCFlushErr && c.rmaErr == nil:
		c.rmaErr = fmt.Errorf("keep-alive read: %w", &verbs.WCError{Status: wc.Status, QPNum: wc.QPNum})
		failed = append(failed, c)
	}
	return failed
}

// probe posts keep-alive READs to cs.
func (p *Port) probe(cs []*conn) {
	var failed []*conn
	p.rmaMu.Lock()
	if !p.closed.Load() {
		for _, c := range cs {
			if err := p.probeLocked(c); err != nil && c.rmaErr == nil {
				c.rmaErr = err
				failed = append(failed, c)
			}
		}
	}
	p.rmaMu.Unlock()
	for _, c := range failed {
		c.fail(fmt.Errorf("%w: %v", ErrPeerLost, c.rmaErr))
	}
}

// dropQueuedLocked fails the reads queued on c (never posted). p.rmaMu is
// held.
func (p *Port) dropQueuedLocked(c *conn, finished []*rmaOp) []*rmaOp {
	for _, q := range c.rmaQueue {
		op := q.op
		op.left--
		if op.err == nil {
			op.err = fmt.Errorf("%w: %s", ErrPeerLost, c.ep)
		}
		if op.left == 0 {
			delete(p.rmaOps, op.id)
			finished = append(finished, op)
		}
	}
	c.rmaQueue = nil
	return finished
}

// sweepRMALocked drops the queued reads of dead conns. p.rmaMu is held.
func (p *Port) sweepRMALocked(finished []*rmaOp) []*rmaOp {
	seen := map[*conn]bool{}
	for _, op := range p.rmaOps {
		if c := op.c; !seen[c] && c.dead.Load() {
			seen[c] = true
			finished = p.dropQueuedLocked(c, finished)
		}
	}
	return finished
}

// finishRMA releases each operation's registration and tells its caller.
func finishRMA(ops []*rmaOp) {
	for i, op := range ops {
		if op.reg != nil {
			op.c.p.reg.put(op.reg)
		}
		op.done(op.err)
		ops[i] = nil
	}
}

// RegStats returns the counters of the port's registration cache.
func (p *Port) RegStats() RegStats { return p.reg.Stats() }
