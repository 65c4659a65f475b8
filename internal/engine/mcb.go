package engine

import (
	"math/bits"
	"sync"
)

// key identifies a message stream in the receive table: pCoR's
// <source process, source thread, destination thread, tag>.
type key struct {
	srcProc   ProcID
	srcThread ThreadID
	dstThread ThreadID
	tag       Tag
}

// chunkSize is the unit in which the storage of a large message grows, and
// its receive budget is taken, as its fragments arrive, so that a header
// claiming a huge message costs memory only for what has actually arrived
// (plus at most one chunk). Chunks are pooled.
const chunkSize = 256 << 10

var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// bitBlock is the number of fragments one lazily allocated bitmap block covers.
const bitBlock = 4096

// minFragSize is the smallest fragment a multi-fragment message may use.
const minFragSize = 256

const nilMCB = -1

// mcb is a message control block: the attributes of one incoming message,
// its reassembly state and, once complete, its place in the receive table.
type mcb struct {
	// What a small message's arrival, its receive and the block's reuse
	// touch comes first: the first two cache lines hold all of it but
	// its spare storage (the third line). At many threads' messages
	// stored at once each block is cold when reached, so every line a
	// small message touches is a miss; the block is 256 bytes, and the
	// segments that hold the blocks are page aligned, so each block has
	// four lines of its own.
	idx   int32
	hnext int32 // next in the bucket chain
	tprev int32 // arrival list of the destination thread
	tnext int32

	key   key
	msgID uint64

	total    uint64
	fragSize uint32
	nfrag    uint32
	got      uint32
	rndv     bool // a rendezvous announcement or done message (rndv.go)
	// chunked says chunks is in use: a small message's block is cleared
	// and put back without reading the line of chunks.
	chunked bool

	gotBytes uint64
	reserved int64 // receive budget held: see Engine.reserve
	// frags is the fragment bitmap of a message of up to wordFrags
	// fragments, bits that of a longer one, in blocks of bitBlock bits.
	// Most messages are of one fragment: in the block itself, their
	// bitmap costs no line of its own to clear and set (the block and
	// the slice that holds it were two more lines per message, cold when
	// many threads' messages wait in the table).
	frags uint64
	data  []byte  // contiguous storage: small, owned or handed over
	box   *[]byte // the pool's box of a small data buffer
	// owner is the posted receive that took this message when its first
	// fragment arrived; the fragments are then placed straight into the
	// receive's buffer.
	owner *Request

	// spare is the storage of the block's last small message, kept for
	// its next (Engine.freeMCB): the pool's buffers are per CPU, and
	// buffers taken by the thread that receives datagrams and given back
	// by the threads that receive the messages, on other CPUs, went
	// through the pool's slow path each time.
	spare    []byte
	spareBox *[]byte
	// expBy is the port told to expect fragments of the message in the
	// owner's buffer (placing.go), if any. p.rxmu guards it.
	expBy *dispatcher
	bits  [][]uint64 // fragment bitmap of a long message

	chunks []*[chunkSize]byte // storage of a large message, filled as it arrives

	// run holds further whole small messages of the block's key that
	// arrived after this one, with nothing else for its thread between
	// them (runs.go): records of a 4-byte length, an 8-byte message id and
	// the bytes, taken in order from runOff on. inRun says data is a
	// record's bytes inside run, not a buffer of its own.
	run    []byte
	runBuf *[runBytes]byte // run's storage (Engine.runBufs)
	runOff int32
	inRun  bool // to 256 bytes (TestMCBLayout)
}

// wordFrags is the largest number of fragments whose bitmap is mcb.frags.
const wordFrags = 64

// hasFrag reports whether fragment i has arrived.
func (m *mcb) hasFrag(i uint32) bool {
	if m.nfrag <= wordFrags {
		return i < wordFrags && m.frags&(1<<i) != 0
	}
	b := m.bits[i/bitBlock]
	j := i % bitBlock
	if int(j/64) >= len(b) {
		return false
	}
	return b[j/64]&(1<<(j%64)) != 0
}

