package pcor_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/rdma"
	"github.com/pcor-go/pcor/pcor"
)

// TestOverRDMA sends messages of 0 B to 64 MiB between two processes
// through pcor nodes on RDMA ports and checks the echoes byte for byte.
// It runs in the soft-RoCE VM:
//
//	CGO_ENABLED=0 go test -exec "../shared/rdma-vm/run.sh -m 2G --" -run OverRDMA ./pcor/
func TestOverRDMA(t *testing.T) {
	if err := rdma.Probe(rdma.Config{}); err != nil {
		if errors.Is(err, rdma.ErrNoDevice) {
			t.Skipf("no RDMA device (%v): run under the soft-RoCE VM, see fabric/rdma/README.md", err)
		}
		t.Skipf("no supported RDMA device: %v", err)
	}
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Fabric: "rdma"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cmd, _, addr := startPeer(t, "rdma-echo", n)
	if err := n.AddPeer(pcor.Peer{Proc: 1, Fabric: "rdma", Addr: addr}); err != nil {
		t.Fatal(err)
	}
	th := n.Thread(0)
	dst := pcor.Addr{Proc: 1, Thread: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sizes := []int{0, 1, 1000, 65000, 64 << 10, 64<<10 + 1, 1<<20 + 3, 16 << 20, 64 << 20}
	for i, size := range sizes {
		data := n.Alloc(size)
		copy(data, randomBytes(size, uint64(size)))
		start := time.Now()
		if err := th.Send(ctx, dst, pcor.Tag(i+1), data); err != nil {
			t.Fatalf("send %d B: %v; node %+v", size, err, n.Stats())
		}
		m, err := th.Recv(ctx, dst, pcor.Tag(i+1))
		if err != nil {
			t.Fatalf("echo of %d B: %v; node %+v", size, err, n.Stats())
		}
		if !bytes.Equal(m.Data, data) {
			t.Fatalf("echo of %d B differs (got %d B)", size, len(m.Data))
		}
		el := time.Since(start)
		t.Logf("%9d B round trip %v (%.1f MB/s each way)", size, el, 2*float64(size)/el.Seconds()/1e6)
	}
	// Every message of 32 KiB or more went by rendezvous, each way.
	big := 0
	for _, size := range sizes {
		if size >= 32<<10 {
			big++
		}
	}
	if st := n.RendezvousStats(); st.Announced != uint64(big) || st.Read != uint64(big) || st.Dropped != 0 {
		t.Fatalf("rendezvous %+v, want %d announced and %d read", st, big, big)
	}
	if err := th.Send(ctx, dst, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
}

// rdmaNode is process 0 of the RDMA tests with an echo peer started.
func rdmaNode(t *testing.T) (*pcor.Node, *exec.Cmd) {
	t.Helper()
	if err := rdma.Probe(rdma.Config{}); err != nil {
		t.Skipf("no supported RDMA device (%v): run under the soft-RoCE VM, see fabric/rdma/README.md", err)
	}
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Fabric: "rdma"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	cmd, _, addr := startPeer(t, "rdma-echo", n)
	if err := n.AddPeer(pcor.Peer{Proc: 1, Fabric: "rdma", Addr: addr}); err != nil {
		t.Fatal(err)
	}
	return n, cmd
}

// TestOverRDMASenderKilled kills the sender of a 16 MiB message while
// this process reads it by rendezvous: the receive fails within seconds
// and the node closes.
func TestOverRDMASenderKilled(t *testing.T) {
	n, cmd := rdmaNode(t)
	th := n.Thread(0)
	dst := pcor.Addr{Proc: 1, Thread: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	data := randomBytes(16<<20, 1)
	if err := th.Send(ctx, dst, 5, data); err != nil {
		t.Fatal(err)
	}
	// The echo is announced; take it and kill the peer while it is read.
	if _, err := th.Probe(ctx, dst, 5); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := th.Recv(ctx, dst, 5)
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	select {
	case err := <-got:
		if err == nil {
			t.Skip("the read completed before the kill")
		}
		if !errors.Is(err, pcor.ErrUnreachable) {
			t.Fatalf("receive: %v, want ErrUnreachable", err)
		}
		t.Logf("receive failed %v after the kill: %v", time.Since(killed), err)
	case <-time.After(5 * time.Second):
		// (The guest's kernel tears the dead process down before its
		// sockets close: over a second on a loaded host.)
		t.Fatal("receive not failed within 5s of the kill")
	}
	closeWithin(t, n, 10*time.Second)
}

// TestOverRDMAReceiverKilled kills the receiver of a 16 MiB message
// while it reads the message from this process by rendezvous: the Send,
// which waits for the receiver's word, fails within seconds (the port
// reports the peer lost) and the node closes.
func TestOverRDMAReceiverKilled(t *testing.T) {
	n, cmd := rdmaNode(t)
	th := n.Thread(0)
	dst := pcor.Addr{Proc: 1, Thread: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// A small message first, so that the queue pairs are up.
	if err := th.Send(ctx, dst, 5, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Recv(ctx, dst, 5); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(16<<20, 2)
	sent := make(chan error, 1)
	go func() { sent <- th.Send(ctx, dst, 6, data) }()
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	select {
	case err := <-sent:
		if err == nil {
			t.Skip("the message was read before the kill")
		}
		if !errors.Is(err, pcor.ErrPeerDown) && !errors.Is(err, pcor.ErrUnreachable) {
			t.Fatalf("send: %v, want ErrPeerDown or ErrUnreachable", err)
		}
		t.Logf("send failed %v after the kill: %v", time.Since(killed), err)
	case <-time.After(5 * time.Second):
		t.Fatal("send not failed within 5s of the kill")
	}
	closeWithin(t, n, 10*time.Second)
}

// closeWithin fails the test if n takes longer than d to close.
func closeWithin(t *testing.T, n *pcor.Node, d time.Duration) {
	t.Helper()
	closed := make(chan struct{})
	go func() { n.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(d):
		t.Fatal("Close hangs")
	}
}
