package verbs

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is an rxe queue shared with the kernel (struct rxe_queue_buf): a
// header with the element size, index mask, producer and consumer indices
// on separate cache lines, then the slots. Indices are stored masked;
// the ring is empty when prod == cons and full when prod+1 == cons.
type ring struct {
	mem      []byte
	log2     uint32
	mask     uint32
	prod     *uint32
	cons     *uint32
	elemSize int
}

// mapRing maps a queue the kernel described with mminfo.
func mapRing(fd int, mi mmInfo) (*ring, error) {
	if mi.Size < rqbData {
		return nil, fmt.Errorf("rdma: ring size %d too small", mi.Size)
	}
	mem, err := unix.Mmap(fd, int64(mi.Offset), int(mi.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("rdma: mmap ring: %w", err)
	}
	r, err := newRing(mem)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return r, nil
}

// newRing interprets mem as a ring and validates its header.
func newRing(mem []byte) (*ring, error) {
	r := &ring{
		mem:  mem,
		log2: *(*uint32)(unsafe.Pointer(&mem[rqbLog2ElemSize])),
		mask: *(*uint32)(unsafe.Pointer(&mem[rqbIndexMask])),
		prod: (*uint32)(unsafe.Pointer(&mem[rqbProducerIndex])),
		cons: (*uint32)(unsafe.Pointer(&mem[rqbConsumerIndex])),
	}
	if r.log2 > 16 || r.mask == 0 || r.mask&(r.mask+1) != 0 {
		return nil, fmt.Errorf("rdma: bad ring header (log2 %d mask %#x)", r.log2, r.mask)
	}
	r.elemSize = 1 << r.log2
	if rqbData+(int(r.mask)+1)*r.elemSize > len(mem) {
		return nil, fmt.Errorf("rdma: ring of %d x %d B does not fit %d B", r.mask+1, r.elemSize, len(mem))
	}
	return r, nil
}

func (r *ring) unmap() error {
	if r == nil || r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem = nil
	return err
}

// slot returns the element at index i.
func (r *ring) slot(i uint32) []byte {
	off := rqbData + int(i&r.mask)<<r.log2
	return r.mem[off : off+r.elemSize : off+r.elemSize]
}

// capacity is the number of elements the ring holds at once.
func (r *ring) capacity() int { return int(r.mask) }

// Producer side (send and receive queues).

// producerSlot returns the next free slot, or nil when the ring is full.
func (r *ring) producerSlot() []byte {
	p := atomic.LoadUint32(r.prod)
	if (p+1)&r.mask == atomic.LoadUint32(r.cons) {
		return nil
	}
	return r.slot(p)
}

// produce publishes the slot returned by producerSlot.
func (r *ring) produce() {
	p := atomic.LoadUint32(r.prod)
	atomic.StoreUint32(r.prod, (p+1)&r.mask)
}

// inFlight is the number of produced elements not yet consumed.
func (r *ring) inFlight() int {
	return int((atomic.LoadUint32(r.prod) - atomic.LoadUint32(r.cons)) & r.mask)
}

// Consumer side (completion queue).

// consumerSlot returns the oldest element, or nil when the ring is empty.
func (r *ring) consumerSlot() []byte {
	c := atomic.LoadUint32(r.cons)
	if c == atomic.LoadUint32(r.prod) {
		return nil
	}
	return r.slot(c)
}

// consume releases the slot returned by consumerSlot.
func (r *ring) consume() {
	c := atomic.LoadUint32(r.cons)
	atomic.StoreUint32(r.cons, (c+1)&r.mask)
}