func (m *mcb) setFrag(i uint32) {
	if m.nfrag <= wordFrags {
		if i < wordFrags {
			m.frags |= 1 << i
		}
		return
	}
	b := m.bits[i/bitBlock]
	j := i % bitBlock
	if int(j/64) >= len(b) {
		// A message of one block gets the words its fragments need (one
		// for a small message, which at many threads' streams held
		// stored means many blocks), a longer one whole blocks.
		n := bitBlock / 64
		if len(m.bits) == 1 {
			n = max(int(j/64)+1, (min(int(m.nfrag), bitBlock)+63)/64)
		}
		nb := make([]uint64, n)
		copy(nb, b)
		b = nb
		m.bits[i/bitBlock] = b
	}
	b[j/64] |= 1 << (j % 64)
}

// start prepares m for a message of total bytes in fragSize fragments.
func (m *mcb) start(total uint64, fragSize uint32, nfrag uint32, pool *bufPool) {
	m.total, m.fragSize, m.nfrag = total, fragSize, nfrag
	m.got, m.gotBytes = 0, 0
	m.frags = 0
	nb := (int(nfrag) + bitBlock - 1) / bitBlock
	if nfrag <= wordFrags {
		// The bitmap is frags: bits, kept from a longer message, stay
		// cleared.
	} else if nb == 1 {
		if len(m.bits) != 1 {
			m.bits = append(m.bits[:0], nil) // a cleared block is kept for reuse
		}
	} else {
		m.bits = make([][]uint64, nb)
	}
	if m.data != nil {
		// Storage supplied by the receive that owns the message.
	} else if total <= uint64(cap(m.spare)) && total > 0 {
		m.data, m.box = m.spare[:total], m.spareBox
		m.spare, m.spareBox = nil, nil
	} else if total <= chunkSize {
		m.data, m.box = pool.get(int(total))
	} else {
		m.chunks = make([]*[chunkSize]byte, (total+chunkSize-1)/chunkSize)
		m.chunked = true
	}
}

// place stores fragment idx (its bytes body) and reports whether the
// message is now complete.
func (m *mcb) place(idx uint32, body []byte) bool {
	off := uint64(idx) * uint64(m.fragSize)
	n := uint64(len(body))
	if m.data != nil {
		copy(m.data[off:], body)
	} else {
		for len(body) > 0 {
			c := off / chunkSize
			if m.chunks[c] == nil {
				m.chunks[c] = chunkPool.Get().(*[chunkSize]byte)
			}
			k := copy(m.chunks[c][off%chunkSize:], body)
			body = body[k:]
			off += uint64(k)
		}
	}
	return m.arrived(idx, n)
}

// arrived records fragment idx (n bytes) as arrived, its bytes in place,
// and reports whether the message is now complete.
func (m *mcb) arrived(idx uint32, n uint64) bool {
	m.setFrag(idx)
	m.got++
	m.gotBytes += n
	return m.got == m.nfrag
}

// newChunks is the number of chunks fragment idx (n bytes) would add to a
// message stored in chunks.
func (m *mcb) newChunks(idx uint32, n uint64) int64 {
	if m.data != nil || n == 0 {
		return 0
	}
	off := uint64(idx) * uint64(m.fragSize)
	k := int64(0)
	for c := off / chunkSize; c <= (off+n-1)/chunkSize; c++ {
		if m.chunks[c] == nil {
			k++
		}
	}
	return k
}

// chunkArrived reports whether a fragment holding bytes of chunk c has
// arrived.
func (m *mcb) chunkArrived(c uint64) bool {
	lo := c * chunkSize
	hi := min(lo+chunkSize, m.total)
	for i := lo / uint64(m.fragSize); i*uint64(m.fragSize) < hi; i++ {
		if m.hasFrag(uint32(i)) {
			return true
		}
	}
	return false
}

// unpin moves the message out of the storage it shares with a receive's
// buffer (src, holding the fragments arrived so far) into storage of its
// own: a small message whole, a large one only in the chunks that hold
// arrived bytes. It returns the bytes of storage taken.
func (m *mcb) unpin(src []byte, pool *bufPool) int64 {
	if m.total <= chunkSize {
		m.data, m.box = pool.get(int(m.total))
		copy(m.data, src)
		return int64(m.total)
	}
	m.data = nil
	m.chunks = make([]*[chunkSize]byte, (m.total+chunkSize-1)/chunkSize)
	m.chunked = true
	n := int64(0)
	for c := range m.chunks {
		if m.chunkArrived(uint64(c)) {
			ch := chunkPool.Get().(*[chunkSize]byte)
			copy(ch[:], src[uint64(c)*chunkSize:])
			m.chunks[c] = ch
			n += chunkSize
		}
	}
	return n
}

