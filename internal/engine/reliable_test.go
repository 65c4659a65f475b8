package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/fabric/shm"
	"github.com/pcor-go/pcor/internal/testdir"
	"github.com/pcor-go/pcor/internal/wire"
)

// shmPair builds two engines joined by shared-memory ports, which take the
// reliable path.
func shmPair(t testing.TB, cfg Config) (*Engine, *Engine, *shm.Port, *shm.Port) {
	t.Helper()
	a, b := shmPorts(t)
	e0, e1 := pair(t, a, b, cfg)
	return e0, e1, a, b
}

// shmPorts opens two shared-memory ports, "a" and "b", in a directory of
// their own, removed when the test ends.
func shmPorts(t testing.TB) (*shm.Port, *shm.Port) {
	t.Helper()
	// A directory of a killed run is removed by the next (testdir).
	dir, err := testdir.Make(shm.DefaultDir, "pcor-engine-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	a, err := shm.Listen("a", shm.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := shm.Listen("b", shm.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestReliableSizes sends 0 B to 8 MiB each way over shared memory, in
// ring fragments and then with large messages read from the sender's
// memory (rendezvous): every message arrives whole, and the datagram
// protocol is not used (no acknowledgement, no retransmission, no sequence
// window).
func TestReliableSizes(t *testing.T) {
	for _, rndv := range []bool{false, true} {
		cfg := Config{Rendezvous: -1}
		if rndv {
			cfg.Rendezvous = 0 // the default
		}
		e0, e1, _, _ := shmPair(t, cfg)
		if !e0.peer(1).reliable.Load() || !e1.peer(0).reliable.Load() {
			t.Fatal("peers on shared memory are not on the reliable path")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sizes := []int{0, 1, 65535, 65536, 65537, 2095872, 2095873, 8 << 20}
		for _, n := range sizes {
			sendPattern(ctx, t, e0, e1, n)
			sendPattern(ctx, t, e1, e0, n)
		}
		for i, e := range []*Engine{e0, e1} {
			st := e.Stats()[0]
			if st.AcksSent != 0 || st.AcksRecv != 0 || st.Retransmits != 0 || st.Timeouts != 0 || st.DroppedTotal != 0 {
				t.Errorf("engine %d: %d acks sent, %d received, %d retransmitted, %d timeouts, %d dropped %v",
					i, st.AcksSent, st.AcksRecv, st.Retransmits, st.Timeouts, st.DroppedTotal, st.Drops)
			}
			// By rendezvous, a message is an announcement one way and a
			// done message the other: the first messages (the small
			// ones, and those sent before the receiver read the
			// sender's memory once) go as fragments.
			rs := e.RendezvousStats()
			want := uint64(len(sizes))
			if rndv {
				if rs.Read == 0 || rs.Announced == 0 || rs.Dropped != 0 {
					t.Errorf("engine %d: rendezvous %+v: want some announced and read, none dropped", i, rs)
				}
				want += rs.Announced
			} else if rs.Announced != 0 {
				t.Errorf("engine %d: %d messages by rendezvous with it off", i, rs.Announced)
			}
			if st.MessagesSent != want || st.MessagesRecv != want {
				t.Errorf("engine %d: %d messages sent, %d received, want %d each", i, st.MessagesSent, st.MessagesRecv, want)
			}
		}
	}
}

// TestReliableHoldBoundsMemory: a receiver without budget for the
// messages arriving holds them in the fabric: it never holds more than its
// budget, nothing is refused or lost, the messages come in order once
// received, and the sender is slowed down, not failed, however long the
// receiver takes (here several unreachable timeouts) to receive.
func TestReliableHoldBoundsMemory(t *testing.T) {
	const budget = 4 << 20
	const silence = time.Second
	e0, e1, _, _ := shmPair(t, Config{RecvBudget: budget, MCBs: 64, UnreachableTimeout: silence, Rendezvous: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n, size = 48, 1 << 20
	var sends []*Request
	for i := 0; i < n; i++ {
		s := e0.newSend(0, 1, 0, 0, pattern(size, uint64(i)))
		e0.post(s)
		sends = append(sends, s)
	}
	// Wait until the receiver holds (the senders run on a loaded
	// machine at their own pace), checking its memory all along.
	deadline := time.Now().Add(30 * time.Second)
	for e1.Stats()[0].Holds == 0 {
		if u := e1.BudgetUsed(); u > budget {
			t.Fatalf("receiver holds %d bytes, budget %d", u, budget)
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing held with the budget spent")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for end := time.Now().Add(3 * silence); time.Now().Before(end); {
		if u := e1.BudgetUsed(); u > budget {
			t.Fatalf("receiver holds %d bytes, budget %d", u, budget)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := 0; i < n; i++ {
		r := e1.newRecv(0, 0, 0, 0, nil)
		e1.post(r)
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Data(), pattern(size, uint64(i))) {
			t.Fatalf("message %d differs", i)
		}
		if u := e1.BudgetUsed(); u > budget {
			t.Fatalf("receiver holds %d bytes, budget %d", u, budget)
		}
	}
	for _, s := range sends {
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := e1.Stats()[0]; st.BusySent != 0 || st.DroppedTotal != 0 {
		t.Fatalf("%d BUSY sent, %d dropped", st.BusySent, st.DroppedTotal)
	}
}

// TestReliablePeerLost: once the destination's port is gone, a send to it
// fails with ErrPeerDown (reported by the fabric, not by a timeout), and
// so does a receive waiting on a message from it.
func TestReliablePeerLost(t *testing.T) {
	e0, e1, _, _ := shmPair(t, Config{UnreachableTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := e0.newRecv(0, 1, 0, 5, nil)
	e0.post(r)
	e1.Close()
	start := time.Now()
	s := e0.newSend(0, 1, 0, 0, make([]byte, 8<<20))
	e0.post(s)
	if err := s.Wait(ctx); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("send to a closed peer: %v", err)
	}
	if err := r.Wait(ctx); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("receive from a closed peer: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the loss took %v to show", d)
	}
}

// causePort is a shared-memory port that says why it lost a peer
// (fabric.LostCause).
type causePort struct {
	*shm.Port
	asked atomic.Int32
}

var errTestCause = errors.New("transport retry counter exceeded (test)")

func (p *causePort) PeerLostCause(fabric.Endpoint) error {
	p.asked.Add(1)
	return errTestCause
}

// TestReliablePeerLostCause: the error of a request failed by a peer's
// loss carries the port's cause of the loss (fabric.LostCause), so that
// "its port is gone" says why.
func TestReliablePeerLostCause(t *testing.T) {
	a, b := shmPorts(t)
	ca := &causePort{Port: a}
	e0, e1 := pair(t, ca, b, Config{UnreachableTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := e0.newRecv(0, 1, 0, 5, nil)
	e0.post(r)
	e1.Close()
	s := e0.newSend(0, 1, 0, 0, make([]byte, 8<<20))
	e0.post(s)
	for _, q := range []*Request{s, r} {
		err := q.Wait(ctx)
		if !errors.Is(err, ErrPeerDown) || !strings.Contains(fmt.Sprint(err), errTestCause.Error()) {
			t.Fatalf("request failed with %v (the port was asked %d times), want ErrPeerDown saying %q", err, ca.asked.Load(), errTestCause)
		}
	}
}

// TestReliableFlagOnlyOnReliablePorts: a datagram marked FlagReliable
// (its body not summed) arriving on a port not on the reliable path is
// dropped as unchecked.
func TestReliableFlagOnlyOnReliablePorts(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	forger, _ := n.Listen("forger")
	t.Cleanup(func() { forger.Close() })
	e0, e1 := pair(t, a, b, Config{})
	h := wire.Header{Kind: wire.Data, Flags: wire.FlagReliable, JobKey: 0xfeed, SrcProc: 0, DstProc: 1,
		SrcInc: e0.inc, FragSize: 100, Total: 1}
	pkt := make([]byte, wire.HeaderSize+1)
	h.Encode(pkt[:wire.HeaderSize], pkt[wire.HeaderSize:])
	// Sent through the network, so that e1's dispatcher handles it as it
	// handles any datagram.
	if _, err := forger.Send([]fabric.Datagram{{Head: pkt, To: b.LocalEndpoint()}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for e1.Stats()[0].Drops["checksum"] == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := e1.Stats()[0].Drops["checksum"]; got != 1 {
		t.Fatalf("checksum drops %d, want 1", got)
	}
	if _, ok := e1.iprobe(0, AnyProc, AnyThread, AnyTag); ok {
		t.Fatal("an unchecked datagram was delivered")
	}
}

// TestReliableFirstMessageOutrunsRoutes: a message from a process the
// receiver does not know yet (its announcement is late) waits in the
// fabric and is received once the route is set: nothing would send it
// again.
func TestReliableFirstMessageOutrunsRoutes(t *testing.T) {
	e0, e1, a, _ := shmPair(t, Config{})
	e1.RemovePeer(0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e1.peersMu.Lock()
	delete(e1.down, 0) // not removed: not known yet
	e1.peersMu.Unlock()
	s := e0.newSend(0, 1, 0, 3, []byte("first"))
	e0.post(s)
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e1.Stats()[0].Holds == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := e1.SetPeer(0, 0, a.LocalEndpoint().String()); err != nil {
		t.Fatal(err)
	}
	r := e1.newRecv(0, 0, 0, 3, nil)
	e1.post(r)
	if err := r.Wait(ctx); err != nil || string(r.Data()) != "first" {
		t.Fatalf("first message: %q %v", r.Data(), err)
	}
	if st := e1.Stats()[0]; st.DroppedTotal != 0 || st.Holds == 0 {
		t.Fatalf("%d held, %d dropped %v", st.Holds, st.DroppedTotal, st.Drops)
	}
}

// TestReliableConcurrentIsends has several threads post small messages to
// one peer at the same moment, over and over: each message must leave,
// though its thread may find another transmitting (which then sends it)
// and post nothing after it. A message queued while the transmitting
// thread was letting go, and left there, never completed.
func TestReliableConcurrentIsends(t *testing.T) {
	e0, e1, _, _ := shmPair(t, Config{})
	// The race is narrow: a few thousand rounds see it once.
	const threads, rounds = 8, 20000
	stopAt := time.Now().Add(15 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 2*threads)
	var received atomic.Int64
	var recvs sync.WaitGroup
	for i := 0; i < threads; i++ {
		recvs.Add(1)
		go func() {
			defer recvs.Done()
			ep := e1.Endpoint(ThreadID(i))
			for ctx.Err() == nil {
				if err := ep.Irecv(0, ThreadID(i), AnyTag, nil).Wait(ctx); err != nil {
					return
				}
				received.Add(1)
			}
		}()
	}
	var start, sends sync.WaitGroup
	sent := 0
	for round := 0; round < rounds && len(errs) == 0 && time.Now().Before(stopAt); round++ {
		start.Add(1)
		for i := 0; i < threads; i++ {
			sends.Add(1)
			go func() {
				defer sends.Done()
				start.Wait()
				r := e0.Endpoint(ThreadID(i)).Isend(1, ThreadID(i), Tag(round), []byte{byte(i)})
				wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer wcancel()
				if err := r.Wait(wctx); err != nil {
					errs <- fmt.Errorf("send of thread %d round %d never completed: %w", i, round, err)
				}
			}()
		}
		start.Done()
		sends.Wait()
		sent += threads
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	deadline := time.Now().Add(10 * time.Second)
	for received.Load() < int64(sent) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	recvs.Wait()
	if n := received.Load(); n != int64(sent) {
		t.Fatalf("%d messages received of %d sent", n, sent)
	}
	t.Logf("%d messages", sent)
}

// TestRoomCountedOnlyWithHolder: a message freed or a receive posted
// writes the shared count of room events only when a port can hold
// datagrams for want of room (shared memory's, on the reliable path), and
// there only while such a port handles a batch or holds a datagram; with
// no such port (UDP, memory), or with the port idle, it writes nothing
// shared. A holding port is resumed.
func TestRoomCountedOnlyWithHolder(t *testing.T) {
	m0, _ := memPair(t, Config{})
	r := m0.room.Load()
	m0.resumeHeld()
	if m0.holders.Load() || m0.room.Load() != r {
		t.Fatalf("memory ports: holders %v, room %d -> %d", m0.holders.Load(), r, m0.room.Load())
	}
	s0, _, _, _ := shmPair(t, Config{})
	d := s0.ports[0]
	if !s0.holders.Load() || d.holder == nil {
		t.Fatalf("shared-memory ports: holders %v", s0.holders.Load())
	}
	// The port's own handling runs meanwhile only for what comes to it,
	// and nothing is sent here: it is idle.
	r = s0.room.Load()
	s0.resumeHeld()
	if got := s0.room.Load(); got != r {
		t.Fatalf("shared-memory port idle: room %d -> %d", r, got)
	}
	d.batching.Store(true)
	s0.resumeHeld()
	d.batching.Store(false)
	if got := s0.room.Load(); got != r+1 {
		t.Fatalf("shared-memory port handling a batch: room %d -> %d", r, got)
	}
	d.holding.Store(true)
	s0.resumeHeld()
	if got := s0.room.Load(); got != r+2 || d.holding.Load() {
		t.Fatalf("shared-memory port holding: room %d -> %d, still holding %v", r+1, got, d.holding.Load())
	}
}
