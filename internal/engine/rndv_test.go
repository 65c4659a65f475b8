package engine

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

// remotePair is memPair on a network whose ports read each other's
// exposed memory, so that large messages go by rendezvous.
func remotePair(t testing.TB, cfg Config) (*Engine, *Engine, *mem.Port, *mem.Port) {
	n := mem.NewNetwork()
	n.RemoteMemory = true
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	e0, e1 := pair(t, a, b, cfg)
	return e0, e1, a, b
}

func waitAll(t *testing.T, what string, rs ...*Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, r := range rs {
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("%s: request %d: %v", what, i, err)
		}
	}
}

// waitProbe waits until a message from thread 3 of process 0 with tag 9
// waits unexpected at thread 4 of e.
func waitProbe(t *testing.T, e *Engine) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, ok := e.iprobe(4, 0, 3, 9); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("message never arrived")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestRendezvousSizes(t *testing.T) {
	e0, e1, _, _ := remotePair(t, Config{})
	sizes := []int{0, 1, defaultRendezvous - 1, defaultRendezvous, 1<<20 + 3, 3 << 20}
	datas := map[int][]byte{}
	for _, n := range sizes {
		datas[n] = pattern(n, uint64(n))
	}
	big := 0
	for _, posted := range []bool{true, false} {
		for _, own := range []bool{true, false} {
			for _, n := range sizes {
				data := datas[n]
				var buf []byte
				if own {
					buf = make([]byte, n+5)
				}
				r := e1.newRecv(4, 0, 3, 9, buf)
				if posted {
					e1.post(r)
				}
				s := e0.newSend(3, 1, 4, 9, data)
				e0.post(s)
				// A small message with the same key right behind it
				// must not overtake it.
				s2 := e0.newSend(3, 1, 4, 9, []byte("next"))
				e0.post(s2)
				if !posted {
					waitProbe(t, e1)
					e1.post(r)
				}
				r2 := e1.newRecv(4, 0, 3, 9, nil)
				e1.post(r2)
				waitAll(t, "sizes", r, s, r2, s2)
				if !bytes.Equal(r.Data(), data) || string(r2.Data()) != "next" {
					t.Fatalf("%d B (posted %v, own buffer %v): data differs or overtaken", n, posted, own)
				}
				if own && n > 0 && &r.Data()[0] != &buf[0] {
					t.Fatalf("%d B: not received into the receive's buffer", n)
				}
				if n >= defaultRendezvous {
					big++
				}
			}
		}
	}
	st0, st1 := e0.RendezvousStats(), e1.RendezvousStats()
	if st0.Announced != uint64(big) || st1.Read != uint64(big) || st1.Dropped != 0 {
		t.Fatalf("rendezvous: sender %+v, receiver %+v; want %d announced and read", st0, st1, big)
	}
	if len(e0.rndv.sends) != 0 {
		t.Fatalf("%d rendezvous sends left in the table", len(e0.rndv.sends))
	}
}

// A rendezvous send completes only once its receiver has read it.
func TestRendezvousSendWaitsForReceiver(t *testing.T) {
	e0, e1, _, _ := remotePair(t, Config{})
	data := pattern(1<<20, 1)
	s := e0.newSend(3, 1, 4, 9, data)
	e0.post(s)
	time.Sleep(100 * time.Millisecond)
	if done, _ := s.Test(); done {
		t.Fatal("rendezvous send completed before any receive was posted")
	}
	if st, ok := e1.iprobe(4, 0, 3, 9); !ok || st.Len != len(data) {
		t.Fatalf("probe: %+v %v, want length %d", st, ok, len(data))
	}
	r := e1.newRecv(4, 0, 3, 9, nil)
	e1.post(r)
	waitAll(t, "late receive", r, s)
	if !bytes.Equal(r.Data(), data) {
		t.Fatal("data differs")
	}
}

