package pcor_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/shm"
	"github.com/pcor-go/pcor/internal/testdir"
	"github.com/pcor-go/pcor/pcor"
)

const jobKey = 0x5eed_cafe

// TestMain lets the test binary act as the peer process of the
// multi-process tests.
func TestMain(m *testing.M) {
	if role := os.Getenv("PCOR_TEST_ROLE"); role != "" {
		os.Exit(runRole(role))
	}
	// Shared-memory segments, of this process and of the peers it starts
	// (which inherit the variable), go to a directory of their own, so
	// that peers the tests kill leave nothing behind; that of a test
	// binary killed itself is removed by the next run (testdir).
	if os.Getenv("PCOR_SHM_DIR") == "" {
		dir, err := testdir.Make(shm.DefaultDir, "pcor-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Setenv("PCOR_SHM_DIR", dir)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func runRole(role string) int {
	switch role {
	case "echo":
		return echoPeer("")
	case "sink":
		return sinkPeer()
	case "source":
		return sourcePeer()
	case "shm-echo":
		return echoPeer("shm")
	case "shm-threads-echo":
		return shmThreadsEchoPeer()
	case "shm-mute":
		return shmMutePeer()
	case "shm-raw-echo":
		return shmRawEchoPeer()
	case "rdma-echo":
		return echoPeer("rdma")
	case "rdma-member":
		return rdmaMemberPeer()
	case "slowsink":
		return slowSinkPeer()
	case "idle":
		return idlePeer()
	case "bigsink":
		return bigSinkPeer()
	case "member":
		return memberPeer()
	case "halfsender":
		return halfSenderPeer()
	}
	fmt.Fprintln(os.Stderr, "unknown role", role)
	return 2
}

// echoPeer is process 1 on a port of fabric fab (the default port when
// empty): it sends every message it receives back to its sender, until a
// message with tag 0 arrives.
func echoPeer(fab string) int {
	n := peerNode(fab)
	if n == nil {
		return 1
	}
	defer n.Close()
	return echo(n.Thread(0))
}

// peerNode is process 1's node in a role started by startPeer: on fabric
// fab ("" for the default), process 0 at PCOR_TEST_PEER, its address
// printed for startPeer. It says why on standard error and returns nil if
// the node cannot be made.
func peerNode(fab string) *pcor.Node {
	cfg := pcor.Config{Proc: 1, JobKey: jobKey,
		Peers: []pcor.Peer{{Proc: 0, Fabric: fab, Addr: os.Getenv("PCOR_TEST_PEER")}}}
	if fab != "" {
		cfg.Listen = []pcor.Listen{{Fabric: fab}}
	}
	n, err := pcor.NewNode(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return nil
	}
	fmt.Printf("ADDR %s\n", n.Endpoints()[0].Addr)
	return n
}

// echo sends every message t receives back to its sender until one with
// tag 0 arrives, and returns the process exit status.
func echo(t *pcor.Thread) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for {
		m, err := t.Recv(ctx, pcor.Any, pcor.AnyTag)
		if err != nil {
			fmt.Fprintln(os.Stderr, "recv:", err)
			return 1
		}
		if m.Tag == 0 {
			return 0
		}
		if err := t.Send(ctx, m.Src, m.Tag, m.Data); err != nil {
			fmt.Fprintln(os.Stderr, "send:", err)
			return 1
		}
	}
}

// spawn starts the test binary in role, behind the command prefix (e.g.
// ip netns exec NS), and returns it with its standard output. It is killed
// when the test ends.
func spawn(t testing.TB, prefix []string, role string, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	argv := append(append([]string(nil), prefix...), os.Args[0], "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "PCOR_TEST_ROLE="+role), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

// startPeer starts the test binary in role, told self's address and env,
// and returns it once it is listening: the process, the rest of its
// standard output and its address.
// startPeer starts a peer process in role, told self's address, and adds
// it to self as peer (its address filled in from what it prints).
func startPeer(t *testing.T, role string, self *pcor.Node, peer pcor.Peer, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd, out := spawn(t, nil, role, append([]string{"PCOR_TEST_PEER=" + self.Endpoints()[0].Addr}, env...)...)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		t.Fatalf("peer did not start: %q %v", line, err)
	}
	peer.Addr = strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))
	if err := self.AddPeer(peer); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e37))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestTwoProcessesUDP(t *testing.T) {
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cmd, _ := startPeer(t, "echo", n, pcor.Peer{Proc: 1})
	th := n.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	peer := pcor.Addr{Proc: 1, Thread: 0}
	sizes := []int{0, 1, 65535, 65536, 65537, 2095872, 2095873, 64 << 20}
	for i, size := range sizes {
		data := randomBytes(size, uint64(size))
		start := time.Now()
		if err := th.Send(ctx, peer, pcor.Tag(i+1), data); err != nil {
			t.Fatalf("send %d: %v", size, err)
		}
		m, err := th.Recv(ctx, peer, pcor.Tag(i+1))
		if err != nil {
			t.Fatalf("recv %d: %v", size, err)
		}
		if !bytes.Equal(m.Data, data) {
			t.Fatalf("%d bytes came back different", size)
		}
		t.Logf("%9d B round trip in %v", size, time.Since(start))
	}
	if err := th.Send(ctx, peer, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
	st := n.Stats()[0]
	t.Logf("sent %d fragments, %d retransmitted, %d dropped", st.FragsSent, st.Retransmits, st.DroppedTotal)
}
