package engine

import "sync"

// nStripes is the number of independently locked parts of the receive
// table. All keys of one destination thread live in one stripe, so a
// wildcard receive sees a consistent view of its thread while different
// threads rarely share a lock.
const nStripes = 64

// recvTable is pCoR's hashed receive table (section 5.1) made concurrent.
//
// Completed messages that no receive has asked for yet ("unexpected") are
// chained per bucket in arrival order, the bucket chosen by a hash of
// <src proc, src thread, dst thread, tag>; each is also on its destination
// thread's arrival list, which wildcard receives scan. Posted receives with
// an exact key wait in buckets of their own; wildcard receives wait on
// their thread. An arriving message goes to the earliest-posted matching
// receive, so a thread's receives are served in the order they were made.
type recvTable struct {
	pool    *mcbPool
	stripes [nStripes]stripe
	mask    uint64
}

type stripe struct {
	mu        sync.Mutex
	unexp     []int32 // bucket heads (MCB indexes)
	unexpTail []int32
	posted    []reqList
	threads   map[ThreadID]*threadState
	// lastID's state, the last looked up: a thread's messages come in
	// runs, and each costs three lookups (taken, kept, received).
	lastID ThreadID
	last   *threadState
	seq    uint64
	// wild counts the wildcard receives posted on the stripe's threads:
	// with none, matching a message needs no look at its thread's state
	// (a map lookup whenever the stripe's messages alternate between
	// threads, as they do at many threads).
	wild int
	// free holds control blocks the stripe's receives are done with
	// (irecv), for the messages stored on the stripe next (takeFree): a
	// block goes back under the stripe lock both sides hold anyway, not
	// through the pool's lock, a cache line that every receiving thread
	// and the dispatcher wrote for every message.
	free []int32
	_    [64]byte
}

// stripeFree is the most control blocks a stripe keeps free (64 stripes:
// a segment's worth in all); more go back to the pool.
const stripeFree = 64

type threadState struct {
	wild             reqList
	arrHead, arrTail int32
	// notify is signalled on every unexpected arrival while probes > 0
	// (Probes waiting on the thread): otherwise a message stored as
	// unexpected would look at a channel nobody reads, a cache line of
	// its own for each of many threads.
	notify chan struct{}
	probes int
}

func newRecvTable(pool *mcbPool, buckets int) *recvTable {
	per := buckets / nStripes
	if per < 1 {
		per = 1
	}
	b := 1
	for b < per {
		b <<= 1
	}
	t := &recvTable{pool: pool, mask: uint64(b - 1)}
	for i := range t.stripes {
		s := &t.stripes[i]
		s.unexp = make([]int32, b)
		s.unexpTail = make([]int32, b)
		for j := range s.unexp {
			s.unexp[j], s.unexpTail[j] = nilMCB, nilMCB
		}
		s.posted = make([]reqList, b)
		s.threads = make(map[ThreadID]*threadState)
	}
	return t
}

// takeFree returns a block from s's free list, cleared, or nil if it has
// none. s is locked.
func (t *recvTable) takeFree(s *stripe) *mcb {
	n := len(s.free)
	if n == 0 {
		return nil
	}
	m := t.pool.at(s.free[n-1])
	s.free = s.free[:n-1]
	m.clear()
	return m
}

// giveFree keeps m, a block nobody refers to any more that holds no
// chunks, no receive and no data buffer over keptData, on s's free list;
// false if the list is full. s is locked.
func (t *recvTable) giveFree(s *stripe, m *mcb) bool {
	if len(s.free) >= stripeFree {
		return false
	}
	if s.free == nil {
		s.free = make([]int32, 0, stripeFree)
	}
	s.free = append(s.free, m.idx)
	return true
}

// getMCB takes a block from the pool; when the pool has none left, the
// blocks kept free on the stripes go back to it first. held is a stripe
// the caller has locked (or nil): the others are locked in turn, except
// that with held locked they are only tried, since nothing else takes
// two stripe locks.
func (t *recvTable) getMCB(held *stripe) *mcb {
	if m := t.pool.get(); m != nil {
		return m
	}
	n := 0
	for i := range t.stripes {
		s := &t.stripes[i]
		if s != held {
			if held != nil {
				if !s.mu.TryLock() {
					continue
				}
			} else {
				s.mu.Lock()
			}
		}
		for _, j := range s.free {
			t.pool.put(t.pool.at(j))
			n++
		}
		s.free = s.free[:0]
		if s != held {
			s.mu.Unlock()
		}
	}
	if n == 0 {
		return nil
	}
	return t.pool.get()
}

// freeBlocks is the number of blocks kept free on the stripes.
func (t *recvTable) freeBlocks() int {
	n := 0
	for i := range t.stripes {
		s := &t.stripes[i]
		s.mu.Lock()
		n += len(s.free)
		s.mu.Unlock()
	}
	return n
}

