package verbs

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Raw verbs baseline: the analogue of perftest's ib_send_lat and
// ib_write_bw, measured between two RC queue pairs of one device connected
// to each other (loopback through the provider, as perftest's loopback
// runs do), busy-polling the mmap'd completion rings. Benchmarks of the
// fabric and of pcor compare against these figures.

// LatencyResult is a SEND/RECV ping-pong measurement. Latencies are
// one-way (half the round trip), as ib_send_lat reports them.
type LatencyResult struct {
	Size, Iters           int
	Min, Median, Avg, P99 time.Duration
}

func (r LatencyResult) String() string {
	return fmt.Sprintf("send/recv %d B x %d: min %v median %v avg %v p99 %v (one-way)", r.Size, r.Iters, r.Min, r.Median, r.Avg, r.P99)
}

// BandwidthResult is an RDMA WRITE streaming measurement.
type BandwidthResult struct {
	Size, Iters, Depth int
	Elapsed            time.Duration
}

// MBps is the throughput in 10^6 bytes per second (perftest's MB/sec).
func (r BandwidthResult) MBps() float64 {
	return float64(r.Size) * float64(r.Iters) / r.Elapsed.Seconds() / 1e6
}

func (r BandwidthResult) String() string {
	return fmt.Sprintf("rdma write %d B x %d (depth %d): %.1f MB/s in %v", r.Size, r.Iters, r.Depth, r.MBps(), r.Elapsed)
}

// qpPair is two connected QPs, each with its own CQ, and one registered
// region split between them.
type qpPair struct {
	ctx      *Context
	pd       *PD
	mr       *MR
	cqA, cqB *CQ
	a, b     *QP
}

func (pp *qpPair) Close() {
	for _, q := range []*QP{pp.a, pp.b} {
		if q != nil {
			q.Close()
		}
	}
	for _, c := range []*CQ{pp.cqA, pp.cqB} {
		if c != nil {
			c.Close()
		}
	}
	if pp.mr != nil {
		pp.mr.Close()
	}
	if pp.pd != nil {
		pp.pd.Close()
	}
	pp.ctx.Close()
}

