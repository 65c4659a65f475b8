//go:build linux

package pcor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric/shm"
	"github.com/pcor-go/pcor/pcor"
)

// TestShmSingleCopy sends large messages to an echo process over shared
// memory: where the kernel lets the peer read this process's memory they
// go by rendezvous, read straight into the receive's buffer
// (process_vm_readv); where it refuses, they cross the rings in fragments
// and arrive all the same. The refusal is the kernel's own: the peer runs
// in a user namespace of its own, with no CAP_SYS_PTRACE over this
// process, which makes itself not dumpable for the test (so the equal
// user ids alone do not let the peer in). Its echo comes back by
// rendezvous either way: this process may read the peer.
func TestShmSingleCopy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused bool
	}{{"reads", false}, {"refused", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var prefix []string
			if tc.refused {
				if _, err := exec.LookPath("unshare"); err != nil {
					t.Skip("no unshare command:", err)
				}
				if out, err := exec.Command("unshare", "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
					t.Skipf("no user namespaces here: %v %s", err, out)
				}
				prefix = []string{"unshare", "--user", "--map-root-user"}
				if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) })
			}
			n, th, _ := shmNodeIn(t, pcor.Config{}, prefix)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			peer := pcor.Addr{Proc: 1, Thread: 0}
			// A first small message lets the peer try reading this
			// process; until then large messages go as fragments, as
			// do those below shm.DefaultSingleCopyMin (64 KiB here).
			sizes := []int{1, 1 << 20, 64 << 10, 3<<20 + 5}
			for i, size := range sizes {
				data := randomBytes(size, uint64(size))
				if err := th.Send(ctx, peer, pcor.Tag(i+1), data); err != nil {
					t.Fatalf("send %d: %v", size, err)
				}
				buf := make([]byte, size)
				m, err := th.RecvInto(ctx, peer, pcor.Tag(i+1), buf)
				if err != nil {
					t.Fatalf("recv %d: %v", size, err)
				}
				if !bytes.Equal(m.Data, data) {
					t.Fatalf("%d bytes came back different", size)
				}
			}
			big := uint64(0)
			for _, size := range sizes {
				if size >= shm.DefaultSingleCopyMin {
					big++
				}
			}
			st := n.RendezvousStats()
			t.Logf("rendezvous: %+v", st)
			want := big
			if tc.refused {
				want = 0
			}
			if st.Announced != want || st.Read != big || st.Dropped != 0 {
				t.Errorf("rendezvous %+v: want %d announced, %d read, none dropped", st, want, big)
			}
		})
	}
}

// shmMutePeer is process 1 on a shared-memory port: it answers the first
// message it receives and then receives nothing more, until killed.
func shmMutePeer() int {
	n := peerNode("shm")
	if n == nil {
		return 1
	}
	defer n.Close()
	th := n.Thread(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := th.Recv(ctx, pcor.Any, pcor.AnyTag)
	if err == nil {
		err = th.Send(ctx, m.Src, m.Tag, m.Data)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mute:", err)
		return 1
	}
	<-ctx.Done()
	return 0
}

// TestShmSingleCopyReceiverKilled kills a peer that holds a large
// message's announcement without reading it: the send, which waits for the
// peer to read the sender's memory, fails with ErrPeerDown within seconds.
func TestShmSingleCopyReceiverKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, th, peer, cmd := muteShmPeer(t, ctx)
	req := th.Isend(peer, 2, make([]byte, 4<<20))
	for n.RendezvousStats().Announced == 0 {
		if ctx.Err() != nil {
			t.Fatal("the large message was not sent by rendezvous")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	cmd.Process.Kill()
	start := time.Now()
	err := req.Wait(ctx)
	if !errors.Is(err, pcor.ErrPeerDown) {
		t.Fatalf("rendezvous send to a killed peer: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the failure took %v", d)
	}
	t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// TestShmSingleCopyWithdrawn sends large messages by rendezvous to a peer
// that never receives them: a Send whose deadline passes returns the
// context's error, and a cancelled Isend completes with ErrCanceled, each
// once the peer has dropped the announcement, while the peer runs on.
func TestShmSingleCopyWithdrawn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, th, peer, _ := muteShmPeer(t, ctx)
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	sent := make(chan error, 1)
	go func() { sent <- th.Send(short, peer, 2, make([]byte, 1<<20)) }()
	select {
	case err := <-sent:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Send whose deadline passed: %v, want the context's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Send did not return when its context ended")
	}
	if n.RendezvousStats().Announced != 1 {
		t.Fatalf("rendezvous %+v: the message was not announced", n.RendezvousStats())
	}
	req := th.Isend(peer, 3, make([]byte, 4<<20))
	for n.RendezvousStats().Announced < 2 {
		if ctx.Err() != nil {
			t.Fatal("the large message was not sent by rendezvous")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the announcement reaches the peer
	req.Cancel()
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := req.Wait(wctx); !errors.Is(err, pcor.ErrCanceled) {
		t.Fatalf("cancelled rendezvous Isend: %v, want ErrCanceled", err)
	}
}

// muteShmPeer makes process 0 on a shared-memory port and starts process 1
// in role shm-mute (it answers a probe, then receives nothing), and
// returns process 0's node and a thread of it that has exchanged the
// probe with thread 0 of process 1, that thread's address, and process 1.
func muteShmPeer(t *testing.T, ctx context.Context) (*pcor.Node, *pcor.Thread, pcor.Addr, *exec.Cmd) {
	t.Helper()
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Fabric: "shm"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	cmd, _ := startPeer(t, "shm-mute", n, pcor.Peer{Proc: 1, Fabric: "shm"})
	th := n.NewThread()
	peer := pcor.Addr{Proc: 1, Thread: 0}
	if err := th.Send(ctx, peer, 1, []byte("probe")); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Recv(ctx, peer, 1); err != nil {
		t.Fatal(err)
	}
	return n, th, peer, cmd
}
