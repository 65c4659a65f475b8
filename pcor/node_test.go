package pcor_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/rdma"
	"github.com/pcor-go/pcor/pcor"
)

func TestPollingMode(t *testing.T) {
	a, c := udpPair(t, pcor.Polling)
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, size := range []int{0, 1, 100000, 3 << 20} {
		data := randomBytes(size, 11)
		r := tc.Irecv(ta.Addr(), 2, nil)
		if err := ta.Send(ctx, tc.Addr(), 2, data); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Message().Data, data) {
			t.Fatalf("%d: %v", size, err)
		}
	}
	if a.Stats()[0].Mode != pcor.Polling {
		t.Fatal("port not in polling mode")
	}
}

func TestTooLarge(t *testing.T) {
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, MaxMessage: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	th := a.NewThread()
	err = th.Send(context.Background(), pcor.Addr{Proc: 0, Thread: 1}, 0, make([]byte, 1001))
	if !errors.Is(err, pcor.ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
	if err := th.Send(context.Background(), pcor.Addr{Proc: 0, Thread: 1}, 0, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledRecvAndClose(t *testing.T) {
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey})
	if err != nil {
		t.Fatal(err)
	}
	th := a.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := th.Recv(ctx, pcor.Any, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	// The withdrawn receive must not swallow the next message.
	if err := th.Send(context.Background(), th.Addr(), 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if m, err := th.Recv(context.Background(), pcor.Any, 1); err != nil || string(m.Data) != "x" {
		t.Fatalf("got %q %v", m.Data, err)
	}
	r := th.Irecv(pcor.Any, 5, nil)
	a.Close()
	a.Close()
	if err := r.Wait(context.Background()); !errors.Is(err, pcor.ErrClosed) {
		t.Fatalf("pending receive after close: %v", err)
	}
	if err := th.Send(context.Background(), th.Addr(), 1, nil); !errors.Is(err, pcor.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

// Sending to a process that died turns into ErrUnreachable within the
// configured timeout.
func TestDeadProcessUnreachable(t *testing.T) {
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, UnreachableTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cmd, _ := startPeer(t, "echo", n, pcor.Peer{Proc: 1})
	th := n.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	peer := pcor.Addr{Proc: 1, Thread: 0}
	if err := th.Send(ctx, peer, 1, []byte("alive?")); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Recv(ctx, peer, 1); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	start := time.Now()
	err = th.Send(ctx, peer, 1, randomBytes(1<<20, 1))
	var ue *pcor.UnreachableError
	if !errors.Is(err, pcor.ErrUnreachable) || !errors.As(err, &ue) || ue.Proc != 1 {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v with a 1 s timeout", d)
	}
	t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
}

// Without an RDMA device a node that needs RDMA fails with ErrNoDevice,
// and one that only prefers it falls back to its other ports.
func TestRDMAFallback(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband_verbs"); err == nil {
		t.Skip("this host has RDMA devices")
	}
	_, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Fabric: "rdma"}}})
	if !errors.Is(err, rdma.ErrNoDevice) {
		t.Fatalf("required rdma port: %v", err)
	}
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey,
		Listen: []pcor.Listen{{Fabric: "rdma", Optional: true}, {Fabric: "udp", Addr: "127.0.0.1:0"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if eps := n.Endpoints(); len(eps) != 1 || eps[0].Fabric != "udp" {
		t.Fatalf("ports: %+v", eps)
	}
}

// The steady-state path allocates nothing per message when sending from
// and receiving into Node.Alloc buffers: a blocking Send and RecvInto
// ping-pong between two nodes, both sides counted.
func TestSteadyStateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	ctx := context.Background()
	go func() {
		buf := c.Alloc(64)
		for {
			m, err := tc.RecvInto(ctx, ta.Addr(), 1, buf)
			if err != nil {
				return
			}
			if err := tc.Send(ctx, ta.Addr(), 1, m.Data); err != nil {
				return
			}
		}
	}()
	msg, buf := a.Alloc(64), a.Alloc(64)
	round := func() {
		if err := ta.Send(ctx, tc.Addr(), 1, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := ta.RecvInto(ctx, tc.Addr(), 1, buf); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ {
		round() // warm the pools
	}
	if n := testing.AllocsPerRun(2000, round); n > 0.5 {
		t.Fatalf("%.2f allocations per round trip", n)
	}
}
