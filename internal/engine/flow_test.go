package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
)

func TestOrderManyPairs(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	// A guard against a hang, not a timing: under the race detector on a
	// loaded machine (load average 44 on 2 CPUs) the 4,000 messages took
	// two and a half minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const pairs, per = 4, 500
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs)
	for p := 0; p < pairs; p++ {
		wg.Add(2)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				n := (i * 977) % 70000
				data := pattern(n, uint64(p*per+i))
				s := e0.newSend(ThreadID(p), 1, ThreadID(p), Tag(p%2), data)
				e0.post(s)
				if err := s.Wait(ctx); err != nil {
					errs <- err
					return
				}
			}
		}(p)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				r := e1.newRecv(ThreadID(p), 0, ThreadID(p), Tag(p%2), nil)
				e1.post(r)
				if err := r.Wait(ctx); err != nil {
					errs <- err
					return
				}
				n := (i * 977) % 70000
				if !bytes.Equal(r.Data(), pattern(n, uint64(p*per+i))) {
					errs <- errors.New("message out of order or corrupt")
					return
				}
			}
		}(p)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestWildcardAndProbe(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := e0.newSend(5, 1, 2, 77, []byte("hello"))
	e0.post(s)
	st, err := e1.probe(ctx, 2, AnyProc, AnyThread, AnyTag)
	if err != nil || st.SrcProc != 0 || st.SrcThread != 5 || st.Tag != 77 || st.Len != 5 {
		t.Fatalf("probe: %+v %v", st, err)
	}
	r := e1.newRecv(2, AnyProc, AnyThread, AnyTag, nil)
	e1.post(r)
	if err := r.Wait(ctx); err != nil || string(r.Data()) != "hello" {
		t.Fatalf("recv: %q %v", r.Data(), err)
	}
	if p, th := r.Source(); p != 0 || th != 5 || r.Tag() != 77 {
		t.Fatalf("source %d %d tag %d", p, th, r.Tag())
	}
	// A posted wildcard receive and an exact one: the earlier posted wins.
	w := e1.newRecv(2, AnyProc, AnyThread, AnyTag, nil)
	e1.post(w)
	x := e1.newRecv(2, 0, 5, 1, nil)
	e1.post(x)
	e0.post(e0.newSend(5, 1, 2, 1, []byte("a")))
	e0.post(e0.newSend(5, 1, 2, 1, []byte("b")))
	if err := w.Wait(ctx); err != nil || string(w.Data()) != "a" {
		t.Fatalf("wildcard got %q %v", w.Data(), err)
	}
	if err := x.Wait(ctx); err != nil || string(x.Data()) != "b" {
		t.Fatalf("exact got %q %v", x.Data(), err)
	}
}

func TestLocalDelivery(t *testing.T) {
	e0, _ := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := e0.Stats()[0].FragsSent
	for i := 0; i < 100; i++ {
		s := e0.newSend(1, 0, 2, 3, []byte{byte(i)})
		e0.post(s)
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		r := e0.newRecv(2, 0, 1, 3, make([]byte, 4))
		e0.post(r)
		if err := r.Wait(ctx); err != nil || len(r.Data()) != 1 || r.Data()[0] != byte(i) {
			t.Fatalf("%d: %v %v", i, r.Data(), err)
		}
	}
	if e0.Stats()[0].FragsSent != before {
		t.Fatal("local messages touched the fabric")
	}
	if e0.BudgetUsed() != 0 || e0.mcbsInUse() != 0 {
		t.Fatalf("leak: budget %d mcbs %d", e0.BudgetUsed(), e0.mcbsInUse())
	}
}

