package verbs

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MR is a registered memory region. Regions made by AllocMR own their
// memory (an anonymous mapping outside the Go heap) and unmap it on Close.
type MR struct {
	pd     *PD
	Buf    []byte
	handle uint32
	LKey   uint32
	RKey   uint32
	owned  bool
	once   sync.Once
	err    error
}

// Access flags for registration.
const (
	AccessLocalWrite  = accessLocalWrite
	AccessRemoteWrite = accessRemoteWrite
	AccessRemoteRead  = accessRemoteRead
)

// RegMR registers buf (REG_MR). buf must not be Go heap memory that the
// runtime may free while registered: use AllocMR or mmap'd memory.
func (pd *PD) RegMR(buf []byte, access uint32) (*MR, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("rdma: RegMR: empty buffer")
	}
	addr := uint64(uintptr(unsafe.Pointer(&buf[0])))
	req := regMR{Start: addr, Length: uint64(len(buf)), HCAVA: addr, PDHandle: pd.handle, AccessFlags: access}
	resp := make([]byte, 16)
	if err := pd.ctx.write("REG_MR", cmdRegMR, bytesOf(&req), resp[:12]); err != nil {
		return nil, err
	}
	r := (*regMRResp)(unsafe.Pointer(&resp[0]))
	return &MR{pd: pd, Buf: buf, handle: r.MRHandle, LKey: r.LKey, RKey: r.RKey}, nil
}

// AllocMR maps n bytes (rounded up to whole pages) of anonymous memory and
// registers them. The returned MR's Buf has length n.
func (pd *PD) AllocMR(n int, access uint32) (*MR, error) {
	if n <= 0 {
		return nil, fmt.Errorf("rdma: AllocMR: size %d", n)
	}
	pg := unix.Getpagesize()
	size := (n + pg - 1) / pg * pg
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("rdma: mmap %d bytes: %w", size, err)
	}
	mr, err := pd.RegMR(mem, access)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	mr.Buf = mem[:n]
	mr.owned = true
	return mr, nil
}

// Addr is the address of the region's first byte.
func (mr *MR) Addr() uint64 { return uint64(uintptr(unsafe.Pointer(&mr.Buf[0]))) }

// Contains reports whether b lies wholly inside the region.
func (mr *MR) Contains(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	p := uint64(uintptr(unsafe.Pointer(&b[0])))
	a := mr.Addr()
	return p >= a && p+uint64(len(b)) <= a+uint64(cap(mr.Buf))
}

// Close deregisters the region (DEREG_MR) and unmaps memory it owns. It is
// idempotent.
func (mr *MR) Close() error {
	mr.once.Do(func() {
		req := handleCmd{Handle: mr.handle}
		mr.err = mr.pd.ctx.write("DEREG_MR", cmdDeregMR, bytesOf(&req), nil)
		if mr.owned {
			full := unsafe.Slice(&mr.Buf[0], cap(mr.Buf))
			if err := unix.Munmap(full); err != nil && mr.err == nil {
				mr.err = err
			}
		}
	})
	return mr.err
}
