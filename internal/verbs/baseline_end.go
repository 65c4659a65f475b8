package verbs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Raw verbs baseline between two processes: each process opens a
// BaselineEnd (an RC QP with its own CQ and registered memory), the two
// exchange their BaselineInfo out of band (as perftest does over TCP) and
// connect. One side then ping-pongs SENDs against an Echo on the other, or
// streams RDMA WRITEs into the other's memory. Both busy-poll their
// completion rings, as ib_send_lat and ib_write_bw do (yielding the CPU
// now and then, see yieldEvery).

// MaxBaselineBuf is the largest buffer a BaselineEnd registers.
const MaxBaselineBuf = 64 << 20

// BaselineInfo is what one end tells the other: its QP and the memory an
// RDMA WRITE may target.
type BaselineInfo struct {
	GID  GID
	QPN  uint32
	PSN  uint32
	Addr uint64 // start of the region remote writes go to
	RKey uint32
	Len  int // bytes at Addr
}

// String encodes the info as "gid/qpn/psn/addr/rkey/len" (numbers in
// hex), the form ParseBaselineInfo reads.
func (i BaselineInfo) String() string {
	return fmt.Sprintf("%s/%x/%x/%x/%x/%x", i.GID, i.QPN, i.PSN, i.Addr, i.RKey, i.Len)
}

// ErrBadBaselineInfo is returned by ParseBaselineInfo for malformed input.
var ErrBadBaselineInfo = errors.New("rdma: bad baseline info")

// ParseBaselineInfo reads the form BaselineInfo.String writes.
func ParseBaselineInfo(s string) (BaselineInfo, error) {
	f := strings.Split(s, "/")
	if len(f) != 6 {
		return BaselineInfo{}, fmt.Errorf("%w: %q", ErrBadBaselineInfo, s)
	}
	ip := net.ParseIP(f[0])
	if ip == nil {
		return BaselineInfo{}, fmt.Errorf("%w: GID %q", ErrBadBaselineInfo, f[0])
	}
	var n [5]uint64
	bits := [5]int{24, 24, 64, 32, 31}
	for k := range n {
		v, err := strconv.ParseUint(f[k+1], 16, bits[k])
		if err != nil {
			return BaselineInfo{}, fmt.Errorf("%w: field %d of %q", ErrBadBaselineInfo, k+2, s)
		}
		n[k] = v
	}
	var i BaselineInfo
	copy(i.GID[:], ip.To16())
	i.QPN, i.PSN, i.Addr, i.RKey, i.Len = uint32(n[0]), uint32(n[1]), n[2], uint32(n[3]), int(n[4])
	return i, nil
}

// BaselineEnd is one side of a raw verbs baseline between processes.
// Its buffer is split in a send half and a receive (and remote-write)
// half of bufSize bytes each. It is driven by one goroutine at a time.
type BaselineEnd struct {
	cfg     BaselineConfig
	ctx     *Context
	pd      *PD
	mr      *MR
	cq      *CQ
	qp      *QP
	gid     GIDEntry
	mtu     uint8
	psn     uint32
	bufSize int
	depth   int
	sendBuf []byte
	recvBuf []byte
	remote  BaselineInfo
	conn    bool
}