// A receiver that does not receive: the sender is refused (BUSY), memory
// stays within the budget, and everything arrives once it receives.
func TestBusyBoundsMemory(t *testing.T) {
	const budget = 4 << 20
	e0, e1 := memPair(t, Config{RecvBudget: budget, MCBs: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Four times the budget: enough for BUSY to be sent and the bound
	// to be tested, little enough to finish well inside the context
	// under -race on a loaded machine (64 MiB took over 60 s there); the
	// context is only a bound on a hang.
	const n, size = 16, 1 << 20
	var sends []*Request
	for i := 0; i < n; i++ {
		s := e0.newSend(0, 1, 0, 0, pattern(size, uint64(i)))
		e0.post(s)
		sends = append(sends, s)
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if u := e1.BudgetUsed(); u > budget {
			t.Fatalf("receiver holds %d bytes, budget %d", u, budget)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e1.Stats()[0].BusySent == 0 {
		t.Fatal("no BUSY sent")
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
	}
	for _, s := range sends {
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUnreachable(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	e0, e1 := pair(t, a, b, Config{UnreachableTimeout: 300 * time.Millisecond})
	e1.Close()
	start := time.Now()
	s := e0.newSend(0, 1, 0, 0, []byte("x"))
	e0.post(s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.Wait(ctx)
	var ue *UnreachableError
	if !errors.Is(err, ErrUnreachable) || !errors.As(err, &ue) || ue.Proc != 1 {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestCloseDuringTraffic(t *testing.T) {
	base := runtime.NumGoroutine()
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	e0, e1 := pair(t, a, b, Config{})
	var reqs []*Request
	for i := 0; i < 50; i++ {
		s := e0.newSend(0, 1, 0, 0, pattern(300000, 1))
		e0.post(s)
		reqs = append(reqs, s)
		r := e1.newRecv(1, AnyProc, AnyThread, AnyTag, nil)
		e1.post(r)
		reqs = append(reqs, r)
	}
	time.Sleep(20 * time.Millisecond)
	e0.Close()
	e1.Close()
	e0.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range reqs {
		if err := r.Wait(ctx); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrUnreachable) {
			t.Fatalf("request ended with %v", err)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left (base %d)\n%s", g, base, buf[:runtime.Stack(buf, true)])
	}
}

func TestThousandThreads(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 1000
	var wg sync.WaitGroup
	got := make([]bool, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := e1.newRecv(ThreadID(i), 0, AnyThread, 5, nil)
			e1.post(r)
			if err := r.Wait(ctx); err == nil && int(binary.LittleEndian.Uint32(r.Data())) == i {
				got[i] = true
			}
		}(i)
	}
	for i := n - 1; i >= 0; i-- {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(i))
		e0.post(e0.newSend(ThreadID(i%7), 1, ThreadID(i), 5, b[:]))
	}
	wg.Wait()
	for i, ok := range got {
		if !ok {
			t.Fatalf("thread %d did not get its message", i)
		}
	}
}

// A large message is placed straight into the buffer of the receive posted
// for it; cancelling that receive mid-way keeps the message whole for the
// next receive.
func TestOwnedReceiveCancel(t *testing.T) {
	e0, e1 := slowPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data := pattern(8<<20, 5)
	buf := make([]byte, 8<<20)
	r := e1.newRecv(0, 0, 0, 1, buf)
	e1.post(r)
	s := e0.newSend(0, 1, 0, 1, data)
	e0.post(s)
	for r.ownerPeer.Load() == nil {
		if done, _ := r.Test(); done {
			t.Fatal("receive completed before it could be cancelled")
		}
		time.Sleep(time.Millisecond)
	}
	r.Cancel()
	if err := r.Wait(ctx); !errors.Is(err, ErrCanceled) {
		t.Fatalf("cancelled receive: %v", err)
	}
	r2 := e1.newRecv(0, 0, 0, 1, nil)
	e1.post(r2)
	if err := r2.Wait(ctx); err != nil || !bytes.Equal(r2.Data(), data) {
		t.Fatalf("second receive: %v, equal %v", err, bytes.Equal(r2.Data(), data))
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// And uncancelled, the data lands in the caller's buffer.
	r3 := e1.newRecv(0, 0, 0, 1, buf)
	e1.post(r3)
	e0.post(e0.newSend(0, 1, 0, 1, data))
	if err := r3.Wait(ctx); err != nil || &r3.Data()[0] != &buf[0] || !bytes.Equal(buf, data) {
		t.Fatalf("owned receive: %v", err)
	}
}

// A process replaced by a new one with the same id (a restart) gets a
// fresh stream in both directions: nothing of the old one is mistaken for
// the new one's.
func TestPeerRestart(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	e0, e1 := pair(t, a, b, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	exchange := func(x, y *Engine, tag Tag) {
		t.Helper()
		for i := 0; i < 20; i++ {
			data := pattern(1000*i, uint64(i))
			s := x.newSend(0, y.Proc(), 0, tag, data)
			x.post(s)
			r := y.newRecv(0, x.Proc(), 0, tag, nil)
			y.post(r)
			if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), data) {
				t.Fatalf("message %d: %v", i, err)
			}
			if err := s.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	exchange(e0, e1, 1)
	exchange(e1, e0, 2)
	e1.Close()
	b2, _ := n.Listen("b2")
	e1b, err := New(Config{Proc: 1, JobKey: 0xfeed})
	if err != nil {
		t.Fatal(err)
	}
	defer e1b.Close()
	e1b.AddPort(b2, Blocking)
	e1b.SetPeer(0, 0, "a")
	e0.SetPeer(1, 0, "b2")
	exchange(e0, e1b, 3)
	exchange(e1b, e0, 4)
	exchange(e0, e1b, 5)
}

// A send cancelled while a posted receive owns its message leaves that
// receive posted for the next message.
func TestCancelledSendFreesOwner(t *testing.T) {
	e0, e1 := slowPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := e1.newRecv(0, 0, 0, 1, make([]byte, 8<<20))
	e1.post(r)
	s := e0.newSend(0, 1, 0, 1, pattern(8<<20, 1))
	e0.post(s)
	for r.ownerPeer.Load() == nil {
		time.Sleep(time.Millisecond)
	}
	s.Cancel()
	if err := s.Wait(ctx); !errors.Is(err, ErrCanceled) {
		t.Fatalf("cancelled send: %v", err)
	}
	e0.post(e0.newSend(0, 1, 0, 1, []byte("next")))
	if err := r.Wait(ctx); err != nil || string(r.Data()) != "next" {
		t.Fatalf("receive got %d bytes, %v", len(r.Data()), err)
	}
}

// slowPair is a pair of engines whose sends from 0 to 1 are delayed, so a
// large message stays under way long enough to act on it.
func slowPair(t *testing.T) (*Engine, *Engine) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	slow := faulty.Wrap(a, faulty.Faults{Delay: 2 * time.Millisecond})
	return pair(t, slow, b, Config{Window: 64})
}