func TestRendezvousTruncated(t *testing.T) {
	e0, e1, _, _ := remotePair(t, Config{})
	data := pattern(100<<10, 2)
	s := e0.newSend(3, 1, 4, 9, data)
	e0.post(s)
	r := e1.newRecv(4, 0, 3, 9, make([]byte, 50<<10))
	e1.post(r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Wait(ctx); !errors.Is(err, ErrTruncated) {
		t.Fatalf("receive: %v, want ErrTruncated", err)
	}
	if !bytes.Equal(r.Data(), data[:50<<10]) {
		t.Fatal("truncated data differs")
	}
	waitAll(t, "send", s)
}

func TestRendezvousCancel(t *testing.T) {
	e0, e1, _, _ := remotePair(t, Config{})
	// A receive cancelled before the announcement arrives leaves it to
	// the next receive.
	r := e1.newRecv(4, 0, 3, 9, nil)
	e1.post(r)
	r.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Wait(ctx); !errors.Is(err, ErrCanceled) {
		t.Fatalf("cancelled receive: %v", err)
	}
	data := pattern(200<<10, 3)
	s := e0.newSend(3, 1, 4, 9, data)
	e0.post(s)
	r2 := e1.newRecv(4, 0, 3, 9, nil)
	e1.post(r2)
	waitAll(t, "after the cancelled receive", r2, s)
	if !bytes.Equal(r2.Data(), data) {
		t.Fatal("data differs")
	}
	// (Cancelling a rendezvous send: withdraw_test.go.)
}

// The sender's port goes away while its announcement waits: the receive
// that takes it fails, promptly.
func TestRendezvousSenderGone(t *testing.T) {
	e0, e1, a, _ := remotePair(t, Config{})
	s := e0.newSend(3, 1, 4, 9, pattern(1<<20, 4))
	e0.post(s)
	waitProbe(t, e1)
	a.Close()
	r := e1.newRecv(4, 0, 3, 9, nil)
	e1.post(r)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.Wait(ctx); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("receive from a sender that is gone: %v", err)
	}
	e0.Close()
	if err := s.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after Close: %v", err)
	}
}

