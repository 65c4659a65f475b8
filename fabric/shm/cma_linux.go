//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/osyield"
)

// Single copy (Linux cross-memory attach). A port exposes a message's
// memory as this process's pid, start time, address and length; the
// receiving port reads it with process_vm_readv straight into the buffer
// of the posted receive: one copy, where the rings take two. The kernel
// lets a process read another's memory only as ptrace would let it attach
// (same user and a dumpable target, or CAP_SYS_PTRACE in the target's user
// namespace; Yama's ptrace_scope may forbid more), so each receiver finds
// out, once per sending process, whether it may: the producer of a ring
// writes into its slot the address and value of a word of its own memory
// (the probe), the consumer reads that word back with process_vm_readv
// when the first records arrive and writes its verdict into the slot. A
// sender offers single copy to a destination only once the verdict there
// says it reads (ReadableBy); until then, and where the kernel refuses,
// messages cross in ring fragments.

// Verdicts in a slot's slotCMA word.
const (
	cmaUnknown = 0 // not tried yet
	cmaReads   = 1 // the consumer read the probe
	cmaRefused = 2 // the kernel refused (or the word read back wrong)
)

// probeWord is the word a consumer reads back from this process.
var probeWord = rand.Uint64() | 1

// descSize is the size of a descriptor: pid, start time, address, length.
const descSize = 4 + 8 + 8 + 8

var (
	_ fabric.RemoteReader   = (*Port)(nil)
	_ fabric.RemoteReadable = (*Port)(nil)
	_ fabric.RemoteReadMin  = (*Port)(nil)
	_ fabric.RemoteReadNow  = (*Port)(nil)
)

// RemoteReadMin is the smallest message worth a single copy
// (Config.SingleCopyMin).
func (p *Port) RemoteReadMin() int { return p.cfg.SingleCopyMin }

// ErrCMARefused is the error of a read the kernel refused
// (process_vm_readv failing with EPERM).
var ErrCMARefused = errors.New("shm: the kernel refused to read the sender's memory")

// ErrDescriptor is returned by ReadRemote for a descriptor that is
// malformed, too short, or names a process that does not send to this port.
var ErrDescriptor = errors.New("shm: bad remote memory descriptor")

// offerProbe writes this process's probe into the slot at base, which it
// just claimed.
func offerProbe(mem []byte, base int) {
	store32(mem, base+slotCMA, cmaUnknown)
	store64(mem, base+slotProbeVal, probeWord)
	store64(mem, base+slotProbe, uint64(uintptr(unsafe.Pointer(&probeWord))))
}

// probe reads the probe of r's producer and writes the verdict into the
// slot. Only the receiving goroutine calls it.
func (p *Port) probe(r *ring) {
	r.probed = true
	addr := load64(r.mem, r.base+slotProbe)
	if addr == 0 {
		return // a producer that offers none
	}
	want := load64(r.mem, r.base+slotProbeVal)
	pid := int(load32(r.mem, r.base+slotOwner))
	var got uint64
	err := readFrom(pid, unsafe.Slice((*byte)(unsafe.Pointer(&got)), 8), addr)
	v := uint32(cmaReads)
	if err != nil || got != want {
		v = cmaRefused
		p.st.cmaRefused.Add(1)
	}
	store32(r.mem, r.base+slotCMA, v)
}

// ReadableBy reports whether the port at to has read this process's
// memory: whether a message to it may go by single copy.
func (p *Port) ReadableBy(to fabric.Endpoint) bool {
	e, ok := to.(Endpoint)
	if !ok {
		return false
	}
	p.outMu.Lock()
	defer p.outMu.Unlock()
	o := p.out[e.Name]
	if o == nil {
		return false
	}
	if v := o.cma.Load(); v != cmaUnknown {
		return v == cmaReads
	}
	// The segment is unmapped only under outMu.
	if o.seg.mem == nil {
		return false
	}
	v := load32(o.seg.mem, o.r.base+slotCMA)
	o.cma.Store(v)
	return v == cmaReads
}

