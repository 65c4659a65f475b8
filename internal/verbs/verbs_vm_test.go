package verbs

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// requireDevice skips the test when the host has no supported RDMA device;
// these tests run inside the soft-RoCE VM (see README in the package tree).
func requireDevice(t testing.TB) DeviceInfo {
	t.Helper()
	d, err := FindDevice("", "")
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("no RDMA device (%v): run under the rxe VM, e.g. go test -exec \"$PWD/../shared/rdma-vm/run.sh --\" ./internal/verbs (or $PCOR_RDMA_VM)", err)
	}
	if err != nil {
		t.Skipf("no supported RDMA device: %v", err)
	}
	return d
}

// loopPair is two QPs of one context connected to each other.
type loopPair struct {
	ctx      *Context
	pd       *PD
	scq, rcq *CQ
	a, b     *QP
	mr       *MR
	gidIndex uint8
}

func newLoopPair(t *testing.T) *loopPair {
	t.Helper()
	d := requireDevice(t)
	ctx, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	gid, err := PickGID(ctx, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pd.Close() })
	mr, err := pd.AllocMR(1<<20, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mr.Close() })
	scq, err := ctx.CreateCQ(64, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { scq.Close() })
	rcq, err := ctx.CreateCQ(64, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcq.Close() })
	caps := QPCaps{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 2, MaxRecvSGE: 1}
	a, err := pd.CreateQP(scq, rcq, caps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := pd.CreateQP(scq, rcq, caps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	acc := uint32(AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead)
	for _, q := range []*QP{a, b} {
		if err := q.ToInit(1, acc); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.ToRTR(1, uint8(gid.Index), MTU1024, Remote{GID: gid.GID, QPN: b.QPN, PSN: 100}); err != nil {
		t.Fatal(err)
	}
	if err := b.ToRTR(1, uint8(gid.Index), MTU1024, Remote{GID: gid.GID, QPN: a.QPN, PSN: 200}); err != nil {
		t.Fatal(err)
	}
	if err := a.ToRTS(200, 14, 7, 7); err != nil {
		t.Fatal(err)
	}
	if err := b.ToRTS(100, 14, 7, 7); err != nil {
		t.Fatal(err)
	}
	return &loopPair{ctx: ctx, pd: pd, scq: scq, rcq: rcq, a: a, b: b, mr: mr, gidIndex: uint8(gid.Index)}
}

// waitWC polls cq until one completion arrives, blocking on its channel.
func waitWC(t *testing.T, cq *CQ) WC {
	t.Helper()
	var wc [1]WC
	deadline := time.Now().Add(20 * time.Second)
	for {
		if cq.Poll(wc[:]) == 1 {
			return wc[0]
		}
		if err := cq.Arm(); err != nil {
			t.Fatal(err)
		}
		if cq.Poll(wc[:]) == 1 {
			return wc[0]
		}
		if err := cq.Wait(deadline); err != nil {
			t.Fatalf("waiting for a completion: %v", err)
		}
	}
}

func TestVerbsQueries(t *testing.T) {
	d := requireDevice(t)
	ctx, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	da, err := ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if da.PhysPortCnt < 1 || da.MaxQPWr == 0 || da.MaxCQE == 0 {
		t.Fatalf("implausible device attributes %+v", da)
	}
	pa, err := ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	if pa.State != PortActive || pa.GIDTblLen == 0 {
		t.Fatalf("port 1: %+v", pa)
	}
	gids, err := ctx.QueryGIDTable(int(pa.GIDTblLen))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range gids {
		t.Logf("gid %d port %d type %d %v", g.Index, g.Port, g.Type, g.GID)
		found = found || g.IsRoCEv2IPv4()
	}
	if !found {
		t.Fatalf("no RoCEv2 IPv4 GID in %v", gids)
	}
	t.Logf("device %+v port %+v", da, pa)
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestVerbsSendRecvAndWrite(t *testing.T) {
	p := newLoopPair(t)
	buf := p.mr.Buf
	src, dst := buf[:4096], buf[8192:8192+4096]
	for i := range src {
		src[i] = byte(i * 7)
	}
	if err := p.b.PostRecv(42, SGEOf(p.mr, dst)); err != nil {
		t.Fatal(err)
	}
	// Two SGEs gathered into one message.
	if err := p.a.PostSend(&SendWR{WrID: 7, Opcode: OpSend, Signaled: true,
		SGEs: []SGE{SGEOf(p.mr, src[:100]), SGEOf(p.mr, src[100:3000])}}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Doorbell(); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]WC{}
	for len(got) < 2 {
		var wc [4]WC
		n := p.scq.Poll(wc[:])
		n += p.rcq.Poll(wc[n:])
		for _, w := range wc[:n] {
			got[w.WrID] = w
		}
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if w := got[7]; w.Status != 0 || w.Opcode != wcSend {
		t.Fatalf("send completion %+v", w)
	}
	if w := got[42]; w.Status != 0 || w.Opcode != wcRecv || w.ByteLen != 3000 || w.QPNum != p.b.QPN {
		t.Fatalf("recv completion %+v", w)
	}
	if !bytes.Equal(dst[:3000], src[:3000]) {
		t.Fatal("received bytes differ")
	}
	// RDMA WRITE into b's memory, then wait on the completion channel.
	wdst := buf[65536 : 65536+4096]
	if err := p.a.PostSend(&SendWR{WrID: 8, Opcode: OpRDMAWrite, Signaled: true,
		SGEs: []SGE{SGEOf(p.mr, src)}, RemoteAddr: SGEOf(p.mr, wdst).Addr, RKey: p.mr.RKey}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Doorbell(); err != nil {
		t.Fatal(err)
	}
	if w := waitWC(t, p.scq); w.Status != 0 || w.WrID != 8 || w.Opcode != wcRDMAWrite {
		t.Fatalf("write completion %+v", w)
	}
	if !bytes.Equal(wdst, src) {
		t.Fatal("written bytes differ")
	}
}
