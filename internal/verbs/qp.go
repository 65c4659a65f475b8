package verbs

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// SGE is a scatter/gather element: a piece of registered memory.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SGEOf returns the SGE for b, which must lie inside mr.
func SGEOf(mr *MR, b []byte) SGE {
	var addr uint64
	if len(b) > 0 {
		addr = uint64(uintptr(unsafe.Pointer(&b[0])))
	}
	return SGE{Addr: addr, Length: uint32(len(b)), LKey: mr.LKey}
}

// QPCaps sizes a queue pair.
type QPCaps struct {
	MaxSendWR, MaxRecvWR   uint32
	MaxSendSGE, MaxRecvSGE uint32
}

// QP is a queue pair (reliable-connected, or UD: see ud.go) with its send and receive rings
// mapped from the kernel. Posting is not synchronised: callers serialise
// PostSend/Doorbell and PostRecv per QP.
type QP struct {
	ctx    *Context
	handle uint32
	QPN    uint32
	sq, rq *ring
	ssn    uint32
	Caps   QPCaps

	// RdAtomic is the number of RDMA READs the QP keeps outstanding as
	// initiator and accepts as responder; set it before ToRTR. Zero
	// means 1.
	RdAtomic uint8

	once sync.Once
	err  error
}

// ErrQueueFull is returned when a send or receive ring has no free slot.
var ErrQueueFull = errors.New("rdma: work queue full")

// CreateQP creates an RC queue pair (CREATE_QP) and maps its rings.
func (pd *PD) CreateQP(sendCQ, recvCQ *CQ, caps QPCaps) (*QP, error) {
	return pd.createQP(sendCQ, recvCQ, caps, qptRC)
}

func (pd *PD) createQP(sendCQ, recvCQ *CQ, caps QPCaps, qpType uint8) (*QP, error) {
	c := pd.ctx
	req := createQP{PDHandle: pd.handle, SendCQHandle: sendCQ.handle, RecvCQHandle: recvCQ.handle,
		MaxSendWr: caps.MaxSendWR, MaxRecvWr: caps.MaxRecvWR, MaxSendSGE: caps.MaxSendSGE,
		MaxRecvSGE: caps.MaxRecvSGE, QPType: qpType}
	resp := make([]byte, unsafe.Sizeof(createQPRespRXE{}))
	if err := c.write("CREATE_QP", cmdCreateQP, bytesOf(&req), resp); err != nil {
		return nil, err
	}
	r := (*createQPRespRXE)(unsafe.Pointer(&resp[0]))
	qp := &QP{ctx: c, handle: r.QPHandle, QPN: r.QPN,
		Caps: QPCaps{MaxSendWR: r.MaxSendWr, MaxRecvWR: r.MaxRecvWr, MaxSendSGE: r.MaxSendSGE, MaxRecvSGE: r.MaxRecvSGE}}
	var err error
	if qp.sq, err = c.mapRing(r.SQMI); err == nil {
		qp.rq, err = c.mapRing(r.RQMI)
	}
	if err == nil && (qp.sq.elemSize < sizeofSendWQE+sizeofSGE || qp.rq.elemSize < sizeofRecvWQE+sizeofSGE) {
		err = fmt.Errorf("rdma: QP ring elements of %d/%d bytes", qp.sq.elemSize, qp.rq.elemSize)
	}
	if err != nil {
		qp.Close()
		return nil, err
	}
	return qp, nil
}

func (qp *QP) modify(m *modifyQP, op string) error {
	m.QPHandle = qp.handle
	return qp.ctx.write(op, cmdModifyQP, bytesOf(m), nil)
}

// ToInit moves the QP from RESET to INIT on port with the given remote
// access rights.
func (qp *QP) ToInit(port uint8, access uint32) error {
	m := modifyQP{AttrMask: qpAttrState | qpAttrPkeyIndex | qpAttrPort | qpAttrAccessFlags,
		QPState: qpsInit, PortNum: port, QPAccessFlags: access}
	return qp.modify(&m, "MODIFY_QP(INIT)")
}

// Remote is what a peer tells about its QP: enough to connect to it.
type Remote struct {
	GID GID
	QPN uint32
	PSN uint32
}

// PathMTU values (enum ib_mtu) for ToRTR.
const (
	MTU256  = mtu256
	MTU1024 = mtu1024
	MTU4096 = mtu4096
)

// ToRTR moves the QP to ready-to-receive, addressed (RoCEv2, global
// routing) to the remote QP, sending from local GID sgidIndex.
func (qp *QP) ToRTR(port uint8, sgidIndex uint8, mtu uint8, rem Remote) error {
	m := modifyQP{
		AttrMask: qpAttrState | qpAttrAV | qpAttrPathMTU | qpAttrDestQPN | qpAttrRQPSN |
			qpAttrMaxDestRdAtomic | qpAttrMinRNRTimer,
		QPState: qpsRTR, PathMTU: mtu, DestQPNum: rem.QPN, RQPSN: rem.PSN & 0xffffff,
		MaxDestRdAtomic: qp.rdAtomic(), MinRNRTimer: 12, // 0.64 ms
	}
	m.Dest = qpDest{DGID: rem.GID, SGIDIndex: sgidIndex, HopLimit: 64, IsGlobal: 1, PortNum: port}
	return qp.modify(&m, "MODIFY_QP(RTR)")
}

