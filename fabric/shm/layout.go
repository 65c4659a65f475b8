package shm

import (
	"sync/atomic"
	"unsafe"
)

// Segment layout. Every multi-byte field is naturally aligned and accessed
// atomically; fields written by different processes sit on different cache
// lines.
const (
	segMagic   = 0x31686d73726f6370 // "pcorshm1", little-endian
	segVersion = 5

	headerSize = 4096

	// Header fields.
	offMagic     = 0  // u64
	offVersion   = 8  // u32
	offSlots     = 12 // u32: number of slots
	offRingSize  = 16 // u32: bytes of ring per slot (a power of two)
	offPid       = 20 // u32: receiving process
	offStart     = 24 // u64: its start time (guards against pid reuse)
	offClosed    = 32 // u32: 1 once the receiver closed its port
	offHighWater = 36 // u32: slots ever claimed (receivers scan below it)
	offSleeping  = 64 // u32: 1 while the receiver sleeps on its doorbell (bell_linux.go)

	// Slot header fields, relative to the slot's start. The second cache
	// line is written by the consumer (head), the third by the producer
	// (tail), the fourth by a producer about to sleep (wantHead,
	// takeWait). A record is published by its own header (see ring.put);
	// the tail is only a hint of how far the records go, which a
	// consumer streamed to reads after the first header of a batch, so
	// that it does not read the header after the last record, in a line
	// of its own for a record of more than a few bytes, to learn that
	// nothing follows; a consumer that found the ring empty at its last
	// look takes the record it finds alone, without the tail (see
	// Port.collect). The producer reads the head only when the room it
	// last saw runs out.
	slotHeader   = 256
	slotOwner    = 0   // u32: pid of the producing process, 0 when free
	slotReleased = 4   // u32: 1 once the producer let go of the slot
	slotStart    = 8   // u64: the producer's start time
	slotProbe    = 16  // u64: address of the producer's probe word (cma_linux.go)
	slotProbeVal = 24  // u64: the value of the probe word
	slotCMA      = 32  // u32: whether the consumer may read the producer's memory
	slotHead     = 64  // u64: consumer position (bytes ever consumed)
	slotRoomBell = 72  // u32: futex word the consumer bumps to wake a producer waiting for room
	slotTail     = 128 // u64: producer position after its last record (a hint)
	slotWantHead = 192 // u64: consumer position a sleeping producer waits for (0: none)
	slotTakeWait = 200 // u32: producer threads asleep until the consumer takes what was written (WaitTaken)

	// Records in a ring: an 8-byte header, the bytes, padding to 8. The
	// header holds the length in its low half and recordValid in its
	// high half; a length of wrapMark sends the reader to the ring's
	// start. A header of 0 is a record not yet written: the producer
	// zeroes the header after a record before it stores the record's own.
	recordHeader = 8
	recordValid  = 1
	wrapMark     = ^uint32(0)
)

// segmentSize is the size of a segment with slots rings of ringSize bytes.
func segmentSize(slots, ringSize int) int {
	return headerSize + slots*(slotHeader+ringSize)
}

// slotOffset is where slot i starts in a segment.
func slotOffset(i, ringSize int) int { return headerSize + i*(slotHeader+ringSize) }

// recordSize is the room a record of n bytes takes in a ring.
func recordSize(n int) uint64 { return uint64(recordHeader + (n+7)&^7) }

func u32at(mem []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
func u64at(mem []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&mem[off])) }

func load32(mem []byte, off int) uint32     { return atomic.LoadUint32(u32at(mem, off)) }
func store32(mem []byte, off int, v uint32) { atomic.StoreUint32(u32at(mem, off), v) }
func load64(mem []byte, off int) uint64     { return atomic.LoadUint64(u64at(mem, off)) }
func store64(mem []byte, off int, v uint64) { atomic.StoreUint64(u64at(mem, off), v) }

func atomicAdd32(mem []byte, off int) { atomic.AddUint32(u32at(mem, off), 1) }
func casUint32(mem []byte, off int, old, new uint32) bool {
	return atomic.CompareAndSwapUint32(u32at(mem, off), old, new)
}
