package rdma

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

const pcorJobKey = 0x7264_6d61

// runPcorEcho is process 1 of the pcor test: a node on an RDMA port that
// sends every message back to process 0 until one with tag 0 arrives.
func runPcorEcho() int {
	p, err := Listen(Config{})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	n, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: pcorJobKey,
		Listen: []pcor.Listen{{Port: p}},
		Peers:  []pcor.Peer{{Proc: 0, Fabric: "rdma", Addr: os.Getenv("RDMA_TEST_TO")}}})
	if err != nil {
		p.Close()
		fmt.Println("ERR", err)
		return 1
	}
	defer n.Close()
	fmt.Printf("READY %s\n", p.LocalEndpoint())
	t := n.Thread(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for {
		m, err := t.Recv(ctx, pcor.Any, pcor.AnyTag)
		if err != nil {
			fmt.Println("ERR recv:", err)
			return 1
		}
		if m.Tag == 0 {
			return 0
		}
		if err := t.Send(ctx, m.Src, m.Tag, m.Data); err != nil {
			fmt.Println("ERR send:", err)
			return 1
		}
	}
}

// TestPcorOverRDMA sends messages of 0 B to 64 MiB between two processes
// through pcor nodes on RDMA ports and checks the echoes byte for byte.
func TestPcorOverRDMA(t *testing.T) {
	requireDevice(t)
	p, err := Listen(Config{})
	if err != nil {
		t.Fatal(err)
	}
	peer := startPeer(t, "pcor-echo", "RDMA_TEST_TO="+p.LocalEndpoint().String())
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: pcorJobKey,
		Listen: []pcor.Listen{{Port: p}},
		Peers:  []pcor.Peer{{Proc: 1, Fabric: "rdma", Addr: peer.ep}}})
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	defer n.Close()
	th := n.Thread(0)
	dst := pcor.Addr{Proc: 1, Thread: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sizes := []int{0, 1, 1000, MaxDatagram - 100, 64 << 10, 64<<10 + 1, 1<<20 + 3, 16 << 20, 64 << 20}
	for i, size := range sizes {
		data := n.Alloc(size)
		pattern(data, uint64(size))
		start := time.Now()
		if err := th.Send(ctx, dst, pcor.Tag(i+1), data); err != nil {
			t.Fatalf("send %d B after %v: %v; port %+v, last failure %v; node %+v", size, time.Since(start), err, p.Stats(), p.LastFailure(), n.Stats())
		}
		m, err := th.Recv(ctx, pcor.Addr{Proc: 1, Thread: 0}, pcor.Tag(i+1))
		if err != nil {
			t.Fatalf("echo of %d B after %v: %v; port %+v, last failure %v; node %+v", size, time.Since(start), err, p.Stats(), p.LastFailure(), n.Stats())
		}
		if !bytes.Equal(m.Data, data) {
			t.Fatalf("echo of %d B differs (got %d B)", size, len(m.Data))
		}
		el := time.Since(start)
		t.Logf("%9d B round trip %v (%.1f MB/s each way)", size, el, 2*float64(size)/el.Seconds()/1e6)
	}
	if err := th.Send(ctx, dst, 0, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-peer.done:
		peer.done <- err
		if err != nil {
			t.Fatalf("peer: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("peer did not exit")
	}
	t.Logf("port stats %+v", p.Stats())
}
