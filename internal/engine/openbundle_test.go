package engine

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/mem"
)

// TestOpenBundleKeepsOrder: small posted copies go into the open bundle
// while the destination is behind (its stream from the sender locked, so
// that it takes nothing), mixed with messages too large for a bundle
// (relMessage), which take a request and would take the short path with
// nothing queued, and sends that are not posted copies, whose post flushes
// what waits: every message arrives once, whole and in the order posted.
// The open bundle's messages, given their ids as they were appended, leave
// before any message posted after them.
func TestOpenBundleKeepsOrder(t *testing.T) {
	old := deferFlush
	deferFlush = time.Hour // only the sends themselves flush
	t.Cleanup(func() { deferFlush = old })
	e0, e1, _, _ := shmPair(t, Config{Rendezvous: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 2000
	p1, p0 := e1.peer(0), e0.peer(1)
	if p1 == nil || p0 == nil {
		t.Fatal("the engines do not know each other")
	}
	p1.rxmu.Lock()
	held := true
	defer func() {
		if held {
			p1.rxmu.Unlock()
		}
	}()
	opened := make(chan struct{})
	posted := make(chan error, 1)
	go func() {
		opened := opened // closed once, then nil here
		for i := range n {
			var err error
			if i%50 == 49 {
				e0.post(e0.newSend(0, 1, 0, Tag(i), relMessage(i)))
			} else {
				err = e0.Post(0, 1, 0, Tag(i), relMessage(i))
			}
			if err != nil {
				posted <- err
				return
			}
			if opened != nil {
				p0.mu.Lock()
				open := p0.ob.n != 0
				p0.mu.Unlock()
				if open {
					close(opened)
					opened = nil
				}
			}
		}
		posted <- nil
	}()
	select {
	case <-opened:
	case err := <-posted:
		t.Fatalf("the posts ended (%v) with no message in an open bundle", err)
	case <-ctx.Done():
		t.Fatal("no message went into an open bundle")
	}
	p1.rxmu.Unlock()
	held = false
	receiveInOrder(ctx, t, e1, n)
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	s, r := e0.Stats()[0], e1.Stats()[0]
	t.Logf("sender: %d datagrams, %d bundles of %d messages", s.FragsSent, s.BundlesSent, s.MessagesBundled)
	if s.MessagesSent != n || r.MessagesRecv != n || r.DroppedTotal != 0 {
		t.Errorf("%d messages sent, %d received, %d dropped %v", s.MessagesSent, r.MessagesRecv, r.DroppedTotal, r.Drops)
	}
	if b := e0.postedBytes.Load(); b != 0 {
		t.Errorf("%d bytes of posted copies counted with every message received", b)
	}
}

// TestOpenBundleDroppedWithPeer: messages in the open bundle of a peer
// that goes away (the receiver, behind with its one control block taken
// and the next message held, closes) are dropped with it, as its queued
// posted copies are, without being sent: the bundle's memory leaves
// postedBytes, and the next post to the peer fails.
func TestOpenBundleDroppedWithPeer(t *testing.T) {
	old := deferFlush
	deferFlush = time.Hour // nothing sends the open bundle but the test
	t.Cleanup(func() { deferFlush = old })
	e0, e1, _, _ := shmPair(t, Config{MCBs: 1, Rendezvous: -1})
	p0 := e0.peer(1)
	// Two messages not posted as copies (never deferred): the receiver
	// takes the first and holds the second.
	for i := range 2 {
		e0.post(e0.newSend(0, 1, 0, Tag(i), relMessage(i)))
	}
	for deadline := time.Now().Add(30 * time.Second); e1.Stats()[0].Holds == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the receiver never held a message")
		}
	}
	open := 0
	for i := 2; i < 50 && open == 0; i++ {
		if err := e0.Post(0, 1, 0, Tag(i), relMessage(i%36)); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
		p0.mu.Lock()
		open = p0.ob.n
		p0.mu.Unlock()
	}
	if open == 0 {
		t.Fatal("no message went into an open bundle while the receiver was behind")
	}
	if b := e0.postedBytes.Load(); b < openCost {
		t.Fatalf("%d bytes of posted copies counted with a bundle open, want at least %d", b, openCost)
	}
	e1.Close()
	// No post meanwhile: it would send the open bundle.
	var err error
	for deadline := time.Now().Add(30 * time.Second); err == nil && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		p0.mu.Lock()
		err = p0.tx.failed
		p0.mu.Unlock()
	}
	if err == nil {
		t.Fatal("the closed receiver was not found gone")
	}
	p0.mu.Lock()
	open = p0.ob.n
	p0.mu.Unlock()
	if b := e0.postedBytes.Load(); b != 0 || open != 0 {
		t.Fatalf("after the receiver closed (%v): %d bytes of posted copies counted, %d messages in the open bundle", err, b, open)
	}
	if err := e0.Post(0, 1, 0, 0, relMessage(0)); err == nil {
		t.Fatal("a post to the closed receiver succeeded")
	}
}