// Expose describes b for reading by the ports this process sends to. The
// memory is the caller's: nothing is registered, and release does nothing.
func (p *Port) Expose(b []byte) ([]byte, func(), error) {
	if p.closed.Load() {
		return nil, nil, fabric.ErrClosed
	}
	pid, start := selfID()
	desc := make([]byte, descSize)
	binary.LittleEndian.PutUint32(desc, pid)
	binary.LittleEndian.PutUint64(desc[4:], start)
	if len(b) > 0 {
		binary.LittleEndian.PutUint64(desc[12:], uint64(uintptr(unsafe.Pointer(&b[0]))))
	}
	binary.LittleEndian.PutUint64(desc[20:], uint64(len(b)))
	return desc, func() {}, nil
}

// ReadRemote queues a read of the memory a sending process exposed as
// desc into dst and returns: the port's reading goroutine copies it, in
// the order the reads were queued, then calls done from another
// goroutine. The engine calls it from the goroutine that handles the
// port's datagrams, which a read of a large message would otherwise hold
// for as long as the copy takes (about 200-350 µs for 2 MiB). The process
// must be the producer of one of this port's rings whose probe it read: a
// descriptor naming any other process is refused, so that a sender cannot
// have this process read memory it could not read itself.
func (p *Port) ReadRemote(from fabric.Endpoint, dst []byte, desc []byte, done func(error)) error {
	pid, addr, err := p.checkRemote(from, dst, desc)
	if err != nil {
		return err
	}
	q := &p.reads
	q.mu.Lock()
	q.jobs = append(q.jobs, readJob{pid: pid, dst: dst, addr: addr, done: done})
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go p.readQueued()
	}
	return nil
}

// readQueue holds the reads ReadRemote queued; one goroutine at a time
// (running) makes them, and ends when none is left.
type readQueue struct {
	mu      sync.Mutex
	jobs    []readJob
	running bool
}

type readJob struct {
	pid  uint32
	dst  []byte
	addr uint64
	done func(error)
}

// readQueued makes the queued reads in order until none is left. Once the
// port is closed, the reads left fail with fabric.ErrClosed.
func (p *Port) readQueued() {
	q := &p.reads
	for {
		q.mu.Lock()
		if len(q.jobs) == 0 {
			q.running = false
			q.jobs = nil
			q.mu.Unlock()
			return
		}
		j := q.jobs[0]
		q.jobs[0] = readJob{}
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		err := fabric.ErrClosed
		if !p.closed.Load() {
			err = p.read(j.pid, j.dst, j.addr)
		}
		go j.done(err)
	}
}

// readGate, when set (by tests), holds every read until it receives.
var readGate chan struct{}

// ReadRemoteNow is ReadRemote that returns the outcome of the read instead
// of handing it to a callback: the engine reads this way where the end of
// the read may run on the reading thread, which saves waking another
// thread per message.
func (p *Port) ReadRemoteNow(from fabric.Endpoint, dst []byte, desc []byte) error {
	pid, addr, err := p.checkRemote(from, dst, desc)
	if err != nil {
		return err
	}
	return p.read(pid, dst, addr)
}

// checkRemote validates a read of dst from the memory desc describes and
// returns the process and the address to read.
func (p *Port) checkRemote(from fabric.Endpoint, dst []byte, desc []byte) (pid uint32, addr uint64, err error) {
	if _, ok := from.(Endpoint); !ok {
		return 0, 0, fmt.Errorf("shm: endpoint %v (%T) is not an shm endpoint", from, from)
	}
	if len(desc) != descSize {
		return 0, 0, fmt.Errorf("%w: %d bytes", ErrDescriptor, len(desc))
	}
	pid = binary.LittleEndian.Uint32(desc)
	start := binary.LittleEndian.Uint64(desc[4:])
	addr = binary.LittleEndian.Uint64(desc[12:])
	n := binary.LittleEndian.Uint64(desc[20:])
	if n < uint64(len(dst)) {
		return 0, 0, fmt.Errorf("%w: %d bytes exposed, %d wanted", ErrDescriptor, n, len(dst))
	}
	if p.closed.Load() {
		return 0, 0, fabric.ErrClosed
	}
	if !p.readsFrom(pid, start) {
		return 0, 0, fmt.Errorf("%w: process %d sends nothing here or may not be read", ErrDescriptor, pid)
	}
	return pid, addr, nil
}

