package shm

import (
	"fmt"
	"os"

	"github.com/pcor-go/pcor/fabric"
)

// Limits and defaults of a port's segment.
const (
	// DefaultDir is where segments live unless Config.Dir or PCOR_SHM_DIR
	// says otherwise.
	DefaultDir = "/dev/shm"
	// DefaultSlots is how many sending ports one receiver takes.
	DefaultSlots = 64
	// DefaultRingSize is the ring of one sender in bytes.
	DefaultRingSize = 2 << 20
	// DefaultMaxDatagram is the largest datagram of any fabric, which is
	// also the largest fragment the engine sends.
	DefaultMaxDatagram = fabric.MaxDatagramSize
	// DefaultBatchSize is the number of datagrams per Send or Receive.
	DefaultBatchSize = 64
	// DefaultSpin is how many empty looks a blocking Receive takes,
	// yielding between them, before it sleeps.
	DefaultSpin = 64
	// DefaultSingleCopyMin is the smallest message read by single copy
	// (cma_linux.go). Below it, two copies through a ring cost less: at
	// 64 KiB a message cost both processes 27-36 µs of CPU through the
	// ring against 65-85 µs read with process_vm_readv (rendezvous
	// included); at 2 MiB 730-1100 µs against 490-780 µs.
	DefaultSingleCopyMin = 256 << 10

	MaxSlots    = 4096
	MinRingSize = 64 << 10
	MaxRingSize = 1 << 30
)

// Config tunes a port. The zero value gives the defaults.
type Config struct {
	// Dir is the tmpfs directory holding segments (default PCOR_SHM_DIR,
	// else /dev/shm). Ports meet only within one directory.
	Dir string
	// Slots is how many sending ports this port can receive from.
	Slots int
	// RingSize is each sender's ring in bytes, a power of two.
	RingSize int
	// MaxDatagram is the largest datagram, at most RingSize/4.
	MaxDatagram int
	// BatchSize is the number of datagrams per call.
	BatchSize int
	// Spin is how many empty looks a blocking Receive takes before it
	// sleeps; negative means none.
	Spin int
	// SingleCopyMin is the smallest message the engine sends by single
	// copy (fabric.RemoteReadMin); smaller ones cross the ring.
	SingleCopyMin int
}

func (c Config) withDefaults() Config {
	if c.Dir == "" {
		c.Dir = os.Getenv("PCOR_SHM_DIR")
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.RingSize == 0 {
		c.RingSize = DefaultRingSize
	}
	if c.MaxDatagram == 0 {
		c.MaxDatagram = DefaultMaxDatagram
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Spin == 0 {
		c.Spin = DefaultSpin
	}
	if c.SingleCopyMin == 0 {
		c.SingleCopyMin = DefaultSingleCopyMin
	}
	return c
}

func (c Config) check() error {
	if c.Slots < 1 || c.Slots > MaxSlots {
		return fmt.Errorf("shm: %d slots out of range 1..%d", c.Slots, MaxSlots)
	}
	if c.RingSize < MinRingSize || c.RingSize > MaxRingSize || c.RingSize&(c.RingSize-1) != 0 {
		return fmt.Errorf("shm: ring size %d is not a power of two in %d..%d", c.RingSize, MinRingSize, MaxRingSize)
	}
	if c.MaxDatagram < 1 || c.MaxDatagram > c.RingSize/4 {
		return fmt.Errorf("shm: max datagram %d out of range 1..%d", c.MaxDatagram, c.RingSize/4)
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("shm: batch size %d", c.BatchSize)
	}
	return nil
}