// TestOpenBundleRouteChange: messages in the open bundle when the peer's
// route moves from shared memory to a datagram port (memory fabric) leave
// by the new route, after the message sent before the change and before
// those posted after it, each once: nothing goes by the old route once it
// changed. The receiver is kept behind by its stream from the sender
// locked.
func TestOpenBundleRouteChange(t *testing.T) {
	old := deferFlush
	deferFlush = time.Hour // nothing sends the open bundle but the test
	t.Cleanup(func() { deferFlush = old })
	a, b := shmPorts(t)
	e0, e1 := pair(t, a, b, Config{Rendezvous: -1})
	net := mem.NewNetwork()
	m0, _ := net.Listen("m0")
	m1, _ := net.Listen("m1")
	if _, err := e0.AddPort(m0, Blocking); err != nil {
		t.Fatal(err)
	}
	if _, err := e1.AddPort(m1, Blocking); err != nil {
		t.Fatal(err)
	}
	// The receiver answers (acknowledges) by the memory fabric.
	if err := e1.SetRoutes(0, []RouteSpec{{Port: 1, Endpoint: "m0"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p0, p1 := e0.peer(1), e1.peer(0)
	p1.rxmu.Lock()
	held := true
	defer func() {
		if held {
			p1.rxmu.Unlock()
		}
	}()
	// A message not posted as a copy (never deferred), which the
	// receiver does not take; then posted copies, behind it.
	e0.post(e0.newSend(0, 1, 0, 0, relMessage(0)))
	next, open := 1, 0
	for deadline := time.Now().Add(30 * time.Second); open == 0 && next < 1000; next++ {
		if err := e0.Post(0, 1, 0, Tag(next), relMessage(next%36)); err != nil {
			t.Fatalf("post %d: %v", next, err)
		}
		p0.mu.Lock()
		open = p0.ob.n
		p0.mu.Unlock()
		if time.Now().After(deadline) {
			break
		}
	}
	if open == 0 {
		t.Fatal("no message went into the open bundle while the receiver was behind")
	}
	if err := e0.SetRoutes(1, []RouteSpec{{Port: 1, Endpoint: "m1"}}); err != nil {
		t.Fatal(err)
	}
	if p0.reliable.Load() {
		t.Fatal("the peer is still on the reliable path by the memory fabric")
	}
	shmSent := e0.Stats()[0].FragsSent
	for n := next + 20; next < n; next++ {
		if err := e0.Post(0, 1, 0, Tag(next), relMessage(next%36)); err != nil {
			t.Fatalf("post %d: %v", next, err)
		}
	}
	p1.rxmu.Unlock()
	held = false
	for i := 0; i < next; i++ {
		r := e1.newRecv(0, 0, AnyThread, AnyTag, nil)
		e1.post(r)
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		want := relMessage(i % 36)
		if i == 0 {
			want = relMessage(0)
		}
		if r.Tag() != Tag(i) || !bytes.Equal(r.Data(), want) {
			t.Fatalf("message %d: got tag %d and %d bytes, want message %d (%d bytes)", i, r.Tag(), len(r.Data()), i, len(want))
		}
	}
	t.Logf("%d messages in the open bundle at the change", open)
	if got := e0.Stats()[0].FragsSent - shmSent; got != 0 {
		t.Errorf("%d datagrams sent by the old route (shared memory) after the change", got)
	}
}