// storage is the bytes of storage the message holds of its own (not a
// receive's buffer).
func (m *mcb) storage() int64 {
	if m.data != nil {
		return int64(m.total)
	}
	n := int64(0)
	for _, ch := range m.chunks {
		if ch != nil {
			n += chunkSize
		}
	}
	return n
}

// copyTo copies the message into dst and returns the bytes copied.
func (m *mcb) copyTo(dst []byte) int {
	if m.data != nil {
		return copy(dst, m.data)
	}
	n := 0
	for c, ch := range m.chunks {
		if n >= len(dst) {
			break
		}
		l := m.total - uint64(c)*chunkSize
		if l > chunkSize {
			l = chunkSize
		}
		if ch == nil {
			k := min(int(l), len(dst)-n)
			clear(dst[n : n+k])
			n += k
			continue
		}
		n += copy(dst[n:], ch[:l])
	}
	return n
}

// bytes returns the message as one slice, assembling chunked storage.
func (m *mcb) bytes() []byte {
	if m.data == nil && m.chunked {
		d := make([]byte, m.total)
		m.copyTo(d)
		m.releaseChunks()
		m.data = d
	}
	return m.data
}

func (m *mcb) releaseChunks() {
	for i, ch := range m.chunks {
		if ch != nil {
			chunkPool.Put(ch)
			m.chunks[i] = nil
		}
	}
	m.chunks = nil
	m.chunked = false
}

// clear forgets the message, keeping small allocations for reuse.
func (m *mcb) clear() {
	// Only the words of the message's fragments can have been set: a
	// message of a few thousand fragments clears the words it used of its
	// block, not 512 bytes; one of up to wordFrags only frags.
	words := (int(m.nfrag) + 63) / 64
	long := m.nfrag > wordFrags
	m.key = key{}
	m.msgID = 0
	m.rndv = false
	m.total, m.fragSize, m.nfrag, m.got, m.gotBytes, m.reserved = 0, 0, 0, 0, 0, 0
	m.frags = 0
	for i := 0; long && i < len(m.bits); i++ {
		if b := m.bits[i]; b != nil && len(m.bits) == 1 {
			clear(b[:min(words, len(b))])
			continue
		}
		m.bits[i] = nil
	}
	if len(m.bits) > 1 {
		m.bits = nil
	}
	if m.chunked {
		m.releaseChunks()
	}
	m.data, m.box = nil, nil
	m.owner = nil
	m.expBy = nil
	if m.run != nil {
		m.run, m.runBuf, m.runOff, m.inRun = nil, nil, 0, false
	}
	m.hnext, m.tprev, m.tnext = nilMCB, nilMCB, nilMCB
}

// mcbPool is the array of control blocks with a free list. Blocks are
// made as they are first needed, mcbSeg at a time, up to the pool's
// capacity: a receiver that many threads' streams fill with messages no
// thread has received yet (1,000 threads with 64 in flight each) holds
// them rather than answering BUSY, while one that never does so keeps the
// memory of mcbSeg blocks.
//
// Blocks are mostly taken by the thread that receives datagrams and put
// back by the threads that receive their messages, on other CPUs. So that
// the two do not pass one lock's cache line (and each block's) back and
// forth for every message, a block put back goes onto a list of its own
// (ret, under retMu), which get moves onto the free list every
// retBatch-th take or when the free list runs out; and a block is cleared
// when taken, by the thread about to fill it, not when put back.
type mcbPool struct {
	// segs holds the blocks, segment i those from i*mcbSeg. An entry is
	// written once, under mu, before any of its blocks is taken; whoever
	// is given a block's index (under the lock of the table or list that
	// holds it) reads the entry after that write (at).
	segs [][]mcb
	max  int // capacity

	_    [64]byte // what get writes on cache lines of its own
	mu   sync.Mutex
	free []int32
	made int    // blocks made, under mu
	gets uint32 // takes, under mu

	_     [64]byte // and what put writes
	retMu sync.Mutex
	ret   []int32
	_     [64]byte
}

// mcbSeg is the number of blocks made at a time (a power of two).
const (
	mcbSegShift = 12
	mcbSeg      = 1 << mcbSegShift
)

// retBatch is how many takes go by between two moves of the blocks put
// back onto the free list (besides when the list runs out).
const retBatch = 32

