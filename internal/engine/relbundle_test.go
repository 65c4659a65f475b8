package engine

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// relMessage is the size of the i-th message the tests of reliable
// bundles post: mostly small, every 37th too large to go in a bundle.
func relMessage(i int) []byte {
	n := (i * 13) % 300
	if i%37 == 36 {
		n = bundleMax + 1 + i
	}
	return pattern(n, uint64(i))
}

// receiveInOrder receives n messages from process 0 on e and checks that
// they are relMessage(0..n-1) in order, each once.
func receiveInOrder(ctx context.Context, t *testing.T, e *Engine, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := e.newRecv(0, 0, AnyThread, AnyTag, nil)
		e.post(r)
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("message %d: %v; receiver %+v", i, err, e.Stats()[0])
		}
		if r.Tag() != Tag(i) || !bytes.Equal(r.Data(), relMessage(i)) {
			t.Fatalf("message %d: got tag %d and %d bytes, want message %d (%d bytes)", i, r.Tag(), len(r.Data()), i, len(relMessage(i)))
		}
	}
}

// TestReliableBundles: small messages posted while the destination is
// behind go in bundles over shared memory; a receiver with room for one
// message at a time (one control block) holds each bundle in the fabric
// part way, and when it comes again passes over the messages it accepted
// already: every message arrives once, whole and in order, and nothing is
// dropped or refused.
func TestReliableBundles(t *testing.T) {
	e0, e1, _, _ := shmPair(t, Config{MCBs: 1, Rendezvous: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 600
	for i := 0; i < n; i++ {
		if err := e0.Post(ThreadID(i%3), 1, 0, Tag(i), relMessage(i)); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	receiveInOrder(ctx, t, e1, n)
	s, r := e0.Stats()[0], e1.Stats()[0]
	t.Logf("sender: %d datagrams, %d bundles of %d messages; receiver: %d holds, %d datagrams handled", s.FragsSent, s.BundlesSent, s.MessagesBundled, r.Holds, r.FragsRecv)
	if s.BundlesSent < 2 || s.MessagesBundled < n/2 || s.FragsSent > n/4 {
		t.Errorf("%d datagrams sent, %d bundles of %d messages, for %d messages: want most in bundles", s.FragsSent, s.BundlesSent, s.MessagesBundled, n)
	}
	if r.Holds == 0 {
		t.Error("the receiver held nothing with one control block")
	}
	if s.MessagesSent != n || r.MessagesRecv != n || r.DroppedTotal != 0 || r.BusySent != 0 || s.AcksRecv != 0 {
		t.Errorf("%d messages sent, %d received, %d dropped %v, %d BUSY, %d acks", s.MessagesSent, r.MessagesRecv, r.DroppedTotal, r.Drops, r.BusySent, s.AcksRecv)
	}
}

// TestReliableDeferredSent: a small posted message deferred for a bundle
// (the destination is behind: its one control block is taken and the next
// message held) leaves when the same process posts a receive, waits on a
// request, or closes, without the timer (set here to an hour). (Close then
// waits for the receiver, which holds the message, at most the unreachable
// timeout.)
func TestReliableDeferredSent(t *testing.T) {
	old := deferFlush
	deferFlush = time.Hour
	t.Cleanup(func() { deferFlush = old })
	e0, e1, _, _ := shmPair(t, Config{MCBs: 1, Rendezvous: -1, UnreachableTimeout: 500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sent := func() uint64 { return e0.Stats()[0].FragsSent }
	next := 0
	// behind sends two messages at once (not posted: never deferred); the
	// receiver takes the first and holds the second.
	behind := func() {
		t.Helper()
		holds := e1.Stats()[0].Holds
		for range 2 {
			e0.post(e0.newSend(0, 1, 0, Tag(next), relMessage(next)))
			next++
		}
		for deadline := time.Now().Add(30 * time.Second); e1.Stats()[0].Holds == holds; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the receiver never held message %d", next-1)
			}
		}
	}
	// deferTwo posts two messages, which must wait in the queue.
	deferTwo := func(before string) uint64 {
		t.Helper()
		n := sent()
		for range 2 {
			if err := e0.Post(0, 1, 0, Tag(next), relMessage(next)); err != nil {
				t.Fatalf("post %d: %v", next, err)
			}
			next++
		}
		if got := sent(); got != n {
			t.Fatalf("before %s: %d datagrams sent while the receiver was behind, want none", before, got-n)
		}
		return n
	}
	check := func(what string, n uint64) {
		t.Helper()
		if sent() == n {
			t.Fatalf("%s sent nothing deferred", what)
		}
	}

	behind()
	n := deferTwo("a receive posted")
	e0.post(e0.newRecv(0, 1, 0, 99, nil))
	check("a receive posted", n)

	r := e0.newRecv(0, 1, 0, 98, nil)
	e0.post(r)
	n = deferTwo("a wait")
	wctx, wcancel := context.WithTimeout(ctx, time.Millisecond)
	r.Wait(wctx)
	wcancel()
	check("a wait", n)
	receiveInOrder(ctx, t, e1, next)

	behind()
	n = deferTwo("close")
	e0.Close()
	check("close", n)
}

// TestReliableBudgetTakenAhead: the receive budget a receiver takes ahead
// for the small messages of a datagram goes back once the datagram is
// handled: with every message waiting unreceived, the budget used is what
// they hold, no more, and it is all back once they are received; a budget
// that fits the messages exactly takes them all without holding any.
func TestReliableBudgetTakenAhead(t *testing.T) {
	const n, size = 300, 40
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"ahead", 4 * n * size}, {"exact", n * size}} {
		t.Run(tc.name, func(t *testing.T) {
			e0, e1, _, _ := shmPair(t, Config{RecvBudget: tc.budget, Rendezvous: -1})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := 0; i < n; i++ {
				if err := e0.Post(0, 1, 0, Tag(i), pattern(size, uint64(i))); err != nil {
					t.Fatalf("post %d: %v", i, err)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				if r := e1.Stats()[0]; r.MessagesRecv == n && e1.BudgetUsed() == n*size || r.Holds != 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if r := e1.Stats()[0]; r.MessagesRecv != n || r.Holds != 0 || r.DroppedTotal != 0 {
				t.Fatalf("%d of %d messages in, %d holds, %d dropped, with room for every one", r.MessagesRecv, n, r.Holds, r.DroppedTotal)
			}
			if u := e1.BudgetUsed(); u != n*size {
				t.Fatalf("with %d messages of %d B waiting, %d B of the budget used", n, size, u)
			}
			for i := 0; i < n; i++ {
				r := e1.newRecv(0, 0, 0, Tag(i), nil)
				e1.post(r)
				if err := r.Wait(ctx); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
			}
			if u := e1.BudgetUsed(); u != 0 {
				t.Fatalf("%d B of the budget used after every message was received", u)
			}
		})
	}
}

// TestReliableBundleShortPath: the messages of a bundle whose receives are
// posted, for threads of several stripes of the receive table, each go
// straight into their receive, with no control block: with one control
// block the receiver holds nothing (each message took the block, and the
// next one of the bundle waited in the fabric for it, when they went
// through the general path). Every receive gets its own message, and
// every message is counted once. The receiver is kept from reading (its
// stream from the sender locked) until the sender has sent bundles.
func TestReliableBundleShortPath(t *testing.T) {
	e0, e1, _, _ := shmPair(t, Config{MCBs: 1, Rendezvous: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n, threads = 600, 7
	recvs := make([]*Request, n)
	for i := range recvs {
		recvs[i] = e1.newRecv(ThreadID(i%threads), 0, 0, Tag(i/threads), make([]byte, 2*bundleMax))
		e1.post(recvs[i])
	}
	p := e1.peer(0)
	if p == nil {
		t.Fatal("the receiver does not know the sender")
	}
	p.rxmu.Lock()
	posted := make(chan error, 1)
	go func() {
		for i := range n {
			if err := e0.Post(0, 1, ThreadID(i%threads), Tag(i/threads), relMessage(i)); err != nil {
				posted <- err
				return
			}
		}
		posted <- nil
	}()
	for deadline := time.Now().Add(10 * time.Second); e0.Stats()[0].BundlesSent < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	p.rxmu.Unlock()
	select {
	case err := <-posted:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the sender's posts did not return")
	}
	for i, r := range recvs {
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("message %d: %v; receiver %+v", i, err, e1.Stats()[0])
		}
		if !bytes.Equal(r.Data(), relMessage(i)) {
			t.Fatalf("message %d: %d bytes, not its own (%d bytes)", i, len(r.Data()), len(relMessage(i)))
		}
	}
	s, r := e0.Stats()[0], e1.Stats()[0]
	t.Logf("sender: %d datagrams, %d bundles of %d messages; receiver: %d holds", s.FragsSent, s.BundlesSent, s.MessagesBundled, r.Holds)
	if s.BundlesSent < 2 {
		t.Fatalf("%d bundles sent: the test needs some", s.BundlesSent)
	}
	if r.Holds != 0 {
		t.Errorf("%d holds with every receive posted", r.Holds)
	}
	if s.MessagesSent != n || r.MessagesRecv != n || r.DroppedTotal != 0 {
		t.Errorf("%d messages sent, %d received, %d dropped %v", s.MessagesSent, r.MessagesRecv, r.DroppedTotal, r.Drops)
	}
}
