package verbs

import (
	"fmt"
	"sync"
	"unsafe"
)

// SRQ is a shared receive queue: receive buffers posted once for every
// queue pair created on it (CreateQP with QPCaps.SRQ), so that the
// buffers a process keeps posted do not grow with its peers. rxe maps its
// ring like a queue pair's receive ring; posting is not synchronised
// (callers serialise PostRecv).
type SRQ struct {
	ctx    *Context
	handle uint32
	SRQN   uint32
	MaxWR  uint32
	rq     *ring

	once sync.Once
	err  error
}

type createSRQ struct { // struct ib_uverbs_create_srq
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	MaxWr      uint32
	MaxSGE     uint32
	SRQLimit   uint32
}

type createSRQRespRXE struct { // ib_uverbs_create_srq_resp + rxe_create_srq_resp
	SRQHandle uint32
	MaxWr     uint32
	MaxSGE    uint32
	SRQN      uint32
	MI        mmInfo
	SRQNum    uint32
	Reserved  uint32
}

// CreateSRQ creates a shared receive queue of maxWR receives of maxSGE
// SGEs each (CREATE_SRQ) and maps its ring.
func (pd *PD) CreateSRQ(maxWR, maxSGE uint32) (*SRQ, error) {
	c := pd.ctx
	req := createSRQ{PDHandle: pd.handle, MaxWr: maxWR, MaxSGE: maxSGE}
	resp := make([]byte, unsafe.Sizeof(createSRQRespRXE{}))
	if err := c.write("CREATE_SRQ", cmdCreateSRQ, bytesOf(&req), resp); err != nil {
		return nil, err
	}
	r := (*createSRQRespRXE)(unsafe.Pointer(&resp[0]))
	s := &SRQ{ctx: c, handle: r.SRQHandle, SRQN: r.SRQN, MaxWR: r.MaxWr}
	var err error
	if s.rq, err = c.mapRing(r.MI); err == nil && s.rq.elemSize < sizeofRecvWQE+sizeofSGE {
		err = fmt.Errorf("rdma: SRQ ring elements of %d bytes", s.rq.elemSize)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// PostRecv writes a receive work request into the shared ring; the kernel
// takes it when a message arrives on any queue pair of the SRQ.
func (s *SRQ) PostRecv(wrID uint64, sges ...SGE) error { return postRecv(s.rq, wrID, sges) }

// Posted is the number of receives posted and not yet taken.
func (s *SRQ) Posted() int { return s.rq.inFlight() }

// Close destroys the SRQ (DESTROY_SRQ) and unmaps its ring. Destroy the
// queue pairs on it first. It is idempotent.
func (s *SRQ) Close() error {
	s.once.Do(func() {
		req := destroyCmd{Handle: s.handle}
		resp := make([]byte, 8)
		s.err = s.ctx.write("DESTROY_SRQ", cmdDestroySRQ, bytesOf(&req), resp)
		s.rq.unmap()
	})
	return s.err
}
