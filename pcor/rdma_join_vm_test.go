package pcor_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/fabric/rdma"
	"github.com/pcor-go/pcor/pcor"
)

// rdmaMemberPeer is process 1 of TestOverRDMAJoin: it joins the directory
// at PCOR_TEST_COORD with one RDMA port, reports how many TCP sockets it
// listens on, and echoes messages until one with tag 0.
func rdmaMemberPeer() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := pcor.Join(ctx, pcor.JoinConfig{Coord: os.Getenv("PCOR_TEST_COORD"), JobKey: jobKey, Rank: 1,
		Directory: directory.ServeNever, Listen: []pcor.Listen{{Fabric: "rdma"}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 1
	}
	defer n.Close()
	ls, err := listeningTCP()
	if err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 1
	}
	fmt.Printf("LISTENING %d\n", ls)
	return echo(n.Thread(0))
}

// listeningTCP counts the TCP sockets in the listening state that this
// process holds: its socket descriptors matched against /proc/net/tcp and
// tcp6 by inode.
func listeningTCP() (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	mine := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if inode, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			mine[strings.TrimSuffix(inode, "]")] = true
		}
	}
	n := 0
	for _, tab := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(tab)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return 0, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) >= 10 && f[3] == "0A" && mine[f[9]] {
				n++
			}
		}
		f.Close()
	}
	return n, nil
}

// TestOverRDMAJoin runs a two-process job over RDMA ports that find each
// other through the directory alone: the membership carries each port's
// endpoint (the address of its connection-manager queue pair), and the
// queue pairs connect over RDMA datagrams, so the joining process listens
// on no TCP port at all and this one only on the directory's. Messages of
// 0 B to 4 MiB (eager and rendezvous) come back intact.
func TestOverRDMAJoin(t *testing.T) {
	if err := rdma.Probe(rdma.Config{}); err != nil {
		t.Skipf("no supported RDMA device (%v): run under the soft-RoCE VM, see fabric/rdma/README.md", err)
	}
	coord, err := freeTCP()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// (A long heartbeat timeout: the emulated guest on a loaded host can
	// be silent for seconds.)
	n, err := pcor.Join(ctx, pcor.JoinConfig{Coord: coord, JobKey: jobKey, Size: 2, Directory: directory.ServeEmbed,
		HeartbeatTimeout: 30 * time.Second, Listen: []pcor.Listen{{Fabric: "rdma"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if ls, err := listeningTCP(); err != nil || ls != 1 {
		t.Fatalf("this process listens on %d TCP sockets (%v), want 1: the directory's", ls, err)
	}
	cmd, out := spawn(t, nil, "rdma-member", "PCOR_TEST_COORD="+coord)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("member: %q %v", line, err)
	}
	ls, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "LISTENING ")))
	if err != nil || ls != 0 {
		t.Fatalf("the member listens on %q TCP sockets, want 0", line)
	}
	if err := n.Directory().Wait(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, m := range n.Directory().Members() {
		if len(m.Ports) != 1 || m.Ports[0].Fabric != "rdma" {
			t.Fatalf("member %d announced %+v, want one rdma port", m.Proc, m.Ports)
		}
		if _, err := (&rdma.Port{}).ParseEndpoint(m.Ports[0].Addr); err != nil {
			t.Fatalf("member %d: %v", m.Proc, err)
		}
	}
	th := n.Thread(0)
	dst := pcor.Addr{Proc: 1, Thread: 0}
	for i, size := range []int{0, 1, 1000, 64 << 10, 4<<20 + 1} {
		data := randomBytes(size, uint64(size))
		if err := th.Send(ctx, dst, pcor.Tag(i+1), data); err != nil {
			t.Fatalf("send %d B: %v", size, err)
		}
		m, err := th.Recv(ctx, dst, pcor.Tag(i+1))
		if err != nil {
			t.Fatalf("echo of %d B: %v", size, err)
		}
		if !bytes.Equal(m.Data, data) {
			t.Fatalf("echo of %d B differs (got %d B)", size, len(m.Data))
		}
	}
	if st := n.RendezvousStats(); st.Read == 0 {
		t.Fatalf("no message was read by rendezvous: %+v", st)
	}
	if err := th.Send(ctx, dst, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("member: %v", err)
	}
}