// NewBaselineEnd opens the device of cfg and creates a QP in INIT with a
// receive of bufSize bytes posted and up to depth sends outstanding.
func NewBaselineEnd(cfg BaselineConfig, bufSize, depth int) (e *BaselineEnd, err error) {
	if bufSize < 1 || bufSize > MaxBaselineBuf || depth < 1 || depth > 4096 {
		return nil, fmt.Errorf("rdma: NewBaselineEnd(%d, %d): buffer 1..%d bytes, depth 1..4096", bufSize, depth, MaxBaselineBuf)
	}
	cfg = cfg.withDefaults()
	dev, err := FindDevice(cfg.Sysfs, cfg.Device)
	if err != nil {
		return nil, err
	}
	c, err := Open(dev)
	if err != nil {
		return nil, err
	}
	e = &BaselineEnd{cfg: cfg, ctx: c, bufSize: bufSize, depth: depth, psn: RandomPSN()}
	defer func() {
		if err != nil {
			e.Close()
			e = nil
		}
	}()
	if e.gid, err = PickGID(c, cfg.Port, -1); err != nil {
		return nil, err
	}
	pa, err := c.QueryPort(cfg.Port)
	if err != nil {
		return nil, err
	}
	e.mtu = pa.ActiveMTU
	if e.pd, err = c.AllocPD(); err != nil {
		return nil, err
	}
	acc := uint32(AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead)
	if e.mr, err = e.pd.AllocMR(2*bufSize, acc); err != nil {
		return nil, err
	}
	e.sendBuf, e.recvBuf = e.mr.Buf[:bufSize], e.mr.Buf[bufSize:2*bufSize]
	if e.cq, err = c.CreateCQ(2*depth+2, false); err != nil {
		return nil, err
	}
	caps := QPCaps{MaxSendWR: uint32(depth), MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}
	if e.qp, err = e.pd.CreateQP(e.cq, e.cq, caps); err != nil {
		return nil, err
	}
	if err = e.qp.ToInit(cfg.Port, acc); err != nil {
		return nil, err
	}
	if err = e.qp.PostRecv(1, SGEOf(e.mr, e.recvBuf)); err != nil {
		return nil, err
	}
	return e, nil
}

// Info is what the other end needs to connect to this one.
func (e *BaselineEnd) Info() BaselineInfo {
	return BaselineInfo{GID: e.gid.GID, QPN: e.qp.QPN, PSN: e.psn,
		Addr: uint64(SGEOf(e.mr, e.recvBuf).Addr), RKey: e.mr.RKey, Len: e.bufSize}
}

// Connect brings the QP to RTS towards the remote end.
func (e *BaselineEnd) Connect(rem BaselineInfo) error {
	if e.conn {
		return errors.New("rdma: baseline end already connected")
	}
	if err := e.qp.ToRTR(e.cfg.Port, uint8(e.gid.Index), e.mtu, Remote{GID: rem.GID, QPN: rem.QPN, PSN: rem.PSN}); err != nil {
		return err
	}
	if err := e.qp.ToRTS(e.psn, e.cfg.AckTimeout, e.cfg.RetryCount, e.cfg.RNRRetry); err != nil {
		return err
	}
	e.remote, e.conn = rem, true
	return nil
}

// yieldEvery is how many empty polls of a completion ring a baseline end
// makes before it yields the CPU once. Two busy-polling processes that
// the kernel puts on one CPU (as on a small VM) would otherwise hand over
// only at a scheduler tick, milliseconds per message; alone on its CPU the
// yield returns at once.
const yieldEvery = 256

func yieldCPU() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// poll busy-polls for one completion of opcode (others, the completions
// of sends, are consumed), checking ctx now and then.
func (e *BaselineEnd) poll(ctx context.Context, opcode uint32) (WC, error) {
	var wc [1]WC
	for i := 1; ; i++ {
		if e.cq.Poll(wc[:]) == 1 {
			if wc[0].Status != WCSuccess {
				return wc[0], &WCError{Status: wc[0].Status, QPNum: wc[0].QPNum}
			}
			if wc[0].Opcode == opcode {
				return wc[0], nil
			}
			continue
		}
		if i%yieldEvery == 0 {
			yieldCPU()
			if err := ctx.Err(); err != nil {
				return WC{}, err
			}
		}
	}
}

// send posts one signaled SEND of the first n bytes of the send buffer and
// rings the doorbell.
func (e *BaselineEnd) send(n int) error {
	var sges []SGE
	if n > 0 {
		sges = []SGE{SGEOf(e.mr, e.sendBuf[:n])}
	}
	if err := e.qp.PostSend(&SendWR{WrID: 2, Opcode: OpSend, Signaled: true, SGEs: sges}); err != nil {
		return err
	}
	return e.qp.Doorbell()
}

func (e *BaselineEnd) check(size int) error {
	if !e.conn {
		return errors.New("rdma: baseline end not connected")
	}
	if size < 0 || size > e.bufSize || size > e.remote.Len {
		return fmt.Errorf("rdma: baseline message of %d bytes (buffers %d here, %d there)", size, e.bufSize, e.remote.Len)
	}
	return nil
}

