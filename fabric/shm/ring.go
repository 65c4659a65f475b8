package shm

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// ring is one slot of a segment seen from one side: the producer (a
// sending port) or the consumer (the receiving port).
type ring struct {
	mem  []byte // the segment
	base int    // offset of the slot's header
	data []byte // the slot's ring bytes
	mask uint64
	// The hot path's words, found once: the ring's first byte, its size,
	// and the consumer's head.
	dp   unsafe.Pointer
	sz   uint64
	head *uint64
	tail *uint64

	// Producer side: the position to write next.
	// Consumer side: the position to read next, and the position already
	// published to the producer (the head).
	pos       uint64
	published uint64
	// room (producer side): the head as last read. The producer reads
	// the consumer's line again only when this says the ring is full.
	room uint64
	// held: the consumer gave a record back (Port.Hold); nothing more is
	// read from this ring until the port resumes.
	held bool
	// broken: the producer wrote what cannot be a record; nothing more
	// is read from this ring until its producer is gone and it is reset.
	broken bool
	// probed: the consumer has tried reading the producer's memory.
	probed bool
	// streamed (consumer side): the last look at the ring found records,
	// or there was none yet (see Port.collect).
	streamed bool
}

func newRing(s *segment, i int) *ring {
	base := slotOffset(i, s.ringSize)
	data := s.mem[base+slotHeader : base+slotHeader+s.ringSize]
	return &ring{
		mem:  s.mem,
		base: base,
		data: data,
		mask: uint64(s.ringSize - 1),
		dp:   unsafe.Pointer(&data[0]),
		sz:   uint64(len(data)),
		head: u64at(s.mem, base+slotHead),
		tail: u64at(s.mem, base+slotTail),
		// Records may have queued up before the first look: it reads
		// the tail.
		streamed: true,
	}
}

func (r *ring) size() uint64 { return r.sz }

// recordWord is the header of a record of n bytes.
func recordWord(n uint32) uint64 { return recordValid<<32 | uint64(n) }

// header returns the word at ring offset idx (a multiple of 8).
func (r *ring) header(idx uint64) *uint64 { return (*uint64)(unsafe.Add(r.dp, idx&r.mask)) }

// put copies head and body into the ring as one record and publishes it.
// It reports false, writing nothing, when the ring lacks room.
//
// The record's bytes and a zero header after them are written first, and
// the record's own header last: a consumer that sees a header sees the
// record whole, and at the position after it a zero header (nothing yet)
// until the next record is published there. The consumer so learns of a
// record from the record's cache line alone.
func (r *ring) put(head, body []byte) bool {
	n := len(head) + len(body)
	need := recordSize(n)
	idx := r.pos & r.mask
	at := idx // where the record goes
	end := r.pos + need + recordHeader
	if idx+need > r.sz {
		at = 0 // skip to the ring's start
		end += r.sz - idx
	}
	if end > r.room+r.sz {
		r.room = atomic.LoadUint64(r.head)
		if end > r.room+r.sz {
			return false
		}
	}
	rec := unsafe.Slice((*byte)(unsafe.Add(r.dp, at+recordHeader)), n)
	// The consumer is looking at the record's header, in the first cache
	// line of the record: that line is written last, at once, its header
	// just after the bytes it holds. A store takes the line from the
	// consumer's cache, and stores are made visible in program order, so
	// written first it would be taken back by the consumer's next look
	// while the following lines are written, and taken again for the
	// header (two transfers of the line for a message instead of one).
	first := int(lineSize - (at+recordHeader)%lineSize) // bytes of rec in the header's line
	*r.header(at + need) = 0
	if first < n {
		putAt(rec, first, head, body)
		putUpTo(rec, first, head, body)
	} else {
		copy(rec, head)
		copy(rec[len(head):], body)
	}
	atomic.StoreUint64(r.header(at), recordWord(uint32(n)))
	if at != idx {
		// The reader goes on at the start once it sees the mark, which
		// is stored after the record there.
		atomic.StoreUint64(r.header(idx), recordWord(wrapMark))
	}
	r.pos = end - recordHeader
	atomic.StoreUint64(r.tail, r.pos)
	return true
}

// headFor is the consumer position from which a record of n bytes fits
// (with the padding to the ring's start it may need, and the zero header
// after it).
func (r *ring) headFor(n int) uint64 {
	need := recordSize(n) + recordHeader
	idx := r.pos & r.mask
	if idx+need-recordHeader > r.size() {
		need += r.size() - idx
	}
	return r.pos + need - min(r.pos+need, r.size())
}

// waitRoom sleeps, at most d, until the consumer has made room for a
// record of n bytes and for a quarter of the ring besides (so that a
// producer that waits wakes once per quarter, not once per record). Only
// the producer calls it.
func (r *ring) waitRoom(n int, d time.Duration) {
	want := r.headFor(n)
	if q := r.pos + r.size()/4; q > r.size() {
		want = max(want, q-r.size())
	}
	bell := u32at(r.mem, r.base+slotRoomBell)
	v := atomic.LoadUint32(bell)
	store64(r.mem, r.base+slotWantHead, want)
	if load64(r.mem, r.base+slotHead) < want {
		futexWaitTimeout(bell, v, d)
	}
	store64(r.mem, r.base+slotWantHead, 0)
}

