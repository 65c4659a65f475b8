package rdma

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// The VM tests run a second process: the test binary itself, started with
// RDMA_TEST_PEER set, which runs one of the peer roles below instead of
// the tests.

func TestMain(m *testing.M) {
	switch role := os.Getenv("RDMA_TEST_PEER"); role {
	case "":
	default:
		os.Exit(runPeer(role))
	}
	os.Exit(m.Run())
}

// runPeer: "echo" sends every datagram back to RDMA_TEST_TO until stdin
// closes.
func runPeer(role string) int {
	p, err := Listen(Config{})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	defer p.Close()
	if role == "expose" || role == "reader" {
		return runRMAPeer(p, role)
	}
	fmt.Printf("READY %s\n", p.LocalEndpoint())
	go func() { io.Copy(io.Discard, os.Stdin); p.Close() }()
	switch role {
	case "echo":
		to, err := p.ParseEndpoint(os.Getenv("RDMA_TEST_TO"))
		if err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		msgs := make([][]byte, p.BatchSize())
		dgs := make([]fabric.Datagram, p.BatchSize())
		for {
			n, err := p.Receive(msgs)
			if err != nil {
				return 0
			}
			for i := 0; i < n; i++ {
				dgs[i] = fabric.Datagram{Body: msgs[i], To: to}
			}
			if _, err := p.Send(dgs[:n]); err != nil {
				return 0
			}
		}
	}
	fmt.Println("ERR unknown role", role)
	return 2
}

// peerProc is a running peer process.
type peerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ep    string
	done  chan error
	gone  atomic.Int64 // when the process was reaped (UnixNano), 0 before
}

// goneSince tells how long after t the peer process was reaped, for the
// logs of the kill tests: the time its kernel took to tear it down.
func (pp *peerProc) goneSince(t time.Time) string {
	if g := pp.gone.Load(); g != 0 {
		return fmt.Sprintf("reaped %v after the kill", time.Unix(0, g).Sub(t))
	}
	return "not reaped yet"
}

func startPeer(t *testing.T, role string, env ...string) *peerProc {
	return startPeerTB(t, role, env...)
}

// startPeerB starts a peer for a benchmark and returns its endpoint.
func startPeerB(b *testing.B, role string, env ...string) string {
	return startPeerTB(b, role, env...).ep
}

func startPeerTB(t testing.TB, role string, env ...string) *peerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "RDMA_TEST_PEER="+role), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pp := &peerProc{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-pp.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-pp.done
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if ep, ok := strings.CutPrefix(line, "READY "); ok {
				ready <- ep
			} else {
				fmt.Fprintln(os.Stderr, "peer:", line)
			}
		}
		err := cmd.Wait()
		pp.gone.Store(time.Now().UnixNano())
		pp.done <- err
	}()
	select {
	case pp.ep = <-ready:
	case err := <-pp.done:
		pp.done <- err
		t.Fatalf("peer exited before it was ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("peer not ready in 30s")
	}
	return pp
}

// pattern fills b from a sequence number so that any corruption shows.
func pattern(b []byte, seq uint64) {
	x := seq*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

// checkDatagram verifies an echoed datagram: 8-byte sequence number then
// the pattern of that sequence.
func checkDatagram(b []byte) (uint64, error) {
	if len(b) < 8 {
		return 0, fmt.Errorf("datagram of %d bytes", len(b))
	}
	seq := binary.LittleEndian.Uint64(b)
	want := make([]byte, len(b)-8)
	pattern(want, seq)
	if string(want) != string(b[8:]) {
		return seq, fmt.Errorf("datagram %d (%d bytes) differs", seq, len(b))
	}
	return seq, nil
}
