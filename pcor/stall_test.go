package pcor_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// stallUnreach is the unreachable timeout of the stall tests' nodes; their
// stall lasts twice as long.
const stallUnreach = 3 * time.Second

// stallBoth stops both processes, as a stall of the whole machine does,
// for twice stallUnreach: first peer, then this process, which is let go on
// first. Whatever happens after, the peer is let go on too (a stopped
// process ignores the kill of the cleanup until it is).
func stallBoth(t *testing.T, peer *exec.Cmd) {
	t.Helper()
	if err := peer.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Process.Signal(syscall.SIGCONT) })
	stall := 2 * stallUnreach
	staller := exec.Command("sh", "-c", fmt.Sprintf("kill -STOP %d; sleep %g; kill -CONT %d %d",
		os.Getpid(), stall.Seconds(), os.Getpid(), peer.Process.Pid))
	staller.Stderr = os.Stderr
	start := time.Now()
	if err := staller.Run(); err != nil {
		t.Fatalf("stall: %v", err)
	}
	if d := time.Since(start); d < stall {
		t.Fatalf("the stall lasted %v, want at least %v", d, stall)
	}
}

// TestOwnStallIsNotPeerSilence stalls both processes for longer than the
// unreachable timeout while a message between them is under way. The
// peer's datagrams come only after both go on, and this process's timers,
// overdue by the stall, run before them: they must not take the silence,
// which this process could not hear, for the peer's. The message gets
// through.
func TestOwnStallIsNotPeerSilence(t *testing.T) {
	t.Run("send", stallSend)
	t.Run("receive", stallReceive)
}

// stallSend: a message to the peer is unacknowledged; the send completes
// and the message comes back.
func stallSend(t *testing.T) {
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, UnreachableTimeout: stallUnreach})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cmd, _ := startPeer(t, "echo", n, pcor.Peer{Proc: 1})
	th := n.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peer := pcor.Addr{Proc: 1, Thread: 0}
	if err := th.Send(ctx, peer, 1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Recv(ctx, peer, 1); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(256<<10, 2)
	req := th.Isend(peer, 2, data)
	stallBoth(t, cmd)
	if err := req.Wait(ctx); err != nil {
		t.Fatalf("send across the stall: %v", err)
	}
	m, err := th.Recv(ctx, peer, 2)
	if err != nil {
		t.Fatalf("recv after the stall: %v", err)
	}
	if !bytes.Equal(m.Data, data) {
		t.Fatal("the message came back different")
	}
	if err := th.Send(ctx, peer, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
}

// stallReceive: a message from the peer is half received into a posted
// receive; the receive completes.
func stallReceive(t *testing.T) {
	const size = 64 << 20
	c, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, UnreachableTimeout: stallUnreach})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd, _ := startPeer(t, "halfsender", c, pcor.Peer{Proc: 0}, "PCOR_TEST_SIZE="+strconv.Itoa(size))
	th := c.NewThread()
	r := th.Irecv(pcor.Addr{Proc: 0, Thread: 0}, 1, make([]byte, size))
	for deadline := time.Now().Add(time.Minute); c.Stats()[0].BytesRecv < 1<<20; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the message did not start: %d bytes", c.Stats()[0].BytesRecv)
		}
	}
	if done, _ := r.Test(); done {
		t.Fatal("the whole message came before the stall")
	}
	stallBoth(t, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.Wait(ctx); err != nil {
		t.Fatalf("receive across the stall: %v", err)
	}
}
