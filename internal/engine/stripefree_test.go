package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// sendAccepted sends k small messages from thread 1 of e0 to thread dst of
// process 1 and waits until each is accepted (stored as unexpected, since
// no receive is posted for them). Their tags alternate between 3 and 4, so
// that no two of them make a run (runs.go): each has a block of its own.
func sendAccepted(ctx context.Context, t *testing.T, e0 *Engine, dst ThreadID, round, k int) {
	t.Helper()
	tx := e0.Endpoint(1)
	sends := make([]*Request, k)
	for i := range sends {
		sends[i] = tx.Isend(1, dst, Tag(3+i%2), []byte(fmt.Sprint("round ", round, " message ", i)))
	}
	for i, r := range sends {
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("round %d: send %d to thread %d: %v", round, i, dst, err)
		}
	}
}

// recvAll receives the k messages of round from thread 1 of process 0 on
// thread dst, half of them into a buffer and half handed over.
func recvAll(ctx context.Context, t *testing.T, e1 *Engine, dst ThreadID, round, k int) {
	t.Helper()
	rx := e1.Endpoint(dst)
	for i := range k {
		var buf []byte
		if i%2 == 0 {
			buf = make([]byte, 64)
		}
		r, err := rx.Recv(ctx, 0, 1, Tag(3+i%2), buf)
		if err != nil {
			t.Fatalf("round %d: receive %d on thread %d: %v", round, i, dst, err)
		}
		if got, want := string(r.Data()), fmt.Sprint("round ", round, " message ", i); got != want {
			t.Fatalf("round %d: receive %d on thread %d: %q, want %q", round, i, dst, got, want)
		}
	}
}

// A small message that waited in the table gives its control block back to
// its stripe when its receive takes it, and the next message stored on the
// stripe takes that block: none goes through the pool's shared list, and
// none is taken from the pool again.
func TestStripeFreeReuse(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	// A guard against a hang, not a timing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const k = 40 // at most stripeFree
	const dst = 10
	sendAccepted(ctx, t, e0, dst, 0, k)
	recvAll(ctx, t, e1, dst, 0, k)
	s := e1.table.stripe(dst)
	s.mu.Lock()
	kept := len(s.free)
	s.mu.Unlock()
	p := e1.pool
	p.mu.Lock()
	gets := p.gets
	p.retMu.Lock()
	ret := len(p.ret)
	p.retMu.Unlock()
	p.mu.Unlock()
	if kept != k || ret != 0 {
		t.Fatalf("after %d messages received: %d control blocks kept by the stripe, %d given back to the pool, want %d and 0",
			k, kept, ret, k)
	}
	sendAccepted(ctx, t, e0, dst, 1, k)
	p.mu.Lock()
	again := p.gets - gets
	p.mu.Unlock()
	if again != 0 {
		t.Fatalf("%d control blocks taken from the pool for %d messages with %d kept by their stripe, want none", again, k, kept)
	}
	recvAll(ctx, t, e1, dst, 1, k)
	if u := e1.mcbsInUse(); u != 0 {
		t.Fatalf("%d control blocks in use after every message was received", u)
	}
}

// Control blocks kept by one stripe serve messages for another when the
// pool has none left.
func TestStripeFreeScavenged(t *testing.T) {
	const k = 16
	e0, e1 := memPair(t, Config{MCBs: k})
	// A guard against a hang, not a timing.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const one = 10
	other := ThreadID(11)
	for stripeOf(other) == stripeOf(one) {
		other++
	}
	sendAccepted(ctx, t, e0, one, 0, k)
	recvAll(ctx, t, e1, one, 0, k)
	if u := e1.mcbsInUse(); u != 0 {
		t.Fatalf("%d control blocks in use after every message was received", u)
	}
	// Every block is now kept by thread one's stripe.
	sendAccepted(ctx, t, e0, other, 1, k)
	recvAll(ctx, t, e1, other, 1, k)
	if u := e1.mcbsInUse(); u != 0 {
		t.Fatalf("%d control blocks in use after every message was received", u)
	}
}