// hashKey mixes the key's two 64-bit halves with splitmix64's finalizer:
// a few multiplications, every bit of the key reaching the low bits that
// pick the bucket. (A byte-oriented hash function over the key took about
// a tenth of a round trip between two threads of one process.)
func hashKey(k key) uint64 {
	h := (uint64(k.srcProc)<<32 | uint64(k.srcThread)) * 0x9e3779b97f4a7c15
	h ^= uint64(k.dstThread)<<32 | uint64(uint32(k.tag))
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

func stripeOf(t ThreadID) int {
	x := uint32(t) * 0x9E3779B1
	return int(x>>26) % nStripes
}

func (t *recvTable) stripe(dst ThreadID) *stripe { return &t.stripes[stripeOf(dst)] }

func (s *stripe) thread(id ThreadID) *threadState {
	ts := s.lookup(id)
	if ts == nil {
		ts = &threadState{arrHead: nilMCB, arrTail: nilMCB, notify: make(chan struct{}, 1)}
		s.threads[id] = ts
		s.lastID, s.last = id, ts
	}
	return ts
}

// lookup returns the state of thread id, nil if it has none. The stripe
// must be locked. A thread's state, once made, stays for the table's life.
func (s *stripe) lookup(id ThreadID) *threadState {
	if s.last != nil && s.lastID == id {
		return s.last
	}
	ts := s.threads[id]
	if ts != nil {
		s.lastID, s.last = id, ts
	}
	return ts
}

func matches(r *Request, k key) bool {
	return (r.srcProc == AnyProc || r.srcProc == k.srcProc) &&
		(r.srcThread == AnyThread || r.srcThread == k.srcThread) &&
		(r.tag == AnyTag || r.tag == k.tag)
}

func exactKey(r *Request) bool {
	return r.srcProc != AnyProc && r.srcThread != AnyThread && r.tag != AnyTag
}

// peekPosted returns, without removing it, the receive takePosted would
// take. The stripe must be locked.
func (t *recvTable) peekPosted(s *stripe, k key, h uint64) *Request {
	var ex *Request
	for r := s.posted[h&t.mask].head; r != nil; r = r.next {
		if r.srcProc == k.srcProc && r.srcThread == k.srcThread && r.tag == k.tag && r.dstThread == k.dstThread {
			ex = r
			break
		}
	}
	if s.wild == 0 {
		return ex
	}
	if ts := s.lookup(k.dstThread); ts != nil {
		for r := ts.wild.head; r != nil; r = r.next {
			if matches(r, k) {
				if ex == nil || r.postSeq < ex.postSeq {
					return r
				}
				break
			}
		}
	}
	return ex
}

// takePosted removes and returns the earliest posted receive matching k,
// or nil. The stripe must be locked.
func (t *recvTable) takePosted(s *stripe, k key, h uint64) *Request {
	bl := &s.posted[h&t.mask]
	var ex, exPrev *Request
	for r := bl.head; r != nil; exPrev, r = r, r.next {
		if r.srcProc == k.srcProc && r.srcThread == k.srcThread && r.tag == k.tag && r.dstThread == k.dstThread {
			ex = r
			break
		}
	}
	var wr, wrPrev *Request
	var ts *threadState
	if s.wild > 0 {
		ts = s.lookup(k.dstThread)
	}
	if ts != nil {
		for r := ts.wild.head; r != nil; wrPrev, r = r, r.next {
			if matches(r, k) {
				wr = r
				break
			}
		}
	}
	if wr != nil && (ex == nil || wr.postSeq < ex.postSeq) {
		ts.wild.unlink(wrPrev, wr)
		s.wild--
		return wr
	}
	if ex != nil {
		bl.unlink(exPrev, ex)
	}
	return ex
}

// enqueue keeps m as unexpected. The stripe must be locked.
func (t *recvTable) enqueue(s *stripe, m *mcb, h uint64) {
	b := h & t.mask
	m.hnext = nilMCB
	if tail := s.unexpTail[b]; tail == nilMCB {
		s.unexp[b] = m.idx
	} else {
		t.pool.at(tail).hnext = m.idx
	}
	s.unexpTail[b] = m.idx
	ts := s.thread(m.key.dstThread)
	m.tnext = nilMCB
	m.tprev = ts.arrTail
	if ts.arrTail == nilMCB {
		ts.arrHead = m.idx
	} else {
		t.pool.at(ts.arrTail).tnext = m.idx
	}
	ts.arrTail = m.idx
	if ts.probes > 0 {
		select {
		case ts.notify <- struct{}{}:
		default:
		}
	}
}

// unlink removes unexpected m from its bucket and thread list. The stripe
// must be locked.
func (t *recvTable) unlink(s *stripe, m *mcb, h uint64) {
	b := h & t.mask
	prev := int32(nilMCB)
	for i := s.unexp[b]; i != nilMCB; prev, i = i, t.pool.at(i).hnext {
		if i == m.idx {
			if prev == nilMCB {
				s.unexp[b] = m.hnext
			} else {
				t.pool.at(prev).hnext = m.hnext
			}
			if s.unexpTail[b] == m.idx {
				s.unexpTail[b] = prev
			}
			break
		}
	}
	ts := s.lookup(m.key.dstThread)
	if m.tprev == nilMCB {
		ts.arrHead = m.tnext
	} else {
		t.pool.at(m.tprev).tnext = m.tnext
	}
	if m.tnext == nilMCB {
		ts.arrTail = m.tprev
	} else {
		t.pool.at(m.tnext).tprev = m.tprev
	}
	m.hnext, m.tprev, m.tnext = nilMCB, nilMCB, nilMCB
}

// findUnexpected returns the earliest unexpected message matching the
// receive pattern of r (exact or wildcard). The stripe must be locked.
func (t *recvTable) findUnexpected(s *stripe, r *Request) *mcb {
	if exactKey(r) {
		k := key{r.srcProc, r.srcThread, r.dstThread, r.tag}
		return t.findExact(s, k, hashKey(k))
	}
	return t.findWild(s, r)
}

// findExact returns the earliest unexpected message of key k, whose hash
// is h. The stripe must be locked.
func (t *recvTable) findExact(s *stripe, k key, h uint64) *mcb {
	return t.exactFrom(s.unexp[h&t.mask], k)
}

// exactFrom returns the first unexpected message of key k in the bucket
// chain from index i on (m.hnext of one found continues the search). The
// stripe must be locked.
func (t *recvTable) exactFrom(i int32, k key) *mcb {
	for i != nilMCB {
		m := t.pool.at(i)
		if m.key == k {
			return m
		}
		i = m.hnext
	}
	return nil
}

// findWild is findUnexpected for a wildcard receive.
func (t *recvTable) findWild(s *stripe, r *Request) *mcb {
	ts := s.lookup(r.dstThread)
	if ts == nil {
		return nil
	}
	for i := ts.arrHead; i != nilMCB; {
		m := t.pool.at(i)
		if matches(r, m.key) {
			return m
		}
		i = m.tnext
	}
	return nil
}

// post matches receive r against the unexpected messages; when one is
// found it is unlinked and returned, else r is left posted. A block with
// more messages of its run (runLeft) stays in the table: the caller takes
// its first message with the stripe still locked (fillSmallLocked). The stripe
// must be locked.
func (t *recvTable) post(s *stripe, r *Request) *mcb {
	if exactKey(r) {
		// The key's hash serves both the look and the posting.
		k := key{r.srcProc, r.srcThread, r.dstThread, r.tag}
		h := hashKey(k)
		if m := t.findExact(s, k, h); m != nil {
			if !m.runLeft() {
				t.unlink(s, m, h)
			}
			return m
		}
		s.seq++
		r.postSeq = s.seq
		s.posted[h&t.mask].push(r)
		return nil
	}
	if m := t.findWild(s, r); m != nil {
		if !m.runLeft() {
			t.unlink(s, m, hashKey(m.key))
		}
		return m
	}
	s.seq++
	r.postSeq = s.seq
	s.thread(r.dstThread).wild.push(r)
	s.wild++
	return nil
}

// unpost removes posted receive r; it reports false when r is no longer
// posted (already matched). The stripe must be locked.
func (t *recvTable) unpost(s *stripe, r *Request) bool {
	if exactKey(r) {
		return s.posted[hashKey(key{r.srcProc, r.srcThread, r.dstThread, r.tag})&t.mask].remove(r)
	}
	ts := s.lookup(r.dstThread)
	if ts != nil && ts.wild.remove(r) {
		s.wild--
		return true
	}
	return false
}

// drain removes every posted receive and unexpected message (on close).
func (t *recvTable) drain() (posted []*Request, unexp []*mcb) {
	for i := range t.stripes {
		s := &t.stripes[i]
		s.mu.Lock()
		for b := range s.posted {
			for r := s.posted[b].head; r != nil; {
				n := r.next
				posted = append(posted, r)
				r = n
			}
			s.posted[b] = reqList{}
			for j := s.unexp[b]; j != nilMCB; {
				m := t.pool.at(j)
				j = m.hnext
				unexp = append(unexp, m)
			}
			s.unexp[b], s.unexpTail[b] = nilMCB, nilMCB
		}
		s.wild = 0
		for _, ts := range s.threads {
			for r := ts.wild.head; r != nil; {
				n := r.next
				posted = append(posted, r)
				r = n
			}
			ts.wild = reqList{}
			ts.arrHead, ts.arrTail = nilMCB, nilMCB
			select {
			case ts.notify <- struct{}{}:
			default:
			}
		}
		s.mu.Unlock()
	}
	return posted, unexp
}