// PingPong sends size-byte SENDs to an Echo at the other end, warmup
// untimed then iters timed, and returns each round-trip time.
func (e *BaselineEnd) PingPong(ctx context.Context, size, warmup, iters int) ([]time.Duration, error) {
	if err := e.check(size); err != nil {
		return nil, err
	}
	if warmup < 0 || iters < 1 {
		return nil, fmt.Errorf("rdma: PingPong(warmup %d, iters %d)", warmup, iters)
	}
	out := make([]time.Duration, 0, iters)
	for i := 0; i < warmup+iters; i++ {
		t0 := time.Now()
		if err := e.send(size); err != nil {
			return nil, err
		}
		if _, err := e.poll(ctx, wcRecv); err != nil {
			return nil, err
		}
		if err := e.qp.PostRecv(1, SGEOf(e.mr, e.recvBuf)); err != nil {
			return nil, err
		}
		if i >= warmup {
			out = append(out, time.Since(t0))
		}
	}
	return out, nil
}

// Echo answers every SEND it receives with a SEND of the same length
// until ctx is done; it then returns nil.
func (e *BaselineEnd) Echo(ctx context.Context) error {
	if err := e.check(0); err != nil {
		return err
	}
	for {
		wc, err := e.poll(ctx, wcRecv)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if err := e.qp.PostRecv(1, SGEOf(e.mr, e.recvBuf)); err != nil {
			return err
		}
		n := int(wc.ByteLen)
		if n > e.bufSize {
			return fmt.Errorf("rdma: echo received %d bytes into %d", n, e.bufSize)
		}
		if err := e.send(n); err != nil {
			return err
		}
	}
}

// WriteStream writes size-byte RDMA WRITEs into the other end's receive
// half, keeping up to depth outstanding, for about d, and reports the
// writes completed and the time from the first post to the last
// completion. The other end need not do anything.
func (e *BaselineEnd) WriteStream(ctx context.Context, size, depth int, d time.Duration) (BandwidthResult, error) {
	if err := e.check(size); err != nil {
		return BandwidthResult{}, err
	}
	if size < 1 || depth < 1 || d <= 0 {
		return BandwidthResult{}, fmt.Errorf("rdma: WriteStream(%d, %d, %v)", size, depth, d)
	}
	depth = min(depth, e.depth)
	wr := SendWR{WrID: 3, Opcode: OpRDMAWrite, Signaled: true, SGEs: []SGE{SGEOf(e.mr, e.sendBuf[:size])},
		RemoteAddr: e.remote.Addr, RKey: e.remote.RKey}
	var wcs [16]WC
	done, out := 0, 0
	start := time.Now()
	last := start
	for i := 1; ; i++ {
		posting := time.Since(start) < d && ctx.Err() == nil
		if !posting && out == 0 {
			break
		}
		rang := false
		for posting && out < depth {
			if err := e.qp.PostSend(&wr); err != nil {
				if errors.Is(err, ErrQueueFull) {
					break
				}
				return BandwidthResult{}, err
			}
			out++
			rang = true
		}
		if rang {
			if err := e.qp.Doorbell(); err != nil {
				return BandwidthResult{}, err
			}
		}
		n := e.cq.Poll(wcs[:])
		for _, wc := range wcs[:n] {
			if wc.Status != WCSuccess {
				return BandwidthResult{}, &WCError{Status: wc.Status, QPNum: wc.QPNum}
			}
			if wc.Opcode == wcRDMAWrite {
				done++
				out--
			}
		}
		if n > 0 {
			last = time.Now()
		} else if i%yieldEvery == 0 {
			yieldCPU()
			if time.Since(last) > 10*time.Second {
				return BandwidthResult{}, errBaselineTimeout
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return BandwidthResult{}, err
	}
	return BandwidthResult{Size: size, Iters: done, Depth: depth, Elapsed: last.Sub(start)}, nil
}

// Close releases the QP, CQ, memory and device context.
func (e *BaselineEnd) Close() error {
	if e.qp != nil {
		e.qp.Close()
	}
	if e.cq != nil {
		e.cq.Close()
	}
	if e.mr != nil {
		e.mr.Close()
	}
	if e.pd != nil {
		e.pd.Close()
	}
	return e.ctx.Close()
}
