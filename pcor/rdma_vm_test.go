package pcor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/rdma"
	"github.com/pcor-go/pcor/pcor"
)

// rdmaEchoPeer is process 1 of TestOverRDMA: a node on an RDMA port that
// sends every message back until one with tag 0 arrives.
func rdmaEchoPeer() int {
	n, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey,
		Listen: []pcor.Listen{{Fabric: "rdma"}},
		Peers:  []pcor.Peer{{Proc: 0, Fabric: "rdma", Addr: os.Getenv("PCOR_TEST_PEER")}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer n.Close()
	fmt.Printf("ADDR %s\n", n.Endpoints()[0].Addr)
	return echo(n.Thread(0))
}

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
	cmd, addr := startPeer(t, "rdma-echo", n)
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
	if err := th.Send(ctx, dst, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
}
