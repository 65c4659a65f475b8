package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/mem"
)

// A send acknowledged only by the receiver's goodbye (its Close, right
// after it received the message) succeeds although the receiver's leave
// is announced at once: PeerLeft waits for the goodbye.
func TestPeerLeftTakesGoodbye(t *testing.T) {
	// The goodbye, not the grace, must end the wait: a grace longer than
	// any stall of a loaded machine keeps a late goodbye from failing it.
	grace := leaveGrace
	leaveGrace = time.Hour
	t.Cleanup(func() { leaveGrace = grace })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const rounds = 100
	failed := 0
	var first error
	for i := 0; i < rounds && ctx.Err() == nil; i++ {
		e0, e1 := memPair(t, Config{})
		s := e0.newSend(3, 1, 4, 9, []byte("answer"))
		e0.post(s)
		r := e1.newRecv(4, 0, 3, 9, nil)
		e1.post(r)
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("round %d: recv: %v", i, err)
		}
		e1.Close()
		e0.PeerLeft(1, &PeerDownError{Proc: 1, Reason: "left"})
		if err := s.Wait(ctx); err != nil {
			if !errors.Is(err, ErrPeerDown) {
				t.Fatalf("round %d: send: %v", i, err)
			}
			failed++
			if first == nil {
				first = err
			}
		}
		e0.Close()
	}
	if failed > 0 {
		t.Fatalf("%d of %d sends of a message received failed, the first with %v", failed, rounds, first)
	}
}

// The goodbye ends the wait of a removal: a peer announced gone while a
// send to it was pending is removed once its goodbye has been taken, not
// after the grace (made an hour here).
func TestGoodbyeEndsLeaveWait(t *testing.T) {
	grace := leaveGrace
	leaveGrace = time.Hour
	t.Cleanup(func() { leaveGrace = grace })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The receiver's budget is smaller than the message, so the message
	// waits for its receive however long this goroutine is descheduled
	// before PeerLeft: the send is still pending then.
	e0, e1 := memPair(t, Config{UnreachableTimeout: time.Hour, RecvBudget: 256 << 10})
	s := e0.newSend(3, 1, 4, 9, pattern(1<<20, 1))
	e0.post(s)
	e0.PeerLeft(1, &PeerDownError{Proc: 1, Reason: "left"})
	p := e0.peer(1)
	e0.peersMu.Lock()
	waiting := p != nil && p.leaveErr != nil
	e0.peersMu.Unlock()
	if !waiting {
		t.Fatal("PeerLeft did not wait for the goodbye of a peer with a 1 MiB send pending")
	}
	r := e1.newRecv(4, 0, 3, 9, nil)
	e1.post(r)
	if err := r.Wait(ctx); err != nil {
		t.Fatalf("recv: %v", err)
	}
	e1.Close()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("send of a message received: %v", err)
	}
	for e0.peer(1) != nil {
		if ctx.Err() != nil {
			t.Fatal("the peer that said goodbye was not removed in 10 s (its removal waited for the grace)")
		}
		time.Sleep(time.Millisecond)
	}
}

// deadPeer returns an engine (proc 0) whose peer 1 is a port nobody reads:
// a process that died without a word.
func deadPeer(t *testing.T) (*Engine, *mem.Network) {
	t.Helper()
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	t.Cleanup(func() { b.Close() })
	e0, err := New(Config{Proc: 0, JobKey: 0xfeed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e0.Close() })
	if _, err := e0.AddPort(a, Blocking); err != nil {
		t.Fatal(err)
	}
	if err := e0.SetPeer(1, 0, b.LocalEndpoint().String()); err != nil {
		t.Fatal(err)
	}
	return e0, n
}

// A process announced gone that sends no goodbye (it died) still has the
// sends to it failed with ErrPeerDown, after the grace; a receive naming
// it fails too, and so do sends made afterwards.
func TestPeerLeftWithoutGoodbye(t *testing.T) {
	e0, _ := deadPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := e0.newSend(3, 1, 4, 9, []byte("lost"))
	e0.post(s)
	r := e0.newRecv(3, 1, 4, 9, nil)
	e0.post(r)
	e0.PeerLeft(1, &PeerDownError{Proc: 1, Reason: "left"})
	if err := s.Wait(ctx); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("send to a process gone without a goodbye: %v, want ErrPeerDown", err)
	}
	if err := r.Wait(ctx); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("receive from a process gone without a goodbye: %v, want ErrPeerDown", err)
	}
	s2 := e0.newSend(3, 1, 4, 9, []byte("later"))
	e0.post(s2)
	if err := s2.Wait(ctx); err == nil {
		t.Fatal("a send to a process gone succeeded")
	}
}

// A process that joins again under the id of one whose removal waits for
// its goodbye is a new peer: the old sends fail with ErrPeerDown at once,
// and the removal that was waiting does not take the new peer away.
func TestPeerLeftThenJoinsAgain(t *testing.T) {
	e0, n := deadPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	old := e0.newSend(3, 1, 4, 9, []byte("to the old one"))
	e0.post(old)
	e0.PeerLeft(1, &PeerDownError{Proc: 1, Reason: "left"})

	c, _ := n.Listen("c")
	e1, err := New(Config{Proc: 1, JobKey: 0xfeed})
	if err != nil {
		t.Fatal(err)
	}
	defer e1.Close()
	if _, err := e1.AddPort(c, Blocking); err != nil {
		t.Fatal(err)
	}
	if err := e1.SetPeer(0, 0, "a"); err != nil {
		t.Fatal(err)
	}
	if err := e0.SetPeer(1, 0, c.LocalEndpoint().String()); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, leaveGrace/2)
	defer wcancel()
	if err := old.Wait(wctx); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("send to the process that left, once another joined as it: %v, want ErrPeerDown at once", err)
	}
	// Past the grace the old removal would have run: the new peer stays.
	time.Sleep(leaveGrace + 100*time.Millisecond)
	for i := range 2 {
		s := e0.newSend(3, 1, 4, 9, []byte("to the new one"))
		e0.post(s)
		r := e1.newRecv(4, 0, 3, 9, nil)
		e1.post(r)
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("%d: receive by the new process: %v", i, err)
		}
		if err := s.Wait(ctx); err != nil {
			t.Fatalf("%d: send to the new process: %v", i, err)
		}
	}
}
