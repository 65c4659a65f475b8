package pcor_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// shmThreads is how many thread pairs TestShmManyThreads runs at once.
const shmThreads = 8

// shmThreadsEchoPeer is process 1 on a shared-memory port with
// shmThreads threads, each sending every message it receives back to its
// sender, until killed.
func shmThreadsEchoPeer() int {
	n := peerNode("shm")
	if n == nil {
		return 1
	}
	defer n.Close()
	done := make(chan int)
	for i := 0; i < shmThreads; i++ {
		th := n.Thread(pcor.ThreadID(i))
		go func() { done <- echo(th) }()
	}
	return <-done
}

// TestShmManyThreads runs shmThreads thread pairs at once between two
// processes over one pair of shared-memory ports: each thread sends
// messages of 0 B to 3 MiB (ring fragments and single-copy reads mixed)
// to its own thread in the echo process, which sends them back; every
// echo must come back to the thread that sent it, whole, in order.
func TestShmManyThreads(t *testing.T) {
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Fabric: "shm"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	startPeer(t, "shm-threads-echo", n, pcor.Peer{Proc: 1, Fabric: "shm"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sizes := []int{0, 1, 100, 4096, 65535, 65537, 300 << 10, 1 << 20, 3<<20 + 3}
	const rounds = 3
	var wg sync.WaitGroup
	errs := make(chan error, shmThreads)
	for i := 0; i < shmThreads; i++ {
		th := n.Thread(pcor.ThreadID(i))
		peer := pcor.Addr{Proc: 1, Thread: pcor.ThreadID(i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				// Two messages in flight each way: both sent before
				// either echo is received (a blocking Send there could
				// wait for ever on the echo of the first, which waits
				// to be received).
				for j := 0; j+1 < len(sizes); j += 2 {
					a := randomBytes(sizes[(j+i)%len(sizes)], uint64(i<<16|r<<8|j))
					b := randomBytes(sizes[(j+1+i)%len(sizes)], uint64(i<<16|r<<8|j+1))
					tag := pcor.Tag(1 + r*len(sizes) + j)
					reqA, reqB := th.Isend(peer, tag, a), th.Isend(peer, tag+1, b)
					for k, want := range [][]byte{a, b} {
						m, err := th.Recv(ctx, peer, tag+pcor.Tag(k))
						if err != nil {
							errs <- fmt.Errorf("thread %d: recv %d B: %w", i, len(want), err)
							return
						}
						if m.Src != peer || !bytes.Equal(m.Data, want) {
							errs <- fmt.Errorf("thread %d: %d B from %v came back as %d B from %v, equal %v",
								i, len(want), peer, len(m.Data), m.Src, bytes.Equal(m.Data, want))
							return
						}
					}
					for k, req := range []*pcor.Request{reqA, reqB} {
						if err := req.Wait(ctx); err != nil {
							errs <- fmt.Errorf("thread %d: send %d: %w", i, k, err)
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := n.Stats()[0]
	if st.DroppedTotal != 0 || st.Retransmits != 0 {
		t.Errorf("%d datagrams dropped, %d retransmitted over shared memory", st.DroppedTotal, st.Retransmits)
	}
	t.Logf("rendezvous %+v, %d fragments sent", n.RendezvousStats(), st.FragsSent)
}
