package rdma

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/verbs"
	"golang.org/x/sys/unix"
)

// regCache keeps the registrations of message buffers for reuse, as a
// sender that sends from the same buffer again, or a receiver that
// receives into it, need not register it twice. A registration is looked
// up by the buffer's address and length (a map: no scan), counted while
// in use, and kept after its last use on a least-recently-used list of at
// most budget bytes.
//
// An idle registration keeps its buffer referenced: the memory it pinned
// cannot be freed and reused by the Go heap while the device still maps
// its pages (a registration of freed memory would go stale, silently, when
// the pages are returned to the system). The budget therefore bounds the
// memory the cache keeps alive.
type regCache struct {
	pd     *verbs.PD
	access uint32
	budget int64 // bytes of idle registrations kept
	limit  int   // registrations alive at once

	mu        sync.Mutex
	byKey     map[regKey]*region
	idle      region // sentinel of the idle list, most recent first
	idleBytes int64
	live      int
	closed    bool
	stats     RegStats
}

// RegStats are the registration cache's counters.
type RegStats struct {
	Hits, Misses, Evictions uint64
	Live                    int   // registrations alive (in use or idle)
	IdleBytes               int64 // bytes of idle registrations kept
}

type regKey struct {
	addr uintptr
	n    int
}

// region is one registration.
type region struct {
	key        regKey
	mr         *verbs.MR
	buf        []byte // keeps the memory alive while it is registered
	refs       int
	prev, next *region // idle list, while refs == 0
}

func newRegCache(pd *verbs.PD, access uint32, budget int64, limit int) *regCache {
	c := &regCache{pd: pd, access: access, budget: budget, limit: limit, byKey: map[regKey]*region{}}
	c.idle.prev, c.idle.next = &c.idle, &c.idle
	return c
}

func keyOf(b []byte) regKey { return regKey{uintptr(unsafe.Pointer(&b[0])), len(b)} }

// get returns the registration of b (not empty), registering it if no
// registration of exactly b is kept. Release it with put.
func (c *regCache) get(b []byte) (*region, error) {
	k := keyOf(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if r := c.byKey[k]; r != nil {
		c.stats.Hits++
		if r.refs == 0 {
			c.unlinkLocked(r)
		}
		r.refs++
		return r, nil
	}
	c.stats.Misses++
	for c.live >= c.limit && c.idle.prev != &c.idle {
		c.evictLocked(c.idle.prev)
	}
	if c.live >= c.limit {
		return nil, fmt.Errorf("rdma: %d regions registered, all in use: %w", c.live, fabric.ErrRegistrationLimit)
	}
	mr, err := c.pd.RegMR(b, c.access)
	for err != nil && errors.Is(err, unix.ENOMEM) && c.idle.prev != &c.idle {
		// The device (or the locked-memory limit) is full: give idle
		// registrations back and try again.
		c.evictLocked(c.idle.prev)
		mr, err = c.pd.RegMR(b, c.access)
	}
	if err != nil {
		if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EAGAIN) {
			return nil, fmt.Errorf("rdma: registering %d bytes: %v: %w", len(b), err, fabric.ErrRegistrationLimit)
		}
		return nil, fmt.Errorf("rdma: registering %d bytes: %w", len(b), err)
	}
	r := &region{key: k, mr: mr, buf: b, refs: 1}
	c.byKey[k] = r
	c.live++
	return r, nil
}

// put releases a registration got from get. An idle registration larger
// than the budget is dropped at once; otherwise it is kept, and the least
// recently used idle ones are dropped while the idle bytes exceed the
// budget.
func (c *regCache) put(r *region) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.refs--
	if r.refs > 0 {
		return
	}
	if c.closed || int64(r.key.n) > c.budget {
		c.dropLocked(r)
		return
	}
	r.next, r.prev = c.idle.next, &c.idle
	r.next.prev, c.idle.next = r, r
	c.idleBytes += int64(r.key.n)
	for c.idleBytes > c.budget {
		c.evictLocked(c.idle.prev)
	}
}

func (c *regCache) unlinkLocked(r *region) {
	r.prev.next, r.next.prev = r.next, r.prev
	r.prev, r.next = nil, nil
	c.idleBytes -= int64(r.key.n)
}

// evictLocked drops an idle registration.
func (c *regCache) evictLocked(r *region) {
	c.unlinkLocked(r)
	c.stats.Evictions++
	c.dropLocked(r)
}

func (c *regCache) dropLocked(r *region) {
	r.buf = nil
	if c.closed {
		return // deregistered by close
	}
	delete(c.byKey, r.key)
	c.live--
	r.mr.Close()
}

// Stats returns the counters.
func (c *regCache) Stats() RegStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Live, s.IdleBytes = c.live, c.idleBytes
	return s
}

// close deregisters every registration; later gets fail and regions in
// use are dropped when put. The protection domain must still be open.
func (c *regCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.byKey {
		r.mr.Close()
		r.buf = nil
	}
	c.byKey = map[regKey]*region{}
	c.idle.prev, c.idle.next = &c.idle, &c.idle
	c.idleBytes, c.live = 0, 0
	c.closed = true
}
