package shm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/netnstest"
)

// TestMain lets the test binary act as the peer process of the
// multi-process tests.
func TestMain(m *testing.M) {
	if role := os.Getenv("PCOR_SHM_TEST_ROLE"); role == "memory" {
		os.Exit(memoryPeer())
	} else if role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

// runRole is the peer process: "sender" streams numbered datagrams to
// PCOR_SHM_TEST_TO until killed; "receiver" listens as PCOR_SHM_TEST_NAME,
// reads slowly, and echoes the count it saw on standard output.
func runRole(role string) int {
	cfg := Config{Dir: os.Getenv("PCOR_SHM_TEST_DIR"), RingSize: MinRingSize, MaxDatagram: 4096}
	if role == "echo" || role == "echotaken" {
		cfg = Config{Dir: cfg.Dir}
	}
	p, err := Listen(os.Getenv("PCOR_SHM_TEST_NAME"), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("READY %s\n", p.LocalEndpoint())
	switch role {
	case "echo", "echotaken":
		to, err := p.ParseEndpoint(os.Getenv("PCOR_SHM_TEST_TO"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if role == "echotaken" {
			return echoTakenPeer(p, to)
		}
		return echoPeer(p, to)
	case "sender":
		to, err := p.ParseEndpoint(os.Getenv("PCOR_SHM_TEST_TO"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		body := make([]byte, 1000)
		for i := uint32(0); ; i++ {
			binary.LittleEndian.PutUint32(body, i)
			if _, err := p.Send([]fabric.Datagram{{Body: body, To: to}}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	case "idle":
		return idlePeer(p)
	case "busy":
		return busyPeer(p)
	case "once":
		// One datagram, then nothing until killed.
		to, err := p.ParseEndpoint(os.Getenv("PCOR_SHM_TEST_TO"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if _, err := p.Send([]fabric.Datagram{{Body: []byte("once"), To: to}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(time.Hour)
		return 0
	case "receiver":
		msgs := make([][]byte, 1)
		for {
			if _, err := p.Receive(msgs); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			time.Sleep(time.Millisecond)
		}
	}
	return 2
}

// spawn starts the test binary in role behind prefix and returns it and the
// endpoint it printed.
func spawn(t *testing.T, prefix []string, role string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	return spawnIn(t, prefix, role, env...)
}

func spawnB(b *testing.B, role string, env ...string) (*exec.Cmd, string) {
	b.Helper()
	return spawnIn(b, nil, role, env...)
}

func spawnIn(t testing.TB, prefix []string, role string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, ep, _ := spawnOut(t, prefix, role, env...)
	return cmd, ep
}

// spawnOut is spawnIn that also returns the rest of the role's output.
func spawnOut(t testing.TB, prefix []string, role string, env ...string) (*exec.Cmd, string, *bufio.Reader) {
	t.Helper()
	argv := append(append([]string(nil), prefix...), os.Args[0], "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "PCOR_SHM_TEST_ROLE="+role), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY ") {
		t.Fatalf("%s did not start: %q %v", role, line, err)
	}
	return cmd, strings.TrimSpace(strings.TrimPrefix(line, "READY ")), rd
}

// streamFrom starts a sender process in front of prefix, checks that its
// datagrams arrive in order, kills it mid-stream and checks that the
// receiver frees its slot.
func streamFrom(t *testing.T, prefix []string) {
	dir := testDir(t)
	recv := listen(t, dir, "r", Config{RingSize: MinRingSize, MaxDatagram: 4096})
	cmd, _ := spawn(t, prefix, "sender", "PCOR_SHM_TEST_DIR="+dir, "PCOR_SHM_TEST_NAME=s",
		"PCOR_SHM_TEST_TO="+recv.LocalEndpoint().String())
	msgs := make([][]byte, recv.BatchSize())
	next := uint32(0)
	for next < 20000 {
		n, err := recv.Receive(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			if i := binary.LittleEndian.Uint32(m); i != next {
				t.Fatalf("datagram %d after %d", i, next)
			}
			next++
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// Drain what the sender published before it died; then its slot is
	// freed.
	deadline := time.Now().Add(10 * time.Second)
	for recv.Stats().Reclaimed == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the dead sender's slot was never freed (%+v)", recv.Stats())
		}
		if _, err := recv.Poll(msgs); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestKilledSender(t *testing.T) { streamFrom(t, nil) }

// TestAcrossNetworkNamespaces runs the sender in another network namespace
// of this host: it shares /dev/shm, so the fabric works across it.
func TestAcrossNetworkNamespaces(t *testing.T) {
	_, hosts := netnstest.Hub(t, "shm", "10.97.0", 1)
	streamFrom(t, []string{"ip", "netns", "exec", hosts[0]})
}

// TestKilledReceiver kills a receiver whose ring is full while this
// process sends to it: Send stops waiting and drops, and the dead
// receiver's segment is removed by the next Listen in the directory.
func TestKilledReceiver(t *testing.T) {
	dir := testDir(t)
	s := listen(t, dir, "s", Config{RingSize: MinRingSize, MaxDatagram: 4096})
	cmd, ep := spawn(t, nil, "receiver", "PCOR_SHM_TEST_DIR="+dir, "PCOR_SHM_TEST_NAME=r")
	to, err := s.ParseEndpoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	killed := make(chan struct{})
	go func() {
		// Kill once the ring has filled.
		for s.Stats().Full == 0 {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		close(killed)
	}()
	var lost []fabric.Endpoint
	var lostMu sync.Mutex
	s.OnPeerLost(func(e fabric.Endpoint) { lostMu.Lock(); lost = append(lost, e); lostMu.Unlock() })
	body := make([]byte, 1000)
	deadline := time.Now().Add(30 * time.Second)
	for s.Stats().Dropped == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sends to a dead receiver never stopped waiting (%+v)", s.Stats())
		}
		if _, err := s.Send([]fabric.Datagram{{Body: body, To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	<-killed
	lostMu.Lock()
	if len(lost) != 1 || lost[0].String() != ep {
		t.Errorf("peers reported lost: %v, want [%s]", lost, ep)
	}
	lostMu.Unlock()
	seg := filepath.Join(dir, filePrefix+"r")
	if _, err := os.Stat(seg); err != nil {
		t.Fatalf("the killed receiver's segment should still be there before a reap: %v", err)
	}
	listen(t, dir, "later", Config{})
	if _, err := os.Stat(seg); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the killed receiver's segment survived the next Listen: %v", err)
	}
	// A new receiver under the same name is reached again.
	r2 := listen(t, dir, "r", Config{RingSize: MinRingSize, MaxDatagram: 4096})
	deadline = time.Now().Add(10 * time.Second)
	for {
		if _, err := s.Send([]fabric.Datagram{{Body: []byte(strconv.Itoa(7)), To: to}}); err != nil {
			t.Fatal(err)
		}
		if n, _ := r2.Poll(make([][]byte, 1)); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted receiver was never reached")
		}
		time.Sleep(time.Millisecond)
	}
}
