package shm

// ring is one slot of a segment seen from one side: the producer (a
// sending port) or the consumer (the receiving port).
type ring struct {
	mem  []byte // the segment
	base int    // offset of the slot's header
	data []byte // the slot's ring bytes
	mask uint64

	// Producer side: the position to write next (mirrors the tail).
	// Consumer side: the position to read next, and the position already
	// published to the producer (the head).
	pos       uint64
	published uint64
	// held: the consumer gave a record back (Port.Hold); nothing more is
	// read from this ring until the port resumes.
	held bool
	// probed: the consumer has tried reading the producer's memory.
	probed bool
}

func newRing(s *segment, i int) *ring {
	base := slotOffset(i, s.ringSize)
	return &ring{
		mem:  s.mem,
		base: base,
		data: s.mem[base+slotHeader : base+slotHeader+s.ringSize],
		mask: uint64(s.ringSize - 1),
	}
}

func (r *ring) size() uint64 { return uint64(len(r.data)) }

// put copies head and body into the ring as one record and publishes it.
// It reports false, writing nothing, when the ring lacks room.
func (r *ring) put(head, body []byte) bool {
	n := len(head) + len(body)
	need := recordSize(n)
	free := r.size() - (r.pos - load64(r.mem, r.base+slotHead))
	idx := r.pos & r.mask
	pad := uint64(0)
	if idx+need > r.size() {
		pad = r.size() - idx // skip to the ring's start
	}
	if pad+need > free {
		return false
	}
	if pad > 0 {
		*u32at(r.data, int(idx)) = wrapMark
		r.pos += pad
		idx = 0
	}
	*u32at(r.data, int(idx)) = uint32(n)
	copy(r.data[idx+recordHeader:], head)
	copy(r.data[idx+recordHeader+uint64(len(head)):], body)
	r.pos += need
	store64(r.mem, r.base+slotTail, r.pos)
	return true
}

// empty reports whether the producer has published nothing unread.
func (r *ring) empty() bool { return load64(r.mem, r.base+slotTail) == r.pos }

// take stores up to len(msgs) records in msgs, aliasing the ring, and
// the position of each in at, and returns how many. The records stay
// valid until release. A record whose
// length cannot be right (the producer wrote garbage) ends the reading of
// this ring: take reports corrupt, and the caller discards the ring.
func (r *ring) take(msgs [][]byte, at []uint64, maxLen int) (n int, corrupt bool) {
	tail := load64(r.mem, r.base+slotTail)
	if tail-r.published > r.size() || tail < r.pos {
		return 0, true
	}
	for n < len(msgs) && r.pos < tail {
		idx := r.pos & r.mask
		if r.size()-idx < recordHeader {
			return n, true
		}
		l := *u32at(r.data, int(idx))
		if l == wrapMark {
			r.pos += r.size() - idx
			continue
		}
		need := recordSize(int(l))
		if int(l) > maxLen || idx+need > r.size() || r.pos+need > tail {
			return n, true
		}
		msgs[n] = r.data[idx+recordHeader : idx+recordHeader+uint64(l)]
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
		store64(r.mem, r.base+slotHead, r.pos)
	}
}

// reset empties the ring and frees the slot for another producer. Only
// the consumer calls it, once the producer is gone.
func (r *ring) reset() {
	store64(r.mem, r.base+slotTail, 0)
	store64(r.mem, r.base+slotHead, 0)
	r.pos, r.published = 0, 0
	store64(r.mem, r.base+slotStart, 0)
	store64(r.mem, r.base+slotProbe, 0)
	store64(r.mem, r.base+slotProbeVal, 0)
	store32(r.mem, r.base+slotCMA, cmaUnknown)
	store32(r.mem, r.base+slotReleased, 0)
	store32(r.mem, r.base+slotOwner, 0)
}