// read fills dst from process pid's memory at addr and counts it.
func (p *Port) read(pid uint32, dst []byte, addr uint64) error {
	if readGate != nil {
		<-readGate
	}
	if len(dst) >= splitMin && runtime.GOMAXPROCS(0) > 1 {
		p.st.cmaSplit.Add(1)
		helped, err := readShared(int(pid), dst, addr)
		p.st.cmaHelped.Add(uint64(helped))
		if err != nil {
			return err
		}
	} else if len(dst) > 0 {
		if err := readFrom(int(pid), dst, addr); err != nil {
			return err
		}
	}
	p.st.cmaReads.Add(1)
	p.st.cmaBytes.Add(uint64(len(dst)))
	return nil
}

// readsFrom reports whether the process pid started at start produces
// into one of this port's rings and its probe was read.
func (p *Port) readsFrom(pid uint32, start uint64) bool {
	mem := p.seg.mem
	for i := 0; i < p.highWater(); i++ {
		base := slotOffset(i, p.seg.ringSize)
		if load32(mem, base+slotOwner) == pid && load64(mem, base+slotStart) == start &&
			load32(mem, base+slotCMA) == cmaReads {
			return true
		}
	}
	return false
}

// readFrom fills dst with the memory of process pid at addr.
func readFrom(pid int, dst []byte, addr uint64) error {
	for off := 0; off < len(dst); {
		local := []unix.Iovec{{Base: &dst[off]}}
		local[0].SetLen(len(dst) - off)
		remote := []unix.RemoteIovec{{Base: uintptr(addr) + uintptr(off), Len: len(dst) - off}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EPERM):
			return fmt.Errorf("%w (process %d): %v", ErrCMARefused, pid, err)
		case errors.Is(err, unix.ESRCH):
			return fmt.Errorf("%w: process %d is gone", ErrNoPort, pid)
		case err != nil:
			return fmt.Errorf("shm: reading process %d: %w", pid, err)
		case n <= 0:
			return fmt.Errorf("shm: reading process %d: no progress at %d of %d bytes", pid, off, len(dst))
		}
		off += n
	}
	return nil
}

// A large read is shared by two threads. One thread's copy (the kernel's,
// page by page) moves about 5 GB/s into memory outside its caches, and
// while a stream's receiver reads, the sender's thread mostly waits for
// the read to end: the calling thread and a helper goroutine take the
// message's chunks in turn, each with process_vm_readv of its own. A
// helper that does not get a processor in time takes nothing: the caller
// reads every chunk no thread has taken and waits only for chunks the
// helper is reading.
//
// A helper that has ended its chunks lingers for the next shared read
// (helperLinger), spinning, then ends: a stream's next read starts a few microseconds after the last,
// and a helper started afresh for each read (a goroutine, and a thread of
// the kernel woken to run it) came to its first chunk after the caller
// had read most of them (perf of bench throughput --fabric shm, 2 MiB: the
// helper read 18% of the bytes).
const (
	splitMin   = 512 << 10 // the smallest read shared (two chunks)
	splitChunk = 256 << 10

	helperLinger = 100 * time.Microsecond
	// doneSpin bounds the caller's wait, spinning, for a chunk the
	// helper is reading (about 15 us on a quiet machine) before it
	// sleeps on sharedRead.last.
	doneSpin = 50 * time.Microsecond
)

// sharedRead is a read cut into chunks that its readers claim in turn.
type sharedRead struct {
	pid    int
	dst    []byte
	addr   uint64
	chunks int32
	next   atomic.Int32 // the next chunk to claim
	done   atomic.Int32 // chunks read (or failed)
	helped atomic.Int32 // chunks the helper read
	err    atomic.Pointer[error]
	last   chan struct{} // closed by a helper that read the last chunk
}