func newMCBPool(n int) *mcbPool {
	n = max(n, 1)
	p := &mcbPool{segs: make([][]mcb, (n+mcbSeg-1)/mcbSeg), max: n, ret: make([]int32, 0, min(n, mcbSeg))}
	p.grow()
	return p
}

// grow makes the next segment of blocks, free. p.mu is held (or p is new).
func (p *mcbPool) grow() bool {
	if p.made >= p.max {
		return false
	}
	base := p.made
	seg := make([]mcb, min(mcbSeg, p.max-base))
	for i := range seg {
		seg[i].idx = int32(base + i)
		seg[i].hnext, seg[i].tprev, seg[i].tnext = nilMCB, nilMCB, nilMCB
	}
	p.segs[base>>mcbSegShift] = seg
	for i := len(seg) - 1; i >= 0; i-- {
		p.free = append(p.free, int32(base+i)) // lowest taken first
	}
	p.made += len(seg)
	return true
}

// get takes a free block, cleared, or nil when all are in use.
func (p *mcbPool) get() *mcb {
	p.mu.Lock()
	if p.gets++; len(p.free) == 0 || p.gets%retBatch == 0 {
		p.retMu.Lock()
		p.free = append(p.free, p.ret...)
		p.ret = p.ret[:0]
		p.retMu.Unlock()
	}
	if len(p.free) == 0 && !p.grow() {
		p.mu.Unlock()
		return nil
	}
	n := len(p.free)
	i := p.free[n-1]
	p.free = p.free[:n-1]
	p.mu.Unlock()
	m := p.at(i)
	m.clear()
	return m
}

// put gives m back. What m holds that is large (chunks, an owning
// receive and its buffer, a data buffer above a few KiB) is let go at
// once; the rest is cleared when m is taken again.
func (p *mcbPool) put(m *mcb) {
	if m.chunked {
		m.releaseChunks()
	}
	m.owner = nil
	if cap(m.data) > keptData {
		m.data, m.box = nil, nil
	}
	p.retMu.Lock()
	p.ret = append(p.ret, m.idx)
	p.retMu.Unlock()
}

// keptData is the largest data buffer a free block may still point to
// until it is taken again, and the largest it keeps as its spare.
const keptData = 1 << 10

// keep makes m's data buffer, its own storage, its spare, or gives it back
// to pool.
func (m *mcb) keep(pool *bufPool) {
	if cap(m.data) > keptData || cap(m.data) <= cap(m.spare) {
		pool.put(m.data, m.box)
	} else {
		if m.spare != nil {
			pool.put(m.spare, m.spareBox)
		}
		m.spare, m.spareBox = m.data[:cap(m.data)], m.box
	}
	m.data, m.box = nil, nil
}

func (p *mcbPool) at(i int32) *mcb { return &p.segs[i>>mcbSegShift][i&(mcbSeg-1)] }

func (p *mcbPool) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retMu.Lock()
	defer p.retMu.Unlock()
	return p.made - len(p.free) - len(p.ret)
}

// bufPool recycles small message buffers in power-of-two size classes,
// each buffer in a box (a *[]byte of its whole capacity) that goes with
// it, so that keeping it allocates nothing.
type bufPool struct {
	classes [17]freeList[[]byte] // 1 B .. 64 KiB
}

// bufClassKeep is the number of buffers of class c a bufPool keeps (see
// freeList.put): about 256 KiB of each class, at least 16 buffers.
func bufClassKeep(c int) int { return max(16, (256<<10)>>c) }

// sizeClass returns the class of a buffer of n bytes (n > 0): the
// smallest c with 1<<c >= n.
func sizeClass(n int) int {
	return bits.Len(uint(n - 1))
}

// get returns a buffer of n bytes and the box that carries it (for put,
// or nil for a buffer too large to keep).
func (bp *bufPool) get(n int) ([]byte, *[]byte) {
	if n == 0 {
		return []byte{}, nil
	}
	c := sizeClass(n)
	if c >= len(bp.classes) {
		return make([]byte, n), nil
	}
	if box := bp.classes[c].get(); box != nil {
		return (*box)[:n], box
	}
	b := make([]byte, 1<<c)
	return b[:n], &b
}

// put returns b, in its box if it has one.
func (bp *bufPool) put(b []byte, box *[]byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 {
		return
	}
	k := sizeClass(c)
	if k >= len(bp.classes) {
		return
	}
	if box == nil {
		box = new([]byte)
	}
	*box = b[:c]
	bp.classes[k].put(box, bufClassKeep(k))
}
