package verbs

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WC is a work completion.
type WC struct {
	WrID    uint64
	Status  uint32 // 0 = success
	Opcode  uint32 // 0 SEND, 1 RDMA WRITE, 2 RDMA READ, 128 RECV
	ByteLen uint32
	QPNum   uint32
}

// WCError is a completion with a non-success status.
type WCError struct {
	Status uint32
	QPNum  uint32
}

// ErrCompletion matches every WCError.
var ErrCompletion = errors.New("rdma: work completion error")

func (e *WCError) Error() string {
	return fmt.Sprintf("rdma: work completion status %d (%s) on QP %d", e.Status, wcStatusString(e.Status), e.QPNum)
}
func (e *WCError) Is(target error) bool { return target == ErrCompletion }

func wcStatusString(s uint32) string {
	names := []string{"success", "local length", "local QP operation", "local EEC operation",
		"local protection", "flushed", "memory window bind", "bad response", "local access",
		"remote invalid request", "remote access", "remote operation", "transport retry counter exceeded",
		"RNR retry counter exceeded"}
	if int(s) < len(names) {
		return names[s]
	}
	return "other"
}

// CQ is a completion queue mapped from the kernel, with an optional
// completion channel for blocking waits.
type CQ struct {
	ctx    *Context
	handle uint32
	ring   *ring
	ch     *os.File // completion channel, nil when polling only

	once sync.Once
	err  error
}

// CreateCQ creates a completion queue of at least cqe entries. With
// channel set it also creates a completion channel so that Wait can block
// (through the Go netpoller) until the kernel signals a completion.
func (c *Context) CreateCQ(cqe int, channel bool) (*CQ, error) {
	if cqe <= 0 {
		return nil, fmt.Errorf("rdma: CreateCQ: %d entries", cqe)
	}
	cq := &CQ{ctx: c}
	chFD := int32(-1)
	if channel {
		var req respOnly
		resp := make([]byte, 8)
		if err := c.write("CREATE_COMP_CHANNEL", cmdCreateCompChannel, bytesOf(&req), resp[:4]); err != nil {
			return nil, err
		}
		fd := int((*compChannelResp)(unsafe.Pointer(&resp[0])).FD)
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("rdma: completion channel: %w", err)
		}
		cq.ch = os.NewFile(uintptr(fd), "rdma-comp-channel")
		chFD = int32(fd)
	}
	req := createCQ{CQE: uint32(cqe), CompChannel: chFD}
	resp := make([]byte, unsafe.Sizeof(createCQRespRXE{}))
	if err := c.write("CREATE_CQ", cmdCreateCQ, bytesOf(&req), resp); err != nil {
		if cq.ch != nil {
			cq.ch.Close()
		}
		return nil, err
	}
	r := (*createCQRespRXE)(unsafe.Pointer(&resp[0]))
	cq.handle = r.CQHandle
	rg, err := c.mapRing(r.MI)
	if err != nil {
		cq.destroy()
		return nil, err
	}
	if rg.elemSize < int(unsafe.Sizeof(workCompletion{})) {
		rg.unmap()
		cq.destroy()
		return nil, fmt.Errorf("rdma: CQ element of %d bytes", rg.elemSize)
	}
	cq.ring = rg
	return cq, nil
}

// Poll reads up to len(wcs) completions from the ring without a system
// call and returns how many it read.
func (cq *CQ) Poll(wcs []WC) int {
	n := 0
	for n < len(wcs) {
		s := cq.ring.consumerSlot()
		if s == nil {
			break
		}
		w := (*workCompletion)(unsafe.Pointer(&s[0]))
		wcs[n] = WC{WrID: w.WrID, Status: w.Status, Opcode: w.Opcode, ByteLen: w.ByteLen, QPNum: w.QPNum}
		cq.ring.consume()
		n++
	}
	return n
}

// Arm requests a completion event on the channel for the next completion
// (REQ_NOTIFY_CQ). Poll once more after arming: completions that arrived
// before the arm raise no event.
func (cq *CQ) Arm() error {
	req := reqNotifyCQ{CQHandle: cq.handle}
	return cq.ctx.write("REQ_NOTIFY_CQ", cmdReqNotifyCQ, bytesOf(&req), nil)
}

// ErrTimeout is returned by Wait when the deadline passes.
var ErrTimeout = errors.New("rdma: timed out")

// Wait blocks until the completion channel delivers an event, the deadline
// passes (ErrTimeout; zero means none) or the channel is closed
// (os.ErrClosed). Arm first.
func (cq *CQ) Wait(deadline time.Time) error { return cq.WaitUnless(deadline, nil) }

// ErrWoken is returned by WaitUnless when it was woken (see Wake).
var ErrWoken = errors.New("rdma: wait woken")

// WaitUnless is Wait that returns ErrWoken at once when *stop is set, and
// as soon as Wake is called while it waits (a nil stop: never). A goroutine that wants the
// waiter back sets *stop and then calls Wake: either the waiter sees
// *stop before it sleeps, or Wake's deadline comes after the waiter's own
// and ends its sleep.
func (cq *CQ) WaitUnless(deadline time.Time, stop *atomic.Bool) error {
	if cq.ch == nil {
		return fmt.Errorf("rdma: CQ has no completion channel")
	}
	if err := cq.ch.SetReadDeadline(deadline); err != nil {
		return err
	}
	if stop != nil && stop.Load() {
		return ErrWoken
	}
	var ev [8]byte // struct ib_uverbs_comp_event_desc
	_, err := cq.ch.Read(ev[:])
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if stop != nil && stop.Load() {
			return ErrWoken
		}
		return ErrTimeout
	}
	return err
}

// Wake ends a WaitUnless in progress (its read deadline passes at once).
// The CQ stays usable.
func (cq *CQ) Wake() {
	if cq.ch != nil {
		cq.ch.SetReadDeadline(time.Unix(1, 0))
	}
}

// Interrupt closes the completion channel: a blocked Wait returns
// os.ErrClosed and so does every later one. The CQ is then only fit for
// Poll and Close.
func (cq *CQ) Interrupt() {
	if cq.ch != nil {
		cq.ch.Close()
	}
}

func (cq *CQ) destroy() error {
	req := destroyCmd{Handle: cq.handle}
	resp := make([]byte, 8)
	err := cq.ctx.write("DESTROY_CQ", cmdDestroyCQ, bytesOf(&req), resp)
	if cq.ch != nil {
		cq.ch.Close()
	}
	return err
}

// Close destroys the CQ (DESTROY_CQ), unmaps its ring and closes the
// channel. Destroy every QP using it first. It is idempotent.
func (cq *CQ) Close() error {
	cq.once.Do(func() {
		cq.err = cq.destroy()
		if err := cq.ring.unmap(); err != nil && cq.err == nil {
			cq.err = err
		}
	})
	return cq.err
}
