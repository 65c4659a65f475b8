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
	cmd, _ := startPeer(t, "rdma-echo", n, pcor.Peer{Proc: 1, Fabric: "rdma"})
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
	// Every message of rdma.DefaultReadMin or more went by rendezvous,
	// each way.
	big := 0
	for _, size := range sizes {
		if size >= rdma.DefaultReadMin {
			big++
		}
	}
	if st := n.RendezvousStats(); st.Announced != uint64(big) || st.Read != uint64(big) || st.Dropped != 0 {
		t.Fatalf("rendezvous %+v, want %d announced and %d read", st, big, big)
	}
	// The RC queue pairs are reliable: the port took the engine's
	// reliable path, with no acknowledgements or retransmissions.
	for _, ps := range n.Stats() {
		if ps.Fabric != "rdma" {
			continue
		}
		t.Logf("rdma port: %d datagrams sent, %d received; acks %d sent, %d received; %d retransmits, %d timeouts, %d probes",
			ps.FragsSent, ps.FragsRecv, ps.AcksSent, ps.AcksRecv, ps.Retransmits, ps.Timeouts, ps.Probes)
		if ps.FragsSent == 0 || ps.AcksSent+ps.AcksRecv+ps.Retransmits+ps.Timeouts+ps.Probes != 0 {
			t.Fatalf("the datagram protocol ran over RDMA: %+v", ps)
		}
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
	cmd, _ := startPeer(t, "rdma-echo", n, pcor.Peer{Proc: 1, Fabric: "rdma"})
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

// TestOverRDMARendezvousCases runs the rendezvous through its less common
// paths over RDMA: large messages that arrive before any receive (they
// wait as announcements, on both sides), a receive posted after the
// announcement came (found by Probe first), a receive cancelled before its
// message, and a send cancelled after its announcement left (no effect:
// the receiver may be reading its memory). Every message is checked byte
// for byte.
func TestOverRDMARendezvousCases(t *testing.T) {
	n, cmd := rdmaNode(t)
	th := n.Thread(0)
	dst := pcor.Addr{Proc: 1, Thread: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	before := n.RendezvousStats()
	// Three large messages at once. The echo takes the first and sends
	// it back, and its send waits until this process reads it: the other
	// two wait at the echo as announcements, and each echo waits here as
	// one until the receive below is posted.
	sizes := []int{1 << 20, 4<<20 + 5, rdma.DefaultReadMin + 5}
	var datas [][]byte
	var sends []*pcor.Request
	for i, size := range sizes {
		data := randomBytes(size, uint64(100+i))
		datas = append(datas, data)
		sends = append(sends, th.Isend(dst, pcor.Tag(11+i), data))
	}
	time.Sleep(300 * time.Millisecond)
	for i, size := range sizes {
		st, err := th.Probe(ctx, dst, pcor.Tag(11+i))
		if err != nil {
			t.Fatalf("probe of the echo of %d B: %v", size, err)
		}
		if st.Len != size {
			t.Fatalf("probe of the echo of %d B says %d B", size, st.Len)
		}
		m, err := th.Recv(ctx, dst, pcor.Tag(11+i))
		if err != nil {
			t.Fatalf("echo of %d B: %v", size, err)
		}
		if !bytes.Equal(m.Data, datas[i]) {
			t.Fatalf("echo of %d B differs", size)
		}
	}
	for i, s := range sends {
		if err := s.Wait(ctx); err != nil {
			t.Fatalf("send of %d B: %v", sizes[i], err)
		}
	}
	// A receive cancelled before its message comes leaves the message
	// to the next receive.
	r := th.Irecv(dst, 21, nil)
	r.Cancel()
	if err := r.Wait(ctx); !errors.Is(err, pcor.ErrCanceled) {
		t.Fatalf("cancelled receive: %v, want ErrCanceled", err)
	}
	data := randomBytes(2<<20, 21)
	s := th.Isend(dst, 21, data)
	time.Sleep(100 * time.Millisecond)
	s.Cancel() // the announcement has left: no effect
	m, err := th.Recv(ctx, dst, 21)
	if err != nil {
		t.Fatalf("echo after the cancels: %v", err)
	}
	if !bytes.Equal(m.Data, data) {
		t.Fatal("echo after the cancels differs")
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("a send cancelled after its announcement left: %v, want success", err)
	}
	after := n.RendezvousStats()
	big := 0
	for _, size := range append(sizes, len(data)) {
		if size >= rdma.DefaultReadMin {
			big++
		}
	}
	if got := after.Announced - before.Announced; got != uint64(big) {
		t.Fatalf("%d messages announced, want %d", got, big)
	}
	if got := after.Read - before.Read; got != uint64(big) {
		t.Fatalf("%d messages read, want %d", got, big)
	}
	if err := th.Send(ctx, dst, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
}