// waitTaken sleeps, at most d, until the consumer has taken every record
// written so far. Only the producer calls it, holding its ring.
func (r *ring) waitTaken(d time.Duration) {
	bell := u32at(r.mem, r.base+slotRoomBell)
	v := atomic.LoadUint32(bell)
	atomic.AddUint32(u32at(r.mem, r.base+slotTakeWait), 1)
	if load64(r.mem, r.base+slotHead) < r.pos {
		futexWaitTimeout(bell, v, d)
	}
	atomic.AddUint32(u32at(r.mem, r.base+slotTakeWait), ^uint32(0))
}

// empty reports whether the producer has published nothing unread.
func (r *ring) empty() bool { return atomic.LoadUint64(r.header(r.pos)) == 0 }

// take stores up to len(msgs) records in msgs, aliasing the ring, and
// the position of each in at, and returns how many. The records stay
// valid until release. A record whose length cannot be right (the
// producer wrote garbage) ends the reading of this ring: take reports
// corrupt, and the caller discards the ring.
//
// tail is the producer's tail as the caller read it (or the position, for
// one record alone): past the first record, take reads no header at or
// beyond it.
func (r *ring) take(msgs [][]byte, at []uint64, maxLen int, tail uint64) (n int, corrupt bool) {
	// At most a quarter of the ring per batch: its room goes back to the
	// producer when the batch is handled, so the producer fills one part
	// of the ring while the consumer empties another.
	stop := r.pos + r.sz/4
	at = at[:len(msgs)]
	for n < len(msgs) && (n == 0 || r.pos < stop && r.pos < tail) {
		idx := r.pos & r.mask
		h := atomic.LoadUint64(r.header(idx))
		if h == 0 {
			break
		}
		l := uint32(h)
		if h>>32 != recordValid {
			return n, true
		}
		if l == wrapMark {
			if idx == 0 {
				return n, true
			}
			r.pos += r.sz - idx
			continue
		}
		need := recordSize(int(l))
		if int(l) > maxLen || idx+need > r.sz {
			return n, true
		}
		// The datagram's capacity ends with it: an append to it cannot
		// write into the ring.
		msgs[n] = unsafe.Slice((*byte)(unsafe.Add(r.dp, idx+recordHeader)), l)
		at[n] = r.pos
		n++
		r.pos += need
	}
	return n, false
}

// release gives the room of every record taken so far back to the
// producer.
func (r *ring) release() {
	if r.published != r.pos {
		r.published = r.pos
		atomic.StoreUint64(r.head, r.pos)
		// The producer stores the position it waits for (or counts
		// itself among the threads waiting for the ring to be read), then
		// looks at the head: one of the two sees the other's store.
		if w := load64(r.mem, r.base+slotWantHead); w != 0 && r.pos >= w || load32(r.mem, r.base+slotTakeWait) != 0 {
			atomicAdd32(r.mem, r.base+slotRoomBell)
			futexWakeAll(u32at(r.mem, r.base+slotRoomBell))
		}
	}
}

// reset empties the ring and frees the slot for another producer. Only
// the consumer calls it, once the producer is gone.
func (r *ring) reset() {
	// What the last producer wrote stays in the ring: the next one starts
	// at a zero header.
	atomic.StoreUint64(r.header(0), 0)
	store64(r.mem, r.base+slotTail, 0)
	store64(r.mem, r.base+slotHead, 0)
	r.pos, r.published, r.broken = 0, 0, false
	store64(r.mem, r.base+slotStart, 0)
	store64(r.mem, r.base+slotProbe, 0)
	store64(r.mem, r.base+slotProbeVal, 0)
	store64(r.mem, r.base+slotWantHead, 0)
	store32(r.mem, r.base+slotTakeWait, 0)
	store32(r.mem, r.base+slotCMA, cmaUnknown)
	store32(r.mem, r.base+slotReleased, 0)
	store32(r.mem, r.base+slotOwner, 0)
}

// lineSize is the size of a cache line (64 B on the machines this runs on;
// a larger line only makes put's order less useful).
const lineSize = 64

// putAt copies the bytes of head followed by body from offset off on into
// rec[off:].
func putAt(rec []byte, off int, head, body []byte) {
	if off < len(head) {
		k := copy(rec[off:], head[off:])
		copy(rec[off+k:], body)
		return
	}
	copy(rec[off:], body[off-len(head):])
}

// putUpTo copies the first n bytes of head followed by body into rec.
func putUpTo(rec []byte, n int, head, body []byte) {
	if n <= len(head) {
		copy(rec[:n], head)
		return
	}
	copy(rec, head)
	copy(rec[len(head):n], body)
}