// helpers is what readShared shares with its helpers: the read under way
// (job, nil when none) and the number of helper goroutines alive
// (working or lingering). A read is published before live is looked at,
// and a helper that ends looks at job after it left live, so that a read
// finds a helper alive to take it or starts one.
var helpers struct {
	job  atomic.Pointer[sharedRead]
	live atomic.Int32
}

// readShared fills dst from process pid's memory at addr, with one helper
// goroutine, and returns the number of chunks the helper read.
func readShared(pid int, dst []byte, addr uint64) (helped int, err error) {
	s := &sharedRead{pid: pid, dst: dst, addr: addr, chunks: int32((len(dst) + splitChunk - 1) / splitChunk), last: make(chan struct{})}
	helpers.job.Store(s)
	if helpers.live.CompareAndSwap(0, 1) {
		go help(s)
	}
	if !s.work(false) {
		s.waitHelper()
	}
	helpers.job.CompareAndSwap(s, nil) // the read's memory is not held
	if err := s.err.Load(); err != nil {
		return int(s.helped.Load()), *err
	}
	return int(s.helped.Load()), nil
}

// waitHelper waits until the chunks the helper took are read: spinning
// for up to doneSpin, then asleep until the helper closes s.last.
func (s *sharedRead) waitHelper() {
	var sp spinner
	for s.done.Load() != s.chunks {
		if sp.over(doneSpin) {
			<-s.last
			return
		}
	}
}

// spinner paces a spin: over reports whether d has passed since the
// first call, looking at the clock every 8 calls; each call gives the CPU
// to another runnable thread of the machine, if any (sched_yield), and
// every yieldEvery the processor to other goroutines. The yield to the
// kernel lets the thread a spinner waits for run when both share a CPU
// (on a loaded machine, a helper spinning without it held the CPU of the
// reading thread: 2 MiB reads of one process took 180-450 us, against
// 155-265 us with a helper started per read). Yielding to goroutines
// at every call (runtime.Gosched) put the spinner on the scheduler's
// global queue so often that a processor left by a thread in
// process_vm_readv was handed to another thread to run it, and the
// reading thread, back from the kernel, waited for a processor.
type spinner struct {
	n            int
	start, yield time.Time
}

const yieldEvery = 20 * time.Microsecond

func (sp *spinner) over(d time.Duration) bool {
	sp.n++
	if sp.n == 1 {
		sp.start = time.Now()
		sp.yield = sp.start
		return false
	}
	osyield.Yield()
	if sp.n&7 != 0 {
		return false
	}
	now := time.Now()
	if now.Sub(sp.start) > d {
		return true
	}
	if now.Sub(sp.yield) > yieldEvery {
		sp.yield = now
		runtime.Gosched()
	}
	return false
}

// help reads chunks of s, then of the reads published while it
// lingers, and ends once none came for helperLinger.
func help(s *sharedRead) {
	for s != nil {
		if s.work(true) {
			close(s.last)
		}
		s = linger(s)
	}
}

// linger waits for a read other than last, spinning, and returns it, or
// nil after helperLinger (the helper then ends).
func linger(last *sharedRead) *sharedRead {
	var sp spinner
	for {
		if s := helpers.job.Load(); s != nil && s != last {
			return s
		}
		if sp.over(helperLinger) {
			helpers.live.Add(-1)
			// A read published before live fell finds no
			// helper to start: this one takes it.
			if s := helpers.job.Load(); s != nil && s != last {
				helpers.live.Add(1)
				return s
			}
			return nil
		}
	}
}

// work reads chunks until none is left to claim, and reports whether it
// read the last one to end.
func (s *sharedRead) work(helper bool) (last bool) {
	for {
		i := s.next.Add(1) - 1
		if i >= s.chunks {
			return false
		}
		lo := int(i) * splitChunk
		hi := min(lo+splitChunk, len(s.dst))
		if s.err.Load() == nil {
			if err := readFrom(s.pid, s.dst[lo:hi], s.addr+uint64(lo)); err != nil {
				s.err.CompareAndSwap(nil, &err)
			}
		}
		if helper {
			s.helped.Add(1)
		}
		if s.done.Add(1) == s.chunks {
			return true
		}
	}
}