// ToRTS moves the QP to ready-to-send. timeout is the local ACK timeout
// exponent (4.096 µs * 2^timeout); rnrRetry 7 retries forever while the
// peer has no receive posted.
func (qp *QP) ToRTS(psn uint32, timeout, retryCnt, rnrRetry uint8) error {
	m := modifyQP{
		AttrMask: qpAttrState | qpAttrSQPSN | qpAttrTimeout | qpAttrRetryCnt | qpAttrRNRRetry | qpAttrMaxQPRdAtomic,
		QPState:  qpsRTS, SQPSN: psn & 0xffffff, Timeout: timeout, RetryCnt: retryCnt, RNRRetry: rnrRetry, MaxRdAtomic: qp.rdAtomic(),
	}
	return qp.modify(&m, "MODIFY_QP(RTS)")
}

func (qp *QP) rdAtomic() uint8 { return max(qp.RdAtomic, 1) }

// ToError moves the QP to the error state: outstanding work requests
// complete with a flush error.
func (qp *QP) ToError() error {
	m := modifyQP{AttrMask: qpAttrState, QPState: qpsErr}
	return qp.modify(&m, "MODIFY_QP(ERR)")
}

// SendWR is a send-queue work request.
type SendWR struct {
	WrID       uint64
	Opcode     uint32 // OpSend, OpRDMAWrite, OpRDMARead
	Signaled   bool
	SGEs       []SGE
	RemoteAddr uint64 // RDMA operations
	RKey       uint32
}

// Send-queue opcodes.
const (
	OpRDMAWrite = wrRDMAWrite
	OpSend      = wrSend
	OpRDMARead  = wrRDMARead
)

// MaxSendSGE is the number of SGEs one send slot holds.
func (qp *QP) MaxSendSGE() int { return (qp.sq.elemSize - swqeSGE) / sizeofSGE }

// SendQueued is the number of send work requests the kernel has not yet
// taken from the ring.
func (qp *QP) SendQueued() int { return qp.sq.inFlight() }

// PostSend writes a work request into the send ring. It is not seen by the
// device until Doorbell.
func (qp *QP) PostSend(wr *SendWR) error {
	if len(wr.SGEs) > qp.MaxSendSGE() {
		return fmt.Errorf("rdma: %d SGEs, the send queue holds %d", len(wr.SGEs), qp.MaxSendSGE())
	}
	s := qp.sq.producerSlot()
	if s == nil {
		return ErrQueueFull
	}
	clear(s[:swqeSGE])
	put32 := func(off int, v uint32) { *(*uint32)(unsafe.Pointer(&s[off])) = v }
	put64 := func(off int, v uint64) { *(*uint64)(unsafe.Pointer(&s[off])) = v }
	put64(swqeWrID, wr.WrID)
	put32(swqeOpcode, wr.Opcode)
	if wr.Signaled {
		put32(swqeSendFlags, sendSignaled)
	}
	if wr.Opcode == OpRDMAWrite || wr.Opcode == OpRDMARead {
		put64(swqeRemoteAddr, wr.RemoteAddr)
		put32(swqeRKey, wr.RKey)
		put64(swqeIOVA, wr.RemoteAddr)
	}
	qp.produceSend(s, wr.SGEs)
	return nil
}

// produceSend writes the SGEs, the DMA lengths and the sequence number of
// the send slot s, then hands the slot to the kernel.
func (qp *QP) produceSend(s []byte, sges []SGE) {
	put32 := func(off int, v uint32) { *(*uint32)(unsafe.Pointer(&s[off])) = v }
	var length uint32
	for i, g := range sges {
		off := swqeSGE + i*sizeofSGE
		*(*uint64)(unsafe.Pointer(&s[off+sgeAddr])) = g.Addr
		put32(off+sgeLength, g.Length)
		put32(off+sgeLKey, g.LKey)
		length += g.Length
	}
	put32(swqeSSN, qp.ssn)
	qp.ssn++
	put32(swqeDMALength, length)
	put32(swqeDMAResid, length)
	put32(swqeDMANumSGE, uint32(len(sges)))
	qp.sq.produce()
}

// Doorbell tells the kernel that the send ring has new work requests (an
// empty POST_SEND).
func (qp *QP) Doorbell() error {
	req := postSend{QPHandle: qp.handle, WQESize: 128}
	resp := make([]byte, 8)
	return qp.ctx.write("POST_SEND", cmdPostSend, bytesOf(&req), resp[:4+4])
}

// PostRecv writes a receive work request into the receive ring; the
// kernel takes it when a message arrives (no system call).
func (qp *QP) PostRecv(wrID uint64, sges ...SGE) error {
	max := (qp.rq.elemSize - rwqeSGE) / sizeofSGE
	if len(sges) > max {
		return fmt.Errorf("rdma: %d SGEs, the receive queue holds %d", len(sges), max)
	}
	s := qp.rq.producerSlot()
	if s == nil {
		return ErrQueueFull
	}
	clear(s[:rwqeSGE])
	put32 := func(off int, v uint32) { *(*uint32)(unsafe.Pointer(&s[off])) = v }
	*(*uint64)(unsafe.Pointer(&s[rwqeWrID])) = wrID
	var length uint32
	for i, g := range sges {
		off := rwqeSGE + i*sizeofSGE
		*(*uint64)(unsafe.Pointer(&s[off+sgeAddr])) = g.Addr
		put32(off+sgeLength, g.Length)
		put32(off+sgeLKey, g.LKey)
		length += g.Length
	}
	put32(rwqeDMALength, length)
	put32(rwqeDMAResid, length)
	put32(rwqeDMANumSGE, uint32(len(sges)))
	qp.rq.produce()
	return nil
}

// Close destroys the QP (DESTROY_QP) and unmaps its rings. It is
// idempotent.
func (qp *QP) Close() error {
	qp.once.Do(func() {
		req := destroyCmd{Handle: qp.handle}
		resp := make([]byte, 8)
		qp.err = qp.ctx.write("DESTROY_QP", cmdDestroyQP, bytesOf(&req), resp)
		qp.sq.unmap()
		qp.rq.unmap()
	})
	return qp.err
}