// The receiver is removed while a rendezvous send waits for it: the send
// fails and its memory is released.
func TestRendezvousReceiverGone(t *testing.T) {
	e0, _, a, _ := remotePair(t, Config{})
	s := e0.newSend(3, 1, 4, 9, pattern(1<<20, 5))
	e0.post(s)
	time.Sleep(20 * time.Millisecond)
	e0.RemovePeer(1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var down *PeerDownError
	if err := s.Wait(ctx); !errors.As(err, &down) {
		t.Fatalf("send to a removed receiver: %v", err)
	}
	a.Close() // (exposed memory is released with the send)
	if len(e0.rndv.sends) != 0 {
		t.Fatal("rendezvous send left in the table")
	}
}

func FuzzParseAnnouncement(f *testing.F) {
	f.Add([]byte{rndvAnnounce, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0xaa, 3, 'm', 'e', 'm', 1, 'a'})
	f.Add([]byte{rndvDone, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{rndvWithdraw, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{rndvWithdrawn, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{rndvTaken, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{rndvAnnounce, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := parseAnnouncement(b)
		if !ok {
			return
		}
		if n := 1 + 8 + 8 + 3 + len(a.desc) + len(a.kind) + len(a.ep); n != len(b) {
			t.Fatalf("parsed %d bytes of fields from %d", n, len(b))
		}
	})
}

// gatedReader is a mem port whose remote reads complete only once gate is
// closed; it records the bytes being read at once.
type gatedReader struct {
	*mem.Port
	gate chan struct{}

	mu             sync.Mutex
	inflight, peak int
	started        int
}

func (g *gatedReader) ReadRemote(from fabric.Endpoint, dst []byte, desc []byte, done func(error)) error {
	g.mu.Lock()
	g.inflight += len(dst)
	g.peak = max(g.peak, g.inflight)
	g.started++
	g.mu.Unlock()
	return g.Port.ReadRemote(from, dst, desc, func(err error) {
		<-g.gate
		g.mu.Lock()
		g.inflight -= len(dst)
		g.mu.Unlock()
		done(err)
	})
}

func (g *gatedReader) stats() (started, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started, g.peak
}

// Receives without a buffer read rendezvous messages into storage of the
// engine's own, charged to the receive budget while they are read: with
// more such receives posted than the budget holds, no more than the budget
// is being read at once; the others wait their turn and all complete. A
// message larger than the whole budget is still read.
func TestRendezvousBudget(t *testing.T) {
	n := mem.NewNetwork()
	n.RemoteMemory = true
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	g := &gatedReader{Port: b, gate: make(chan struct{})}
	const budget, size, count = 1 << 20, 256 << 10, 12
	e0, e1 := pair(t, a, g, Config{RecvBudget: budget})
	var sends, recvs []*Request
	for i := 0; i < count; i++ {
		s := e0.newSend(3, 1, 4, Tag(i), pattern(size, uint64(i)))
		e0.post(s)
		r := e1.newRecv(4, 0, 3, Tag(i), nil)
		e1.post(r)
		sends, recvs = append(sends, s), append(recvs, r)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if started, _ := g.stats(); started >= budget/size {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("reads never started")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // time for reads past the budget to start
	started, peak := g.stats()
	if peak > budget || e1.BudgetUsed() > budget {
		t.Fatalf("%d reads of %d B started at once (%d B in flight, budget used %d), budget %d",
			started, size, peak, e1.BudgetUsed(), budget)
	}
	close(g.gate)
	waitAll(t, "receives", recvs...)
	waitAll(t, "sends", sends...)
	for i, r := range recvs {
		if !bytes.Equal(r.Data(), pattern(size, uint64(i))) {
			t.Fatalf("message %d differs", i)
		}
	}
	big := pattern(2*budget, 99)
	s := e0.newSend(3, 1, 4, 99, big)
	e0.post(s)
	r := e1.newRecv(4, 0, 3, 99, nil)
	e1.post(r)
	waitAll(t, "a message larger than the budget", r, s)
	if !bytes.Equal(r.Data(), big) {
		t.Fatal("large message differs")
	}
	if _, peak := g.stats(); peak > 2*budget {
		t.Fatalf("%d B read at once", peak)
	}
	if u := e1.BudgetUsed(); u != 0 {
		t.Fatalf("%d B of budget still held after every read", u)
	}
	t.Logf("%d reads started while the gate was shut, %d B at most in flight", started, peak)
}

// nowReader is a mem port that also reads on the calling thread
// (fabric.RemoteReadNow), counting the reads made each way.
type nowReader struct {
	*mem.Port
	now, later atomic.Int32
}

func (n *nowReader) ReadRemote(from fabric.Endpoint, dst []byte, desc []byte, done func(error)) error {
	n.later.Add(1)
	return n.Port.ReadRemote(from, dst, desc, done)
}

func (n *nowReader) ReadRemoteNow(from fabric.Endpoint, dst []byte, desc []byte) error {
	n.now.Add(1)
	ch := make(chan error, 1)
	if err := n.Port.ReadRemote(from, dst, desc, func(err error) { ch <- err }); err != nil {
		return err
	}
	return <-ch
}

// A receive posted for a rendezvous message that already waits reads it on
// the posting thread, where the port can: the receive is complete when the
// post returns, with no other goroutine woken to end it. A receive posted
// before its message arrives is read by whoever receives the announcement,
// which may hold locks, so through ReadRemote.
func TestRendezvousReadNow(t *testing.T) {
	n := mem.NewNetwork()
	n.RemoteMemory = true
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	nb := &nowReader{Port: b}
	e0, e1 := pair(t, a, nb, Config{})
	for i := 0; i < 3; i++ {
		data := pattern(1<<20, uint64(i))
		s := e0.newSend(3, 1, 4, 9, data)
		e0.post(s)
		waitProbe(t, e1)
		r := e1.newRecv(4, 0, 3, 9, make([]byte, len(data)))
		e1.post(r)
		if done, err := r.Test(); !done || err != nil {
			t.Fatalf("message %d: receive not complete when its post returned (%v, %v)", i, done, err)
		}
		waitAll(t, "read now", r, s)
		if !bytes.Equal(r.Data(), data) {
			t.Fatalf("message %d differs", i)
		}
	}
	data := pattern(1<<20, 7)
	r := e1.newRecv(4, 0, 3, 9, make([]byte, len(data)))
	e1.post(r)
	s := e0.newSend(3, 1, 4, 9, data)
	e0.post(s)
	waitAll(t, "posted first", r, s)
	if !bytes.Equal(r.Data(), data) {
		t.Fatal("message posted first differs")
	}
	if now, later := nb.now.Load(), nb.later.Load(); now != 3 || later != 1 {
		t.Fatalf("%d reads on the posting thread and %d handed over, want 3 and 1", now, later)
	}
}