func newQPPair(cfg BaselineConfig, bufSize, depth int) (pp *qpPair, err error) {
	cfg = cfg.withDefaults()
	dev, err := FindDevice(cfg.Sysfs, cfg.Device)
	if err != nil {
		return nil, err
	}
	ctx, err := Open(dev)
	if err != nil {
		return nil, err
	}
	pp = &qpPair{ctx: ctx}
	defer func() {
		if err != nil {
			pp.Close()
		}
	}()
	gid, err := PickGID(ctx, cfg.Port, -1)
	if err != nil {
		return nil, err
	}
	pa, err := ctx.QueryPort(cfg.Port)
	if err != nil {
		return nil, err
	}
	if pp.pd, err = ctx.AllocPD(); err != nil {
		return nil, err
	}
	if pp.mr, err = pp.pd.AllocMR(2*bufSize, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead); err != nil {
		return nil, err
	}
	if pp.cqA, err = ctx.CreateCQ(2*depth+2, false); err != nil {
		return nil, err
	}
	if pp.cqB, err = ctx.CreateCQ(2*depth+2, false); err != nil {
		return nil, err
	}
	caps := QPCaps{MaxSendWR: uint32(depth), MaxRecvWR: uint32(depth), MaxSendSGE: 1, MaxRecvSGE: 1}
	if pp.a, err = pp.pd.CreateQP(pp.cqA, pp.cqA, caps); err != nil {
		return nil, err
	}
	if pp.b, err = pp.pd.CreateQP(pp.cqB, pp.cqB, caps); err != nil {
		return nil, err
	}
	acc := uint32(AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead)
	psnA, psnB := RandomPSN(), RandomPSN()
	for _, step := range []func() error{
		func() error { return pp.a.ToInit(cfg.Port, acc) },
		func() error { return pp.b.ToInit(cfg.Port, acc) },
		func() error {
			return pp.a.ToRTR(cfg.Port, uint8(gid.Index), pa.ActiveMTU, Remote{GID: gid.GID, QPN: pp.b.QPN, PSN: psnB})
		},
		func() error {
			return pp.b.ToRTR(cfg.Port, uint8(gid.Index), pa.ActiveMTU, Remote{GID: gid.GID, QPN: pp.a.QPN, PSN: psnA})
		},
		func() error { return pp.a.ToRTS(psnA, cfg.AckTimeout, cfg.RetryCount, cfg.RNRRetry) },
		func() error { return pp.b.ToRTS(psnB, cfg.AckTimeout, cfg.RetryCount, cfg.RNRRetry) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return pp, nil
}

var errBaselineTimeout = errors.New("rdma: baseline: no completion in 10s")

// spin busy-polls cq for one completion of the wanted opcode; successful
// completions of other opcodes (the sends of a ping-pong) are consumed.
func spin(cq *CQ, opcode uint32) error {
	var wc [1]WC
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if cq.Poll(wc[:]) == 1 {
			if wc[0].Status != WCSuccess {
				return &WCError{Status: wc[0].Status, QPNum: wc[0].QPNum}
			}
			if wc[0].Opcode == opcode {
				return nil
			}
			continue
		}
		if i%1024 == 0 && time.Now().After(deadline) {
			return errBaselineTimeout
		}
	}
}

// latencyBuf is the buffer each QP of MeasureSendLatency receives into.
const latencyBuf = 64 << 10

// MeasureSendLatency ping-pongs size-byte SENDs between two connected QPs
// iters times (after a short warm-up) and reports one-way latency.
func MeasureSendLatency(cfg BaselineConfig, size, iters int) (LatencyResult, error) {
	if size < 0 || size > latencyBuf || iters <= 0 {
		return LatencyResult{}, fmt.Errorf("rdma: MeasureSendLatency(%d, %d)", size, iters)
	}
	pp, err := newQPPair(cfg, latencyBuf, 4)
	if err != nil {
		return LatencyResult{}, err
	}
	defer pp.Close()
	bufA, bufB := pp.mr.Buf[:latencyBuf], pp.mr.Buf[latencyBuf:]
	sgeA, sgeB := SGEOf(pp.mr, bufA[:size]), SGEOf(pp.mr, bufB[:size])
	var sgesA, sgesB []SGE
	if size > 0 {
		sgesA, sgesB = []SGE{sgeA}, []SGE{sgeB}
	}
	if err := pp.a.PostRecv(1, SGEOf(pp.mr, bufA)); err != nil {
		return LatencyResult{}, err
	}
	if err := pp.b.PostRecv(2, SGEOf(pp.mr, bufB)); err != nil {
		return LatencyResult{}, err
	}
	warm := min(iters/10+1, 100)
	rtts := make([]time.Duration, 0, iters)
	one := func(q *QP, sges []SGE) error {
		if err := q.PostSend(&SendWR{WrID: 9, Opcode: OpSend, Signaled: true, SGEs: sges}); err != nil {
			return err
		}
		return q.Doorbell()
	}
	for i := 0; i < warm+iters; i++ {
		start := time.Now()
		if err := one(pp.a, sgesA); err != nil {
			return LatencyResult{}, err
		}
		if err := spin(pp.cqB, wcRecv); err != nil {
			return LatencyResult{}, err
		}
		pp.b.PostRecv(2, SGEOf(pp.mr, bufB))
		if err := one(pp.b, sgesB); err != nil {
			return LatencyResult{}, err
		}
		if err := spin(pp.cqA, wcRecv); err != nil {
			return LatencyResult{}, err
		}
		pp.a.PostRecv(1, SGEOf(pp.mr, bufA))
		if i >= warm {
			rtts = append(rtts, time.Since(start))
		}
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	var sum time.Duration
	for _, d := range rtts {
		sum += d
	}
	return LatencyResult{Size: size, Iters: iters, Min: rtts[0] / 2, Median: rtts[len(rtts)/2] / 2,
		Avg: sum / time.Duration(2*len(rtts)), P99: rtts[len(rtts)*99/100] / 2}, nil
}

// MeasureWriteBandwidth streams iters RDMA WRITEs of size bytes from one
// QP into the other's memory with up to depth outstanding.
func MeasureWriteBandwidth(cfg BaselineConfig, size, iters, depth int) (BandwidthResult, error) {
	if size <= 0 || size > 1<<24 || iters <= 0 || depth <= 0 {
		return BandwidthResult{}, fmt.Errorf("rdma: MeasureWriteBandwidth(%d, %d, %d)", size, iters, depth)
	}
	pp, err := newQPPair(cfg, size, depth)
	if err != nil {
		return BandwidthResult{}, err
	}
	defer pp.Close()
	src := SGEOf(pp.mr, pp.mr.Buf[:size])
	dst := SGEOf(pp.mr, pp.mr.Buf[size:2*size])
	var wcs [16]WC
	posted, done, out := 0, 0, 0
	start := time.Now()
	last := start
	for done < iters {
		rang := false
		for out < depth && posted < iters {
			wr := SendWR{WrID: uint64(posted), Opcode: OpRDMAWrite, Signaled: true, SGEs: []SGE{src},
				RemoteAddr: dst.Addr, RKey: pp.mr.RKey}
			if err := pp.a.PostSend(&wr); err != nil {
				break
			}
			posted++
			out++
			rang = true
		}
		if rang {
			if err := pp.a.Doorbell(); err != nil {
				return BandwidthResult{}, err
			}
		}
		n := pp.cqA.Poll(wcs[:])
		for _, wc := range wcs[:n] {
			if wc.Status != WCSuccess {
				return BandwidthResult{}, &WCError{Status: wc.Status, QPNum: wc.QPNum}
			}
			done++
			out--
		}
		if n > 0 {
			last = time.Now()
		} else if time.Since(last) > 10*time.Second {
			return BandwidthResult{}, errBaselineTimeout
		}
	}
	return BandwidthResult{Size: size, Iters: iters, Depth: depth, Elapsed: time.Since(start)}, nil
}
